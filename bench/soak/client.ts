/**
 * The soak's client: many principals, each holding its share of the live tasks, as loops of
 * create → poll at the task's own interval → (2025: tasks/result) → create the next. Requests
 * go over one undici Pool per replica, spread round-robin over the replicas that answer; a
 * replica whose connection is refused or reset is left out until its /readyz answers 200 again,
 * as a load balancer's health check would.
 *
 * What it sees is judged as it goes (task-entry.ts): a task seen `working` past its bound, one
 * that vanished before its TTL, a result that is not its own, an outcome other than asked. The
 * final check (final-check.ts) asks every handle once more after the load.
 */
import { Pool } from 'undici';
import type { Recorder, RequestKind } from './recorder.js';
import type { SoakSettings } from './settings.js';
import { acceptableOutcomes, documentedFailure, instanceIn, workingBound, type Delays, type FaultFacts, type Principal, type TaskEntry, type Violation } from './task-entry.js';
import { classify, LEGACY, MODERN, notification, OK, post, request, type Answer } from './wire.js';

/** A client request waits this long at most (a 2026 provided creation is held for promoteAfter). */
export const REQUEST_TIMEOUT_MS = 30_000;

export interface ReplicaTarget {
  readonly name: string;
  readonly url: string;
  readonly adminUrl: string;
  readonly pool: Pool;
  up: boolean;
}

export interface FaultView extends Delays, FaultFacts {
  /** Whether `instance` was lost (at or before `at`). */
  isLost(instance: string | undefined, at?: number): boolean;
}

export interface ClientDeps {
  setup: string;
  settings: SoakSettings;
  replicas: { name: string; url: string; adminUrl: string }[];
  mint(subject: string, path: string): Promise<string>;
  recorder: Recorder;
  faults: FaultView;
}

interface Sent {
  answer: Answer;
  cls: string;
}

const SESSION_GONE = new Set(['503 TG_ERR_UPSTREAM_UNAVAILABLE', '404 TG_ERR_SESSION_NOT_FOUND']);

export class SoakClient {
  /** Every task the client was given a handle for. */
  readonly tasks: TaskEntry[] = [];
  readonly violations: Violation[] = [];
  readonly tallies = { creationsUnknown: 0, plainAnswers: 0, sessionsOpened: 0, resultsRead: 0, cancelsAcked: 0 };
  readonly targets: ReplicaTarget[];
  private readonly principals: { principal: Principal; slots: number }[] = [];
  private slots: Promise<void>[] = [];
  private readonly sleepers = new Set<() => void>();
  private stopped = false;
  /** Aborts what is still in flight when a stop has waited long enough (a plain call may last its tool's whole time). */
  private readonly abort = new AbortController();
  private next = 0;
  private seq = 0;

  constructor(private readonly deps: ClientDeps) {
    this.targets = deps.replicas.map((r) => ({ ...r, up: true, pool: new Pool(r.url, { connections: 128, pipelining: 1, keepAliveTimeout: 4000 }) }));
  }

  /** The principals and their tokens; 2025 clients open their sessions (one per principal). */
  async prepare(): Promise<void> {
    const { settings, setup } = this.deps;
    const provided = Math.round(settings.tasks * settings.providedShare);
    for (const [kind, count] of [['backend', settings.tasks - provided], ['provided', provided]] as const) {
      for (let i = 0, left = count; left > 0; i++, left -= settings.tasksPerPrincipal) {
        const path = kind === 'backend' ? '/mcp' : '/plain';
        const subject = `${setup}-${kind}-${i}`;
        const principal: Principal = { subject, kind, path, era: i % 2 === 0 ? LEGACY : MODERN, token: await this.deps.mint(subject, path) };
        this.principals.push({ principal, slots: Math.min(left, settings.tasksPerPrincipal) });
      }
    }
    const legacy = this.principals.map((p) => p.principal).filter((p) => p.era === LEGACY);
    await this.inBatches(legacy, 16, (p) => this.openSession(p));
  }

  /** Starts every slot, spread evenly over the fill. */
  start(): void {
    const { settings } = this.deps;
    let index = 0;
    for (const { principal, slots } of this.principals) {
      for (let i = 0; i < slots; i++) this.slots.push(this.runSlot(principal, (index++ * settings.fillMs) / settings.tasks));
    }
  }

  /** Ends every loop after its request in flight, if any (aborted after REQUEST_TIMEOUT_MS). */
  async stop(): Promise<void> {
    this.stopped = true;
    for (const wake of [...this.sleepers]) wake();
    const timer = setTimeout(() => this.abort.abort(), REQUEST_TIMEOUT_MS);
    await Promise.all(this.slots);
    clearTimeout(timer);
  }

  async close(): Promise<void> {
    await Promise.all(this.targets.map((t) => t.pool.close()));
  }

  private async runSlot(principal: Principal, offsetMs: number): Promise<void> {
    await this.sleep(offsetMs);
    while (!this.stopped) {
      const task = await this.create(principal);
      if (task) await this.follow(task);
    }
  }

  private async create(p: Principal): Promise<TaskEntry | undefined> {
    const { settings, setup, faults } = this.deps;
    while (!this.stopped) {
      if (p.era === LEGACY && p.session === undefined) await this.openSession(p);
      if (this.stopped) return undefined;
      const seq = ++this.seq;
      const tag = `${setup}-${seq}`;
      const [low, high] = settings.lifetimeMs;
      const lifetimeMs = Math.round(low + Math.random() * (high - low));
      const fails = p.kind === 'backend' && Math.random() < settings.failShare;
      const cancels = Math.random() < settings.cancelShare;
      const tool = p.kind === 'backend' ? 'job' : 'slow';
      const params: Record<string, unknown> = { name: tool, arguments: { ms: lifetimeMs, tag, ...(fails ? { fail: true } : {}) } };
      if (p.era === LEGACY) params.task = { ttl: settings.ttlMs };
      const sessionInstance = p.sessionInstance;
      const sentAt = Date.now();
      // A 2026 call the gateway could not make a task of (no store at promoteAfter) stays a plain call: its answer comes when the tool ends.
      const { answer, cls } = await this.send('create', p, 'tools/call', params, { name: tool, session: p.session, instance: sessionInstance, timeoutMs: lifetimeMs + REQUEST_TIMEOUT_MS });
      const receivedAt = Date.now();
      if (cls === OK) {
        const result = answer.message!.result!;
        const task = (p.era === LEGACY ? result.task : result.resultType === 'task' ? result : undefined) as Record<string, unknown> | undefined;
        if (task && typeof task.taskId === 'string') {
          const entry: TaskEntry = {
            seq, tag, principal: p, era: p.era, kind: p.kind, lifetimeMs, fails, cancels, sentAt, receivedAt,
            handle: task.taskId,
            ttlMs: Number(p.era === LEGACY ? task.ttl : task.ttlMs),
            intervalMs: Number(p.era === LEGACY ? task.pollInterval : task.pollIntervalMs),
            instance: p.kind === 'backend' ? instanceIn(task.statusMessage) : undefined,
            sessionInstance,
            state: 'live', status: String(task.status), lastSeenAt: receivedAt,
          };
          if (entry.kind === 'backend' && faults.isLost(entry.instance, sentAt - 1000)) {
            this.violations.push({ what: 'new-work-on-lost-instance', seq, detail: `created on lost instance ${entry.instance} ${sentAt - faults.backendLosses[0]!.at} ms after its loss` });
          }
          this.tasks.push(entry);
          return entry;
        }
        // A 2026 call answered within promoteAfter, or that could not become a task, stays a plain call.
        this.tallies.plainAnswers++;
        const text = (result as { content?: { text?: unknown }[] }).content?.[0]?.text;
        if (text !== `done ${tag}`) this.violations.push({ what: 'wrong-result', seq, detail: `a ${p.era} ${tool} call answered as a plain call says ${JSON.stringify(text)}, not "done ${tag}"` });
      } else if (cls === 'connection closed' || cls === 'timeout') {
        // The gateway may have made a task whose handle never reached the client.
        this.tallies.creationsUnknown++;
      }
      if (p.era === LEGACY && SESSION_GONE.has(cls)) p.session = undefined;
      await this.sleep(retryDelay(answer, 1000));
    }
    return undefined;
  }

  private async follow(t: TaskEntry): Promise<void> {
    const { faults } = this.deps;
    const p = t.principal;
    let due = t.receivedAt + t.intervalMs;
    for (;;) {
      await this.sleep(due - Date.now());
      if (this.stopped) return;
      if (t.cancels) {
        await this.cancel(t);
        t.cancels = false;
        due = Date.now() + t.intervalMs;
        continue;
      }
      const { answer, cls } = await this.send('poll', p, 'tasks/get', { taskId: t.handle }, { name: t.handle, session: p.session, instance: t.instance, task: t });
      const now = Date.now();
      // The answer tells of a moment after the poll was sent: that is when the task was seen.
      const askedAt = now - answer.ms;
      if (cls === OK) {
        const task = answer.message!.result!;
        t.status = String(task.status);
        t.statusMessage = typeof task.statusMessage === 'string' ? task.statusMessage : undefined;
        t.lastSeenAt = now;
        if (t.status === 'working' || t.status === 'input_required') {
          if (askedAt > workingBound(t, faults) && !this.violations.some((v) => v.what === 'stuck' && v.seq === t.seq)) {
            this.violations.push({ what: 'stuck', seq: t.seq, detail: `${t.kind} ${t.era} task still ${t.status} when asked ${Math.round(askedAt - t.sentAt)} ms after creation (lifetime ${t.lifetimeMs} ms); ${this.timeline(t)}` });
          }
          due = now + t.intervalMs;
          continue;
        }
        await this.end(t, task, now);
        return;
      }
      if (cls === '503 TG_ERR_UPSTREAM_UNAVAILABLE' && faults.isLost(t.instance)) {
        t.state = 'lost';
        return;
      }
      if (cls.endsWith(' TG_ERR_TASK_NOT_FOUND')) {
        t.state = now > t.sentAt + t.ttlMs ? 'expired' : 'vanished';
        if (t.state === 'vanished') this.violations.push({ what: 'vanished', seq: t.seq, detail: `${t.kind} ${t.era} task not found ${now - t.receivedAt} ms after creation (TTL ${t.ttlMs} ms)` });
        return;
      }
      due = now + Math.min(t.intervalMs, retryDelay(answer, t.intervalMs));
    }
  }

  private async end(t: TaskEntry, task: Record<string, unknown>, now: number): Promise<void> {
    const { faults } = this.deps;
    t.state = 'ended';
    t.endedAt = now;
    t.failedBy = documentedFailure(t, faults);
    if (t.failedBy === 'backend-loss' && t.principal.session !== undefined && t.principal.sessionInstance === t.sessionInstance) {
      // The client learns its session's server is gone: it opens another.
      t.principal.session = undefined;
    }
    const expected = acceptableOutcomes(t);
    if (!t.failedBy && !expected.includes(t.status)) {
      this.violations.push({ what: 'unexpected-outcome', seq: t.seq, detail: `${t.kind} ${t.era} task ended ${t.status}, not ${expected.join(' or ')} (${t.statusMessage ?? 'no message'}); ${this.timeline(t)}` });
    }
    if (t.status !== 'completed') return;
    let text: unknown;
    if (t.era === MODERN) text = (task.result as { content?: { text?: unknown }[] } | undefined)?.content?.[0]?.text;
    else {
      const { answer, cls } = await this.send('result', t.principal, 'tasks/result', { taskId: t.handle }, { name: t.handle, session: t.principal.session, instance: t.instance, task: t });
      if (cls !== OK) return;
      this.tallies.resultsRead++;
      text = (answer.message!.result as { content?: { text?: unknown }[] }).content?.[0]?.text;
    }
    if (text !== `done ${t.tag}`) this.violations.push({ what: 'wrong-result', seq: t.seq, detail: `${t.kind} ${t.era} task's result says ${JSON.stringify(text)}, not "done ${t.tag}"` });
  }

  /** When things happened to a task, in seconds from the start of the fill. */
  private timeline(t: TaskEntry): string {
    const s = (ms: number | undefined) => (ms === undefined ? '–' : `${Math.round((ms - this.deps.recorder.t0) / 100) / 10} s`);
    return `asked for at ${s(t.sentAt)}, created ${s(t.receivedAt)}, lifetime ${t.lifetimeMs / 1000} s, cancel sent ${s(t.cancelSentAt)}, last seen ${s(t.lastSeenAt)}`;
  }

  private async cancel(t: TaskEntry): Promise<void> {
    t.cancelSentAt = Date.now();
    const { answer, cls } = await this.send('cancel', t.principal, 'tasks/cancel', { taskId: t.handle }, { name: t.handle, session: t.principal.session, instance: t.instance, task: t });
    // A refusal says the task had ended already: nothing was cancelled.
    if (cls.endsWith(' TG_ERR_TASK_TERMINAL') || cls === '200 backend error -32602') t.cancelSentAt = undefined;
    if (cls !== OK) return;
    // 2025 answers with the task, so its status is certain; a 2026 ack says nothing of it.
    t.cancelAckedAt = Date.now();
    t.cancelCertain = t.era === LEGACY && answer.message!.result!.status === 'cancelled';
    this.tallies.cancelsAcked++;
  }

  private async openSession(p: Principal): Promise<void> {
    p.reopening ??= (async () => {
      while (!this.stopped) {
        const init = { protocolVersion: LEGACY, capabilities: {}, clientInfo: { name: 'taskgate-soak', version: '1.0.0' } };
        const { answer, cls } = await this.send('initialize', p, 'initialize', init, {});
        const session = answer.headers['mcp-session-id'];
        if (cls === OK && typeof session === 'string') {
          const replica = this.pick();
          await post(replica.pool, p.path, notification(p.token, 'notifications/initialized', session), REQUEST_TIMEOUT_MS);
          p.session = session;
          p.sessionInstance = session.split('-')[0];
          this.tallies.sessionsOpened++;
          return;
        }
        await this.sleep(retryDelay(answer, 1000));
      }
    })().finally(() => (p.reopening = undefined));
    await p.reopening;
  }

  private pick(): ReplicaTarget {
    const up = this.targets.filter((t) => t.up);
    const from = up.length > 0 ? up : this.targets;
    return from[this.next++ % from.length]!;
  }

  private async send(kind: RequestKind, p: Principal, method: string, params: Record<string, unknown>, ctx: { name?: string; session?: string; instance?: string; task?: TaskEntry; timeoutMs?: number }): Promise<Sent> {
    const replica = this.pick();
    const answer = await post(replica.pool, p.path, request(p.era, p.token, method, params, ctx.name, ctx.session), ctx.timeoutMs ?? REQUEST_TIMEOUT_MS, this.abort.signal);
    const cls = classify(answer);
    // Cut short by the end of the run: neither an answer nor an error of the gateway's.
    if (cls === 'aborted') return { answer, cls };
    if (cls === 'connection refused' || cls === 'connection closed') this.markDown(replica);
    // The gateway made the task after it was asked for: its TTL ends no sooner than this.
    const ttlEndsAt = ctx.task && ctx.task.sentAt + ctx.task.ttlMs;
    this.deps.recorder.record(kind, cls, answer.ms, { replica: replica.name, instance: ctx.instance, taskKind: p.kind, ttlEndsAt });
    return { answer, cls };
  }

  /** Left out of the rotation until its /readyz says 200, checked every 250 ms. */
  private markDown(replica: ReplicaTarget): void {
    if (!replica.up || this.targets.length === 1) return;
    replica.up = false;
    void (async () => {
      while (!this.stopped) {
        await this.sleep(250);
        const res = await fetch(`${replica.adminUrl}/readyz`).catch(() => undefined);
        await res?.text();
        if (res?.status === 200) break;
      }
      replica.up = true;
    })();
  }

  private sleep(ms: number): Promise<void> {
    if (this.stopped || ms <= 0) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.sleepers.delete(done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.sleepers.add(done);
    });
  }

  private async inBatches<T>(items: T[], width: number, each: (item: T) => Promise<void>): Promise<void> {
    let index = 0;
    await Promise.all(Array.from({ length: width }, async () => {
      while (index < items.length) await each(items[index++]!);
    }));
  }
}

/** Retry-After when the answer carries one, else `fallbackMs`. */
function retryDelay(answer: Answer, fallbackMs: number): number {
  const seconds = Number(answer.headers['retry-after']);
  return Number.isFinite(seconds) && seconds > 0 ? seconds * 1000 : fallbackMs;
}
