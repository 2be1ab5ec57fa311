/**
 * A store outage while a 2025 session is being recorded (the soak found it: issue #29). With
 * several instances the gateway records which one answered an `initialize`; when the store
 * cannot take the record, the client gets 503 TG_ERR_STORE_UNAVAILABLE, and the backend's
 * answer, already under way, is dropped. Dropping it once crashed the process: undici reports
 * a body destroyed before its end as an 'error' event, and nothing listened for it. The
 * gateway must answer, stay up, and answer the next request.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { startExampleServer, type ExampleServer } from '../../examples/mcp-server/server.js';
import { freePort, SNAPSHOT_KEY_1 } from '../support/redis-servers.js';
import { LEGACY_POST_HEADERS, initializeBody, startGateway, testPolicy, type GatewayUnderTest } from './support/harness.js';

describe('a store outage while a 2025 session is recorded', () => {
  let servers: ExampleServer[] = [];
  let gw: GatewayUnderTest;
  before(async () => {
    servers = [await startExampleServer({ name: 'a' }), await startExampleServer({ name: 'b' })];
    // Redis where nothing listens: every store command fails, quickly.
    const store = { type: 'redis', url: `redis://127.0.0.1:${await freePort()}`, commandTimeout: '300ms', connectTimeout: '300ms', keyPrefix: 'tg-outage:', snapshotKeys: [SNAPSHOT_KEY_1] };
    gw = await startGateway(testPolicy(servers.map((s) => s.url), { store }));
  });
  after(async () => {
    await gw?.close();
    await Promise.all(servers.map((s) => s.close()));
  });

  it('answers initialize 503 with its id, drops the backend\'s answer, and stays up', async () => {
    for (let id = 1; id <= 3; id++) {
      const res = await fetch(gw.url, { method: 'POST', headers: LEGACY_POST_HEADERS, body: initializeBody(id) });
      assert.equal(res.status, 503);
      const body = (await res.json()) as { id: unknown; error: { code: number } };
      assert.deepEqual([body.id, body.error.code], [id, -31004]);
    }
    assert.equal(servers.reduce((n, s) => n + s.stats.requests.filter((r) => r.rpcMethod === 'initialize').length, 0), 3, 'each initialize reached a backend');
    const health = await fetch(`${gw.adminUrl}/healthz`);
    assert.equal(health.status, 200, 'the process is up');
  });
});
