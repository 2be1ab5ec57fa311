/**
 * The `limits` stage, between mcp and tasks (DESIGN.md §2): per-principal limits on tools/call
 * (toolLimits: rate and calls in flight, globally and per tool) and the enumeration
 * suspension (audit.enumeration.action: suspend) on tasks/* and on listens naming task handles. Everything is counted in the
 * store (store.limits), so replicas enforce one number: one round trip per tools/call when a
 * limit applies, none otherwise. A refused request is answered 429 here and never reaches
 * the tasks stage or the backend.
 */
import { randomUUID } from 'node:crypto';
import type { AuditConfig } from '../config/sections/audit.js';
import type { ToolLimitsConfig } from '../config/sections/tool-limits.js';
import { GatewayError } from '../errors.js';
import type { McpMessage } from '../mcp/jsonrpc.js';
import type { LimitRefusal } from '../observability/exchange-facts.js';
import type { RequestLog } from '../observability/logger.js';
import type { InFlight } from '../lifecycle/in-flight.js';
import type { GatewayMetrics } from '../observability/metrics.js';
import type { ConcurrencyRule, LimitStore, RateRule } from '../store/limit-store.js';
import type { EraWire } from '../task-model/task-wire.js';
import { TtlMap } from '../lifecycle/ttl-map.js';
import { CallHold } from './call-hold.js';

export type { LimitRefusal };

/** What the stage reads of a request, and the refusal it reports (for the audit trail and metrics). */
export interface LimitedRequest {
  readonly mcp?: { readonly message: McpMessage | undefined };
  /** The request's era (task-model/task-wire.ts): whether a hang-up cancels its call. */
  readonly wire: Pick<EraWire, 'hangUpCancels'>;
  /** Opaque, stable key of the principal; undefined without authentication. */
  readonly principalKey?: string;
  readonly log: RequestLog;
  /** The count of work on the request's policy snapshot, which a held call stays in. */
  readonly route: { readonly inFlight: InFlight };
  limitRefusal?: LimitRefusal;
}

/**
 * A tools/call admitted with a concurrency slot, for the pipeline to give back when the
 * client's response closes: 2026-07-28, `release` (a closed stream is the call's
 * cancellation); 2025, `hold`, which its upstream requests take their signal from and which
 * gives the slot back once the backend has answered too (call-hold.ts).
 */
export type Admission = { readonly kind: 'release'; readonly release: () => void } | { readonly kind: 'hold'; readonly hold: CallHold };

export interface LimitsStageDeps {
  readonly limits: LimitStore;
  readonly metrics: GatewayMetrics;
}

/** Principal key of requests on a gateway running without authentication (as task-context.ts). */
const ANONYMOUS = 'anonymous';
const GLOBAL_KEY = 'tools/call';
/** Suspensions this replica already knows of, so a suspended prober costs no round trip. */
const KNOWN_SUSPENSIONS = 10_000;
/**
 * With operator suspensions (the console) a suspension can also end early, on any replica: a
 * known one is then trusted only this long before the store is asked again.
 */
const KNOWN_SUSPENSION_MS_WITH_OPERATORS = 1000;

interface CompiledRules {
  readonly rates: RateRule[];
  readonly slots: ConcurrencyRule[];
  /** Which scope each rate and each slot rule is, by index. */
  readonly rateScopes: LimitRefusal['scope'][];
  readonly slotScopes: LimitRefusal['scope'][];
}

export class LimitsStage {
  private readonly global: CompiledRules;
  private readonly byTool = new Map<string, CompiledRules>();
  /** Principal key → end of its suspension. */
  private readonly suspensions = new TtlMap<number>(KNOWN_SUSPENSIONS);
  private readonly suspends: boolean;
  private readonly operatorSuspensions: boolean;
  /** 2025 calls whose slot waits for the backend's answer (call-hold.ts). */
  private readonly holds = new Set<CallHold>();

  /**
   * `operatorSuspensions`: operators may suspend and un-suspend principals (console.enabled), so
   * tasks/* is checked against the store's suspensions whatever the detector's action.
   */
  constructor(
    private readonly policy: ToolLimitsConfig,
    enumeration: AuditConfig['enumeration'],
    private readonly deps: LimitsStageDeps,
    options: { operatorSuspensions?: boolean } = {},
  ) {
    this.operatorSuspensions = options.operatorSuspensions ?? false;
    this.suspends = enumeration.action === 'suspend' || this.operatorSuspensions;
    this.global = compile(policy, undefined);
    for (const [tool, limits] of Object.entries(policy.tools)) this.byTool.set(tool, compile(policy, { tool, ...limits }));
  }

  /**
   * Whether this stage must see the message on its own (the pipeline refuses a batch holding
   * one, docs/security.md "Batches"): tools/call counts against the limits, and every
   * task operation and task listen is what a suspended prober is refused.
   */
  governs(message: McpMessage): boolean {
    return message.kind === 'request' && (message.method === 'tools/call' || message.method === 'subscriptions/listen' || message.method.startsWith('tasks/'));
  }

  /**
   * Admits the request, or rejects with the 429 to answer with; a tools/call that took a
   * concurrency slot resolves to its Admission. Undefined (nothing to wait for) when no limit
   * applies, so requests no limit concerns do not pay for a promise.
   */
  admit(request: LimitedRequest): Promise<Admission | undefined> | undefined {
    const message = request.mcp?.message;
    if (message?.kind !== 'request') return undefined;
    if (message.method === 'tools/call') {
      const name = (message.params as { name?: unknown } | undefined)?.name;
      const rules = (typeof name === 'string' && this.byTool.get(name)) || this.global;
      return rules.rates.length === 0 && rules.slots.length === 0 ? undefined : this.admitToolCall(request, rules);
    }
    if (this.suspends && (message.method.startsWith('tasks/') || namesTaskHandles(message.method, message.params))) return this.checkSuspension(request).then(() => undefined);
    return undefined;
  }

  private async admitToolCall(request: LimitedRequest, rules: CompiledRules): Promise<Admission | undefined> {
    const owner = request.principalKey ?? ANONYMOUS;
    const slotId = randomUUID();
    const now = Date.now();
    const verdict = await this.deps.limits.acquire({ owner, rates: rules.rates, slots: rules.slots, slotId, slotTtlMs: this.policy.slotTtl, now });
    if (!verdict.allowed) {
      const rate = verdict.kind === 'rate' ? rules.rates[verdict.index]! : undefined;
      const scope = (verdict.kind === 'rate' ? rules.rateScopes : rules.slotScopes)[verdict.index]!;
      throw this.refuse(request, { limit: verdict.kind, scope }, verdict.retryAfterMs, {
        limit: verdict.kind,
        scope,
        ...(rate ? { max: rate.limit, windowMs: rate.windowMs } : { max: rules.slots[verdict.index]!.max }),
      });
    }
    if (rules.slots.length === 0) return undefined;
    const slotKeys = rules.slots.map((rule) => rule.key);
    const release = () => {
      // A slot not given back lapses after toolLimits.slotTtl; nothing else waits on this.
      this.deps.limits.release(owner, slotKeys, slotId, Date.now()).catch((error: unknown) => {
        request.log.warn({ err: error }, 'could not give back a tools/call concurrency slot; it lapses after toolLimits.slotTtl');
      });
    };
    // Modern: a closed stream is the call's cancellation. The client's hang-up closes the
    // upstream request first, then the slot goes back.
    if (request.wire.hangUpCancels) return { kind: 'release', release };
    // Legacy: the backend runs on after a hang-up, so the slot waits for its answer.
    const inFlight = request.route.inFlight;
    return { kind: 'hold', hold: new CallHold({ release, lapsesAt: now + this.policy.slotTtl, holds: this.holds, enterSnapshot: () => inFlight.enter() }) };
  }

  /** Shutdown: the calls still held for their backend's answer are cut, their slots given back. */
  close(): void {
    for (const hold of [...this.holds]) hold.cut();
  }

  private async checkSuspension(request: LimitedRequest): Promise<void> {
    const owner = request.principalKey ?? ANONYMOUS;
    const now = Date.now();
    const known = this.suspensions.get(owner, now);
    const left = known === undefined ? await this.deps.limits.suspendedFor(owner, now) : known - now;
    if (known === undefined && left > 0) this.suspensions.set(owner, now + left, this.operatorSuspensions ? Math.min(left, KNOWN_SUSPENSION_MS_WITH_OPERATORS) : left, now);
    if (left > 0) throw this.refuse(request, { limit: 'suspended', scope: 'tasks' }, left, { limit: 'suspended', retryAfterMs: left });
  }

  private refuse(request: LimitedRequest, refusal: LimitRefusal, retryAfterMs: number, data: Record<string, unknown>): GatewayError {
    request.limitRefusal = refusal;
    this.deps.metrics.limitRejections.inc({ limit: refusal.limit, scope: refusal.scope });
    const detail =
      refusal.limit === 'suspended'
        ? 'task requests of this principal are suspended (by the enumeration detector or an operator)'
        : `tools/call ${refusal.limit === 'rate' ? 'rate' : 'concurrency'} limit${refusal.scope === 'tool' ? ' of this tool' : ''} reached`;
    return new GatewayError('TG_ERR_RATE_LIMITED', {
      detail,
      headers: { 'retry-after': String(Math.max(1, Math.ceil(retryAfterMs / 1000))) },
      data,
    });
  }
}

/**
 * A subscriptions/listen with `notifications.taskIds` probes handles as tasks/get does (each
 * one not granted is a refused lookup, src/push/granted-handles.ts), so a suspended principal
 * may not send one; a listen without taskIds (list changes, resources) is no probe. Decided on
 * the key alone, as the push room decides to take the listen over.
 */
function namesTaskHandles(method: string, params: unknown): boolean {
  if (method !== 'subscriptions/listen' || typeof params !== 'object' || params === null) return false;
  const filter = (params as { notifications?: unknown }).notifications;
  return typeof filter === 'object' && filter !== null && !Array.isArray(filter) && 'taskIds' in filter;
}

function compile(policy: ToolLimitsConfig, tool: ({ tool: string } & Pick<ToolLimitsConfig, 'rate' | 'concurrency'>) | undefined): CompiledRules {
  const compiled: CompiledRules = { rates: [], slots: [], rateScopes: [], slotScopes: [] };
  const add = (key: string, scope: LimitRefusal['scope'], limits: Pick<ToolLimitsConfig, 'rate' | 'concurrency'>) => {
    if (limits.rate) {
      compiled.rates.push({ key, limit: limits.rate.limit, windowMs: limits.rate.window });
      compiled.rateScopes.push(scope);
    }
    if (limits.concurrency !== undefined) {
      compiled.slots.push({ key, max: limits.concurrency });
      compiled.slotScopes.push(scope);
    }
  };
  // The tool's own limits first: when both refuse, the narrower one is the one named.
  if (tool) add(`tool:${tool.tool}`, 'tool', tool);
  add(GLOBAL_KEY, 'global', policy);
  return compiled;
}
