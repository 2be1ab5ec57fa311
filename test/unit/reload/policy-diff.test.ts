/**
 * What a reload reports as changed (key paths, never values) and which changes it refuses
 * because they need a restart.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { parseConfig } from '../../../src/config/index.js';
import { changedPaths, comparePolicies, isRestartOnly } from '../../../src/reload/policy-diff.js';

const BASE = {
  publicUrl: 'https://mcp.example.com',
  auth: { mode: 'none' },
  upstreams: { tools: { instances: ['http://10.0.0.1:3000', 'http://10.0.0.2:3000'] } },
  routes: [{ path: '/mcp', upstream: 'tools' }],
};

function policy(overrides: Record<string, unknown> = {}, env: NodeJS.ProcessEnv = {}) {
  return parseConfig(JSON.stringify({ ...BASE, ...overrides }), { env, source: 'test' });
}

describe('changedPaths', () => {
  it('names the deepest key that differs, items added or removed, and keys added or removed', () => {
    assert.deepEqual(changedPaths({ a: { b: 1, c: 2 } }, { a: { b: 1, c: 3 } }), ['a.c']);
    assert.deepEqual(changedPaths({ l: [1, 2] }, { l: [1, 2, 3] }), ['l[2]']);
    assert.deepEqual(changedPaths({ l: [1, 2] }, { l: [1] }), ['l[1]']);
    assert.deepEqual(changedPaths({ a: 1 }, { a: 1, b: { c: 1 } }), ['b']);
    assert.deepEqual(changedPaths({ m: { 'odd name': 1 } }, { m: {} }), ['m["odd name"]']);
    assert.deepEqual(changedPaths({ a: [{ x: 1 }] }, { a: [{ x: 1 }] }), []);
  });

  it('never carries a value, not even one substituted from the environment', () => {
    const before = policy({ upstreams: { tools: { instances: ['http://10.0.0.1:3000'], credentials: { type: 'bearer', token: '${TOKEN}' } } } }, { TOKEN: 'first-secret-value' });
    const after = policy({ upstreams: { tools: { instances: ['http://10.0.0.1:3000'], credentials: { type: 'bearer', token: '${TOKEN}' } } } }, { TOKEN: 'second-secret-value' });
    const paths = changedPaths(before, after);
    assert.deepEqual(paths, ['upstreams.tools.credentials.token']);
    assert.doesNotMatch(JSON.stringify(paths), /secret-value/);
  });
});

describe('comparePolicies', () => {
  it('lets routes, upstreams, auth, tasks, logging.level and most limits change live', () => {
    const next = policy({
      routes: [{ path: '/mcp', upstream: 'tools' }, { path: '/b', upstream: 'tools' }],
      upstreams: { tools: { instances: ['http://10.0.0.1:3000'] } },
      tasks: { maxLivePerPrincipal: 5, poll: { mode: 'reject' }, tools: { scan: { readOnce: true } } },
      logging: { level: 'debug' },
      limits: { requestTimeout: '30s', maxResponseBytes: '1MiB' },
      admin: { readiness: { store: 'reported' } },
      listen: { allowedHosts: ['mcp.example.com'] },
    });
    const change = comparePolicies(policy(), next);
    assert.deepEqual(change.restartOnly, []);
    assert.ok(change.changed.includes('routes[1]'));
    assert.ok(change.changed.includes('upstreams.tools.instances[1]'));
    assert.ok(change.changed.includes('logging.level'));
  });

  it('marks the keys fixed at start', () => {
    const next = policy({
      listen: { port: 8081 },
      admin: { host: '0.0.0.0' },
      store: { type: 'redis', url: 'redis://127.0.0.1:6379', snapshotKeys: [{ id: 'k1', key: Buffer.alloc(32, 7).toString('base64') }] },
      limits: { maxBodyBytes: '2MiB' },
      logging: { buffered: true },
      audit: { stdout: false },
      tasks: { maxRecords: 10 },
    });
    const { restartOnly } = comparePolicies(policy(), next);
    for (const path of ['listen.port', 'admin.host', 'limits.maxBodyBytes', 'logging.buffered', 'audit.stdout', 'tasks.maxRecords']) {
      assert.ok(restartOnly.includes(path), `${path} in ${restartOnly.join(', ')}`);
    }
    assert.ok(restartOnly.some((path) => path.startsWith('store.')), 'a store change needs a restart');
  });

  it('matches whole keys only', () => {
    assert.equal(isRestartOnly('store'), true);
    assert.equal(isRestartOnly('store.url'), true);
    assert.equal(isRestartOnly('listen.portable'), false);
    assert.equal(isRestartOnly('listen.allowedHosts[0]'), false);
  });
});
