/**
 * Task change announcements when Redis goes away (redis-task-events.ts): Pub/Sub keeps nothing
 * for a subscriber that is away, so after Redis comes back every listener is called once, with
 * nobody subscribing again; and announcing never fails the caller whose write succeeded. The
 * test runs its own redis-server on a free port, so it can kill and restart it.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { RedisStore } from '../../../src/store/redis-store.js';
import { INSTALL_REDIS, redisConfig, redisServerInstalled, RedisServerProcess, reportMissingRedis } from '../../support/redis-servers.js';
import { waitFor } from '../../support/wait.js';
import { providedRecord } from '../../support/task-records.js';

if (!redisServerInstalled()) {
  reportMissingRedis('redis-server (to stop and restart one)', INSTALL_REDIS);
} else {
  describe('Task events when Redis restarts', () => {
    let server: RedisServerProcess;
    const stores: RedisStore[] = [];

    before(async () => {
      server = await RedisServerProcess.start();
    });
    after(async () => {
      await Promise.all(stores.map((store) => store.close()));
      await server?.stop();
    });

    it('calls every listener once the subscriber is back, and announces again from then on', async () => {
      const config = redisConfig({ url: `redis://127.0.0.1:${server.port}`, commandTimeout: '200ms', connectTimeout: '500ms' });
      const [writer, reader] = [new RedisStore(config), new RedisStore(config)];
      stores.push(writer, reader);
      await Promise.all([writer.whenReady(), reader.whenReady()]);
      const handle = providedRecord().handle;
      let heard = 0;
      reader.events.subscribe(handle, () => heard++);
      await waitFor(async () => heard === 1, 'the first subscription', 5000);
      await writer.events.publish(handle);
      await waitFor(async () => heard === 2, 'an announcement', 5000);

      const port = server.port;
      await server.stop();
      await waitFor(async () => !(await writer.isReady()));
      // Redis is away: the announcement is lost, but the caller is not failed for it.
      await writer.events.publish(handle);
      assert.equal(heard, 2);

      server = await RedisServerProcess.start(port);
      await waitFor(async () => heard === 3, 'the listener to be called after the restart');
      await waitFor(() => writer.isReady());
      await writer.events.publish(handle);
      await waitFor(async () => heard === 4, 'an announcement after the restart', 5000);
    });
  });
}
