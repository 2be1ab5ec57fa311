/**
 * The tools the gateway adds to tools/list for clients that can get background calls, and how
 * their arguments are read. Descriptions are written for a model: what the tool is for, that
 * the handle comes from the gateway and is never to be guessed, and how long a status call
 * may wait. The backend never sees these tools listed or called.
 */
import type { BackgroundCallsPolicy } from '../config/sections/background-calls.js';
import { isObject } from '../mcp/json.js';
import type { TaskToolNames } from './model-texts.js';

export function taskToolNames(policy: BackgroundCallsPolicy): TaskToolNames {
  return { status: policy.toolNames.status, cancel: policy.toolNames.cancel, waitSeconds: Math.floor(policy.statusWait / 1000) };
}

const TASK_ID_PROPERTY = {
  type: 'string',
  description: 'The handle of the background call, exactly as the gateway gave it (never guess one).',
};

/** The tool definitions, as a tools/list result carries them. */
export function taskToolDefinitions(names: TaskToolNames): Record<string, unknown>[] {
  const wait = names.waitSeconds;
  return [
    {
      name: names.status,
      title: 'Background call status',
      description:
        'Gets the result of a background call: a tool call that took long and goes on in the background. Pass the taskId ' +
        'the gateway gave you when it moved the call there; never guess one. Waits up to `wait` seconds ' +
        `(0-${wait}, default ${wait}) for the call to end, then returns the tool's own result if it has ended, or says that ` +
        'it is still running and when to ask again.',
      inputSchema: {
        type: 'object',
        properties: {
          taskId: TASK_ID_PROPERTY,
          wait: { type: 'number', minimum: 0, maximum: wait, description: `Seconds to wait for the call to end before answering (0-${wait}, default ${wait}).` },
        },
        required: ['taskId'],
        additionalProperties: false,
      },
      annotations: { title: 'Background call status', readOnlyHint: true, openWorldHint: false },
    },
    {
      name: names.cancel,
      title: 'Cancel a background call',
      description:
        'Stops a background call (a tool call the gateway moved to the background); it then has no result. Pass its ' +
        'taskId exactly as the gateway gave it; never guess one.',
      inputSchema: {
        type: 'object',
        properties: { taskId: TASK_ID_PROPERTY },
        required: ['taskId'],
        additionalProperties: false,
      },
      annotations: { title: 'Cancel a background call', readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false },
    },
  ];
}

export interface StatusArguments {
  readonly taskId: string;
  /** How long to wait for the call to end, capped by the policy. */
  readonly waitMs: number;
}

/** The status tool's arguments; undefined when taskId is missing or not a string. */
export function readStatusArguments(args: unknown, maxWaitMs: number): StatusArguments | undefined {
  if (!isObject(args) || typeof args.taskId !== 'string') return undefined;
  const wait = args.wait;
  // Left out (or not a usable number): the longest wait, so that a model needs the fewest turns.
  const waitMs = typeof wait === 'number' && Number.isFinite(wait) && wait >= 0 ? Math.min(wait * 1000, maxWaitMs) : maxWaitMs;
  return { taskId: args.taskId, waitMs };
}

export function readCancelArguments(args: unknown): { readonly taskId: string } | undefined {
  return isObject(args) && typeof args.taskId === 'string' ? { taskId: args.taskId } : undefined;
}

export const STATUS_USAGE = '{"taskId": "<the handle the gateway gave>", "wait": <seconds, optional>}';
export const CANCEL_USAGE = '{"taskId": "<the handle the gateway gave>"}';
