/**
 * What makes a client see a task-capable server when the gateway runs the tasks (DESIGN.md §9):
 *   2025-11-25  `capabilities.tasks` (cancel, requests.tools.call; list where principals are
 *               told apart, as the takeover stage decides) in the initialize result, and
 *               `execution.taskSupport: "optional"` on each tool the gateway runs, in every
 *               page of tools/list;
 *   2026-07-28  the io.modelcontextprotocol/tasks extension in server/discover.
 * The same answers teach the gateway what the backend offers by itself (backend-support.ts).
 */
import type { TaskRequest } from '../tasks/task-request.js';
import { TASKS_EXTENSION } from '../mcp/era.js';
import type { JsonObject } from '../task-model/provided-state.js';
import { isObject } from '../mcp/json.js';
import type { BackendSupport } from './backend-support.js';

/** The methods whose results advertise tasks. */
export const ADVERTISING_METHODS: ReadonlySet<string> = new Set(['initialize', 'tools/list', 'server/discover']);

/** Rewrites `result` of `method` in place; true when it changed. */
export function advertiseProvidedTasks(support: BackendSupport, request: TaskRequest, method: string, result: JsonObject): boolean {
  const upstream = request.route.pool.upstream;
  const policy = request.route.config.providedTasks;
  if (!policy) return false;
  const wire = request.wire;
  switch (method) {
    case 'initialize': {
      const capabilities = objectAt(result, 'capabilities');
      const tasks = objectAt(capabilities, 'tasks');
      objectAt(tasks, 'cancel');
      objectAt(objectAt(objectAt(tasks, 'requests'), 'tools'), 'call');
      return true;
    }
    case 'tools/list': {
      if (wire.taskSupport !== 'per-tool' || !Array.isArray(result.tools)) return false;
      let changed = false;
      for (const tool of result.tools) {
        if (!isObject(tool) || typeof tool.name !== 'string') continue;
        const execution = isObject(tool.execution) ? tool.execution : undefined;
        support.learnLegacyTool(upstream, tool.name, execution?.taskSupport);
        if (!support.provides(policy, upstream, tool.name, wire)) continue;
        tool.execution = { ...execution, taskSupport: 'optional' };
        changed = true;
      }
      return changed;
    }
    case 'server/discover': {
      if (wire.taskSupport !== 'extension') return false;
      const extensions = objectAt(objectAt(result, 'capabilities'), 'extensions');
      support.learnModernExtension(upstream, isObject(extensions[TASKS_EXTENSION]));
      objectAt(extensions, TASKS_EXTENSION);
      return true;
    }
    default:
      return false;
  }
}

/** `holder[key]`, made an empty object when it is not one. */
function objectAt(holder: JsonObject, key: string): JsonObject {
  const value = holder[key];
  if (isObject(value)) return value;
  const made: JsonObject = {};
  holder[key] = made;
  return made;
}
