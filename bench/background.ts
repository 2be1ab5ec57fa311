/**
 * Background calls (docs/background-calls.md) in the benchmark: what the gateway spends on a
 * call it detaches and on its status tool, beside a plain forwarded `tasks/get` poll measured
 * the same way (process CPU of the gateway per request, in the same rounds).
 *
 * The background scenarios run on taskgates of their own (one per store), started beside the
 * main ones with the same build, store type and policy plus `upstreams.bench.backgroundCalls`
 * for the backend's plain `slow` tool (detachAfter 50 ms, tasks.poll.default 0s so no status
 * call is early): bench/provided.ts, role `background`. Every request is a 2025-11-25 client
 * without tasks (a `tools/call` without `params.task`), the clients background calls are for.
 *   - a detached call: the backend holds `slow` 250 ms; the gateway answers with a handle after
 *     50 ms, and the run waits, before its CPU is read, until the calls it started have ended,
 *     so each is charged its whole call (hold, detach, the outcome written into the task);
 *   - a status call (`taskgate_task_status`, wait 0) of a call the backend holds for the whole
 *     run: "still running", from the store;
 *   - a status call of a completed call whose outcome was read once before the run: the tool's
 *     own result again, from the store (the first read's one-time mark is not in it).
 * Each run is checked against taskgate's counters (a call detached, a status answered
 * "running" or with the outcome, per request) and the backend's (one `slow` call per detached
 * call, no status call ever reaches it).
 */
import { round } from './machine.js';
import type { GatewayPerRequest } from './provided.js';
import type { CellSummary } from './report.js';
import type { ScenarioName } from './scenarios.js';
import type { TargetName } from './targets.js';

/** The plain poll each background figure is set beside: a forwarded tasks/get of the same era, on the main target. */
export const PLAIN_POLL: ScenarioName = 'tasks-get-2025';

const ROWS: { what: string; scenario: ScenarioName; check: keyof GatewayPerRequest; checkLabel: string }[] = [
  { what: 'detached tools/call (the whole call)', scenario: 'background-detach-2025', check: 'detachedPerRequest', checkLabel: 'detached' },
  { what: 'status call, running call (wait 0)', scenario: 'background-status-running-2025', check: 'statusRunningPerRequest', checkLabel: 'answered running' },
  { what: 'status call, completed call (wait 0)', scenario: 'background-status-ended-2025', check: 'statusEndedPerRequest', checkLabel: 'answered with the outcome' },
];

export interface BackgroundRow {
  what: string;
  target: TargetName;
  scenario: ScenarioName;
  /** Median gateway CPU µs per request at the run's most connections and at its fewest (1). */
  cpuMost: number | null;
  cpu1: number | null;
  /** The forwarded tasks/get of PLAIN_POLL on the same store, same levels. */
  pollCpuMost: number | null;
  pollCpu1: number | null;
  /** background ÷ plain poll at the most connections. */
  ratioMost: number | null;
  /** What taskgate counted per request at the most connections, and what the backend saw. */
  check: string;
  backendPerRequest: number | null;
  settleMs: number | null;
}

export function backgroundRows(cells: CellSummary[]): BackgroundRow[] {
  const cpu = (t: TargetName, s: ScenarioName, c: number) => cells.find((x) => x.target === t && x.scenario === s && x.connections === c)?.proxyCpuUsPerRequest?.median ?? null;
  const levels = cells.map((c) => c.connections);
  const [hi, lo] = [Math.max(...levels), Math.min(...levels)];
  const rows: BackgroundRow[] = [];
  for (const target of ['taskgate-memory', 'taskgate-redis'] as const) {
    for (const row of ROWS) {
      const cell = cells.find((x) => x.target === target && x.scenario === row.scenario && x.connections === hi);
      if (!cell) continue;
      const [most, one, pollMost, poll1] = [cpu(target, row.scenario, hi), cpu(target, row.scenario, lo), cpu(target, PLAIN_POLL, hi), cpu(target, PLAIN_POLL, lo)];
      const checked = cell.gateway?.[row.check];
      rows.push({
        what: row.what,
        target,
        scenario: row.scenario,
        cpuMost: most,
        cpu1: one,
        pollCpuMost: pollMost,
        pollCpu1: poll1,
        ratioMost: most !== null && pollMost ? round(most / pollMost, 2) : null,
        check: checked === undefined ? '–' : `${checked} ${row.checkLabel}`,
        backendPerRequest: cell.upstreamPerRequest,
        settleMs: cell.gateway?.settleMs ?? null,
      });
    }
  }
  return rows;
}

const HEADER = ['what', 'target', 'CPU µs/req (most / 1 conn)', `plain poll CPU µs/req (most / 1 conn, \`${PLAIN_POLL}\`)`, '÷ plain poll (most conns)', 'taskgate counted per request', 'backend requests per request', 'calls ended after the load'];

function cpuPair(a: number | null, b: number | null): string {
  const f = (v: number | null) => (v === null ? '–' : v >= 100 ? String(Math.round(v)) : String(round(v, 1)));
  return `${f(a)} / ${f(b)}`;
}

export function backgroundMarkdown(rows: BackgroundRow[]): string {
  if (rows.length === 0) return '- no background-call scenario was measured';
  const line = (r: string[]) => `| ${r.join(' | ')} |`;
  const cells = (r: BackgroundRow) => [
    `${r.what} (\`${r.scenario}\`)`,
    r.target,
    cpuPair(r.cpuMost, r.cpu1),
    cpuPair(r.pollCpuMost, r.pollCpu1),
    r.ratioMost === null ? '–' : `${r.ratioMost}×`,
    r.check,
    r.backendPerRequest === null ? '–' : String(r.backendPerRequest),
    r.settleMs === null ? '–' : `${r.settleMs} ms`,
  ];
  return [line(HEADER), line(HEADER.map((_, i) => (i < 2 ? '---' : '---:'))), ...rows.map((r) => line(cells(r)))].join('\n');
}
