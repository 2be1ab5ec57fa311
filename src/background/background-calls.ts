/**
 * Background calls (DESIGN.md §11, docs/background-calls.md): long tools for clients that
 * speak no task era. This is the room's one door, registered by gateway.ts at the tasks
 * stage's extension points:
 *   - as a ToolCallInterceptor it answers the gateway's own status and cancel tools, and holds
 *     a listed tool's call from a client that could not have asked for a task (2025-11-25
 *     without params.task; 2026-07-28 without the tasks extension): an answer within
 *     detachAfter goes back as it is; past it the client gets a tool result naming a handle,
 *     and the call goes on as a gateway-run task (GatewayRunTasks, from src/provided/);
 *   - as a ResultFilter it adds the status and cancel tools to the first page of tools/list
 *     for such clients, and learns which backend tools declare an outputSchema.
 * It lives as long as the gateway; each request brings its policy in request.snapshot.
 */
import type { TaskRequest } from '../tasks/task-request.js';
import type { Logger } from 'pino';
import type { BackgroundCallsPolicy } from '../config/sections/background-calls.js';
import type { JsonRpcRequest } from '../mcp/jsonrpc.js';
import type { GatewayMetrics } from '../observability/metrics.js';
import type { GatewayRunTasks, LocalAnswer, ResultFilter, StageDeps, ToolCallInterceptor } from '../tasks/extension-points.js';
import { isObject } from '../mcp/json.js';
import { detachedText, usageText, type TaskToolNames } from './model-texts.js';
import { answerCancel, answerStatus, toolAnswer, type ToolAnswerContext } from './task-tool-answers.js';
import { CANCEL_USAGE, readCancelArguments, readStatusArguments, STATUS_USAGE, taskToolDefinitions, taskToolNames } from './task-tools.js';
import { ToolCatalogue } from './tool-catalogue.js';

export interface BackgroundCallsDeps {
  /** Gateway-run tasks: how a call is held, detached and cancelled (src/provided/). */
  readonly runner: GatewayRunTasks;
  readonly metrics: GatewayMetrics;
  readonly logger: Logger;
}

/** Collision warnings remembered (upstream and tool name), so each is logged once per replica. */
const MAX_WARNED = 1000;

export class BackgroundCalls implements ToolCallInterceptor, ResultFilter {
  private readonly catalogue = new ToolCatalogue();
  private readonly warned = new Set<string>();

  constructor(private readonly deps: BackgroundCallsDeps) {}

  async interceptToolCall(deps: StageDeps, request: TaskRequest, message: JsonRpcRequest): Promise<LocalAnswer | undefined> {
    const params = message.params;
    if (!isObject(params) || typeof params.name !== 'string') return undefined;
    const upstream = request.route.pool.upstream;
    const policy = request.route.config.backgroundCalls;
    if (!policy) return undefined;
    const tool = params.name;
    const names = taskToolNames(policy);
    if (this.answersTool(upstream, names, tool)) {
      request.toolName = tool;
      const context: ToolAnswerContext = { deps, request, names, runner: this.deps.runner, metrics: this.deps.metrics };
      return this.answerTaskTool(context, message, tool, params.arguments, policy);
    }
    if (!this.mayDetach(policy, upstream, names, tool, request, message)) return undefined;
    request.toolName = tool.slice(0, 128);
    // The task outlives the call's own limit by tasks.ttl.default: that long, its outcome can be read.
    const ttlMs = policy.timeout + deps.policy.ttl.default;
    const outcome = await this.deps.runner.runDetachable(deps, request, message, { detachAfterMs: policy.detachAfter, timeoutMs: policy.timeout, ttlMs });
    if (!outcome) return undefined;
    if (outcome.kind === 'answered') {
      this.deps.metrics.backgroundCalls.inc({ upstream, outcome: 'answered' });
      return outcome.answer;
    }
    this.deps.metrics.backgroundCalls.inc({ upstream, outcome: 'detached' });
    const { record } = outcome;
    return toolAnswer(request, message, detachedText(record.tool, record.handle, names, record.pollIntervalMs));
  }

  filterResult(request: TaskRequest, method: string, result: Record<string, unknown>): boolean {
    if (method !== 'tools/list' || !Array.isArray(result.tools)) return false;
    const upstream = request.route.pool.upstream;
    const policy = request.route.config.backgroundCalls;
    if (!policy) return false;
    for (const tool of result.tools) {
      if (isObject(tool) && typeof tool.name === 'string') this.catalogue.learn(upstream, tool.name, isObject(tool.outputSchema));
    }
    const names = taskToolNames(policy);
    // Both or neither: a status tool without its cancel tool (or the reverse) is no use to a model.
    const shadowed = [names.status, names.cancel].filter((name) => this.shadowed(upstream, name)).length > 0;
    const message = request.mcp?.message;
    if (shadowed || message?.kind !== 'request' || !cannotUseTasks(request, message)) return false;
    // Added to the first page only: a client reads every page, and a tool listed twice is an error to some.
    if (isObject(message.params) && message.params.cursor !== undefined) return false;
    result.tools.push(...taskToolDefinitions(names));
    return true;
  }

  private async answerTaskTool(c: ToolAnswerContext, message: JsonRpcRequest, tool: string, args: unknown, policy: BackgroundCallsPolicy): Promise<LocalAnswer> {
    if (tool === c.names.status) {
      const status = readStatusArguments(args, policy.statusWait);
      return status ? answerStatus(c, message, status.taskId, status.waitMs) : toolAnswer(c.request, message, usageText(tool, STATUS_USAGE));
    }
    const cancel = readCancelArguments(args);
    return toolAnswer(c.request, message, cancel ? await answerCancel(c, cancel.taskId) : usageText(tool, CANCEL_USAGE));
  }

  /** A call of one of the gateway's task tools, unless the backend has a tool of that name. */
  private answersTool(upstream: string, names: TaskToolNames, tool: string): boolean {
    return (tool === names.status || tool === names.cancel) && !this.shadowed(upstream, tool);
  }

  private mayDetach(policy: BackgroundCallsPolicy, upstream: string, names: TaskToolNames, tool: string, request: TaskRequest, message: JsonRpcRequest): boolean {
    if (policy.tools !== 'all' && !policy.tools.includes(tool)) return false;
    if (!cannotUseTasks(request, message)) return false;
    // Never a handle the model could not check on.
    if (this.shadowed(upstream, names.status) || this.shadowed(upstream, names.cancel)) return false;
    // A tool not seen in a listing here may have an outputSchema: under `plain` it stays plain.
    return policy.outputSchema === 'detach' || this.catalogue.hasOutputSchema(upstream, tool) === false;
  }

  /** Whether the backend lists a tool of this name (the backend's wins); warned about once. */
  private shadowed(upstream: string, name: string): boolean {
    if (!this.catalogue.isBackendTool(upstream, name)) return false;
    const key = `${upstream}\n${name}`;
    if (!this.warned.has(key) && this.warned.size < MAX_WARNED) {
      this.warned.add(key);
      this.deps.logger.warn(
        { upstream, tool: name },
        'the backend lists a tool with the name of a background-call task tool: the backend\'s tool is left as it is, and no calls on this upstream become background calls; set upstreams.<name>.backgroundCalls.toolNames',
      );
    }
    return true;
  }
}

/** A client that could not have asked for a task with this request (legacy: no params.task; modern: the extension not declared). */
function cannotUseTasks(request: TaskRequest, message: JsonRpcRequest): boolean {
  return !request.wire.asksForTask(message);
}
