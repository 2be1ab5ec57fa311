/**
 * Which of the handles a subscriptions/listen names the caller gets: its own live tasks of this
 * era and route. Anything else (a foreign, unknown, expired or malformed handle) is left out of
 * the acknowledged set exactly alike; each refusal is audited and counted like a refused task
 * lookup (the enumeration detector sees it).
 */
import type { TaskRequest } from '../tasks/task-request.js';
import { isInScope, type TaskRecord, type TaskScope } from '../task-model/task-record.js';
import { isHandleShaped } from '../tasks/handle.js';
import { ownerOf, type TaskDeps } from '../tasks/task-context.js';

export async function grantHandles(deps: TaskDeps, request: TaskRequest, asked: readonly unknown[]): Promise<TaskRecord[]> {
  const scope: TaskScope = { owner: ownerOf(request), era: 'modern', upstream: request.route.pool.upstream };
  const unique = [...new Set(asked)];
  // One read per handle, all sent at once (pipelined on Redis).
  const records = await Promise.all(unique.map((id) => (isHandleShaped(id) ? deps.store.getTask(id) : Promise.resolve(undefined))));
  const granted: TaskRecord[] = [];
  unique.forEach((id, i) => {
    const record = records[i];
    if (record && isInScope(record, scope)) {
      granted.push(record);
      return;
    }
    const named = typeof id === 'string' ? id.slice(0, 64) : undefined;
    request.log.info({ rpcMethod: 'subscriptions/listen', reason: record ? 'denied' : 'not_found', owner: scope.owner }, 'task handle left out of a subscription');
    deps.observer.subscriptionRefused(request, named, record ? 'denied' : 'not_found');
  });
  return granted;
}
