/**
 * tasks/get, tasks/cancel and tasks/update of a task the gateway runs itself, answered from
 * the store (the backend sees no tasks/* at all). The takeover stage has already checked the
 * owner and, for tasks/get, governed the poll: an early poll never gets here.
 */
import type { TaskRequest } from '../tasks/task-request.js';
import { GatewayError } from '../errors.js';
import type { JsonRpcRequest } from '../mcp/jsonrpc.js';
import type { JsonObject, ProvidedTaskView } from '../task-model/provided-state.js';
import type { TaskRecord } from '../task-model/task-record.js';
import type { StageDeps } from '../tasks/extension-points.js';
import type { LocalAnswer, TaskDeps } from '../tasks/task-context.js';
import { detailedTask, taskFromRecord, wireOf } from '../task-model/task-wire.js';
import { isObject } from '../mcp/json.js';
import type { ProvidedContext } from './provided-context.js';
import { ending, transition, type Transition } from './transitions.js';

const CANCELLED_MESSAGE = 'The task was cancelled by request.';

/** tasks/get: the task as it stands (modern: the result, error or input asked, inline). */
export async function answerGet(deps: TaskDeps, request: TaskRequest, message: JsonRpcRequest, record: TaskRecord): Promise<LocalAnswer> {
  const wire = wireOf(record.era);
  // What the record says is the answer whenever the era wants no more (legacy always; modern
  // while the task runs or once it is cancelled): no second read, which on Redis is a round
  // trip and the state's decryption, on memory a deep copy of it (docs/benchmarks.md,
  // "Provided tasks"). Otherwise the state holds the result, error or input asked.
  let task = wire.recordAnswer(record);
  if (!task) {
    const view = await deps.store.readProvidedTask(record.handle);
    if (!view) throw new GatewayError('TG_ERR_TASK_NOT_FOUND');
    task = detailedTask(view);
  }
  const text = JSON.stringify(task);
  request.statusSeen = task.status as TaskRecord['status'];
  // The answer is the task's poll snapshot: early polls get it without another read.
  deps.store.recordPoll(record, {}, text, request.snapshotTag).catch((error: unknown) => {
    request.log.warn({ err: error, upstream: record.upstream, tool: record.tool }, 'could not record a provided task\'s poll answer');
  });
  // A result delivered inline (modern): for a read-once tool this answer is the delivery.
  if (wire.resultInline && record.readOnce && (task.status === 'completed' || task.status === 'failed')) {
    await deps.store.deleteTask(record.handle);
    deps.observer.forgotten(record, 'read_once');
  }
  return { status: 200, body: `{"jsonrpc":"2.0","id":${JSON.stringify(message.id)},"result":${text}}` };
}


/**
 * tasks/cancel: the task is cancelled before the answer (legacy: a MUST), and the call is
 * stopped on whichever replica holds it (it watches the task). Legacy refuses a task already
 * ended; modern acknowledges whatever the task's state.
 */
export async function answerCancel(ctx: ProvidedContext, deps: TaskDeps, request: TaskRequest, message: JsonRpcRequest, record: TaskRecord): Promise<LocalAnswer> {
  const moved = await cancelTask(ctx, deps, record);
  request.statusSeen = moved ? 'cancelled' : undefined;
  const wire = wireOf(record.era);
  if (wire.cancelAnswer === 'ack') return { status: 200, body: { jsonrpc: '2.0', id: message.id, result: wire.completeResult({}) } };
  if (!moved) {
    const now = await deps.store.getTask(record.handle);
    if (!now) throw new GatewayError('TG_ERR_TASK_NOT_FOUND');
    throw new GatewayError('TG_ERR_TASK_TERMINAL', { detail: `'${now.status}'` });
  }
  return { status: 200, body: { jsonrpc: '2.0', id: message.id, result: taskFromRecord(moved.after.record) } };
}

/** Moves a running task to cancelled and stops its call; undefined when it had ended already. */
export async function cancelTask(ctx: ProvidedContext, deps: StageDeps, record: TaskRecord): Promise<Transition | undefined> {
  const moved = await transition(deps.store, record.handle, ending('cancelled', undefined, CANCELLED_MESSAGE, deps.policy.statusMessageMaxLength));
  if (moved) {
    deps.observer.statusChanged(moved.before.record, moved.before.record.status, 'cancelled');
    ctx.metrics.providedTasksEnded.inc({ upstream: record.upstream, outcome: 'cancelled' });
    // Held here: stopped at once rather than on the announcement.
    void ctx.held.get(record.handle)?.cancel();
  }
  return moved;
}

/** What a tasks/update that completes a round of input starts: the backend call again. */
export interface Retry {
  readonly record: TaskRecord;
  readonly view: ProvidedTaskView;
  /** The backend's own keys → the client's answers. */
  readonly inputResponses: JsonObject;
  readonly requestState: string | undefined;
}

/**
 * Modern tasks/update: the answers are kept (keys the task did not ask are ignored, as the
 * extension says servers should); once every question of the round has one, the task is
 * working again and the call is retried with them. Always acknowledged.
 */
export async function applyUpdate(deps: StageDeps, message: Pick<JsonRpcRequest, 'id' | 'params'>, record: TaskRecord): Promise<{ answer: LocalAnswer; retry?: Retry }> {
  const params = isObject(message.params) ? message.params : {};
  const responses = isObject(params.inputResponses) ? params.inputResponses : {};
  let retry: Omit<Retry, 'record' | 'view'> | undefined;
  const moved = await transition(deps.store, record.handle, (view) => {
    if (view.record.status !== 'input_required') return undefined;
    const asked = view.state.inputRequests ?? {};
    const answered: JsonObject = { ...view.state.inputResponses };
    for (const [key, value] of Object.entries(responses)) if (Object.hasOwn(asked, key)) answered[key] = value;
    if (!Object.keys(asked).every((key) => Object.hasOwn(answered, key))) {
      retry = undefined;
      return { patch: {}, state: { ...view.state, inputResponses: answered } };
    }
    const keys = view.state.inputKeys ?? {};
    retry = {
      inputResponses: Object.fromEntries(Object.entries(answered).map(([shown, value]) => [keys[shown] ?? shown, value])),
      requestState: view.state.requestState,
    };
    const state = { ...view.state, inputRequests: undefined, inputKeys: undefined, inputResponses: undefined, requestState: undefined };
    return { patch: { status: 'working' as const }, state };
  });
  if (moved && moved.status === 'working') deps.observer.statusChanged(moved.before.record, 'input_required', 'working');
  const answer: LocalAnswer = { status: 200, body: { jsonrpc: '2.0', id: message.id, result: { resultType: 'complete' } } };
  if (!moved || moved.status !== 'working' || !retry) return { answer };
  return { answer, retry: { ...retry, record: moved.after.record, view: { record: moved.after.record, state: moved.after.state, rev: moved.before.rev + 1 } } };
}

