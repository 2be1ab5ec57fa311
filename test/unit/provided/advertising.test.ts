/**
 * What initialize, tools/list and server/discover gain when the gateway runs an upstream's tasks
 * (src/provided/advertising.ts), and what those answers teach it of the backend. The request
 * is the part of the request context the rewrite reads (its route's upstream, the policy, the
 * era), over a policy parsed as the gateway parses one.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { TaskRequest } from '../../../src/tasks/task-request.js';
import { taskRequest, testBackendRoute } from '../../support/task-request.js';
import { parseConfig, type Config } from '../../../src/config/index.js';
import type { Era } from '../../../src/mcp/era.js';
import { ADVERTISING_METHODS, advertiseProvidedTasks } from '../../../src/provided/advertising.js';
import { BackendSupport } from '../../../src/provided/backend-support.js';
import { LEGACY_WIRE, MODERN_WIRE } from '../../../src/task-model/task-wire.js';

const EXTENSION = 'io.modelcontextprotocol/tasks';

function policy(providedTasks: string | undefined): Config {
  return parseConfig(
    `publicUrl: https://mcp.example.com
auth: { mode: none }
upstreams:
  tools:
    instances: [http://127.0.0.1:3000]
${providedTasks === undefined ? '' : `    providedTasks: ${providedTasks}\n`}routes:
  - path: /mcp
    upstream: tools
`,
    { env: {} },
  );
}

const RUNS_SCAN = policy('{ tools: [slow_scan] }');
const RUNS_NONE = policy(undefined);

function requestOn(config: Config, era: Era | undefined): TaskRequest {
  return taskRequest({ era, route: testBackendRoute({ config: config.upstreams.tools! }) });
}

/** advertiseProvidedTasks on a copy of `result`: whether it changed, and the copy. */
function advertise(method: string, result: Record<string, unknown>, opts: { config?: Config; era?: Era; support?: BackendSupport } = {}) {
  const copy = structuredClone(result);
  const changed = advertiseProvidedTasks(opts.support ?? new BackendSupport(), requestOn(opts.config ?? RUNS_SCAN, opts.era ?? 'legacy'), method, copy);
  return { changed, result: copy };
}

describe('advertising provided tasks', () => {
  it('rewrites the results of initialize, tools/list and server/discover only', () => {
    assert.deepEqual([...ADVERTISING_METHODS].sort(), ['initialize', 'server/discover', 'tools/list']);
    for (const method of ['tools/call', 'resources/list', 'tasks/list', 'ping']) {
      const { changed, result } = advertise(method, { capabilities: {}, tools: [{ name: 'slow_scan' }] });
      assert.equal(changed, false, method);
      assert.deepEqual(result, { capabilities: {}, tools: [{ name: 'slow_scan' }] }, method);
    }
  });

  it('changes nothing of an upstream the gateway runs no tasks for', () => {
    const support = new BackendSupport();
    for (const [method, era] of [['initialize', 'legacy'], ['tools/list', 'legacy'], ['server/discover', 'modern']] as const) {
      const result = { capabilities: {}, tools: [{ name: 'slow_scan' }] };
      const advertised = advertise(method, result, { config: RUNS_NONE, era, support });
      assert.equal(advertised.changed, false, method);
      assert.deepEqual(advertised.result, result, method);
    }
    assert.equal(support.provides({ tools: 'all', promoteAfter: 0, timeout: 1 }, 'tools', 'slow_scan', LEGACY_WIRE), true, 'nor learns from it');
  });
});

describe('initialize (2025-11-25)', () => {
  it('adds the tasks capability: cancel and task-augmented tools/call', () => {
    const { changed, result } = advertise('initialize', { protocolVersion: '2025-11-25', capabilities: { tools: { listChanged: true } }, serverInfo: { name: 'b', version: '1' } });
    assert.equal(changed, true);
    assert.deepEqual(result.capabilities, { tools: { listChanged: true }, tasks: { cancel: {}, requests: { tools: { call: {} } } } });
    assert.deepEqual(result.serverInfo, { name: 'b', version: '1' }, 'the rest as the backend sent it');
  });

  it('keeps what the backend already declared of the tasks capability', () => {
    const tasks = { list: {}, cancel: { note: 'own' }, requests: { tools: { call: { x: 1 } }, sampling: { createMessage: {} } } };
    const { result } = advertise('initialize', { capabilities: { tasks } });
    assert.deepEqual((result.capabilities as { tasks: unknown }).tasks, tasks);
  });

  it('makes objects of a capabilities tree the backend sent malformed, at every level', () => {
    for (const capabilities of [undefined, null, 'tasks', 7, [], { tasks: true }, { tasks: [] }, { tasks: { cancel: true, requests: 'all' } }, { tasks: { requests: { tools: [] } } }]) {
      const { changed, result } = advertise('initialize', capabilities === undefined ? {} : { capabilities });
      assert.equal(changed, true);
      const tasks = (result.capabilities as { tasks: { cancel: unknown; requests: { tools: { call: unknown } } } }).tasks;
      assert.deepEqual(tasks.cancel, {}, JSON.stringify(capabilities));
      assert.deepEqual(tasks.requests.tools.call, {}, JSON.stringify(capabilities));
    }
  });
});

describe('tools/list (2025-11-25)', () => {
  it('marks each tool the gateway runs taskSupport: optional, keeping the rest of execution, and leaves the others', () => {
    const { changed, result } = advertise('tools/list', {
      tools: [
        { name: 'slow_scan', inputSchema: { type: 'object' }, execution: { other: 'kept' } },
        { name: 'quick', inputSchema: { type: 'object' } },
      ],
      nextCursor: 'page-2',
    });
    assert.equal(changed, true);
    assert.deepEqual(result, {
      tools: [
        { name: 'slow_scan', inputSchema: { type: 'object' }, execution: { other: 'kept', taskSupport: 'optional' } },
        { name: 'quick', inputSchema: { type: 'object' } },
      ],
      nextCursor: 'page-2',
    });
  });

  it('leaves a tool the backend runs as a task itself as the backend listed it, and remembers that', () => {
    const support = new BackendSupport();
    const { changed, result } = advertise('tools/list', { tools: [{ name: 'slow_scan', execution: { taskSupport: 'required' } }] }, { support });
    assert.equal(changed, false);
    assert.deepEqual(result.tools, [{ name: 'slow_scan', execution: { taskSupport: 'required' } }]);
    assert.equal(support.provides({ tools: ['slow_scan'], promoteAfter: 0, timeout: 1 }, 'tools', 'slow_scan', LEGACY_WIRE), false);
  });

  it('learns every page it sees, one after another', () => {
    const support = new BackendSupport();
    advertise('tools/list', { tools: [{ name: 'slow_scan', execution: { taskSupport: 'optional' } }], nextCursor: 'p2' }, { support });
    const second = advertise('tools/list', { tools: [{ name: 'slow_scan', execution: { taskSupport: 'forbidden' } }] }, { support });
    assert.equal(second.changed, true, 'the backend stopped offering it: the gateway runs it again');
    assert.deepEqual(second.result.tools, [{ name: 'slow_scan', execution: { taskSupport: 'optional' } }]);
  });

  it('marks a tool whose execution is malformed, replacing it, and skips entries that are no named tool', () => {
    const { changed, result } = advertise('tools/list', {
      tools: [null, 'slow_scan', 42, [], { name: 7 }, { title: 'nameless' }, { name: 'slow_scan', execution: 'fast' }, { name: 'slow_scan', execution: ['optional'] }],
    });
    assert.equal(changed, true);
    assert.deepEqual(result.tools, [
      null,
      'slow_scan',
      42,
      [],
      { name: 7 },
      { title: 'nameless' },
      { name: 'slow_scan', execution: { taskSupport: 'optional' } },
      { name: 'slow_scan', execution: { taskSupport: 'optional' } },
    ]);
  });

  it('changes nothing of a list that is no list, nor of a 2026 tools/list (2026 advertises in server/discover)', () => {
    for (const tools of [undefined, null, 'slow_scan', { name: 'slow_scan' }]) {
      const { changed } = advertise('tools/list', tools === undefined ? {} : { tools });
      assert.equal(changed, false, JSON.stringify(tools));
    }
    const support = new BackendSupport();
    const modern = advertise('tools/list', { tools: [{ name: 'slow_scan', execution: { taskSupport: 'required' } }] }, { era: 'modern', support });
    assert.equal(modern.changed, false);
    assert.equal(support.provides({ tools: ['slow_scan'], promoteAfter: 0, timeout: 1 }, 'tools', 'slow_scan', LEGACY_WIRE), true, 'and learns nothing from it');
  });

  it('marks every tool under tools: all', () => {
    const { result } = advertise('tools/list', { tools: [{ name: 'a' }, { name: 'b' }] }, { config: policy('{ tools: all }') });
    assert.deepEqual(result.tools, [{ name: 'a', execution: { taskSupport: 'optional' } }, { name: 'b', execution: { taskSupport: 'optional' } }]);
  });
});

describe('server/discover (2026-07-28)', () => {
  it('adds the tasks extension, keeping the backend\'s other extensions and capabilities', () => {
    const { changed, result } = advertise('server/discover', { capabilities: { tools: {}, extensions: { 'example.com/other': { v: 1 } } } }, { era: 'modern' });
    assert.equal(changed, true);
    assert.deepEqual(result.capabilities, { tools: {}, extensions: { 'example.com/other': { v: 1 }, [EXTENSION]: {} } });
  });

  it('keeps the backend\'s own declaration, and learns from it that the backend runs its tasks', () => {
    const support = new BackendSupport();
    const { result } = advertise('server/discover', { capabilities: { extensions: { [EXTENSION]: { own: true } } } }, { era: 'modern', support });
    assert.deepEqual(result.capabilities, { extensions: { [EXTENSION]: { own: true } } });
    assert.equal(support.provides({ tools: 'all', promoteAfter: 0, timeout: 1 }, 'tools', 'slow_scan', MODERN_WIRE), false);
    advertise('server/discover', { capabilities: {} }, { era: 'modern', support });
    assert.equal(support.provides({ tools: 'all', promoteAfter: 0, timeout: 1 }, 'tools', 'slow_scan', MODERN_WIRE), true, 'a later discover without it: the gateway runs them again');
  });

  it('takes a declaration that is no object for none, and replaces it', () => {
    for (const declared of [true, 'yes', 1, [], null]) {
      const support = new BackendSupport();
      const { result } = advertise('server/discover', { capabilities: { extensions: { [EXTENSION]: declared } } }, { era: 'modern', support });
      assert.deepEqual(result.capabilities, { extensions: { [EXTENSION]: {} } }, JSON.stringify(declared));
      assert.equal(support.provides({ tools: 'all', promoteAfter: 0, timeout: 1 }, 'tools', 'x', MODERN_WIRE), true, JSON.stringify(declared));
    }
  });

  it('builds the capabilities and extensions when the backend sent none, or malformed ones', () => {
    for (const result of [{}, { capabilities: 'none' }, { capabilities: { extensions: [] } }]) {
      const advertised = advertise('server/discover', result, { era: 'modern' });
      assert.deepEqual((advertised.result.capabilities as { extensions: unknown }).extensions, { [EXTENSION]: {} }, JSON.stringify(result));
    }
  });

  it('changes nothing of a server/discover in a 2025 session', () => {
    const { changed, result } = advertise('server/discover', { capabilities: {} }, { era: 'legacy' });
    assert.equal(changed, false);
    assert.deepEqual(result, { capabilities: {} });
  });
});
