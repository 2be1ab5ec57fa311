// tasks/get, tasks/update and tasks/cancel on the 2026-07-28 era. The SDK already checks the
// envelope and that Mcp-Name mirrors params.taskId (-32020, HTTP 400) before these run, and answers
// the removed tasks/result and tasks/list with -32601 (HTTP 404) because nothing registers them.
import {
  MissingRequiredClientCapabilityError,
  ProtocolError,
  ProtocolErrorCode,
  type Server,
  type ServerContext,
} from '@modelcontextprotocol/server';
import * as z from 'zod';
import type { TaskRegistry } from './task-registry.js';

export const TASKS_EXTENSION = 'io.modelcontextprotocol/tasks';
const CLIENT_CAPABILITIES_KEY = 'io.modelcontextprotocol/clientCapabilities';

const TaskIdParams = z.looseObject({ taskId: z.string() });

/** Only this request's own declaration counts: servers must not infer it from earlier requests. */
export function declaresTasks(ctx: ServerContext): boolean {
  // The SDK types the lifted envelope as `{}`; its keys are the reserved _meta names.
  return metaDeclaresTasks(ctx.mcpReq.envelope);
}

/** Whether a request's `_meta` declares the tasks extension in its client capabilities. */
export function metaDeclaresTasks(meta: unknown): boolean {
  const capabilities = isObject(meta) ? meta[CLIENT_CAPABILITIES_KEY] : undefined;
  const extensions: unknown = isObject(capabilities) ? capabilities.extensions : undefined;
  return isObject(extensions) && TASKS_EXTENSION in extensions;
}

export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export function missingTasksCapability(what: string): MissingRequiredClientCapabilityError {
  return new MissingRequiredClientCapabilityError(
    { requiredCapabilities: { extensions: { [TASKS_EXTENSION]: {} } } },
    `Missing required client capability: ${what} requires the ${TASKS_EXTENSION} extension`,
  );
}

function taskNotFound(): ProtocolError {
  return new ProtocolError(ProtocolErrorCode.InvalidParams, 'Failed to retrieve task: Task not found');
}

export function registerTaskHandlers(server: Server, registry: TaskRegistry): void {
  server.setRequestHandler('tasks/get', { params: TaskIdParams }, (params, ctx) => {
    if (!declaresTasks(ctx)) throw missingTasksCapability('tasks/get');
    const detailed = registry.detailed(params.taskId);
    if (detailed === undefined) throw taskNotFound();
    return { resultType: 'complete', ...detailed };
  });

  // The SDK lifts params.inputResponses into ctx.mcpReq.inputResponses before validation, so the
  // schema sees only taskId; a request that sent none has nothing lifted.
  server.setRequestHandler('tasks/update', { params: TaskIdParams }, (params, ctx) => {
    if (!declaresTasks(ctx)) throw missingTasksCapability('tasks/update');
    const inputResponses = ctx.mcpReq.inputResponses;
    if (inputResponses === undefined) {
      throw new ProtocolError(ProtocolErrorCode.InvalidParams, 'Invalid params: inputResponses is required');
    }
    if (!registry.update(params.taskId, inputResponses)) throw taskNotFound();
    return { resultType: 'complete' };
  });

  // Acked the same way on a terminal task: cancel is idempotent in this extension.
  server.setRequestHandler('tasks/cancel', { params: TaskIdParams }, (params, ctx) => {
    if (!declaresTasks(ctx)) throw missingTasksCapability('tasks/cancel');
    if (!registry.cancel(params.taskId)) throw taskNotFound();
    return { resultType: 'complete' };
  });
}
