/**
 * From raw measurements to what people read: medians with min and max per cell, the goals as
 * ratios from the same run, and the same table as aligned text (stdout) and as Markdown.
 */
import type { Measurement } from './measure.js';
import { round } from './machine.js';
import type { GatewayPerRequest } from './provided.js';
import { SCENARIOS, type ScenarioName } from './scenarios.js';
import type { SseCheck } from './sse-check.js';
import { TARGET_LABELS, type TargetName } from './targets.js';

export interface Spread {
  median: number;
  min: number;
  max: number;
}

export interface CellSummary {
  target: TargetName;
  scenario: ScenarioName;
  connections: number;
  rounds: number;
  rps: Spread;
  p50Us: Spread;
  p90Us: Spread;
  p99Us: Spread;
  proxyCpuUsPerRequest: Spread | null;
  backendCpuUsPerRequest: Spread;
  upstreamPerRequest: number;
  errors: number;
  requests: number;
  /** Provided-task scenarios: taskgate's counters per request, medians over the kept rounds. */
  gateway?: GatewayPerRequest;
}

export interface Goal {
  id: string;
  goal: string;
  value: number | null;
  limit: number;
  met: boolean | null;
  detail: string;
}

export function spread(values: number[]): Spread {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  const median = sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
  return { median: round(median, 1), min: round(sorted[0] ?? 0, 1), max: round(sorted.at(-1) ?? 0, 1) };
}

export function summarize(measurements: Measurement[], keptRounds: number[]): CellSummary[] {
  // If every round was dropped there is still something to show, marked by its round count.
  const kept = keptRounds.length > 0 ? measurements.filter((m) => keptRounds.includes(m.round)) : measurements;
  const keys = [...new Set(kept.map((m) => `${m.scenario}|${m.target}|${m.connections}`))];
  return keys.map((key) => {
    const ms = kept.filter((m) => `${m.scenario}|${m.target}|${m.connections}` === key);
    const first = ms[0]!;
    const cpu = ms.map((m) => m.proxyCpuUsPerRequest).filter((v): v is number => v !== undefined);
    return {
      target: first.target,
      scenario: first.scenario,
      connections: first.connections,
      rounds: ms.length,
      rps: spread(ms.map((m) => m.load.rps)),
      p50Us: spread(ms.map((m) => m.load.latencyUs.p50)),
      p90Us: spread(ms.map((m) => m.load.latencyUs.p90)),
      p99Us: spread(ms.map((m) => m.load.latencyUs.p99)),
      proxyCpuUsPerRequest: cpu.length ? spread(cpu) : null,
      backendCpuUsPerRequest: spread(ms.map((m) => m.backendCpuUsPerRequest)),
      upstreamPerRequest: spread(ms.map((m) => m.upstreamPerRequest)).median,
      errors: ms.reduce((s, m) => s + m.load.errors, 0),
      requests: ms.reduce((s, m) => s + m.load.requests, 0),
      ...(ms.every((m) => m.gateway) ? { gateway: gatewayMedians(ms.map((m) => m.gateway!)) } : {}),
    };
  });
}

function gatewayMedians(values: GatewayPerRequest[]): GatewayPerRequest {
  const median = (pick: (g: GatewayPerRequest) => number | undefined) => {
    const xs = values.map(pick).filter((v): v is number => v !== undefined);
    return xs.length ? spread(xs).median : undefined;
  };
  const settleMs = median((g) => g.settleMs);
  const unsettled = values.reduce((sum, g) => sum + (g.unsettled ?? 0), 0);
  return {
    createdPerRequest: median((g) => g.createdPerRequest)!,
    forwardedPollsPerRequest: median((g) => g.forwardedPollsPerRequest)!,
    cachedPollsPerRequest: median((g) => g.cachedPollsPerRequest)!,
    detachedPerRequest: median((g) => g.detachedPerRequest)!,
    statusRunningPerRequest: median((g) => g.statusRunningPerRequest)!,
    statusEndedPerRequest: median((g) => g.statusEndedPerRequest)!,
    ...(settleMs === undefined ? {} : { settleMs, unsettled }),
  };
}

function find(cells: CellSummary[], target: TargetName, scenario: ScenarioName, connections: number): CellSummary | undefined {
  return cells.find((c) => c.target === target && c.scenario === scenario && c.connections === connections);
}

function ratioGoal(id: string, goal: string, limit: number, num: number | undefined, den: number | undefined, what: string): Goal {
  if (num === undefined || den === undefined || den === 0) return { id, goal, value: null, limit, met: null, detail: `not measured (${what})` };
  const value = round(num / den, 2);
  return { id, goal, value, limit, met: value <= limit, detail: `${round(num, 1)} / ${round(den, 1)} µs per request (${what})` };
}

/**
 * The five targets of issue #17, each a figure from this one run (CPU µs per request at 50
 * connections unless said): the forwarded poll (both eras) against the passthrough, a cached
 * poll against what the bare backend spends answering a poll itself (the `direct` row: a
 * cached and a forwarded poll share the whole HTTP cost, so a ratio between them moved the
 * wrong way whenever the forwarded path got faster), the Redis store's latency and CPU over
 * the memory store's, and the SSE first byte over the passthrough's.
 */
export function evaluateGoals(cells: CellSummary[], sse: SseCheck | { skipped: string }, redisSkipped: string | undefined): Goal[] {
  const cpu = (t: TargetName, s: ScenarioName, c: number) => find(cells, t, s, c)?.proxyCpuUsPerRequest?.median;
  const goals: Goal[] = [];
  for (const scenario of ['tasks-get-2026', 'tasks-get-2025'] as const) {
    goals.push(
      ratioGoal(`forwarded-${scenario}`, `forwarded ${scenario} CPU/request ≤ 1.15× plain fastify passthrough`, 1.15, cpu('taskgate-memory', scenario, 50), cpu('fastify', scenario, 50), 'taskgate memory ÷ fastify, 50 connections'),
    );
  }
  goals.push(
    ratioGoal('cached-poll', 'early poll from cache ≤ 3× the bare backend answering a poll (CPU/request)', 3, cpu('taskgate-memory', 'tasks-get-cached', 50), find(cells, 'direct', 'tasks-get-2026', 50)?.backendCpuUsPerRequest.median, 'cached tasks/get, taskgate memory ÷ the direct row\'s backend on 2026 tasks/get, 50 connections'),
  );
  const redis = find(cells, 'taskgate-redis', 'tasks-get-2026', 1)?.p50Us.median;
  const memory = find(cells, 'taskgate-memory', 'tasks-get-2026', 1)?.p50Us.median;
  const redisP50 = 'Redis store within +150 µs p50 of memory at 1 connection';
  if (redis === undefined || memory === undefined) {
    goals.push({ id: 'redis-p50', goal: redisP50, value: null, limit: 150, met: null, detail: redisSkipped ?? 'not measured' });
  } else {
    const value = round(redis - memory, 1);
    goals.push({ id: 'redis-p50', goal: redisP50, value, limit: 150, met: value <= 150, detail: `${redis} − ${memory} µs p50, forwarded 2026 tasks/get` });
  }
  const redisCpu = ratioGoal('redis-cpu', 'Redis store forwarded poll CPU/request ≤ 1.1× the memory store', 1.1, cpu('taskgate-redis', 'tasks-get-2026', 50), cpu('taskgate-memory', 'tasks-get-2026', 50), 'taskgate redis ÷ taskgate memory, forwarded 2026 tasks/get, 50 connections');
  goals.push(redisCpu.met === null && redisSkipped ? { ...redisCpu, detail: redisSkipped } : redisCpu);
  const ttfb = 'skipped' in sse ? undefined : sse.ttfbUs;
  const gate = ttfb?.['taskgate-memory']?.median;
  const passthrough = ttfb?.fastify?.median;
  const sseGoal = 'SSE first byte within +100 µs of the fastify passthrough';
  if (gate === undefined || passthrough === undefined) {
    goals.push({ id: 'sse-ttfb', goal: sseGoal, value: null, limit: 100, met: null, detail: 'skipped' in sse ? sse.skipped : 'not measured (needs fastify and taskgate-memory)' });
  } else {
    const value = round(gate - passthrough, 1);
    goals.push({ id: 'sse-ttfb', goal: sseGoal, value, limit: 100, met: value <= 100, detail: `${gate} − ${passthrough} µs, median first byte of a small SSE tools/call, 1 connection` });
  }
  return goals;
}

function fmt(value: number): string {
  if (Math.abs(value) >= 10_000) return `${round(value / 1000, 1)}k`;
  return Math.abs(value) >= 100 ? String(Math.round(value)) : String(round(value, 1));
}

function range(s: Spread | null): string {
  return s ? `${fmt(s.median)} (${fmt(s.min)}–${fmt(s.max)})` : '–';
}

const HEADER = ['scenario', 'target', 'conns', 'req/s', 'p50 µs', 'p90 µs', 'p99 µs', 'proxy CPU µs/req', 'upstream/req', 'errors'];

export function tableRows(cells: CellSummary[], scenarioOrder: readonly ScenarioName[], targetOrder: readonly TargetName[]): string[][] {
  const rows: string[][] = [];
  for (const scenario of scenarioOrder) {
    for (const target of targetOrder) {
      for (const cell of cells.filter((c) => c.scenario === scenario && c.target === target).sort((a, b) => a.connections - b.connections)) {
        rows.push([
          scenario,
          target,
          String(cell.connections),
          range(cell.rps),
          range(cell.p50Us),
          fmt(cell.p90Us.median),
          range(cell.p99Us),
          // The floor row has no proxy: it shows what the backend itself (a bare node:http
          // server reading, parsing and answering) spent per request.
          cell.proxyCpuUsPerRequest === null && cell.target === 'direct' ? `backend ${range(cell.backendCpuUsPerRequest)}` : range(cell.proxyCpuUsPerRequest),
          String(cell.upstreamPerRequest),
          cell.errors ? `${cell.errors}/${cell.requests}` : '0',
        ]);
      }
    }
  }
  return rows;
}

export function textTable(rows: string[][]): string {
  const all = [HEADER, ...rows];
  const widths = HEADER.map((_, i) => Math.max(...all.map((r) => r[i]!.length)));
  const line = (r: string[]) => r.map((v, i) => (i < 3 ? v.padEnd(widths[i]!) : v.padStart(widths[i]!))).join('  ');
  return [line(HEADER), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.map(line)].join('\n');
}

export function markdownTable(rows: string[][]): string {
  const line = (r: string[]) => `| ${r.join(' | ')} |`;
  return [line(HEADER), line(HEADER.map((_, i) => (i < 3 ? '---' : '---:'))), ...rows.map(line)].join('\n');
}

export function goalsText(goals: Goal[]): string {
  return goals
    .map((g) => {
      const verdict = g.met === null ? 'NOT MEASURED' : g.met ? 'MET' : 'NOT MET';
      const value = g.value === null ? '' : ` — ${g.value}${g.id === 'redis-p50' || g.id === 'sse-ttfb' ? ' µs' : '×'} (limit ${g.limit})`;
      return `- ${verdict}: ${g.goal}${value}; ${g.detail}`;
    })
    .join('\n');
}

export function scenarioLegend(names: readonly ScenarioName[]): string {
  return names.map((n) => `- \`${n}\`: ${SCENARIOS[n].title}`).join('\n');
}

export function targetLegend(names: readonly TargetName[]): string {
  return names.map((n) => `- \`${n}\`: ${TARGET_LABELS[n]}`).join('\n');
}
