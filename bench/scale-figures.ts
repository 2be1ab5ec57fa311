/**
 * The scale curves as people read them (bench/scale.ts measures them): the curves themselves as
 * series of (size, value), a first verdict on each (flat, or how far it moves), and the
 * Markdown tables of the report. The verdict is mechanical, a spread against a tolerance that
 * this shared machine's noise allows; docs/benchmarks.md "Scale" says why a curve is not flat.
 */
import { round } from './machine.js';
import type { CellSummary, Spread } from './report.js';
import type { HeldPoint, ScaleCheck } from './scale.js';
import type { ScaleStore, StorePoint } from './scale-store.js';

export interface CurvePoint {
  x: number;
  y: number;
  min?: number;
  max?: number;
  /** Below what the measurement resolves: shown, but left out of the verdict. */
  unresolved?: boolean;
}

/**
 * The gateway's heap moves by a few hundred KB between two readings whatever the tasks do
 * (compiled code, buffers, sockets): a point whose tasks grew it by less than this is shown but
 * not judged (1,000 tasks grow it by under 1 MiB).
 */
export const HEAP_RESOLUTION_BYTES = 4 * 1024 * 1024;

export interface Curve {
  id: string;
  title: string;
  unit: string;
  /** What the verdict allows: the largest ÷ the smallest value still counted flat. */
  tolerance: number;
  points: CurvePoint[];
}

export interface CurveVerdict {
  id: string;
  title: string;
  /** Largest ÷ smallest value, and last ÷ first (the direction). */
  spread: number | null;
  lastOverFirst: number | null;
  flat: boolean | null;
  text: string;
}

const STORE_LABEL: Record<ScaleStore, string> = { memory: 'memory store', redis: 'Redis store' };

function pollCell(point: StorePoint, scenario: 'tasks-get-2026' | 'tasks-get-cached', connections: number): CellSummary | undefined {
  return point.polls.cells.find((c) => c.scenario === scenario && c.connections === connections);
}

function fromSpread(x: number, s: Spread | null | undefined): CurvePoint | undefined {
  return s ? { x, y: s.median, min: s.min, max: s.max } : undefined;
}

function defined<T>(items: (T | undefined)[]): T[] {
  return items.filter((item): item is T => item !== undefined);
}

/** The levels of connections a point's polls ran at: the most for CPU, the fewest for latency. */
function levels(points: StorePoint[]): { most: number; fewest: number } {
  const all = points.flatMap((p) => p.polls.cells.map((c) => c.connections));
  return { most: Math.max(...all, 0), fewest: Math.min(...all) };
}

/** Every curve of a run, in the order the report and the chart show them. */
export function scaleCurves(check: ScaleCheck): Curve[] {
  const curves: Curve[] = [];
  for (const store of ['memory', 'redis'] as const) {
    const points = check.stores.filter((p) => p.store === store).sort((a, b) => a.size - b.size);
    if (points.length === 0) continue;
    const { most, fewest } = levels(points);
    const label = STORE_LABEL[store];
    for (const [scenario, what] of [['tasks-get-2026', 'forwarded poll'], ['tasks-get-cached', 'cached poll']] as const) {
      const kind = scenario === 'tasks-get-2026' ? 'forwarded' : 'cached';
      curves.push(
        { id: `${store}-${kind}-cpu`, title: `${label}, ${what}: CPU µs per request (${most} conns)`, unit: 'µs', tolerance: 1.3, points: defined(points.map((p) => fromSpread(p.size, pollCell(p, scenario, most)?.proxyCpuUsPerRequest))) },
        { id: `${store}-${kind}-p50`, title: `${label}, ${what}: p50 µs (${fewest} conn)`, unit: 'µs', tolerance: 1.3, points: defined(points.map((p) => fromSpread(p.size, pollCell(p, scenario, fewest)?.p50Us))) },
        { id: `${store}-${kind}-p99`, title: `${label}, ${what}: p99 µs (${fewest} conn)`, unit: 'µs', tolerance: 2, points: defined(points.map((p) => fromSpread(p.size, pollCell(p, scenario, fewest)?.p99Us))) },
      );
    }
    curves.push(
      store === 'memory'
        ? { id: 'memory-heap', title: `${label}: gateway heap B per live task`, unit: 'B', tolerance: 1.15, points: points.map((p) => ({ x: p.size, y: p.heap.perTask, ...(p.heap.created - p.heap.before < HEAP_RESOLUTION_BYTES ? { unresolved: true } : {}) })) }
        : { id: 'redis-used-memory', title: `${label}: Redis used_memory B per live task`, unit: 'B', tolerance: 1.15, points: defined(points.map((p) => (p.redisMemory ? { x: p.size, y: p.redisMemory.perTask } : undefined))) },
      { id: `${store}-creations`, title: `${label}: creations per second over HTTP (50 conns)`, unit: '/s', tolerance: 1.3, points: points.map((p) => ({ x: p.size, y: p.creation.perSecond })) },
    );
  }
  const push = [...check.push].sort((a, b) => a.listeners - b.listeners);
  if (push.length > 0) {
    curves.push(
      { id: 'push-heap', title: 'status push: heap B per open listener', unit: 'B', tolerance: 1.15, points: push.map((p) => ({ x: p.listeners, y: p.memory.heapBytesPerSubscription })) },
      { id: 'push-sockets', title: 'status push: sockets per open listener', unit: '', tolerance: 1.05, points: push.map((p) => ({ x: p.listeners, y: p.socketsPerListener })) },
      { id: 'push-lag-p50', title: 'status push: delivery lag p50 ms', unit: 'ms', tolerance: 1.5, points: defined(push.map((p) => (p.lag ? { x: p.listeners, y: p.lag.p50Ms } : undefined))) },
      { id: 'push-lag-p99', title: 'status push: delivery lag p99 ms', unit: 'ms', tolerance: 2, points: defined(push.map((p) => (p.lag ? { x: p.listeners, y: p.lag.p99Ms } : undefined))) },
    );
  }
  const held = [...check.held].sort((a, b) => a.calls - b.calls);
  if (held.length > 0) {
    curves.push(
      { id: 'held-heap', title: 'gateway-run tasks: heap B per held call', unit: 'B', tolerance: 1.15, points: held.map((h) => ({ x: h.calls, y: h.heapBytesPerCall })) },
      { id: 'held-sockets', title: 'gateway-run tasks: sockets per held call', unit: '', tolerance: 1.05, points: held.map((h) => ({ x: h.calls, y: h.socketsPerCall })) },
    );
  }
  return curves;
}

export function verdictOf(curve: Curve): CurveVerdict {
  const judged = curve.points.filter((p) => p.y > 0 && !p.unresolved);
  const values = judged.map((p) => p.y);
  const base = { id: curve.id, title: curve.title };
  const left = curve.points.filter((p) => p.unresolved).map((p) => sizeLabel(p.x));
  const leftOut = left.length ? ` (${left.join(', ')} not judged: below the measurement's resolution)` : '';
  if (values.length < 2) return { ...base, spread: null, lastOverFirst: null, flat: null, text: `${values.length} point judged: no curve${leftOut}` };
  const spread = round(Math.max(...values) / Math.min(...values), 2);
  const lastOverFirst = round(values[values.length - 1]! / values[0]!, 2);
  const flat = spread <= curve.tolerance;
  const span = `${sizeLabel(judged[0]!.x)} → ${sizeLabel(judged[judged.length - 1]!.x)}`;
  const text = flat
    ? `flat: largest ÷ smallest ${spread}× (within ${curve.tolerance}×), ${span}${leftOut}`
    : `NOT flat: largest ÷ smallest ${spread}× (over ${curve.tolerance}×); ${lastOverFirst >= 1 ? 'grows' : 'falls'} ${lastOverFirst}× ${span}${leftOut}`;
  return { ...base, spread, lastOverFirst, flat, text };
}

export function sizeLabel(n: number): string {
  return n >= 1_000_000 && n % 1_000_000 === 0 ? `${n / 1_000_000}M` : n >= 1000 && n % 1000 === 0 ? `${n / 1000}k` : String(n);
}

function num(value: number | null | undefined, digits = 0): string {
  if (value === null || value === undefined) return '–';
  return Math.abs(value) >= 10_000 ? `${round(value / 1000, 1)}k` : String(round(value, digits));
}

function cellText(s: Spread | null | undefined): string {
  return s ? `${num(s.median, 1)} (${num(s.min, 1)}–${num(s.max, 1)})` : '–';
}

function mib(bytes: number): string {
  return `${round(bytes / 1048576, 1)} MiB`;
}

function table(header: string[], rows: string[][]): string {
  const line = (r: string[]) => `| ${r.join(' | ')} |`;
  return [line(header), line(header.map((_, i) => (i === 0 ? '---' : '---:'))), ...rows.map(line)].join('\n');
}

function tasksTable(points: StorePoint[], store: ScaleStore): string {
  const memoryHeader = store === 'memory' ? ['heap B per task (seeded / created); growth'] : ['Redis used_memory B per task (seeded / created)', 'gateway heap B per task'];
  const rows = points.map((p) => [
    sizeLabel(p.size),
    `${p.principals}`,
    `${num(p.baselineTasks)} + ${num(p.seededTasks)} seeded (${num(p.seeding.perSecond)}/s) + ${num(p.createdTasks)}`,
    `${num(p.creation.perSecond)}/s (${p.creation.errors} errors; other load ${p.creation.foreignCores} cores)`,
    num(p.creation.cpuUsPerCreation, 1),
    `${num(p.creation.p50Us)} / ${num(p.creation.p99Us)}`,
    ...(store === 'memory'
      ? [`**${num(p.heap.perTask)}** (${num(p.heap.perSeededTask)} / ${num(p.heap.perCreatedTask)}); +${mib(p.heap.created - p.heap.before)}`]
      : [`**${num(p.redisMemory?.perTask)}** (${num(p.redisMemory?.perSeededTask)} / ${num(p.redisMemory?.perCreatedTask)})`, num(p.heap.perTask)]),
    `${num(p.reads.scanPageMs, 2)} / ${num(p.reads.listPageMs, 2)} (${p.reads.listOwnerTasks} tasks)`,
  ]);
  return table(['live tasks', 'principals', 'baseline + seeded + created over HTTP', 'creations (HTTP, 50 conns)', 'CPU µs per creation', 'creation p50 / p99 µs', ...memoryHeader, 'console page / tasks/list page ms (owner\'s tasks)'], rows);
}

function pollsTable(points: StorePoint[]): string {
  const rows: string[][] = [];
  for (const p of points) {
    for (const [scenario, what] of [['tasks-get-2026', 'forwarded'], ['tasks-get-cached', 'cached']] as const) {
      for (const c of p.polls.cells.filter((cell) => cell.scenario === scenario).sort((a, b) => a.connections - b.connections)) {
        rows.push([sizeLabel(p.size), what, `${p.polls.sample[scenario === 'tasks-get-2026' ? 'fast' : 'slow']}`, String(c.connections), cellText(c.rps), cellText(c.p50Us), cellText(c.p99Us), cellText(c.proxyCpuUsPerRequest), String(c.upstreamPerRequest), c.errors ? `${c.errors}/${c.requests}` : '0']);
      }
    }
  }
  return table(['live tasks', 'poll', 'tasks polled', 'conns', 'req/s', 'p50 µs', 'p99 µs', 'gateway CPU µs/req', 'upstream/req', 'errors'], rows);
}

function roundsText(points: StorePoint[]): string {
  return points
    .map((p) => `${sizeLabel(p.size)}: kept ${p.polls.kept.join(', ') || 'none'}${p.polls.dropped.length ? `, dropped ${p.polls.dropped.map((d) => `${d.round} (${d.foreignCores} cores)`).join(', ')}` : ''}`)
    .join('; ');
}

function heldTable(held: HeldPoint[]): string {
  return table(
    ['held calls', 'principals', 'creations/s', 'heap B per held call', 'RSS B per held call', 'external B per held call', 'sockets per held call (open)', 'heap B per task after the calls ended'],
    held.map((h) => [num(h.calls), String(h.principals), num(h.creationsPerSecond), `**${num(h.heapBytesPerCall)}**`, num(h.rssBytesPerCall), num(h.externalBytesPerCall), `${h.socketsPerCall} (${h.socketsRunning})`, num(h.heapBytesPerEndedTask)]),
  );
}

function pushTable(check: ScaleCheck): string {
  return table(
    ['open listeners', 'tasks (2 listeners each)', 'principals', 'opened in s', 'heap B per listener', 'sockets per listener', 'lag p50 / p90 / p99 ms', 'gateway lag p50 / p99 ms', 'completions/s', 'delivered, other ends, missing', 'other load (cores)'],
    [...check.push].sort((a, b) => a.listeners - b.listeners).map((p) => [
      num(p.listeners),
      num(p.tasks),
      String(p.principals),
      String(p.openSeconds),
      `**${num(p.memory.heapBytesPerSubscription)}**`,
      String(p.socketsPerListener),
      p.lag ? `${p.lag.p50Ms} / ${p.lag.p90Ms} / ${p.lag.p99Ms}` : '–',
      p.gatewayLag ? `${p.gatewayLag.p50Ms} / ${p.gatewayLag.p99Ms}` : '–',
      String(p.completionsPerSecond),
      `${p.delivered}, ${p.otherEnds}, ${p.missing}`,
      String(p.foreign.foreignCores),
    ]),
  );
}

/** The scale section of a report: per store the tasks and the polls, then held calls, push, and the verdicts. */
export function scaleMarkdown(check: ScaleCheck | { skipped: string } | undefined): string {
  if (!check) return '- not measured in this run';
  if ('skipped' in check && typeof check.skipped === 'string') return `- skipped: ${check.skipped}`;
  const scale = check as ScaleCheck;
  const out: string[] = [`Sizes ${scale.sizes.map(sizeLabel).join(', ')}; polls: ${scale.settings.rounds} rounds of ${scale.settings.seconds} s at ${scale.settings.connections.join(' and ')} connections, up to ${scale.settings.pollSample} tasks of each kind polled per size (docs/benchmarks.md "Scale").`, ''];
  for (const store of ['memory', 'redis'] as const) {
    const points = scale.stores.filter((p) => p.store === store).sort((a, b) => a.size - b.size);
    if (points.length === 0) continue;
    out.push(`*${STORE_LABEL[store]}: tasks and creation*`, '', tasksTable(points, store), '', `*${STORE_LABEL[store]}: polls* (rounds ${roundsText(points)})`, '', pollsTable(points), '');
  }
  if (scale.held.length) out.push('*Gateway-run tasks with their backend call held* (memory store, every call on a socket of its own)', '', heldTable(scale.held), '');
  if (scale.push.length) out.push('*Status push: open listeners* (one replica, memory store)', '', pushTable(scale), '');
  out.push('*Verdicts* (largest ÷ smallest over the sizes, against the tolerance this machine\'s noise allows):', '');
  for (const curve of scaleCurves(scale)) out.push(`- ${curve.title}: ${verdictOf(curve).text}`);
  for (const s of scale.skipped) out.push(`- **${s.what} not measured**: ${s.reason}`);
  return out.join('\n');
}
