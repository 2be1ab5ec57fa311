/**
 * Gateway-run tasks as other capabilities use them (GatewayRunTasks, src/tasks/extension-points.ts):
 * a call held until it either answers or outlasts a detach time and goes on as a task, and a
 * cancel. Background calls (src/background/) build on it; they never see this room's insides.
 */
import type { FastifyRequest } from 'fastify';
import type { JsonRpcRequest } from '../mcp/jsonrpc.js';
import type { DetachOptions, DetachOutcome, GatewayRunTasks, StageDeps } from '../tasks/extension-points.js';
import { isObject } from '../tasks/task-shapes.js';
import type { TaskRecord } from '../task-model/task-record.js';
import { holdThenPromote } from './creation.js';
import type { ProvidedContext } from './provided-context.js';
import { cancelTask } from './task-answers.js';
import type { DriverSettings } from './task-driver.js';

export class ProvidedGatewayRun implements GatewayRunTasks {
  constructor(
    private readonly ctx: ProvidedContext,
    /** The driver settings of a call on this request's route (ProvidedTasks' own). */
    private readonly settingsFor: (deps: StageDeps, request: FastifyRequest, era: 'legacy' | 'modern') => DriverSettings,
  ) {}

  async runDetachable(deps: StageDeps, request: FastifyRequest, message: JsonRpcRequest, options: DetachOptions): Promise<DetachOutcome | undefined> {
    const params = message.params;
    if (!isObject(params) || typeof params.name !== 'string') return undefined;
    const tool = params.name;
    const cap = Math.min(deps.policy.tools[tool]?.maxTtl ?? Infinity, deps.policy.ttl.max);
    const settings = this.settingsFor(deps, request, request.tg.mcp!.era);
    const held = await holdThenPromote({ ctx: this.ctx, deps, settings }, request, message, params, tool, {
      waitMs: options.detachAfterMs,
      timeoutMs: options.timeoutMs,
      ttlMs: Math.min(options.ttlMs, cap),
      background: true,
    });
    if (!held) return undefined;
    return held.kind === 'task' ? { kind: 'detached', record: held.record } : { kind: 'answered', answer: held.answer };
  }

  async cancel(deps: StageDeps, record: TaskRecord): Promise<boolean> {
    return (await cancelTask(this.ctx, deps, record)) !== undefined;
  }
}
