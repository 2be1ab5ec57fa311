/**
 * What a model reads about a background call: every text here is written by the gateway, short
 * and exact, and names the tool to call next with its arguments as JSON. The only words of the
 * backend's that appear are its statusMessage and error message, sanitised (control characters
 * out, cut to tasks.statusMessageMaxLength) and quoted, so a backend cannot pose as the gateway.
 * Each answer also carries the handle in `_meta["io.modelcontextprotocol/related-task"]`, the
 * spec's own key, so that code finds it without reading the text.
 */
import { RELATED_TASK_META } from '../mcp/era.js';
import { isObject } from '../mcp/json.js';
import { sanitizeStatusMessage } from '../task-model/status-message.js';

export type ToolResult = Record<string, unknown>;

/** The gateway's task tools on one upstream, and the wait a status call may ask for. */
export interface TaskToolNames {
  readonly status: string;
  readonly cancel: string;
  /** The longest wait of a status call, in seconds. */
  readonly waitSeconds: number;
}

const NEVER_GUESS = 'Use this exact handle; never make one up or change it.';

/** The answer to the original call when it goes on in the background. */
export function detachedText(tool: string, handle: string, names: TaskToolNames, pollIntervalMs: number): ToolResult {
  const args = JSON.stringify({ taskId: handle });
  const text =
    `The tool \`${tool}\` is still running, in the background: the gateway keeps the call going and holds its result.\n` +
    `Background call handle: ${handle}\n` +
    `Do not call \`${tool}\` again for this. To get its result, call the tool \`${names.status}\` with ${args} ` +
    `(it waits up to ${names.waitSeconds} seconds for the call to end), ${notBefore(pollIntervalMs)}. ` +
    `To stop the call, call \`${names.cancel}\` with ${args}.\n${NEVER_GUESS}`;
  return textResult(text, false, handle);
}

/** A status call while the call still runs. */
export function runningText(tool: string, handle: string, statusMessage: string | undefined, names: TaskToolNames, pollIntervalMs: number, maxMessage: number): ToolResult {
  const status = statusMessage ? ` Its latest status: ${quoted(statusMessage, maxMessage)}.` : '';
  const text =
    `The background call of \`${tool}\` (handle ${handle}) is still running.${status}\n` +
    `Call \`${names.status}\` again with ${JSON.stringify({ taskId: handle })} to wait for its result, ${notBefore(pollIntervalMs)}.`;
  return textResult(text, false, handle);
}

/** A status call while a modern backend waits for input this client was not offered. */
export function waitingForInputText(tool: string, handle: string, names: TaskToolNames): ToolResult {
  const text =
    `The background call of \`${tool}\` (handle ${handle}) is waiting for input that cannot be asked of you here. ` +
    `It will not finish; cancel it with \`${names.cancel}\` and ${JSON.stringify({ taskId: handle })}, then call \`${tool}\` again.`;
  return textResult(text, false, handle);
}

/** Legacy: a status call that passed the backend's question(s) on, and ended before they were answered. */
export function questionPendingText(tool: string, handle: string, names: TaskToolNames): ToolResult {
  const text =
    `The background call of \`${tool}\` (handle ${handle}) is waiting for the answer to a question it asked, which came with this answer. ` +
    `Once it is answered, call \`${names.status}\` again with ${JSON.stringify({ taskId: handle })}.`;
  return textResult(text, false, handle);
}

/** A status call of a call that ended without a result of the tool's: the reason, as an error. */
export function failedText(tool: string, handle: string, reason: string | undefined, maxMessage: number): ToolResult {
  const why = reason ? `: ${quoted(reason, maxMessage)}` : '';
  return textResult(`The background call of \`${tool}\` (handle ${handle}) failed without a result${why}.`, true, handle);
}

export function cancelledText(tool: string, handle: string): ToolResult {
  return textResult(`The background call of \`${tool}\` (handle ${handle}) was cancelled; it has no result.`, true, handle);
}

/** The cancel tool's answer. */
export function cancelAnswerText(tool: string, handle: string, endedAs: string | undefined, names: TaskToolNames): ToolResult {
  const text =
    endedAs === undefined
      ? `The background call of \`${tool}\` (handle ${handle}) is cancelled; the gateway stopped it.`
      : `The background call of \`${tool}\` (handle ${handle}) had already ended (${endedAs}); nothing was cancelled. ` +
        `\`${names.status}\` with ${JSON.stringify({ taskId: handle })} gives its outcome.`;
  return textResult(text, false, handle);
}

/**
 * One answer, byte for byte, for a handle that is unknown, expired, already delivered,
 * malformed or another principal's: nothing in it tells them apart.
 */
export function unknownHandleText(): ToolResult {
  return textResult(
    'No background call with this handle is known: it may have expired, its result may have been delivered already, ' +
      `or the handle is wrong. ${NEVER_GUESS}`,
    true,
  );
}

/** A task tool called without the arguments it takes. */
export function usageText(tool: string, usage: string): ToolResult {
  return textResult(`\`${tool}\` takes ${usage}. ${NEVER_GUESS}`, true);
}

/** The tool's own result, as if the first call had returned it, naming the background call. */
export function withRelatedTask(result: ToolResult, handle: string): ToolResult {
  const meta = isObject(result._meta) ? { ...result._meta } : {};
  meta[RELATED_TASK_META] = { taskId: handle };
  return { ...result, _meta: meta };
}

function textResult(text: string, isError: boolean, handle?: string): ToolResult {
  const result: ToolResult = { content: [{ type: 'text', text }], isError };
  return handle === undefined ? result : withRelatedTask(result, handle);
}

function notBefore(ms: number): string {
  const seconds = Math.max(1, Math.ceil(ms / 1000));
  return `no sooner than ${seconds} second${seconds === 1 ? '' : 's'} from now`;
}

/** The backend's own words, made safe and set apart as a quotation. */
function quoted(text: string, maxLength: number): string {
  return JSON.stringify(sanitizeStatusMessage(text, maxLength));
}
