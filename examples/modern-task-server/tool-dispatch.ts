// tools/list and tools/call for the modern task server: one place decides, per request, whether a
// tool runs as a task (the request declared the extension), synchronously, or not at all (-32021).
import { setTimeout as sleep } from 'node:timers/promises';
import {
  ProtocolError,
  ProtocolErrorCode,
  Server,
  type CallToolResult,
  type JSONRPCRequest,
  type Result,
  type ServerContext,
} from '@modelcontextprotocol/server';
import * as z from 'zod';
import { declaresTasks, missingTasksCapability } from './task-handlers.js';
import type { InputRequest, JobContext, TaskRegistry } from './task-registry.js';

/** As in 2025's `execution.taskSupport`, which the 2026 wire no longer carries in tools/list. */
export type TaskSupport = 'forbidden' | 'optional' | 'required';

export interface ModernTool {
  name: string;
  description: string;
  input: z.ZodObject;
  taskSupport: TaskSupport;
  /** MRTR input resolved synchronously before the task exists (SEP-2663 "composition with MRTR"). */
  gather?: Record<string, InputRequest>;
  /** The statusMessage a task of this tool starts with (and keeps until it settles). */
  statusMessage?(args: unknown): string | undefined;
  run(args: unknown, job: JobContext, gathered: Record<string, unknown>): Promise<CallToolResult>;
}

export function defineTool<S extends z.ZodObject>(tool: {
  name: string;
  description: string;
  input: S;
  taskSupport: TaskSupport;
  gather?: Record<string, InputRequest>;
  statusMessage?(args: z.infer<S>): string | undefined;
  run(args: z.infer<S>, job: JobContext, gathered: Record<string, unknown>): Promise<CallToolResult>;
}): ModernTool {
  // run only ever receives what tool.input parsed, so the erased signature is safe.
  return tool as unknown as ModernTool;
}

/** A form-mode elicitation, the kind of input every fixture here asks for. */
export function elicitation(message: string, properties: Record<string, unknown>): InputRequest {
  return {
    method: 'elicitation/create',
    params: { mode: 'form', message, requestedSchema: { type: 'object', properties, required: Object.keys(properties) } },
  };
}

export function text(value: string, isError = false): CallToolResult {
  return { content: [{ type: 'text', text: value }], ...(isError ? { isError: true } : {}) };
}

/** Carries a CreateTaskResult past the SDK's CallToolResult normalisation, which adds `content`. */
class TaskCreated extends Error {
  constructor(readonly result: Result) {
    super('task created');
  }
}

/** Raised by a synchronous run that needs input it was not given: answered as MRTR input_required. */
class InputNeeded extends Error {
  constructor(readonly requests: Record<string, InputRequest>) {
    super('input required');
  }
}

/**
 * The SDK validates every tools/call result as a CallToolResult and adds `content: []` to one
 * without it; a CreateTaskResult is a flat Task, so it bypasses that step through the hook the SDK
 * offers subclasses for exactly this kind of role-specific handling.
 */
export class TaskAwareServer extends Server {
  protected override _wrapHandler(
    method: string,
    handler: (request: JSONRPCRequest, ctx: ServerContext) => Promise<Result>,
  ): (request: JSONRPCRequest, ctx: ServerContext) => Promise<Result> {
    if (method !== 'tools/call') return super._wrapHandler(method, handler);
    const validated = super._wrapHandler(method, async (request, ctx) => {
      const result = await handler(request, ctx);
      if (result.resultType === 'task') throw new TaskCreated(result);
      return result;
    });
    return async (request, ctx) => {
      try {
        return await validated(request, ctx);
      } catch (error) {
        if (error instanceof TaskCreated) return error.result;
        throw error;
      }
    };
  }
}

/** `registry` undefined: no task runtime, every call runs synchronously. */
export function registerTools(server: Server, tools: readonly ModernTool[], registry: TaskRegistry | undefined): void {
  const byName = new Map(tools.map((tool) => [tool.name, tool]));
  server.setRequestHandler('tools/list', () => ({
    tools: tools.map((tool) => ({
      name: tool.name,
      description: tool.description,
      inputSchema: z.toJSONSchema(tool.input) as { type: 'object' },
    })),
  }));
  server.setRequestHandler('tools/call', async (request, ctx) => {
    const tool = byName.get(request.params.name);
    if (tool === undefined) throw new ProtocolError(ProtocolErrorCode.InvalidParams, `Unknown tool: ${request.params.name}`);
    const parsed = tool.input.safeParse(request.params.arguments ?? {});
    if (!parsed.success) return text(`Invalid arguments for ${tool.name}: ${z.prettifyError(parsed.error)}`, true);

    const asTask = registry !== undefined && tool.taskSupport !== 'forbidden' && declaresTasks(ctx);
    if (tool.taskSupport === 'required' && !asTask) throw missingTasksCapability(`tool ${tool.name}`);

    const responses = ctx.mcpReq.inputResponses ?? {};
    const gather = tool.gather ?? {};
    if (!Object.keys(gather).every((key) => key in responses)) {
      return { resultType: 'input_required', inputRequests: gather } as never;
    }
    const gathered = pick(responses, Object.keys(gather));
    if (asTask && registry) return registry.create((job) => tool.run(parsed.data, job, gathered), tool.statusMessage?.(parsed.data)) as never;
    return runSynchronously(tool, parsed.data, gathered, ctx);
  });
}

async function runSynchronously(
  tool: ModernTool,
  args: unknown,
  gathered: Record<string, unknown>,
  ctx: ServerContext,
): Promise<CallToolResult> {
  const signal = ctx.mcpReq.signal;
  const job: JobContext = {
    signal,
    sleep: (ms) => sleep(ms, undefined, { signal }),
    requestInput: (requests) => {
      const responses = ctx.mcpReq.inputResponses ?? {};
      const keys = Object.keys(requests);
      if (keys.every((key) => key in responses)) return Promise.resolve(pick(responses, keys));
      return Promise.reject(new InputNeeded(requests));
    },
  };
  try {
    return await tool.run(args, job, gathered);
  } catch (error) {
    if (error instanceof InputNeeded) return { resultType: 'input_required', inputRequests: error.requests } as never;
    throw error;
  }
}

function pick(source: Record<string, unknown>, keys: readonly string[]): Record<string, unknown> {
  return Object.fromEntries(keys.filter((key) => key in source).map((key) => [key, source[key]]));
}
