/**
 * A backend's task id never reaches a client (DESIGN.md §3). It travels in fields the gateway
 * reads (params.taskId, Mcp-Name, CreateTaskResult, related-task _meta: swapped where they are
 * read), and in whatever a backend writes about its task: "job 2 cancelled" in a
 * statusMessage, "task 2 failed" in the inline error of a failed task, an id in error data,
 * in `_meta`, in a progress or log line. This is the one rewrite for all of that: in
 * everything a client is shown about a task, each occurrence of the backend id that stands on
 * its own becomes the handle. Every writer of what a client sees about a backend task (the
 * task objects of task-wire.ts, the replies and notifications of src/tasks/task-responses.ts,
 * and the polls and pushes of src/push/ through them) goes through here.
 *
 * What a task carries for the client is relayed as the backend wrote it: the tool result
 * (inline `result`, a legacy tasks/result) and the questions it asks (`inputRequests`, legacy
 * server→client requests). They are the backend's answer to the client, not text about the
 * task, and a short id would corrupt them ("2 + 2" is not about task "2"); only their `_meta`
 * is rewritten.
 */
import { isObject, type JsonObject } from '../mcp/json.js';

export interface TaskIds {
  readonly handle: string;
  readonly upstreamTaskId: string;
}

/**
 * `whole`: every string (an error, an ack, a notification about the task);
 * `task`: a task object, whose `result` and `inputRequests` are what it carries for the client;
 * `meta`: only the `_meta` in it, at any depth (what a task carries for the client; a legacy
 * creation result around its task object, which presentTask has rewritten already).
 */
export type Shape = 'whole' | 'task' | 'meta';

/**
 * A task object's own fields: set from the record (the handle, the recorded statusMessage,
 * already rewritten) or not text at all (a status, timestamps whose minutes could look like a
 * counter's id: "10:41:23" is no mention of task "41").
 */
const OWN_FIELDS: ReadonlySet<string> = new Set(['taskId', 'statusMessage', 'status', 'createdAt', 'lastUpdatedAt']);
const PAYLOAD_FIELDS: ReadonlySet<string> = new Set(['result', 'inputRequests']);
/** Chosen by the client to match notifications to its request: a coincidence with the id is not the id. */
const CLIENT_KEYS: ReadonlySet<string> = new Set(['progressToken']);

type Rewrite = (text: string) => string;

/** The text with the backend id hidden; the handle is left as it is, so a second pass changes nothing. */
export function hideBackendIdInText(text: string, ids: TaskIds): string {
  const rewrite = rewriterFor(ids);
  return rewrite ? rewrite(text) : text;
}

/** Rewrites `value` in place (its strings, at every depth allowed by `shape`); true when anything changed. */
export function hideBackendId(value: unknown, ids: TaskIds, shape: Shape = 'whole'): boolean {
  const rewrite = rewriterFor(ids);
  if (!rewrite || !isContainer(value)) return false;
  let changed = false;
  // Iterative: a hostile backend's nesting depth must not become this walk's stack depth.
  const pending: [container: JsonObject | unknown[], shape: Shape][] = [[value, shape]];
  for (let next = pending.pop(); next; next = pending.pop()) {
    const [container, mode] = next;
    const entries: [string | number, unknown][] = Array.isArray(container) ? container.map((v, i) => [i, v]) : Object.entries(container);
    for (const [key, child] of entries) {
      const name = typeof key === 'string' ? key : '';
      const childMode = modeOf(mode, name);
      if (childMode === undefined) continue;
      if (typeof child === 'string') {
        if (childMode === 'meta') continue;
        const rewritten = rewrite(child);
        if (rewritten === child) continue;
        (container as Record<string | number, unknown>)[key] = rewritten;
        changed = true;
      } else if (isContainer(child)) {
        pending.push([child, childMode]);
      }
    }
  }
  return changed;
}

/** How a child is walked, or undefined to leave it alone. */
function modeOf(parent: Shape, key: string): Shape | undefined {
  if (CLIENT_KEYS.has(key)) return undefined;
  if (parent === 'whole') return 'whole';
  if (parent === 'meta') return key === '_meta' ? 'whole' : 'meta';
  // A task object (only ever the top of a walk): its own fields are the record's, its payloads
  // the client's, the rest (error, _meta, fields of the backend's own) the backend's words.
  if (OWN_FIELDS.has(key)) return undefined;
  return PAYLOAD_FIELDS.has(key) ? 'meta' : 'whole';
}

function rewriterFor(ids: TaskIds): Rewrite | undefined {
  const id = ids.upstreamTaskId;
  // A task the gateway runs itself has no backend id (its record holds the handle there).
  if (id === '' || id === ids.handle) return undefined;
  // The id where it stands on its own, not inside a longer word or number ("12", "2.5" and
  // "v1.2" are not task "2"; "job 2." and "task-2" are). The handle is matched first and kept,
  // so a text already rewritten (a handle that happens to hold the id between a '-' and a
  // '_') is never rewritten twice.
  const before = '(?<![\\p{L}\\p{N}]|\\p{N}[.,])';
  const after = '(?![\\p{L}\\p{N}]|[.,]\\p{N})';
  // Built on the first text that holds the id at all: most polls hold none, and cost a scan.
  let pattern: RegExp | undefined;
  return (text) => {
    if (!text.includes(id)) return text;
    pattern ??= new RegExp(`${escapeRegExp(ids.handle)}|${before}${escapeRegExp(id)}${after}`, 'gu');
    return text.replace(pattern, () => ids.handle);
  };
}

function isContainer(value: unknown): value is JsonObject | unknown[] {
  return Array.isArray(value) || isObject(value);
}

/** With the u flag only syntax characters may be escaped. */
function escapeRegExp(text: string): string {
  return text.replace(/[\\^$.*+?()[\]{}|/]/g, '\\$&');
}
