/**
 * Gateway-run tasks as other capabilities use them (GatewayRunTasks, src/tasks/extension-points.ts):
 * a call held until it either answers or outlasts a detach time and goes on as a task, a
 * cancel, and the answers to a 2026 task's questions. Background calls (src/background/) build on it; they never see this room's insides.
 */
import type { FastifyRequest } from 'fastify';
import type { JsonRpcRequest } from '../mcp/jsonrpc.js';
import type { DetachOptions, DetachOutcome, GatewayRunTasks, StageDeps } from '../tasks/extension-points.js';
import { isObject } from '../tasks/task-shapes.js';
import type { TaskRecord } from '../task-model/task-record.js';
import { holdThenPromote } from './creation.js';
import type { ProvidedContext } from './provided-context.js';
import { applyUpdate, cancelTask, type Retry } from './task-answers.js';
import type { DriverSettings } from './task-driver.js';

/** What ProvidedTasks lends this door: its driver settings, and its next-round start. */
export interface GatewayRunParts {
  /** The driver settings of a call on this request's route. */
  readonly settingsFor: (deps: StageDeps, request: FastifyRequest, era: 'legacy' | 'modern', timeoutMs: number) => DriverSettings;
  /** Starts the next round of a 2026 call, with credentials obtained for `request`. */
  readonly retry: (deps: StageDeps, request: FastifyRequest, retry: Retry) => Promise<void>;
}

export class ProvidedGatewayRun implements GatewayRunTasks {
  constructor(
    private readonly ctx: ProvidedContext,
    private readonly parts: GatewayRunParts,
  ) {}

  async runDetachable(deps: StageDeps, request: FastifyRequest, message: JsonRpcRequest, options: DetachOptions): Promise<DetachOutcome | undefined> {
    const params = message.params;
    if (!isObject(params) || typeof params.name !== 'string') return undefined;
    const tool = params.name;
    const cap = Math.min(deps.policy.tools[tool]?.maxTtl ?? Infinity, deps.policy.ttl.max);
    const settings = this.parts.settingsFor(deps, request, request.tg.mcp!.era, options.timeoutMs);
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

  /** As a 2026 tasks/update would: the answers kept, and once the round is complete the call goes on here. */
  async provideInput(deps: StageDeps, request: FastifyRequest, record: TaskRecord, inputResponses: Record<string, unknown>): Promise<boolean> {
    const { retry } = await applyUpdate(deps, { id: 0, params: { taskId: record.handle, inputResponses } }, record);
    if (retry) await this.parts.retry(deps, request, retry);
    return retry !== undefined;
  }
}
