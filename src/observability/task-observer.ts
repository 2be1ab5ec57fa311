/**
 * Where the tasks stage reports what happened to tasks: task metrics, the audit trail and the
 * detectors (DESIGN.md §6). The stage calls it; it never changes an answer.
 */
import type { Logger } from 'pino';
import type { AuditConfig } from '../config/sections/audit.js';
import type { LimitStore } from '../store/limit-store.js';
import { TtlMap } from '../lifecycle/ttl-map.js';
import { isTerminalStatus, type TaskRecord, type TaskStatus } from '../task-model/task-record.js';
import type { AuditEvent, AuditEventName, AuditLog } from './audit.js';
import type { HandleHasher } from './handle-hash.js';
import type { ExchangeRecord } from './exchange-facts.js';
import type { GatewayMetrics } from './metrics.js';
import { PrincipalActivity } from './principal-activity.js';

const MAX_TOOL_LABELS = 200;
const TRACKED_PRINCIPALS = 100_000;
const AUDITED_METHODS: Record<string, AuditEventName> = {
  'tasks/get': 'get',
  'tasks/result': 'result',
  'tasks/update': 'update',
  'tasks/cancel': 'cancel',
  'tasks/list': 'list',
};

export class TaskObserver {
  private readonly toolLabels = new Set<string>();
  private readonly refusals: TtlMap<number>;
  private readonly abuseWarned: TtlMap<true>;
  /** Per principal, what the operator console shows (counted only while it is on). */
  readonly principals = new PrincipalActivity();

  constructor(
    private readonly metrics: GatewayMetrics,
    private readonly audit: AuditLog,
    private readonly hashHandle: HandleHasher,
    private readonly logger: Logger,
    private readonly policy: AuditConfig,
    /** Where refusals are counted when audit.enumeration.action is suspend (shared by replicas). */
    private readonly limits?: LimitStore,
  ) {
    this.refusals = new TtlMap(TRACKED_PRINCIPALS);
    this.abuseWarned = new TtlMap(TRACKED_PRINCIPALS);
  }

  created(record: TaskRecord): void {
    this.metrics.tasksCreated.inc({ upstream: record.upstream, tool: this.toolLabel(record.tool) });
    this.metrics.tasksLive.inc({ status: record.status });
  }

  statusChanged(record: TaskRecord, from: TaskStatus, to: TaskStatus): void {
    if (from === to) return;
    this.metrics.tasksLive.dec({ status: from });
    this.metrics.tasksLive.inc({ status: to });
    if (isTerminalStatus(to) && !isTerminalStatus(from)) {
      this.metrics.timeToTerminal.observe({ upstream: record.upstream, status: to }, (Date.now() - record.createdAt) / 1000);
    }
  }

  /** The gateway forgot a handle: its lifetime ended, or a read-once result was delivered. */
  forgotten(record: TaskRecord, reason: 'expired' | 'read_once'): void {
    this.metrics.tasksLive.dec({ status: record.status });
    this.metrics.tasksForgotten.inc({ reason });
    if (reason !== 'expired') return;
    // A background call whose client never came back for its outcome (src/background/).
    if (record.backgroundCall === 'unread') this.metrics.backgroundCalls.inc({ upstream: record.upstream, outcome: 'abandoned' });
    this.audit.record({ event: 'expired', allowed: true, handle: record.handle, handleHash: this.hashHandle(record.handle), tool: record.tool, upstream: record.upstream, instance: record.instance, status: record.status });
    if (!isTerminalStatus(record.status)) {
      this.metrics.detectorEvents.inc({ detector: 'overdue' });
      this.logger.warn({ detector: 'overdue', task: this.hashHandle(record.handle), tool: record.tool, upstream: record.upstream, status: record.status }, 'task still running when its lifetime ended; cancelling it upstream');
    }
  }

  /** A task polled far faster than its interval. Warned about once a minute per task. */
  pollAbuse(record: TaskRecord, owner: string): void {
    this.metrics.detectorEvents.inc({ detector: 'poll_abuse' });
    if (this.abuseWarned.get(record.handle)) return;
    this.abuseWarned.set(record.handle, true, 60_000);
    this.logger.warn({ detector: 'poll_abuse', task: this.hashHandle(record.handle), owner, intervalMs: record.pollIntervalMs }, 'task polled far faster than its interval');
  }

  /** One audit event per task operation, once its answer is known; feeds the enumeration detector. */
  requestEnded(request: ExchangeRecord, statusCode: number): void {
    const tg = request;
    const message = tg.mcp?.message;
    const method = message?.kind === 'request' ? message.method : undefined;
    if (tg.createdTask) this.audit.record(this.auditEvent(request, 'created', true, undefined, tg.createdTask.handle, tg.createdTask.status));
    if (tg.limitRefusal) {
      // A suspended principal's requests are audited once, when the suspension starts.
      if (tg.limitRefusal.limit !== 'suspended') this.audit.record(this.auditEvent(request, 'limited', false, `${tg.limitRefusal.limit}:${tg.limitRefusal.scope}`, undefined, undefined));
      return;
    }
    const event = tg.taskOperation ?? (method === undefined ? undefined : AUDITED_METHODS[method]);
    if (!event || !tg.taskOutcome) return;
    const handle = (tg.createdTask ?? tg.task)?.handle ?? tg.requestedHandle;
    const owner = tg.principalKey ?? 'anonymous';
    if (event === 'get') this.principals.poll(owner, tg.principal?.issuer);
    if (tg.taskOutcome === 'not_found' || tg.taskOutcome === 'denied') {
      this.audit.record(this.auditEvent(request, 'denied', false, tg.taskOutcome, handle, undefined));
      this.principals.refused(owner, tg.principal?.issuer, tg.taskOutcome);
      this.countRefusal(request, owner);
      return;
    }
    if (tg.taskOutcome === 'throttled') {
      this.audit.record(this.auditEvent(request, 'throttled', false, method, handle, undefined));
      this.principals.refused(owner, tg.principal?.issuer, 'throttled');
      return;
    }
    this.audit.record(this.auditEvent(request, event, statusCode < 400, undefined, handle, tg.statusSeen));
  }

  /**
   * A handle a subscriptions/listen named that is not the caller's (unknown, expired, foreign,
   * malformed): left out of the subscription, audited and counted like a refused task lookup.
   */
  subscriptionRefused(request: ExchangeRecord, handle: string | undefined, reason: 'not_found' | 'denied'): void {
    this.audit.record(this.auditEvent(request, 'denied', false, reason, handle, undefined));
    const owner = request.principalKey ?? 'anonymous';
    this.principals.refused(owner, request.principal?.issuer, reason);
    this.countRefusal(request, owner);
  }

  /**
   * One audit event, built in one object literal: this runs for every task operation, and
   * spreading a shared base into each event cost more than writing it. Fields left undefined
   * are left out of the line (auditLine serialises with JSON.stringify).
   */
  private auditEvent(tg: ExchangeRecord, event: AuditEventName, allowed: boolean, reason: string | undefined, handle: string | undefined, status: string | undefined): AuditEvent {
    const principal = tg.principal;
    return {
      principal: principal && { issuer: principal.issuer, subject: principal.subject, tenant: principal.tenant, clientId: principal.clientId },
      tool: (tg.createdTask ?? tg.task)?.tool,
      upstream: tg.route.pool.upstream,
      instance: tg.instance?.url,
      source: tg.clientIp,
      requestId: tg.requestId,
      event,
      allowed,
      reason,
      handle,
      handleHash: handle === undefined ? undefined : this.hashHandle(handle),
      status,
    };
  }

  /** Enumeration: a burst of refused lookups from one principal. Warned once per window. */
  private countRefusal(request: ExchangeRecord, owner: string): void {
    const { threshold, window, action } = this.policy.enumeration;
    if (action === 'suspend' && this.limits) {
      this.countSharedRefusal(request, owner);
      return;
    }
    const count = (this.refusals.get(owner) ?? 0) + 1;
    // The window starts at the first refusal and is not extended by later ones.
    if (count === 1) this.refusals.set(owner, count, window);
    else this.refusals.update(owner, count);
    if (count !== threshold) return;
    this.metrics.detectorEvents.inc({ detector: 'enumeration' });
    this.principals.alert(owner);
    this.logger.warn({ detector: 'enumeration', owner, refusals: count, windowMs: window }, 'principal probing for task handles');
  }

  /**
   * The same detector counted in the store, so that replicas agree; the refusal that reaches
   * the threshold suspends the principal (the limits stage answers its tasks/* 429 until the
   * window ends) and is the one audited. Runs after the answer, so nothing waits on it.
   */
  private countSharedRefusal(request: ExchangeRecord, owner: string): void {
    const { threshold, window } = this.policy.enumeration;
    const event = this.auditEvent(request, 'suspended', false, 'enumeration', undefined, undefined);
    this.limits!.countRefusal(owner, threshold, window, Date.now()).then(
      ({ count, resetAt }) => {
        if (count !== threshold) return;
        this.metrics.detectorEvents.inc({ detector: 'enumeration' });
        this.principals.alert(owner);
        this.audit.record(event);
        this.logger.warn({ detector: 'enumeration', owner, refusals: count, suspendedMs: resetAt - Date.now() }, 'principal probing for task handles; its task requests are suspended for the rest of the window');
      },
      (error: unknown) => this.logger.warn({ err: error }, 'could not count a refused task lookup in the store'),
    );
  }

  private toolLabel(tool: string): string {
    if (this.toolLabels.has(tool)) return tool;
    if (this.toolLabels.size >= MAX_TOOL_LABELS) return 'other';
    this.toolLabels.add(tool);
    return tool;
  }
}
