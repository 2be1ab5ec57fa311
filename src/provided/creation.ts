/**
 * A tools/call of a tool the gateway runs as a task (DESIGN.md §9, "Creation"):
 *   2025-11-25  the client asked for a task (`params.task`): the task exists at once, the
 *               CreateTaskResult goes back, and the plain call runs on in the client's session;
 *   2026-07-28  the client declared the extension, and the server decides: the call is sent
 *               and, if the backend has not answered within promoteAfter, the client gets a
 *               CreateTaskResult while the call runs on; a faster answer goes back as it is.
 * At the modern limits (this replica's running calls, the owner's live tasks, the creation rate)
 * a call simply stays a plain call; a legacy client, who asked for a task, is refused instead.
 */
import type { TaskRequest } from '../tasks/task-request.js';
import { GatewayError, toWireError } from '../errors.js';
import type { JsonRpcRequest } from '../mcp/jsonrpc.js';
import { selectInstanceFor } from '../routing/route-stage.js';
import type { Instance } from '../routing/balancer.js';
import type { ProvidedState, JsonObject } from '../task-model/provided-state.js';
import type { TaskRecord } from '../task-model/task-record.js';
import { buildTaskRecord } from '../task-model/record-builder.js';
import { ttlWithin } from '../task-model/ttl-policy.js';
import { mintHandle } from '../tasks/handle.js';
import type { StageDeps } from '../tasks/extension-points.js';
import { clientProtocolVersion, countCreation, creationRefusal, creatorOf, ownerOf, taskOrigin, type LocalAnswer } from '../tasks/task-context.js';
import { isObject } from '../mcp/json.js';
import { taskFromRecord } from '../task-model/task-wire.js';
import type { ProvidedTasksPolicy } from './backend-support.js';
import type { CallOutcome } from './call-runner.js';
import { callTarget, callTraceOf, captureCall, failOverFor, startCall, type CallPlan } from './call-start.js';
import type { ProvidedContext } from './provided-context.js';
import { TaskDriver, type DriverSettings } from './task-driver.js';

export interface CreationContext {
  readonly ctx: ProvidedContext;
  readonly deps: StageDeps;
  readonly policy: ProvidedTasksPolicy;
  /** The driver settings of a call on this request's route. */
  readonly settings: DriverSettings;
}

/** Legacy: the task now, the call after. */
export async function createLegacyTask(c: CreationContext, request: TaskRequest, message: JsonRpcRequest, params: JsonObject, tool: string): Promise<LocalAnswer> {
  const { ctx, deps } = c;
  const owner = ownerOf(request);
  await countCreation(deps, owner);
  if (ctx.inFlight >= deps.policy.provided.maxRunning) throw new GatewayError('TG_ERR_GATEWAY_BUSY');
  const instance = await selectInstanceFor(request, deps.store);
  request.instance = instance;
  // A token-exchange upstream's token for the backend call, before any record is written.
  await request.route.prepareCredentials(request);
  const ttlMs = ttlWithin(deps.policy, tool, isObject(params.task) ? params.task.ttl : undefined);
  const record = newRecord(request, tool, ttlMs, instance, deps);
  const plan: CallPlan = { call: captureCall(request.clientHeaders, params), instance, session: request.sessionId, timeoutMs: Math.min(c.policy.timeout, ttlMs) };
  const state: ProvidedState = { call: plan.call, instance: instance.url, round: 0 };
  const created = await deps.store.createProvidedTask(record, state, deps.policy.maxLivePerPrincipal);
  if (created !== 'created') throw creationRefusal(deps, created);
  const driver = startDriver(c, request, plan, true);
  driver.attach(record);
  announce(c, request, record);
  c.ctx.legacyPush.created(record);
  return { status: 200, body: { jsonrpc: '2.0', id: message.id, result: request.wire.creationResult(taskFromRecord(record)) } };
}

/** Modern: the call first; a task only if it outlasts promoteAfter. */
export async function promoteModernCall(c: CreationContext, request: TaskRequest, message: JsonRpcRequest, params: JsonObject, tool: string): Promise<LocalAnswer | undefined> {
  const ttlMs = ttlWithin(c.deps.policy, tool);
  const held = await holdThenPromote(c, request, message, params, tool, { waitMs: c.policy.promoteAfter, timeoutMs: c.policy.timeout, ttlMs });
  if (held?.kind !== 'task') return held?.answer;
  return { status: 200, body: { jsonrpc: '2.0', id: message.id, result: request.wire.creationResult(taskFromRecord(held.record)) } };
}

/** How holdThenPromote holds a call. */
export interface HoldOptions {
  /** The call becomes a task once it has run this long without an answer. */
  readonly waitMs: number;
  /** The backend call's limit, capped by the task's lifetime. */
  readonly timeoutMs: number;
  /** The task's lifetime, already capped by the policy. */
  readonly ttlMs: number;
  /** The task is a background call (src/background/): its client reaches it through the gateway's status tool. */
  readonly background?: boolean;
}

export type HoldOutcome =
  | { readonly kind: 'task'; readonly record: TaskRecord }
  | { readonly kind: 'answer'; readonly answer: LocalAnswer };

/**
 * Sends the call and waits up to `waitMs` for its answer: in time, the answer goes back as it
 * is; past it, the call goes on as a task of the request's era (legacy: in the client's backend
 * session) and its record is returned. A limit at that point (the owner's live tasks, the
 * creation rate) keeps the call plain, and the client waits for its answer. Undefined, before
 * anything is sent, when this replica holds as many calls as it may.
 */
export async function holdThenPromote(c: Pick<CreationContext, 'ctx' | 'deps' | 'settings'>, request: TaskRequest, message: JsonRpcRequest, params: JsonObject, tool: string, options: HoldOptions): Promise<HoldOutcome | undefined> {
  const { ctx, deps } = c;
  if (ctx.inFlight >= deps.policy.provided.maxRunning) return undefined;
  const instance = await selectInstanceFor(request, deps.store);
  request.instance = instance;
  await request.route.prepareCredentials(request);
  const session = request.wire.sessions ? request.sessionId : undefined;
  const plan: CallPlan = { call: captureCall(request.clientHeaders, params), instance, session, timeoutMs: Math.min(options.timeoutMs, options.ttlMs) };
  const driver = startDriver(c, request, plan, true);
  const left = () => driver.runner.abort('aborted', 'the client left before the call became a task');
  request.abort.once('abort', left);
  try {
    // A plain timer, cleared: aborting an AbortController instead built a DOMException, with
    // its stack trace, on every call (docs/benchmarks.md, "Provided tasks").
    let timer: NodeJS.Timeout | undefined;
    const first = await Promise.race([
      driver.runner.outcome.then((outcome) => ({ outcome })),
      new Promise<undefined>((resolve) => {
        timer = setTimeout(() => resolve(undefined), options.waitMs);
        timer.unref();
      }),
    ]);
    clearTimeout(timer);
    if (first === undefined && !request.abort.aborted) {
      const record = await promote(c, request, tool, options, instance, plan);
      if (record) {
        driver.attach(record);
        announce(c, request, record);
        return { kind: 'task', record };
      }
    }
    // Released before the outcome is awaited: a legacy question waiting for the task (task-driver.ts)
    // is then refused, and the call's stream moves on.
    driver.release();
    const outcome = first?.outcome ?? (await driver.runner.outcome);
    return { kind: 'answer', answer: plainAnswer(message, outcome) };
  } finally {
    request.abort.off('abort', left);
  }
}

/** The task record for a promoted call; undefined where a limit keeps the call plain. */
async function promote(c: Pick<CreationContext, 'deps'>, request: TaskRequest, tool: string, options: HoldOptions, instance: Instance, plan: CallPlan): Promise<TaskRecord | undefined> {
  const { deps } = c;
  const record = newRecord(request, tool, options.ttlMs, instance, deps, options.background);
  try {
    await countCreation(deps, record.owner);
    const created = await deps.store.createProvidedTask(record, { call: plan.call, instance: instance.url, round: 0 }, deps.policy.maxLivePerPrincipal);
    if (created === 'created') return record;
    request.log.info({ tool, reason: created }, 'a call that could have become a task stays a plain call (task limit)');
  } catch (error) {
    // A rate limit, or the store away: the client waits for the plain answer instead.
    request.log.info({ tool, err: toWireError(error)?.code ?? error }, 'a call that could have become a task stays a plain call');
  }
  return undefined;
}

function startDriver(c: Pick<CreationContext, 'ctx' | 'settings'>, request: TaskRequest, plan: CallPlan, fromClient: boolean): TaskDriver {
  const target = callTarget(request, plan, fromClient);
  const limits = request.route.limits;
  const trace = callTraceOf(request, 'run');
  const failOver = failOverFor(request, plan, fromClient);
  return new TaskDriver(c.ctx, (reports) => startCall(target, plan, limits, reports, trace, failOver), c.settings);
}

function newRecord(request: TaskRequest, tool: string, ttlMs: number, instance: Instance, deps: StageDeps, background = false): TaskRecord {
  const wire = request.wire;
  // No backend task exists: the handle names the task on both sides of the gateway.
  return buildTaskRecord(
    {
      handle: mintHandle(),
      kind: 'provided',
      ...taskOrigin(request, instance.url),
      era: wire.era,
      tool,
      upstreamSession: wire.sessions ? request.sessionId : undefined,
      protocolVersion: clientProtocolVersion(request),
      ttlMs,
      backgroundCall: background,
      ...creatorOf(deps, request),
    },
    deps.policy,
  );
}

function announce(c: Pick<CreationContext, 'deps'>, request: TaskRequest, record: TaskRecord): void {
  request.createdTask = record;
  c.deps.observer.created(record);
}

/** A call that stayed plain: the backend's answer under the client's id, or why there is none. */
function plainAnswer(message: JsonRpcRequest, outcome: CallOutcome): LocalAnswer {
  if (outcome.kind === 'answer') {
    const { result, error } = outcome.response;
    const body = error ? { jsonrpc: '2.0', id: message.id, error } : { jsonrpc: '2.0', id: message.id, result };
    return { status: outcome.status, body };
  }
  switch (outcome.failure) {
    case 'timeout':
      throw new GatewayError('TG_ERR_UPSTREAM_TIMEOUT', { detail: outcome.message });
    case 'unreachable':
      throw new GatewayError('TG_ERR_UPSTREAM_UNAVAILABLE', { detail: outcome.message });
    default:
      throw new GatewayError('TG_ERR_BAD_GATEWAY', { detail: outcome.message });
  }
}
