/**
 * The faults, injected at set times into a running stack, and what the gateway documents as
 * the answer to each (docs/operations.md, docs/errors.md, docs/provided-tasks.md):
 *
 * - **redis-restart**: redis-server stopped with SIGTERM (its append-only file written) and
 *   started again on the same port and directory. Meanwhile task operations and 2025 sessions
 *   answer 503 TG_ERR_STORE_UNAVAILABLE (-31004), "Failing closed"; the replicas reconnect by
 *   themselves; nothing is lost.
 * - **replica-kill**: one replica SIGKILLed and started again. Its connections are refused or
 *   cut (no gateway can answer for a dead process: the load balancer's part); the other replica
 *   serves every task from Redis; the provided tasks whose call it held end `failed` within
 *   `tasks.provided.lease` + 1 s.
 * - **backend-loss**: one backend instance SIGKILLed for good. New work goes to the other
 *   instance; tasks and 2025 sessions that live on the lost one answer 503
 *   TG_ERR_UPSTREAM_UNAVAILABLE (-31005, runbook "TaskgateUpstreamRefusing") until their TTL,
 *   then not found; requests in flight to it at that moment 502 TG_ERR_BAD_GATEWAY; provided
 *   tasks whose call it held end `failed` ("the backend could not be reached").
 *
 * A fault stays in place at least its set time and until the client has met its documented
 * answer once (bounded), so a short run cannot miss it.
 */
import { delay } from '../children.js';
import type { FaultView } from './client.js';
import { killBackend, type Backend, type ProcessList, type RedisProcess, type Replica } from './processes.js';
import type { ErrorEvent, Recorder } from './recorder.js';
import type { FaultKind, FaultPlan } from './settings.js';

export class FaultLog implements FaultView {
  readonly outages: [number, number][] = [];
  readonly kills: { at: number; leaseMs: number }[] = [];
  readonly replicaKills: number[] = [];
  readonly backendLosses: { at: number; instance: string }[] = [];

  isLost(instance: string | undefined, at = Date.now()): boolean {
    return instance !== undefined && this.backendLosses.some((loss) => loss.instance === instance && loss.at <= at);
  }
}

export interface FaultRecord {
  kind: FaultKind;
  /** What was hit: `redis`, a replica's name, a backend instance's. */
  target: string;
  /** Seconds from the start of the load. */
  plannedAtS: number;
  injectedAtS?: number;
  recoveredAtS?: number;
  injectedAt?: number;
  recoveredAt?: number;
  /**
   * How long after recovery the fault's answers may still come: a store connection the restart
   * left half-open is found dead only by the socket timeout (store.commandTimeout).
   */
  graceMs: number;
  /** The documented answer the client met while the fault was in place, and how soon. */
  observed?: { cls: string; count: number; firstAfterMs?: number };
  detail: Record<string, unknown>;
  error?: string;
}

export interface FaultStack {
  redis?: RedisProcess;
  replicas: Replica[];
  backends: Backend[];
  processes: ProcessList;
}

export interface FaultContext {
  t0: number;
  startMs: number;
  loadMs: number;
  stack: FaultStack;
  recorder: Recorder;
  log: FaultLog;
  leaseMs: number;
  /** store.commandTimeout in force (the gateway's socket timeout on Redis connections). */
  commandTimeoutMs: number;
  redisDownMs: number;
  replicaDownMs: number;
  pollIntervalMs: number;
}

/** After recovery, a grace for answers already on their way (a reconnect, a health check). */
const GRACE_MS = 3000;
const STORE_DOWN = '503 TG_ERR_STORE_UNAVAILABLE';
const UPSTREAM_DOWN = '503 TG_ERR_UPSTREAM_UNAVAILABLE';
const CUT = ['connection refused', 'connection closed'];

/** Waits until `done` or `limitMs`; true when done. */
async function until(done: () => boolean, limitMs: number): Promise<boolean> {
  const deadline = Date.now() + limitMs;
  while (!done()) {
    if (Date.now() > deadline) return false;
    await delay(100);
  }
  return true;
}

function observe(recorder: Recorder, classes: string[], since: number, match: (e: ErrorEvent) => boolean): FaultRecord['observed'] {
  const seen = recorder.errors.filter((e) => e.at >= since && classes.includes(e.cls) && match(e));
  return { cls: classes.join(' | '), count: seen.length, ...(seen[0] ? { firstAfterMs: seen[0].at - since } : {}) };
}

async function restartRedis(ctx: FaultContext, record: FaultRecord): Promise<void> {
  const redis = ctx.stack.redis!;
  const at = Date.now();
  const outage: [number, number] = [at, Infinity];
  ctx.log.outages.push(outage);
  record.injectedAt = at;
  await redis.stopForRestart();
  await until(() => Date.now() - at >= ctx.redisDownMs && ctx.recorder.seen(STORE_DOWN, at) > 0, ctx.redisDownMs * 4);
  await redis.startAgain();
  await Promise.all(ctx.stack.replicas.map((r) => r.waitReady(30_000)));
  outage[1] = Date.now();
  record.recoveredAt = outage[1];
  record.observed = observe(ctx.recorder, [STORE_DOWN], at, () => true);
  record.detail = { downMs: outage[1] - at, redisPid: redis.pid };
  record.graceMs = GRACE_MS + ctx.commandTimeoutMs;
}

async function killReplica(ctx: FaultContext, record: FaultRecord): Promise<void> {
  const replica = ctx.stack.replicas.at(-1)!;
  const at = Date.now();
  record.injectedAt = at;
  ctx.log.kills.push({ at, leaseMs: ctx.leaseMs });
  ctx.log.replicaKills.push(at);
  const pid = replica.pid;
  await replica.kill();
  const cut = () => CUT.some((cls) => ctx.recorder.seen(cls, at, (e) => e.replica === replica.name) > 0);
  await until(() => Date.now() - at >= ctx.replicaDownMs && cut(), ctx.replicaDownMs * 4);
  await replica.start();
  record.recoveredAt = Date.now();
  record.observed = observe(ctx.recorder, CUT, at, (e) => e.replica === replica.name);
  record.detail = { killedPid: pid, newPid: replica.pid, downMs: record.recoveredAt - at };
}

async function loseBackend(ctx: FaultContext, record: FaultRecord): Promise<void> {
  const backend = ctx.stack.backends.at(-1)!;
  // What it held when it died: its tasks still working and the provided calls it was answering.
  const stats = (await fetch(`${backend.url}/stats`).then((r) => r.json()).catch(() => ({}))) as { working?: number; held?: number; sessions?: number };
  const at = Date.now();
  record.injectedAt = at;
  killBackend(ctx.stack.processes, backend);
  ctx.log.backendLosses.push({ at, instance: backend.name });
  const onLost = (e: ErrorEvent) => e.instance === backend.name;
  await until(() => ctx.recorder.seen(UPSTREAM_DOWN, at, onLost) > 0, 2 * ctx.pollIntervalMs + 5000);
  record.observed = observe(ctx.recorder, [UPSTREAM_DOWN], at, onLost);
  record.detail = { workingTasks: stats.working, heldProvidedCalls: stats.held, sessions: stats.sessions, pid: backend.child.pid };
}

const INJECT: Record<FaultKind, (ctx: FaultContext, record: FaultRecord) => Promise<void>> = {
  'redis-restart': restartRedis,
  'replica-kill': killReplica,
  'backend-loss': loseBackend,
};

const TARGET: Record<FaultKind, (stack: FaultStack) => string> = {
  'redis-restart': () => 'redis',
  'replica-kill': (stack) => stack.replicas.at(-1)!.name,
  'backend-loss': (stack) => stack.backends.at(-1)!.name,
};

/** Injects each planned fault at its time, one after the other; returns what happened. */
export async function runFaults(plans: FaultPlan[], ctx: FaultContext, stopped: () => boolean): Promise<FaultRecord[]> {
  const records: FaultRecord[] = [];
  for (const plan of [...plans].sort((a, b) => a.at - b.at)) {
    const plannedAt = ctx.startMs + plan.at * ctx.loadMs;
    const record: FaultRecord = { kind: plan.kind, target: TARGET[plan.kind](ctx.stack), plannedAtS: Math.round(plannedAt / 100) / 10, graceMs: GRACE_MS, detail: {} };
    records.push(record);
    while (Date.now() < ctx.t0 + plannedAt && !stopped()) await delay(Math.min(250, ctx.t0 + plannedAt - Date.now()));
    if (stopped()) {
      record.error = 'the run ended before its time came';
      continue;
    }
    try {
      await INJECT[plan.kind](ctx, record);
    } catch (error) {
      record.error = (error as Error).message.split('\n')[0];
    }
    const seconds = (at: number | undefined) => (at === undefined ? undefined : Math.round((at - ctx.t0) / 100) / 10);
    record.injectedAtS = seconds(record.injectedAt);
    record.recoveredAtS = seconds(record.recoveredAt);
  }
  return records;
}
