import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseConfig } from '../../../src/config/index.js';
import { findIssue, issuesOf, MINIMAL } from './policies.js';

const KEY = Buffer.alloc(32, 7).toString('base64');
const ENV = { SNAPSHOT_KEY: KEY, REDIS_PASSWORD: 's3cret' };

function storeOf(yaml: string, env: NodeJS.ProcessEnv = ENV) {
  return parseConfig(`${MINIMAL}${yaml}`, { env }).store;
}

describe('store policy', () => {
  it('is the memory store unless a policy says otherwise', () => {
    assert.deepEqual(parseConfig(MINIMAL, { env: {} }).store, { type: 'memory' });
  });

  it('fills the Redis defaults and takes secrets from the environment', () => {
    const store = storeOf(`store:
  type: redis
  url: redis://10.0.0.7:6379/0
  password: "\${REDIS_PASSWORD}"
  snapshotKeys: [{ id: k1, key: "\${SNAPSHOT_KEY}" }]
`);
    assert.deepEqual(store, {
      type: 'redis',
      mode: 'standalone',
      url: 'redis://10.0.0.7:6379/0',
      password: 's3cret',
      keyPrefix: 'taskgate:',
      commandTimeout: 500,
      connectTimeout: 2000,
      waitReplicas: { replicas: 0, timeout: 100 },
      pollCacheTasks: 50_000,
      snapshotKeys: [{ id: 'k1', key: KEY }],
    });
  });

  it('reads cluster nodes and sentinels as host and port', () => {
    const cluster = storeOf(`store:
  type: redis
  mode: cluster
  nodes: ["10.0.0.7:6379", "[fd00::7]:6380"]
  tls: { servername: redis.internal }
  snapshotKeys: [{ id: k1, key: "\${SNAPSHOT_KEY}" }]
`);
    assert.ok(cluster.type === 'redis');
    assert.deepEqual(cluster.nodes, [{ host: '10.0.0.7', port: 6379 }, { host: 'fd00::7', port: 6380 }]);
    assert.deepEqual(cluster.tls, { servername: 'redis.internal' });
    const sentinel = storeOf(`store:
  type: redis
  mode: sentinel
  sentinels: ["10.0.0.8:26379"]
  name: taskgate
  snapshotKeys: [{ id: k1, key: "\${SNAPSHOT_KEY}" }]
`);
    assert.ok(sentinel.type === 'redis');
    assert.deepEqual(sentinel.sentinels, [{ host: '10.0.0.8', port: 26379 }]);
  });

  it('reports every problem of a Redis store at once, by path', () => {
    const issues = issuesOf(`${MINIMAL}store:
  type: redis
  mode: cluster
  url: redis://user:pw@10.0.0.7:6379
  keyPrefix: "{tg}:"
  nodes: ["10.0.0.7"]
  commandTimeout: 100ms
  waitReplicas: { replicas: 1, timeout: 200ms }
  snapshotKeys:
    - { id: k1, key: "c2hvcnQ=" }
    - { id: k1, key: "${KEY}" }
`);
    assert.match(findIssue(issues, 'store.url').message, /must not contain credentials/);
    assert.match(findIssue(issues, 'store.keyPrefix').message, /without "\{", "\}"/);
    assert.match(findIssue(issues, 'store.nodes[0]').message, /host:port/);
    assert.match(findIssue(issues, 'store.snapshotKeys[0].key').message, /32 random bytes/);
    assert.match(findIssue(issues, 'store.snapshotKeys[1].id').message, /duplicate of snapshotKeys\[0\]\.id/);
    assert.match(findIssue(issues, 'store.waitReplicas.timeout').message, /shorter than commandTimeout/);
  });

  it('asks each mode for the keys that locate Redis, and for a snapshot key', () => {
    const standalone = issuesOf(`${MINIMAL}store: { type: redis, nodes: ["10.0.0.7:6379"] }\n`);
    assert.equal(findIssue(standalone, 'store.url').message, 'required in standalone mode');
    assert.equal(findIssue(standalone, 'store.nodes').message, 'not used in standalone mode');
    assert.equal(findIssue(standalone, 'store.snapshotKeys').message, 'required');
    const sentinel = issuesOf(`${MINIMAL}store: { type: redis, mode: sentinel, sentinels: ["10.0.0.8:26379"], snapshotKeys: [] }\n`);
    assert.equal(findIssue(sentinel, 'store.name').message, 'required in sentinel mode');
    assert.match(findIssue(sentinel, 'store.snapshotKeys').message, /at least one key/);
    const tls = issuesOf(`${MINIMAL}store: { type: redis, url: "rediss://10.0.0.7:6380", tls: false, snapshotKeys: [{ id: k1, key: "${KEY}" }] }\n`);
    assert.equal(findIssue(tls, 'store.tls').message, 'a rediss:// url needs TLS; remove tls: false');
  });

  it('never echoes a secret from the environment in a message', () => {
    const issues = issuesOf(`${MINIMAL}store: { type: redis, url: "redis://a:6379", snapshotKeys: [{ id: k1, key: "\${SNAPSHOT_KEY}" }] }\n`, { SNAPSHOT_KEY: 'not-base64-but-secret' });
    const issue = findIssue(issues, 'store.snapshotKeys[0].key');
    assert.ok(!issue.message.includes('not-base64-but-secret'));
  });
});
