/**
 * A legacy client's response to a question a bridged task's modern backend asked (relayed as a
 * server request on its tasks/result stream, legacy-result-stream.ts): it goes to the backend
 * as tasks/update with the answer under the backend's own inputRequests key. The client is
 * answered 202, as a legacy server answers a response. The route names the task, and the task
 * must be the caller's: an id that reached someone else is dropped, as is an unknown one.
 */
import type { TaskRequest } from '../tasks/task-request.js';
import { isObject, type JsonObject } from '../mcp/json.js';
import type { JsonRpcResponse } from '../mcp/jsonrpc.js';
import type { ServerRequestRoute } from '../task-model/task-record.js';
import type { LocalAnswer, StageDeps } from '../tasks/extension-points.js';
import { ownerOf } from '../tasks/task-context.js';
import type { BridgeContext } from './bridge-context.js';
import { callModern, taskCall } from './modern-call.js';

const ACCEPTED: LocalAnswer = { status: 202, body: '' };

export async function takeInputAnswer(ctx: BridgeContext, deps: StageDeps, request: TaskRequest, route: ServerRequestRoute, message: JsonRpcResponse): Promise<LocalAnswer | undefined> {
  if (route.inputKey === undefined || route.handle === undefined) return undefined;
  const record = await deps.store.getTask(route.handle);
  if (!record || record.kind !== 'bridged' || record.owner !== ownerOf(request)) {
    request.log.info({ reason: record ? 'denied' : 'not_found' }, 'an answer to a bridged task\'s question was dropped');
    return ACCEPTED;
  }
  const instance = request.route.pool.findInstance(record.instance);
  if (!instance) return ACCEPTED;
  // An error instead of a result: the question is declined (the modern shape has no error answer).
  const answer: JsonObject = isObject(message.result) ? message.result : { action: 'cancel' };
  try {
    const sent = await callModern(request, instance, taskCall(record, 'tasks/update', { inputResponses: { [route.inputKey]: answer } }), request.abort);
    ctx.count(request, 'tasks/update', sent.response?.result ? 'ok' : 'error');
  } catch (error) {
    ctx.count(request, 'tasks/update', 'error');
    request.log.warn({ err: error, upstream: record.upstream }, 'a bridged task\'s answer could not reach its backend');
  }
  // What early polls would get is stale now.
  await deps.store.invalidatePoll(record.handle);
  return ACCEPTED;
}
