/**
 * The limits stage (src/limits/limits-stage.ts) against the real memory limit store: how the
 * policy compiles into rules, which messages the stage must see, and the admit path for
 * tools/call limits and the enumeration suspension. The request stands for what the
 * stage reads of them: a plain LimitedRequest, and the admission the pipeline gives back when
 * the client's response closes.
 */
import { afterEach, beforeEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import pino from 'pino';
import { auditSchema, type AuditConfig } from '../../../src/config/sections/audit.js';
import { toolLimitsSchema } from '../../../src/config/sections/tool-limits.js';
import { GatewayError } from '../../../src/errors.js';
import { CallHold } from '../../../src/limits/call-hold.js';
import { LimitsStage, type Admission, type LimitedRequest } from '../../../src/limits/limits-stage.js';
import { InFlight } from '../../../src/lifecycle/in-flight.js';
import type { Era } from '../../../src/mcp/era.js';
import type { McpMessage } from '../../../src/mcp/jsonrpc.js';
import { createMetrics, type GatewayMetrics } from '../../../src/observability/metrics.js';
import { MemoryLimitStore } from '../../../src/store/memory-limit-store.js';
import { waitFor } from '../../support/wait.js';
import { wireOf } from '../../../src/task-model/task-wire.js';

let limits: MemoryLimitStore;
let metrics: GatewayMetrics;
beforeEach(() => {
  limits = new MemoryLimitStore();
  metrics = createMetrics({ defaultMetrics: false });
});

const SUSPEND: AuditConfig['enumeration'] = auditSchema.parse({ enumeration: { action: 'suspend', threshold: 2 } }).enumeration;
const WARN: AuditConfig['enumeration'] = auditSchema.parse({}).enumeration;

function stage(policy: unknown, enumeration = WARN, options: { operatorSuspensions?: boolean } = {}): LimitsStage {
  return new LimitsStage(toolLimitsSchema.parse(policy), enumeration, { limits, metrics }, options);
}

interface Call {
  /** The request as the stage reads it; the stage writes its refusal there. */
  readonly request: LimitedRequest;
  /** What admitting it gave (a slot to give back), once admitted. */
  admission?: Admission;
  /** The client's response closing: what the pipeline then does with the admission. */
  readonly close: () => void;
}

function call(message: McpMessage, opts: { principal?: string; era?: Era; inFlight?: InFlight } = {}): Call {
  const request: LimitedRequest = { mcp: { message }, wire: wireOf(opts.era ?? 'modern'), principalKey: opts.principal, log: pino({ level: 'silent' }), route: { inFlight: opts.inFlight ?? new InFlight() } };
  const c: Call = {
    request,
    close: () => {
      if (c.admission?.kind === 'release') c.admission.release();
      else c.admission?.hold.responseClosed();
    },
  };
  return c;
}

/** The hold a 2025 call was admitted with, if any. */
function holdOf(c: Call): CallHold | undefined {
  return c.admission?.kind === 'hold' ? c.admission.hold : undefined;
}

function toolCall(name: unknown = 'scan', opts: Parameters<typeof call>[1] = {}): Call {
  return call({ kind: 'request', id: 1, method: 'tools/call', params: { name, arguments: {} } }, opts);
}

/** Admits `c`; the refusal it is rejected with, or undefined once admitted. */
async function refusalOf(s: LimitsStage, c: Call): Promise<GatewayError | undefined> {
  try {
    c.admission = await s.admit(c.request);
    return undefined;
  } catch (error) {
    assert.ok(error instanceof GatewayError, String(error));
    return error;
  }
}

describe('LimitsStage.governs', () => {
  const s = stage({});
  const request = (method: string): McpMessage => ({ kind: 'request', id: 1, method });

  it('must see tools/call, every tasks/* and subscriptions/listen on their own', () => {
    for (const method of ['tools/call', 'tasks/get', 'tasks/result', 'tasks/cancel', 'tasks/list', 'tasks/update', 'tasks/anything-new', 'subscriptions/listen']) {
      assert.equal(s.governs(request(method)), true, method);
    }
  });

  it('lets everything else pass in a batch: other methods, look-alikes, notifications and responses', () => {
    for (const method of ['tools/list', 'initialize', 'tasks', 'Tools/call', 'TASKS/get', 'tools/call ', 'x/tasks/get', 'subscriptions/listen/x']) {
      assert.equal(s.governs(request(method)), false, method);
    }
    assert.equal(s.governs({ kind: 'notification', method: 'tools/call' }), false);
    assert.equal(s.governs({ kind: 'notification', method: 'tasks/get' }), false);
    assert.equal(s.governs({ kind: 'response', id: 1, result: {} }), false);
  });
});

describe('LimitsStage.admit: tools/call rates', () => {
  it('costs nothing, not even a promise, when no limit applies', () => {
    const s = stage({});
    assert.equal(s.admit(toolCall().request), undefined);
    assert.equal(stage({ tools: { other: { rate: { limit: 1 } } } }).admit(toolCall('scan').request), undefined, 'another tool\'s limit');
    assert.equal(stage({ rate: { limit: 1 } }).admit(call({ kind: 'request', id: 1, method: 'tools/list' }).request), undefined);
    assert.equal(stage({ rate: { limit: 1 } }).admit(call({ kind: 'notification', method: 'tools/call' }).request), undefined);
  });

  it('admits up to the rate, then refuses 429 with Retry-After, the rule in the error\'s data, counted and kept for the audit', async () => {
    const s = stage({ rate: { limit: 2, window: '1h' } });
    assert.equal(await refusalOf(s, toolCall()), undefined);
    assert.equal(await refusalOf(s, toolCall()), undefined);
    const refused = toolCall();
    const error = await refusalOf(s, refused);
    assert.equal(error?.code, 'TG_ERR_RATE_LIMITED');
    assert.equal(error?.detail, 'tools/call rate limit reached');
    assert.deepEqual(error?.data, { limit: 'rate', scope: 'global', max: 2, windowMs: 3_600_000 });
    const retryAfter = Number(error?.headers['retry-after']);
    assert.ok(Number.isInteger(retryAfter) && retryAfter >= 1 && retryAfter <= 3600, String(retryAfter));
    assert.deepEqual(refused.request.limitRefusal, { limit: 'rate', scope: 'global' });
    const counted = (await metrics.limitRejections.get()).values;
    assert.deepEqual(counted.map((v) => [v.labels, v.value]), [[{ limit: 'rate', scope: 'global' }, 1]]);
  });

  it('counts each principal apart, and every unauthenticated caller as the one principal "anonymous"', async () => {
    const s = stage({ rate: { limit: 1, window: '1h' } });
    assert.equal(await refusalOf(s, toolCall('scan', { principal: 'alice' })), undefined);
    assert.equal(await refusalOf(s, toolCall('scan', { principal: 'bob' })), undefined);
    assert.ok(await refusalOf(s, toolCall('scan', { principal: 'alice' })));
    assert.equal(await refusalOf(s, toolCall('scan')), undefined);
    assert.ok(await refusalOf(s, toolCall('scan')), 'a second anonymous caller shares the count');
    assert.ok(await refusalOf(s, toolCall('scan', { principal: 'anonymous' })), 'the key an anonymous caller is counted under');
  });

  it('holds a tool to its own limits and the global ones, naming the tool\'s when both refuse', async () => {
    const s = stage({ rate: { limit: 3, window: '1h' }, tools: { scan: { rate: { limit: 1, window: '1h' } } } });
    assert.equal(await refusalOf(s, toolCall('scan')), undefined);
    const error = await refusalOf(s, toolCall('scan'));
    assert.equal(error?.detail, 'tools/call rate limit of this tool reached');
    assert.deepEqual(error?.data, { limit: 'rate', scope: 'tool', max: 1, windowMs: 3_600_000 });
    assert.equal(await refusalOf(s, toolCall('other')), undefined, 'other tools: the global limit alone');
    assert.equal(await refusalOf(s, toolCall('other')), undefined);
    const global = await refusalOf(s, toolCall('other'));
    assert.deepEqual(global?.data, { limit: 'rate', scope: 'global', max: 3, windowMs: 3_600_000 }, 'the refused scan counted against nothing');
  });

  it('holds a call with a name that is no string, or no name, to the global limits only', async () => {
    const s = stage({ rate: { limit: 4, window: '1h' }, tools: { scan: { rate: { limit: 1, window: '1h' } } } });
    for (const name of [undefined, 42, ['scan'], { name: 'scan' }]) assert.equal(await refusalOf(s, toolCall(name)), undefined, JSON.stringify(name));
    const odd = call({ kind: 'request', id: 1, method: 'tools/call', params: ['scan'] as never });
    assert.deepEqual((await refusalOf(s, odd))?.data, { limit: 'rate', scope: 'global', max: 4, windowMs: 3_600_000 });
  });

  it('keeps tool names that look like object keys to their own rules', async () => {
    const s = stage({ tools: { constructor: { rate: { limit: 1, window: '1h' } } } });
    assert.equal(s.admit(toolCall('toString').request), undefined);
    assert.equal(s.admit(toolCall('__proto__').request), undefined);
    assert.equal(await refusalOf(s, toolCall('constructor')), undefined);
    assert.equal((await refusalOf(s, toolCall('constructor')))?.detail, 'tools/call rate limit of this tool reached');
  });
});

describe('LimitsStage.admit: tools/call concurrency', () => {
  it('2026: holds the slot until the client\'s response closes (a closed stream is the cancellation)', async () => {
    const s = stage({ concurrency: 1 });
    const first = toolCall('scan', { era: 'modern' });
    assert.equal(await refusalOf(s, first), undefined);
    const second = await refusalOf(s, toolCall('scan', { era: 'modern' }));
    assert.equal(second?.detail, 'tools/call concurrency limit reached');
    assert.deepEqual(second?.data, { limit: 'concurrency', scope: 'global', max: 1 });
    assert.equal(second?.headers['retry-after'], '1');
    assert.equal(holdOf(first), undefined, 'no hold for the backend in 2026');
    first.close();
    await waitFor(async () => (await refusalOf(s, toolCall('scan', { era: 'modern' }))) === undefined, 'the slot given back');
  });

  it('2025: the slot waits for the backend\'s answer after the client hung up, on the hold the call\'s upstream requests take', async () => {
    const s = stage({ concurrency: 1 });
    const inFlight = new InFlight();
    const first = toolCall('scan', { era: 'legacy', inFlight });
    assert.equal(await refusalOf(s, first), undefined);
    const hold = holdOf(first);
    assert.ok(hold instanceof CallHold);
    const upstreamEnded = hold.begin();
    first.close();
    assert.equal(inFlight.size, 1, 'the orphaned backend call counts as work on its policy snapshot');
    assert.ok(await refusalOf(s, toolCall('scan', { era: 'legacy' })), 'the backend still runs the call');
    upstreamEnded();
    assert.equal(inFlight.size, 0);
    await waitFor(async () => (await refusalOf(s, toolCall('scan', { era: 'legacy' }))) === undefined, 'the slot given back once the backend answered');
  });

  it('2025: cuts every call still held for its backend at shutdown', async () => {
    const s = stage({ concurrency: 5 });
    const calls = [toolCall('a', { era: 'legacy' }), toolCall('b', { era: 'legacy' })];
    for (const c of calls) await refusalOf(s, c);
    const holds = calls.map((c) => holdOf(c)!);
    for (const h of holds) h.signal.once('abort', h.begin());
    for (const c of calls) c.close();
    s.close();
    assert.deepEqual(holds.map((h) => h.signal.aborted), [true, true]);
    await waitFor(async () => (await Promise.all([1, 2, 3, 4, 5].map(() => refusalOf(s, toolCall('c', { era: 'legacy' }))))).every((e) => e === undefined), 'all five slots free');
  });

  it('refuses the call on the tool\'s concurrency before the global one, and takes no slot for a refused call', async () => {
    const s = stage({ concurrency: 2, tools: { scan: { concurrency: 1 } } });
    const held = toolCall('scan');
    await refusalOf(s, held);
    assert.deepEqual((await refusalOf(s, toolCall('scan')))?.data, { limit: 'concurrency', scope: 'tool', max: 1 });
    assert.equal(await refusalOf(s, toolCall('other')), undefined, 'the refused call took no global slot');
    held.close();
  });
});

describe('LimitsStage.admit: the enumeration suspension', () => {
  const tasksGet = (principal: string) => call({ kind: 'request', id: 1, method: 'tasks/get', params: { taskId: 'x' } }, { principal });
  const listen = (principal: string, params: unknown) => call({ kind: 'request', id: 1, method: 'subscriptions/listen', params: params as never }, { principal });

  async function suspend(owner: string): Promise<void> {
    for (let i = 0; i < SUSPEND.threshold; i++) await limits.countRefusal(owner, SUSPEND.threshold, SUSPEND.window, Date.now());
  }

  it('refuses every tasks/* of a suspended principal for the rest of the window, and lets others through', async () => {
    const s = stage({}, SUSPEND);
    assert.equal(await refusalOf(s, tasksGet('prober')), undefined, 'not suspended yet');
    await suspend('prober');
    const refused = tasksGet('prober');
    const error = await refusalOf(s, refused);
    assert.equal(error?.code, 'TG_ERR_RATE_LIMITED');
    assert.equal(error?.detail, 'task requests of this principal are suspended (by the enumeration detector or an operator)');
    assert.equal((error?.data as { limit: string }).limit, 'suspended');
    const retryAfter = Number(error?.headers['retry-after']);
    assert.ok(retryAfter >= 1 && retryAfter <= 60, String(retryAfter));
    assert.deepEqual(refused.request.limitRefusal, { limit: 'suspended', scope: 'tasks' });
    assert.equal(await refusalOf(s, tasksGet('owner')), undefined);
  });

  it('remembers a suspension on this replica: a suspended prober costs no round trip to the store', async () => {
    const s = stage({}, SUSPEND);
    await suspend('prober');
    assert.ok(await refusalOf(s, tasksGet('prober')));
    limits.clear(); // the store forgot it; this replica did not
    assert.ok(await refusalOf(s, tasksGet('prober')));
  });

  it('refuses a listen naming task handles, and not a listen without taskIds', async () => {
    const s = stage({}, SUSPEND);
    await suspend('prober');
    assert.ok(await refusalOf(s, listen('prober', { notifications: { taskIds: ['a'] } })));
    assert.ok(await refusalOf(s, listen('prober', { notifications: { taskIds: [] } })), 'decided on the key alone');
    for (const params of [undefined, null, 'x', { notifications: {} }, { notifications: ['taskIds'] }, { notifications: 'taskIds' }, { notifications: { toolsListChanged: true } }]) {
      assert.equal(s.admit(listen('prober', params).request), undefined, JSON.stringify(params));
    }
    assert.equal(s.admit(toolCall('scan', { principal: 'prober' }).request), undefined, 'tools/call is none of the suspension\'s business');
  });

  it('with operator suspensions (the console), checks tasks/* against the store whatever the detector\'s action', async () => {
    const s = stage({}, WARN, { operatorSuspensions: true });
    assert.equal(await refusalOf(s, tasksGet('someone')), undefined);
    await limits.suspend('someone', Date.now() + 3_600_000, Date.now());
    const error = await refusalOf(s, tasksGet('someone'));
    assert.equal((error?.data as { limit: string }).limit, 'suspended');
    assert.ok(Number(error?.headers['retry-after']) > 3000, 'the operator\'s end, not the memo\'s');
  });

  it('with operator suspensions, sees an early end on another replica within about a second, not at the suspension\'s end', async () => {
    const s = stage({}, SUSPEND, { operatorSuspensions: true });
    await limits.suspend('someone', Date.now() + 3_600_000, Date.now());
    assert.ok(await refusalOf(s, tasksGet('someone')));
    assert.equal(await limits.unsuspend('someone', Date.now()), true);
    await waitFor(async () => (await refusalOf(s, tasksGet('someone'))) === undefined, 'the un-suspension seen', 5000);
  });

  it('suspends nobody when the detector only warns', async () => {
    const s = stage({}, WARN);
    await suspend('prober');
    assert.equal(s.admit(tasksGet('prober').request), undefined);
  });
});

afterEach(() => limits.clear());
