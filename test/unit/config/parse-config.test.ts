import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { ConfigError, configSchema, loadConfig, parseConfig, validateConfig } from '../../../src/config/index.js';
import { findIssue, issuesOf, MINIMAL } from './policies.js';

const DURATION_HINT = 'expected a duration such as 500ms, 30s, 5m or 1h (a whole number and a unit: ms, s, m, h, d)';

const configDir = fileURLToPath(new URL('../../../config/', import.meta.url));

describe('parseConfig', () => {
  it('fills every default into the minimal policy', () => {
    const config = parseConfig(MINIMAL, { env: {} });
    assert.deepEqual(config, {
      listen: {
        host: '0.0.0.0',
        port: 8080,
        allowedHosts: [],
        allowedOrigins: [],
        cors: { mode: 'allowed-origins', allowedHeaders: [], exposedHeaders: [], maxAge: 600_000 },
        trustProxy: false,
      },
      admin: { host: '127.0.0.1', port: 9090, readiness: { store: 'required' } },
      publicUrl: 'https://mcp.example.com',
      auth: { mode: 'none' },
      upstreams: {
        tools: {
          instances: ['http://127.0.0.1:3000'],
          timeouts: { connect: 5_000, headers: 30_000, body: 300_000 },
          cooldown: 10_000,
          connections: 128,
          credentials: { type: 'none' },
          bridge: 'auto',
        },
      },
      routes: [{ path: '/mcp', upstream: 'tools', upstreamPath: '/mcp', scopes: [] }],
      tasks: {
        ttl: { default: 600_000, max: 3_600_000 },
        maxLivePerPrincipal: 100,
        createRate: { limit: 120, window: 60_000 },
        maxResultWaitsPerPrincipal: 16,
        maxRecords: 1_000_000,
        statusMessageMaxLength: 512,
        poll: { mode: 'cached', tolerance: 50, floor: 0, default: 1000, abuseFactor: 20 },
        provided: { maxRunning: 1000, maxResultBytes: 1_048_576, lease: 15_000 },
        push: { maxSubscriptionsPerPrincipal: 16, maxTaskIdsPerSubscription: 100, bufferBytes: 262_144, stallTimeout: 30_000 },
        listPageSize: 50,
        tools: {},
      },
      toolLimits: { slotTtl: 600_000, tools: {} },
      store: { type: 'memory' },
      audit: { stdout: true, enumeration: { threshold: 20, window: 60_000, action: 'warn' } },
      limits: {
        maxBodyBytes: 1_048_576,
        maxHeaderBytes: 16_384,
        maxResponseBytes: 8_388_608,
        maxSseEventBytes: 8_388_608,
        requestTimeout: 0,
        drainTimeout: 10_000,
        // Finite by default: a slow client holds a connection 10 s at most, and there are at most 4096.
        headersTimeout: 10_000,
        keepAliveTimeout: 5_000,
        maxConnections: 4096,
      },
      logging: { level: 'info', buffered: false, flushInterval: 250 },
      tracing: { mode: 'none' },
      console: { enabled: false, tokens: [], principals: 'redacted', maxScan: 5000, maxSuspension: 86_400_000 },
    });
  });

  it('converts units and normalizes URLs, hosts and origins', () => {
    const config = parseConfig(
      `${MINIMAL}listen:
  allowedHosts: [MCP.Example.com, "[::1]"]
  allowedOrigins: ["HTTPS://Console.Example.com:443", "vscode-webview://abc"]
  trustProxy: [10.0.0.0/8, "::1", "fd00::/8"]
limits:
  maxBodyBytes: 2048
  maxHeaderBytes: "4096"
  requestTimeout: 2m
`.replace('http://127.0.0.1:3000', 'http://LOCALHOST:3000/'),
      { env: {} },
    );
    assert.deepEqual(config.listen.allowedHosts, ['mcp.example.com', '[::1]']);
    assert.deepEqual(config.listen.allowedOrigins, ['https://console.example.com', 'vscode-webview://abc']);
    assert.deepEqual(config.listen.trustProxy, ['10.0.0.0/8', '::1', 'fd00::/8']);
    assert.deepEqual(config.upstreams.tools?.instances, ['http://localhost:3000']);
    assert.equal(config.limits.maxBodyBytes, 2048);
    assert.equal(config.limits.maxHeaderBytes, 4096);
    assert.equal(config.limits.requestTimeout, 120_000);
  });

  it('returns a deeply frozen policy', () => {
    const config = parseConfig(MINIMAL, { env: {} });
    assert.ok(Object.isFrozen(config));
    assert.ok(Object.isFrozen(config.listen.allowedHosts));
    assert.ok(Object.isFrozen(config.upstreams.tools?.timeouts));
    assert.ok(Object.isFrozen(config.routes[0]));
    assert.throws(() => {
      (config.limits as { maxBodyBytes: number }).maxBodyBytes = 1;
    }, TypeError);
    assert.throws(() => {
      (config.routes as unknown as unknown[]).push({});
    }, TypeError);
  });

  it('reports an unknown key deep in the file with its path, line and column', () => {
    const issues = issuesOf(`publicUrl: https://mcp.example.com
upstreams:
  tools:
    instances: [http://127.0.0.1:3000]
    timeouts:
      connect: 5s
      conect: 5s
routes:
  - path: /mcp
    upstream: tools
auth: { mode: none }
`);
    assert.deepEqual(issues, [{ path: 'upstreams.tools.timeouts.conect', message: 'unknown key', line: 7, col: 7 }]);
  });

  it('reports a wrong value at the value, and a missing key at its parent', () => {
    const issues = issuesOf(`publicUrl: https://mcp.example.com
upstreams:
  tools:
    connections: many
routes:
  - path: /mcp
    upstream: tools
`);
    assert.deepEqual(findIssue(issues, 'upstreams.tools.connections'), {
      path: 'upstreams.tools.connections',
      message: 'Invalid input: expected number, received string',
      line: 4,
      col: 18,
    });
    assert.deepEqual(findIssue(issues, 'upstreams.tools.instances'), {
      path: 'upstreams.tools.instances',
      message: 'required',
      line: 3,
      col: 3,
    });
  });

  it('reports YAML, schema and cross-field problems together, in file order', () => {
    let error: unknown;
    try {
      parseConfig(
        `listen:
  port: 9090
publicUrl: ftp://mcp.example.com
upstreams:
  tools:
    instances: [http://127.0.0.1:3000, http://127.0.0.1:3000/]
    timeouts: { headers: 30 }
routes:
  - path: /mcp
    upstream: tool
limits:
  maxBodyBytes: 1MB
  maxBodyBytes: 2MiB
logging: { level: verbose }
auth: { mode: none }
`,
        { env: {}, source: 'many.yaml' },
      );
    } catch (err) {
      error = err;
    }
    assert.ok(error instanceof ConfigError);
    assert.equal(error.name, 'ConfigError');
    assert.equal(error.source, 'many.yaml');
    assert.deepEqual(
      error.issues.map((i) => `${i.line}:${i.col} ${i.path}: ${i.message}`),
      [
        '2:9 listen.port: must differ from admin.port (9090 by default) unless one of them is 0',
        '3:12 publicUrl: expected an http or https URL',
        '6:40 upstreams.tools.instances[1]: duplicate of instance [0]',
        `7:26 upstreams.tools.timeouts.headers: ${DURATION_HINT}`,
        '10:15 routes[0].upstream: names no defined upstream; defined upstreams: tools',
        '13:3 limits.maxBodyBytes: Map keys must be unique',
        '14:19 logging.level: Invalid option: expected one of "fatal"|"error"|"warn"|"info"|"debug"|"trace"|"silent"',
      ],
    );
    assert.match(error.message, /^many\.yaml: invalid policy, 7 problems:\n/);
    assert.match(error.message, /\n {2}many\.yaml:10:15 routes\[0\]\.upstream: names no defined upstream/);
    assert.equal(error.message.split('\n').length, 8);
  });

  it('reports an empty file and a file that is not a map', () => {
    assert.deepEqual(issuesOf('# nothing here\n'), [
      { path: '', message: 'the policy is empty; it needs at least publicUrl, upstreams and routes' },
    ]);
    assert.deepEqual(issuesOf('- 1\n'), [
      { path: '', message: 'Invalid input: expected object, received array', line: 1, col: 1 },
    ]);
  });

  it('reports each missing required key', () => {
    const issues = issuesOf('listen: { port: 1 }\n');
    assert.deepEqual(
      issues.map((i) => `${i.path}: ${i.message}`),
      ['publicUrl: required', 'auth: required', 'upstreams: required', 'routes: required'],
    );
  });

  it('rejects bad values in each section', () => {
    const issues = issuesOf(`listen:
  host: "not a host"
  allowedHosts: [mcp.example.com:443]
  allowedOrigins: [https://a.example.com/path]
  trustProxy: [10.0.0.0/33]
admin: { port: 70000 }
publicUrl: https://mcp.example.com/mcp?x=1
upstreams:
  tools:
    instances: [http://user:pw@10.0.0.5:3000, http://10.0.0.6:3000/mcp, not a url]
    connections: 0
  bad.name:
    instances: []
routes:
  - { path: /mcp?x, upstream: tools }
  - { path: /b, upstream: tools, upstreamPath: relative }
limits:
  maxHeaderBytes: 0
  drainTimeout: 30
auth: { mode: basic }
`);
    const got = Object.fromEntries(issues.map((i) => [i.path, i.message]));
    assert.deepEqual(Object.keys(got).sort(), [
      'admin.port',
      'auth.mode',
      'limits.drainTimeout',
      'limits.maxHeaderBytes',
      'listen.allowedHosts[0]',
      'listen.allowedOrigins[0]',
      'listen.host',
      'listen.trustProxy[0]',
      'publicUrl',
      'routes[0].path',
      'routes[1].upstreamPath',
      'upstreams.tools.connections',
      'upstreams.tools.instances[0]',
      'upstreams.tools.instances[1]',
      'upstreams.tools.instances[2]',
      'upstreams["bad.name"]',
      'upstreams["bad.name"].instances',
    ]);
    assert.match(got['upstreams["bad.name"]'] ?? '', /^an upstream name is/);
    assert.equal(got['upstreams.tools.instances[0]'], 'must not contain credentials');
    assert.equal(got['publicUrl'], 'must not have a query or fragment');
    assert.equal(got['limits.maxHeaderBytes'], 'must be at least 1 byte');
  });

  it('accepts publicUrl with a path, and rejects an empty query', () => {
    assert.equal(parseConfig(MINIMAL.replace('mcp.example.com', 'example.com/gw'), { env: {} }).publicUrl, 'https://example.com/gw');
    assert.equal(findIssue(issuesOf(MINIMAL.replace('mcp.example.com', 'example.com/?')), 'publicUrl').message, 'must not have a query or fragment');
  });
});

describe('loadConfig', () => {
  const files = readdirSync(configDir).filter((f) => f.endsWith('.yaml'));

  it('finds the committed policies', () => {
    assert.ok(files.includes('taskgate.example.yaml') && files.includes('minimal.yaml'), files.join(', '));
  });

  for (const file of files) {
    it(`validates config/${file} without any environment`, async () => {
      await loadConfig(join(configDir, file), {});
    });
  }

  it('reports an unreadable file as a ConfigError', async () => {
    await assert.rejects(loadConfig(join(configDir, 'does-not-exist.yaml'), {}), (err: unknown) => {
      assert.ok(err instanceof ConfigError);
      assert.deepEqual(err.issues, [{ path: '', message: 'cannot read the policy file (ENOENT)' }]);
      return true;
    });
  });
});

describe('validateConfig', () => {
  it('validates a policy built in code, cross-field checks included', () => {
    const input = { publicUrl: 'https://x.example', auth: { mode: 'none' }, upstreams: { a: { instances: ['http://a:1'] } }, routes: [{ path: '/m', upstream: 'a' }] };
    assert.equal(validateConfig(input).routes[0]?.upstreamPath, '/m');
    assert.throws(
      () => validateConfig({ ...input, routes: [{ path: '/m', upstream: 'b' }] }),
      (err: unknown) => err instanceof ConfigError && err.issues[0]?.path === 'routes[0].upstream',
    );
  });

  it('leaves configSchema usable on its own, without the relation checks', () => {
    const input = { publicUrl: 'https://x.example', auth: { mode: 'none' }, upstreams: { a: { instances: ['http://a:1'] } }, routes: [{ path: '/m', upstream: 'b' }] };
    assert.equal(configSchema.safeParse(input).success, true);
  });
});
