/**
 * Writes a run's results: JSON (everything, raw measurements included), the SVG chart, a
 * Markdown block, and — for the full run — that block inside docs/benchmarks.md between its
 * markers, so the page always shows the latest full run.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { backgroundMarkdown, type BackgroundRow } from './background.js';
import { renderChart } from './chart.js';
import { REPO_ROOT } from './children.js';
import type { MachineInfo } from './machine.js';
import type { Measurement } from './measure.js';
import type { MemoryCheck } from './memory-check.js';
import { providedMarkdown, type ProvidedRow } from './provided.js';
import { providedMemoryText, type ProvidedMemoryCheck } from './provided-memory.js';
import { pushText, type PushCheck, type PushReport } from './push-figures.js';
import type { ScaleCheck } from './scale.js';
import { renderScaleChart } from './scale-chart.js';
import { scaleMarkdown } from './scale-figures.js';
import { goalsText, markdownTable, scenarioLegend, tableRows, targetLegend, textTable, type CellSummary, type Goal } from './report.js';
import type { ScenarioName } from './scenarios.js';
import type { SseCheck } from './sse-check.js';
import type { Skipped, TargetName } from './targets.js';

export interface BenchReport {
  schema: 'taskgate-bench/1';
  generatedAt: string;
  mode: 'full' | 'quick' | 'smoke';
  command: string;
  revision: string;
  machine: MachineInfo;
  pinning: string;
  loadGenerator: string;
  settings: { rounds: number; seconds: number; connections: number[]; foreignThresholdCores: number; taskgateLogLevel: string };
  targets: { name: TargetName; label: string; cpuMethod: string | null }[];
  skipped: Skipped[];
  scenarios: { name: ScenarioName; title: string }[];
  rounds: { kept: number[]; dropped: { round: number; foreignCores: number }[] };
  results: CellSummary[];
  goals: Goal[];
  memory: MemoryCheck | { skipped: string };
  sse: SseCheck | { skipped: string };
  /** Tasks the gateway runs itself: the provided rows beside the backend-owned ones, and memory per running task. */
  provided: { rows: ProvidedRow[]; memory: ProvidedMemoryCheck | { skipped: string } };
  /** Background calls: a detached call and the status tool beside a plain forwarded poll (bench/background.ts). */
  background: { rows: BackgroundRow[] };
  /** Status push: delivery lag on one replica and across two, memory per open subscription (bench/push.ts). */
  push?: PushCheck | { skipped: string };
  /** Scale curves: costs as live tasks, listeners and held calls grow (bench/scale.ts); its chart is `<base>-scale.svg`. */
  scale?: ScaleCheck | { skipped: string };
  durationSeconds: number;
  measurements: Measurement[];
}

const MARK_START = '<!-- bench:results:start -->';
const MARK_END = '<!-- bench:results:end -->';

function mib(bytes: number): string {
  return `${(bytes / 1048576).toFixed(1)} MiB`;
}

export function memoryText(memory: BenchReport['memory']): string {
  if ('skipped' in memory) return `- skipped: ${memory.skipped}`;
  return [
    `- ${memory.tasks} live tasks from ${memory.principals} principals, created through taskgate in ${memory.creationSeconds} s (${memory.creationsPerSecond}/s, ${memory.errors} errors, backend saw ${memory.backendCreations})`,
    `- heap after GC: ${mib(memory.before.heapUsed)} → ${mib(memory.after.heapUsed)}: **${memory.heapBytesPerTask} B per task**`,
    `- RSS: ${mib(memory.before.rss)} → ${mib(memory.after.rss)}: ${memory.rssBytesPerTask} B per task; external + array buffers: ${memory.externalBytesPerTask} B per task`,
  ].join('\n');
}

export function sseText(sse: BenchReport['sse']): string {
  if ('skipped' in sse) return `- skipped: ${sse.skipped}`;
  const lines = Object.entries(sse.ttfbUs).map(([name, s]) => {
    const added = sse.addedTtfbUs[name as TargetName];
    const full = sse.fullSpeed[name as TargetName];
    return `- ${name}: first byte ${s.median} µs (${s.min}–${s.max})${added === undefined ? '' : `, **${added >= 0 ? '+' : '−'}${Math.abs(added)} µs** over direct`}; ${(sse.streamBytes / 1e6).toFixed(0)} MB at full speed in ${full?.seconds} s (${full?.mbPerSecond} MB/s)`;
  });
  const m = sse.taskgateMemory;
  if (m) {
    lines.push(
      `- taskgate while a client read ${(sse.streamBytes / 1e6).toFixed(0)} MB at ${(sse.paceBytesPerSecond / 1e6).toFixed(0)} MB/s, live memory (heap used + external, after a full GC, ${m.samples} samples): ${mib(m.liveBefore)} before, peak ${mib(m.livePeak)} (+${mib(m.liveGrowth)}) → ${m.flat ? '**flat**' : '**NOT flat**'}; RSS ${mib(m.rssBefore)} before, peak ${mib(m.rssPeak)} (+${mib(m.rssGrowth)}), ${mib(m.rssAfter)} after`,
    );
  }
  return lines.join('\n');
}

export function renderMarkdown(report: BenchReport, svgPath: string): string {
  const scenarioOrder = report.scenarios.map((s) => s.name);
  const targetOrder = report.targets.map((t) => t.name);
  const m = report.machine;
  return [
    `Run ${report.generatedAt} (${report.mode}, ${report.durationSeconds} s) on revision ${report.revision}: \`${report.command}\``,
    '',
    `- machine: ${m.nproc} × ${m.cpuModel}, ${mib(m.memoryBytes)}, Linux ${m.kernel}, Node ${m.node}; load average at start ${m.loadavgAtStart.map((v) => v.toFixed(2)).join(' ')}`,
    `- load generator: ${report.loadGenerator}; ${report.pinning}`,
    `- ${report.settings.rounds} rounds wanted of ${report.settings.seconds} s per run at ${report.settings.connections.join(' and ')} connections; kept rounds ${report.rounds.kept.join(', ') || 'none'}${report.rounds.dropped.length ? `; dropped ${report.rounds.dropped.map((d) => `${d.round} (${d.foreignCores} cores of other load)`).join(', ')}` : ''} (a round is dropped when other processes used more than ${report.settings.foreignThresholdCores} cores on average)`,
    ...report.skipped.map((s) => `- **${s.name} skipped**: ${s.reason}`),
    '',
    `![chart](${svgPath})`,
    '',
    report.rounds.kept.length ? 'Cells are median (min–max) over the kept rounds.' : 'No round was kept: cells are median (min–max) over all rounds, each disturbed by the other load above.',
    '',
    markdownTable(tableRows(report.results, scenarioOrder, targetOrder)),
    '',
    '**Goals** (ratios from this run):',
    '',
    goalsText(report.goals),
    '',
    '**Memory per live task**:',
    '',
    memoryText(report.memory),
    '',
    '**SSE**:',
    '',
    sseText(report.sse),
    '',
    '**Provided tasks** (the gateway runs the call; CPU medians from the table above, the whole backend call charged to its creation):',
    '',
    providedMarkdown(report.provided.rows),
    '',
    '**Background calls** (2025-11-25 clients without tasks; CPU medians from the table above, the whole backend call charged to its detached call, beside a forwarded `tasks/get` on the same store):',
    '',
    backgroundMarkdown(report.background.rows),
    '',
    '**Memory per running provided task**:',
    '',
    providedMemoryText(report.provided.memory),
    '',
    '**Status push** (listeners of provided tasks; lag from the backend\'s answer to the notification at the client):',
    '',
    report.push ? pushText(report.push) : '- not measured in this run',
    '',
    '**Scale curves** (how the costs grow with live tasks, open listeners and held calls; docs/benchmarks.md "Scale"):',
    '',
    ...(report.scale && 'stores' in report.scale ? [`![scale curves](${scaleSvgPath(svgPath)})`, ''] : []),
    scaleMarkdown(report.scale),
    '',
    'Scenarios:',
    '',
    scenarioLegend(scenarioOrder),
    '',
    'Targets:',
    '',
    targetLegend(targetOrder),
  ].join('\n');
}

export function printSummary(report: BenchReport): void {
  const rows = tableRows(report.results, report.scenarios.map((s) => s.name), report.targets.map((t) => t.name));
  console.log(`\n${textTable(rows)}\n`);
  console.log(`load generator: ${report.loadGenerator}; ${report.pinning}`);
  for (const s of report.skipped) console.log(`skipped ${s.name}: ${s.reason}`);
  console.log(`\ngoals:\n${goalsText(report.goals)}\n\nmemory:\n${memoryText(report.memory)}\n\nsse:\n${sseText(report.sse)}\n`);
  console.log(`provided tasks:\n${providedMarkdown(report.provided.rows)}\n\nmemory per running provided task:\n${providedMemoryText(report.provided.memory)}\n`);
  console.log(`background calls:\n${backgroundMarkdown(report.background.rows)}\n`);
  if (report.push) console.log(`status push:\n${pushText(report.push)}\n`);
  if (report.scale) console.log(`scale curves:\n${scaleMarkdown(report.scale)}\n`);
}

/** What `npm run bench -- --scale` writes: the scale curves alone, with the same header as a push run alone. */
export type ScaleReport = Omit<PushReport, 'schema' | 'settings' | 'push'> & {
  schema: 'taskgate-bench-scale/1';
  loadGenerator: string;
  scale: ScaleCheck;
};

/** Writes `<base>.json`, `.md` and `.svg` of a scale run alone into `dir`. */
export function writeScaleOutputs(report: ScaleReport, dir: string, base: string): string[] {
  mkdirSync(dir, { recursive: true });
  const [json, md, svg] = ['json', 'md', 'svg'].map((ext) => join(dir, `${base}.${ext}`)) as [string, string, string];
  const m = report.machine;
  writeFileSync(json, `${JSON.stringify(report, null, 2)}\n`);
  writeFileSync(svg, renderScaleChart(report.scale, `${report.mode} scale run ${report.generatedAt.slice(0, 16)}Z · ${m.nproc} × ${m.cpuModel} · Node ${m.node} · ${report.loadGenerator.split(' ')[0]}`));
  const text = [
    `Run ${report.generatedAt} (${report.mode}, ${report.durationSeconds} s) on revision ${report.revision}: \`${report.command}\``,
    '',
    `- machine: ${m.nproc} × ${m.cpuModel}, ${mib(m.memoryBytes)}, Linux ${m.kernel}, Node ${m.node}; load average at start ${m.loadavgAtStart.map((v) => v.toFixed(2)).join(' ')}`,
    `- load generator: ${report.loadGenerator}; ${report.pinning}`,
    '',
    `![scale curves](${base}.svg)`,
    '',
    scaleMarkdown(report.scale),
  ];
  writeFileSync(md, `${text.join('\n')}\n`);
  return [json, md, svg];
}

/** Where the scale curves' chart is written, beside the bench's chart. */
export function scaleSvgPath(svgPath: string): string {
  return svgPath.replace(/\.svg$/, '-scale.svg');
}

/** Writes `<base>.json`, `.svg` and `.md` into `dir` (and `<base>-scale.svg` with scale curves); updates the docs page when asked. */
export function writeOutputs(report: BenchReport, dir: string, base: string, updateDocs: boolean): string[] {
  mkdirSync(dir, { recursive: true });
  const json = join(dir, `${base}.json`);
  const svg = join(dir, `${base}.svg`);
  const md = join(dir, `${base}.md`);
  writeFileSync(json, `${JSON.stringify(report, null, 2)}\n`);
  const subtitle = `${report.mode} run ${report.generatedAt.slice(0, 16)}Z · ${report.machine.nproc} × ${report.machine.cpuModel} · Node ${report.machine.node} · ${report.loadGenerator.split(' ')[0]} · rounds kept ${report.rounds.kept.length}`;
  writeFileSync(svg, renderChart(report.results, report.scenarios.map((s) => s.name), report.targets.map((t) => t.name), subtitle));
  writeFileSync(md, `${renderMarkdown(report, `${base}.svg`)}\n`);
  const written = [json, svg, md];
  if (report.scale && 'stores' in report.scale) {
    writeFileSync(scaleSvgPath(svg), renderScaleChart(report.scale, subtitle));
    written.push(scaleSvgPath(svg));
  }
  const docs = join(REPO_ROOT, 'docs', 'benchmarks.md');
  if (updateDocs && existsSync(docs)) {
    const page = readFileSync(docs, 'utf8');
    const start = page.indexOf(MARK_START);
    const end = page.indexOf(MARK_END);
    if (start !== -1 && end > start) {
      const block = renderMarkdown(report, relative(join(REPO_ROOT, 'docs'), svg));
      writeFileSync(docs, `${page.slice(0, start + MARK_START.length)}\n${block}\n${page.slice(end)}`);
      written.push(docs);
    }
  }
  return written;
}
