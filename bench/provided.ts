/**
 * Tasks the gateway runs itself (docs/provided-tasks.md) in the benchmark. The provided
 * scenarios run on taskgates of their own, started beside the main ones with the same build,
 * store type and policy plus the provided-task keys (the `slow` tool of the bench backend runs
 * as a task): one whose provided tasks are polled with a 0 s interval, so every poll is on time
 * and answered from the store, and one with a one hour interval, so every poll after the first
 * is early and answered from the cache. (`tasks.poll.default` is what a provided task gets, and
 * it is one value per gateway.) The rows keep the target's name, so they sit in the tables
 * beside the backend-owned rows of the same store.
 *
 * What is checked per run: taskgate's own counters (a task created per creation, a poll on time
 * or from cache per poll) and the backend's (one `slow` call per creation, no tasks/get at all).
 */
import { delay, type NodeChild, type Pinning } from './children.js';
import type { GatewayCounters } from './child-channel.js';
import { round } from './machine.js';
import type { CellSummary } from './report.js';
import type { ProvidedScenario, ScenarioName } from './scenarios.js';
import {
  isSkipped, startRedisTaskgate, startTaskgate, taskgatePolicy,
  type ProvidedPolicyOptions, type Skipped, type Target, type TargetName, type TaskgatePolicyOptions,
} from './targets.js';

export type ProvidedRole = ProvidedScenario['role'];

/**
 * Sockets per backend instance: a creation run at 50 connections holds rate × 250 ms calls
 * (about a thousand), and they must reach the backend rather than queue inside undici (the
 * default is 128). maxRunning is raised so that the bench never meets the replica's cap.
 */
export const ROLE_POLICY: Record<ProvidedRole, ProvidedPolicyOptions> = {
  provided: { pollDefault: '0s', connections: 4096, maxRunning: 100_000 },
  'provided-cached': { pollDefault: '1h', connections: 4096, maxRunning: 100_000 },
  // Background calls (bench/background.ts): poll.default 0s, so no status call is early (an
  // early one would wait out the interval rather than be answered).
  background: { pollDefault: '0s', connections: 4096, maxRunning: 100_000, detachAfter: '50ms' },
};

export const ROLE_LABELS: Record<ProvidedRole, string> = {
  provided: 'provided-task policy, poll.default 0s (creations, on-time polls)',
  'provided-cached': 'provided-task policy, poll.default 1h (early polls)',
  background: 'background-call policy, detachAfter 50ms, poll.default 0s (detached calls, status calls)',
};

/** A started variant's key: target name and role. */
export function variantKey(name: TargetName, role: ProvidedRole): string {
  return `${name}|${role}`;
}

/** A taskgate with the provided-task policy of `role`, on the store of the main target `name`. */
export async function startProvidedTarget(pinning: Pinning, name: TargetName, role: ProvidedRole, base: Omit<TaskgatePolicyOptions, 'store' | 'provided'>, execArgv: string[] = []): Promise<Target | Skipped> {
  const options = { ...base, provided: ROLE_POLICY[role] };
  if (name === 'taskgate-redis') return startRedisTaskgate(pinning, options, execArgv);
  if (name !== 'taskgate-memory') return { name, reason: 'provided tasks run on taskgate only' };
  return startTaskgate(pinning, name, taskgatePolicy(options), execArgv);
}

export async function startProvidedTargets(pinning: Pinning, names: TargetName[], roles: Iterable<ProvidedRole>, base: Omit<TaskgatePolicyOptions, 'store' | 'provided'>, log: (line: string) => void): Promise<Map<string, Target>> {
  const variants = new Map<string, Target>();
  for (const role of roles) {
    for (const name of names) {
      const started = await startProvidedTarget(pinning, name, role, base);
      if (isSkipped(started)) log(`${name} (${role}) skipped: ${started.reason}`);
      else variants.set(variantKey(name, role), started);
    }
  }
  return variants;
}

/** Answers the backend's held `slow` calls (of `group`, or all), so provided tasks end and gateways stop quickly. */
export async function releaseHeld(backend: NodeChild, group?: string): Promise<number> {
  const res = await fetch(`${backend.url}/release${group ? `?group=${encodeURIComponent(group)}` : ''}`, { method: 'POST' });
  return ((await res.json()) as { released: number }).released;
}

export async function readCounters(target: Target): Promise<GatewayCounters> {
  if (!target.counters) throw new Error(`${target.name} has no counters: provided scenarios run on taskgate only`);
  return target.counters();
}

/**
 * After a creation run: waits until the calls it started have ended (taskgate holds no more
 * calls than before it), at most `limitMs`. The CPU is read after this, so each creation is
 * charged its whole call: sending it, reading the reply, writing the outcome, the lease.
 */
export async function settleHeldCalls(target: Target, baseline: number, limitMs = 15_000): Promise<{ ms: number; left: number }> {
  const started = Date.now();
  for (;;) {
    const { providedRunning } = await readCounters(target);
    const ms = Date.now() - started;
    if (providedRunning <= baseline || ms > limitMs) return { ms, left: Math.max(0, providedRunning - baseline) };
    await delay(20);
  }
}

export interface GatewayPerRequest {
  createdPerRequest: number;
  /** Polls taskgate let through: for a provided task, answered from the store. */
  forwardedPollsPerRequest: number;
  cachedPollsPerRequest: number;
  /** Background calls: calls answered with a handle, and status calls answered "running" and with the outcome. */
  detachedPerRequest: number;
  statusRunningPerRequest: number;
  statusEndedPerRequest: number;
  /** Creations and detached calls: how long after the load the calls it started took to end (inside the CPU window). */
  settleMs?: number;
  /** Creations: calls still held when the wait gave up (0 unless something is wrong). */
  unsettled?: number;
}

export function gatewayPerRequest(before: GatewayCounters, after: GatewayCounters, requests: number, settled?: { ms: number; left: number }): GatewayPerRequest {
  const per = (key: keyof GatewayCounters) => round((after[key] - before[key]) / requests, 3);
  return {
    createdPerRequest: per('tasksCreated'),
    forwardedPollsPerRequest: per('pollsForwarded'),
    cachedPollsPerRequest: per('pollsCached'),
    detachedPerRequest: per('backgroundDetached'),
    statusRunningPerRequest: per('statusRunning'),
    statusEndedPerRequest: per('statusEnded'),
    ...(settled ? { settleMs: settled.ms, unsettled: settled.left } : {}),
  };
}

/** Each provided scenario beside the backend-owned one it is compared with. */
export const PAIRS: { what: string; owned: ScenarioName; provided: ScenarioName; check: keyof GatewayPerRequest; checkLabel: string }[] = [
  { what: 'creation, 2025-11-25', owned: 'task-create-2025', provided: 'provided-create-2025', check: 'createdPerRequest', checkLabel: 'tasks created' },
  { what: 'creation, 2026-07-28', owned: 'task-create', provided: 'provided-create-2026', check: 'createdPerRequest', checkLabel: 'tasks created' },
  { what: 'tasks/get on time, 2026', owned: 'tasks-get-2026', provided: 'provided-get-2026', check: 'forwardedPollsPerRequest', checkLabel: 'polls on time' },
  { what: 'early tasks/get, 2026', owned: 'tasks-get-cached', provided: 'provided-get-cached', check: 'cachedPollsPerRequest', checkLabel: 'polls from cache' },
];

export interface ProvidedRow {
  what: string;
  target: TargetName;
  owned: ScenarioName;
  provided: ScenarioName;
  /** Median proxy CPU µs per request at the run's most connections (50) and at its fewest (1). */
  ownedCpu50: number | null;
  ownedCpu1: number | null;
  providedCpu50: number | null;
  providedCpu1: number | null;
  /** provided ÷ backend-owned at the most connections. */
  ratio50: number | null;
  /** What taskgate counted per request at the most connections (see PAIRS), and what the backend saw. */
  check: string;
  backendPerRequest: number | null;
  settleMs: number | null;
}

export function providedRows(cells: CellSummary[]): ProvidedRow[] {
  const cpu = (t: TargetName, s: ScenarioName, c: number) => cells.find((x) => x.target === t && x.scenario === s && x.connections === c)?.proxyCpuUsPerRequest?.median ?? null;
  const levels = cells.map((c) => c.connections);
  const [hi, lo] = [Math.max(...levels), Math.min(...levels)];
  const rows: ProvidedRow[] = [];
  for (const pair of PAIRS) {
    for (const target of ['taskgate-memory', 'taskgate-redis'] as const) {
      const cell = cells.find((x) => x.target === target && x.scenario === pair.provided && x.connections === hi);
      if (!cell) continue;
      const [o50, o1, p50, p1] = [cpu(target, pair.owned, hi), cpu(target, pair.owned, lo), cpu(target, pair.provided, hi), cpu(target, pair.provided, lo)];
      const checked = cell.gateway?.[pair.check];
      rows.push({
        what: pair.what,
        target,
        owned: pair.owned,
        provided: pair.provided,
        ownedCpu50: o50,
        ownedCpu1: o1,
        providedCpu50: p50,
        providedCpu1: p1,
        ratio50: o50 && p50 ? round(p50 / o50, 2) : null,
        check: checked === undefined ? '–' : `${checked} ${pair.checkLabel}`,
        backendPerRequest: cell.upstreamPerRequest,
        settleMs: cell.gateway?.settleMs ?? null,
      });
    }
  }
  return rows;
}

const HEADER = ['what', 'target', 'backend-owned CPU µs/req (most / 1 conn)', 'provided CPU µs/req (most / 1 conn)', 'provided ÷ owned (most conns)', 'taskgate counted per request', 'backend requests per request', 'calls ended after the load'];

function cpuPair(a: number | null, b: number | null): string {
  const f = (v: number | null) => (v === null ? '–' : v >= 100 ? String(Math.round(v)) : String(round(v, 1)));
  return `${f(a)} / ${f(b)}`;
}

function rowCells(r: ProvidedRow): string[] {
  return [
    r.what,
    r.target,
    `${cpuPair(r.ownedCpu50, r.ownedCpu1)} (\`${r.owned}\`)`,
    `${cpuPair(r.providedCpu50, r.providedCpu1)} (\`${r.provided}\`)`,
    r.ratio50 === null ? '–' : `${r.ratio50}×`,
    r.check,
    r.backendPerRequest === null ? '–' : String(r.backendPerRequest),
    r.settleMs === null ? '–' : `${r.settleMs} ms`,
  ];
}

export function providedMarkdown(rows: ProvidedRow[]): string {
  if (rows.length === 0) return '- no provided scenario was measured';
  const line = (r: string[]) => `| ${r.join(' | ')} |`;
  return [line(HEADER), line(HEADER.map((_, i) => (i < 2 ? '---' : '---:'))), ...rows.map((r) => line(rowCells(r)))].join('\n');
}
