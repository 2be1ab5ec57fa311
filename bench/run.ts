/**
 * `npm run bench`: taskgate beside its anchors, in one run. Starts the backend, a local
 * issuer and every target, prepares each scenario's requests, runs rounds of load with the
 * order rotated, then the memory and SSE checks, and writes table, JSON, chart and Markdown.
 *
 *   tsx bench/run.ts            full run (≥ 5 rounds, the status push and the scale curves; see docs/benchmarks.md for its time)
 *   tsx bench/run.ts --quick    2 short rounds and 100 listeners, under 8 minutes
 *   tsx bench/run.ts --smoke    CI: 1 round, a plain call, a provided creation and the background calls, 2 targets, a minute
 * Options: --out DIR, --load-generator auto|wrk|node, --no-install, --rounds N, --seconds S,
 *          --targets a,b  --scenarios a,b  --no-docs
 *          --push [--push-listeners N]   the status-push measurement alone (bench/push.ts), written
 *                            to push.* (push-quick.*, push-smoke.*); the full run has it too
 *          --scale [--scale-sizes a,b] [--scale-curves memory,redis,held,push] [--scale-poll-sample N]   the scale curves alone
 *                            (bench/scale.ts), written to scale.* (scale-quick.*, scale-smoke.*); the full run has them too
 *          --tracing RATIO   adds taskgate-traced: taskgate-memory with OpenTelemetry tracing on at that
 *                            sampling ratio (1, 0.01), exporting to the backend's collector, measured in
 *                            the same rounds as taskgate-memory; such a run never writes the docs
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { spawnSync } from 'node:child_process';
import { detectPinning, REPO_ROOT, startNodeChild, type NodeChild } from './children.js';
import { startIssuer } from './jwks.js';
import { planLoad, removeLoadScripts, type LoadTool } from './load.js';
import { backgroundRows } from './background.js';
import { describeMachine } from './machine.js';
import { runRounds, measureOnce, type Cell, type RoundsPlan } from './measure.js';
import { checkTaskMemory } from './memory-check.js';
import { checkProvidedMemory } from './provided-memory.js';
import { providedRows, releaseHeld, startProvidedTargets, variantKey, type ProvidedRole } from './provided.js';
import { checkPush, PUSH_TASKS_PER_LISTENER, type PushSettings } from './push.js';
import { pushText, renderPushMarkdown, type PushReport } from './push-figures.js';
import { checkScale, parseScaleCurves, parseScaleSizes, SCALE_MODES, type ScaleCheck } from './scale.js';
import { ensureDebianTool, hasCommand } from './nginx.js';
import { printSummary, writeOutputs, writeScaleOutputs, type BenchReport, type ScaleReport } from './output.js';
import { evaluateGoals, summarize } from './report.js';
import { checkRequests, prepareRequests, scenarioUrl, SCENARIO_NAMES, SCENARIOS, type ScenarioName } from './scenarios.js';
import { checkSse } from './sse-check.js';
import {
  buildGateway, directTarget, gitRevision, isSkipped, startFastifyTarget, startNginxTarget, startRedisTaskgate, startTaskgate,
  TARGET_LABELS, TARGET_NAMES, taskgatePolicy, TRACED_TARGET, type Skipped, type Target, type TargetName,
} from './targets.js';

type Mode = 'full' | 'quick' | 'smoke';

interface ModeSettings {
  rounds: number;
  extraRounds: number;
  seconds: number;
  connections: number[];
  warmupSeconds: number;
  memoryTasks: number;
  /** Provided tasks held running at once in the memory step; `providedQueued` adds the default-sockets run. */
  providedMemoryTasks: number;
  providedQueued: boolean;
  streamBytes: number;
  ttfbSamples: number;
  /** Hard limit for the whole run; extra rounds stop well before it. */
  limitMs: number;
  /** Time allowed for repeating runs disturbed by other load. */
  retryBudgetMs: number;
  targets: readonly TargetName[];
  scenarios: readonly ScenarioName[];
  /** Status push: listeners (10 tasks each), per setup (bench/push.ts). */
  pushListeners: number;
}

const BACKGROUND_SCENARIOS = ['background-detach-2025', 'background-status-running-2025', 'background-status-ended-2025'] as const;

const MODES: Record<Mode, ModeSettings> = {
  // The scale curves (bench/scale.ts) run last in the full run, in a time of their own on top.
  full: { rounds: 5, extraRounds: 2, seconds: 2, connections: [1, 50], warmupSeconds: 1, memoryTasks: 100_000, providedMemoryTasks: 10_000, providedQueued: true, streamBytes: 10_000_000, ttfbSamples: 40, limitMs: 30 * 60_000 + SCALE_MODES.full.limitMs, retryBudgetMs: 120_000, targets: TARGET_NAMES, scenarios: SCENARIO_NAMES, pushListeners: 1000 },
  // wrk runs whole seconds, so quick stays short by leaving out the variant scenarios (the SSE
  // check still times SSE replies) and keeping one era of each provided pair (2026); the full
  // run has them all. The background calls are 2025 clients, so their plain poll (2025) is in.
  quick: {
    rounds: 2, extraRounds: 0, seconds: 1, connections: [1, 50], warmupSeconds: 0, memoryTasks: 10_000, providedMemoryTasks: 10_000, providedQueued: true, streamBytes: 10_000_000, ttfbSamples: 15, limitMs: 8 * 60_000, retryBudgetMs: 0, targets: TARGET_NAMES,
    scenarios: [
      'tools-json', 'tasks-get-2026', 'tasks-get-2025', 'tasks-get-cached', 'task-create', 'provided-create-2026', 'provided-get-2026', 'provided-get-cached',
      ...BACKGROUND_SCENARIOS,
    ],
    pushListeners: 100,
  },
  smoke: { rounds: 1, extraRounds: 0, seconds: 1, connections: [1, 10], warmupSeconds: 0, memoryTasks: 300, providedMemoryTasks: 200, providedQueued: false, streamBytes: 1_000_000, ttfbSamples: 3, limitMs: 90_000, retryBudgetMs: 0, targets: ['direct', 'taskgate-memory'], scenarios: ['tools-json', 'provided-create-2025', ...BACKGROUND_SCENARIOS], pushListeners: 20 },
};
/** Time kept after the rounds for the SSE, memory and push checks: no extra round starts inside it. */
// The status push at 1,000 listeners took 455 s on a loaded machine (docs/benchmarks.md).
const CHECKS_RESERVE_MS = 600_000;
/** Average cores used by other processes above which a round is dropped. */
const FOREIGN_THRESHOLD_CORES = 0.25;
/** Principals for the memory check: ~100 tasks each at 100k, as many owners as real traffic. */
const MEMORY_PRINCIPALS = 1000;

const { values: args } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    smoke: { type: 'boolean', default: false },
    out: { type: 'string' },
    'load-generator': { type: 'string', default: 'auto' },
    'no-install': { type: 'boolean', default: false },
    'no-docs': { type: 'boolean', default: false },
    rounds: { type: 'string' },
    seconds: { type: 'string' },
    targets: { type: 'string' },
    scenarios: { type: 'string' },
    tracing: { type: 'string' },
    push: { type: 'boolean', default: false },
    'push-listeners': { type: 'string' },
    scale: { type: 'boolean', default: false },
    'scale-sizes': { type: 'string' },
    'scale-curves': { type: 'string' },
    'scale-poll-sample': { type: 'string' },
  },
});

const mode: Mode = args.smoke ? 'smoke' : args.quick ? 'quick' : 'full';
const settings: ModeSettings = { ...MODES[mode] };
// The scale curves run alone in their own time; in the full run, after everything else.
const scaleReserveMs = args.scale ? 0 : mode === 'full' ? SCALE_MODES.full.limitMs : 0;
if (args.scale) settings.limitMs = SCALE_MODES[mode].limitMs;
if (args.rounds) settings.rounds = Number(args.rounds);
if (args.seconds) settings.seconds = Number(args.seconds);
if (args.targets) settings.targets = args.targets.split(',') as TargetName[];
if (args['push-listeners']) settings.pushListeners = Number(args['push-listeners']);
if (args.scenarios) settings.scenarios = args.scenarios.split(',') as ScenarioName[];
const scaleSizes = args['scale-sizes'] ? parseScaleSizes(args['scale-sizes']) : SCALE_MODES[mode].sizes;
const scaleCurves = args['scale-curves'] ? parseScaleCurves(args['scale-curves']) : undefined;
// Tasks of each kind polled per point: fixing it apart from the size tells the population's
// cost from the working set's (docs/benchmarks.md, "Scale").
const scalePollSample = args['scale-poll-sample'] === undefined ? undefined : Number(args['scale-poll-sample']);
if (scalePollSample !== undefined && !(Number.isInteger(scalePollSample) && scalePollSample > 0)) throw new Error(`--scale-poll-sample takes a whole number of tasks, not ${args['scale-poll-sample']}`);
const scaleSettings = { ...SCALE_MODES[mode].settings, ...(scalePollSample ? { pollSample: scalePollSample } : {}) };
const tracingRatio = args.tracing === undefined ? undefined : Number(args.tracing);
if (tracingRatio !== undefined && !(tracingRatio >= 0 && tracingRatio <= 1)) throw new Error(`--tracing takes a sampling ratio from 0 to 1, not ${args.tracing}`);
if (tracingRatio !== undefined) settings.targets = [...settings.targets, TRACED_TARGET];
const started = Date.now();
const log = (line: string): void => console.error(`[bench ${((Date.now() - started) / 1000).toFixed(0).padStart(4)} s] ${line}`);

const running: { stop(): Promise<void> }[] = [];
async function stopAll(): Promise<void> {
  // Reverse order: proxies before the backend and the issuer they depend on.
  for (const r of running.splice(0).reverse()) await r.stop().catch(() => undefined);
  removeLoadScripts();
}
process.once('SIGINT', () => void stopAll().finally(() => process.exit(130)));
const watchdog = setTimeout(() => {
  log(`hard time limit of ${settings.limitMs / 1000} s reached; stopping`);
  void stopAll().finally(() => process.exit(2));
}, settings.limitMs + 60_000);
watchdog.unref();

function chooseLoadTool(): { tool: LoadTool; label: string } {
  const wanted = args['load-generator'];
  if (wanted === 'node') return { tool: 'node', label: 'node (undici Pool, bench/load-node.ts), as asked' };
  const missing = ensureDebianTool('wrk', 'wrk', !args['no-install'] && mode !== 'smoke');
  if (!missing) {
    const version = spawnSync('wrk', ['-v'], { encoding: 'utf8' }).stdout.split('\n')[0]?.split(' [')[0] ?? 'wrk';
    return { tool: 'wrk', label: `${version} (1 thread, Lua script for bodies and headers)` };
  }
  if (wanted === 'wrk') throw new Error(`wrk was asked for: ${missing}`);
  return { tool: 'node', label: `node (undici Pool, bench/load-node.ts) because ${missing}` };
}

async function startTargets(pinning: ReturnType<typeof detectPinning>, backend: NodeChild, policy: string, issuer: Awaited<ReturnType<typeof startIssuer>>): Promise<{ targets: Target[]; skipped: Skipped[] }> {
  const skipped: Skipped[] = [];
  // The gateway is compiled (tsc, synchronously) before any child starts: compiled while the
  // passthrough started beside it, it held the harness's event loop past that child's ready
  // timeout on a busy machine (30 s), and the run failed with "passthrough.ts not ready in time".
  if (settings.targets.some((name) => name.startsWith('taskgate'))) buildGateway();
  const starts = settings.targets.map(async (name): Promise<Target | Skipped> => {
    switch (name) {
      case 'direct':
        return directTarget(backend);
      case 'nginx': {
        const missing = hasCommand('nginx') ? undefined : ensureDebianTool('nginx', 'nginx-light', !args['no-install'] && mode !== 'smoke');
        if (missing) return { name, reason: missing };
        return startNginxTarget(pinning, backend.url).catch((error: Error) => ({ name, reason: `nginx did not start: ${error.message}` }));
      }
      case 'fastify':
        return startFastifyTarget(pinning, backend.url);
      case 'taskgate-memory':
        // --expose-gc for the SSE check's samples of live memory (bench/sse-check.ts); it
        // changes nothing until gc() is called.
        return startTaskgate(pinning, name, policy, ['--expose-gc']);
      case 'taskgate-redis':
        return startRedisTaskgate(pinning, { backendUrl: backend.url, issuer });
      case TRACED_TARGET:
        return startTaskgate(pinning, name, taskgatePolicy({ backendUrl: backend.url, issuer, tracingRatio }));
    }
  });
  const targets: Target[] = [];
  for (const outcome of await Promise.all(starts)) {
    if (isSkipped(outcome)) {
      skipped.push(outcome);
      log(`${outcome.name} skipped: ${outcome.reason}`);
    } else {
      targets.push(outcome);
      running.push(outcome);
    }
  }
  // Keep the declared order, so tables and charts always list targets the same way.
  const order: readonly TargetName[] = [...TARGET_NAMES, TRACED_TARGET];
  targets.sort((a, b) => order.indexOf(a.name) - order.indexOf(b.name));
  return { targets, skipped };
}

async function main(): Promise<void> {
  const machine = describeMachine();
  const pinning = detectPinning();
  const load = chooseLoadTool();
  log(`${mode} run: ${machine.nproc} × ${machine.cpuModel}, Node ${machine.node}; ${load.label}; ${pinning.note}`);
  if (process.env.BENCH_POLICY_PATCH) log(`policy patched by BENCH_POLICY_PATCH: ${process.env.BENCH_POLICY_PATCH} (not written to docs)`);
  if (tracingRatio !== undefined) log(`${TRACED_TARGET}: tracing on at sampling ratio ${tracingRatio}, exporting to the backend's collector (not written to docs)`);

  const issuer = await startIssuer();
  running.push({ stop: () => issuer.close() });
  const tokens = await Promise.all(Array.from({ length: MEMORY_PRINCIPALS }, (_, i) => issuer.mint(`bench-user-${i}`)));
  const backend = await startNodeChild(pinning, './backend.ts', { cpu: pinning.loadCpu });
  running.push(backend);
  const policy = taskgatePolicy({ backendUrl: backend.url, issuer });
  const { targets, skipped } = await startTargets(pinning, backend, policy, issuer);
  log(`targets up: ${targets.map((t) => t.name).join(', ')}`);
  // Provided and background scenarios run on taskgates of their own with the provided-task or
  // background-call policy (bench/provided.ts, bench/background.ts).
  const roles = new Set(settings.scenarios.map((s) => SCENARIOS[s].provided?.role).filter((r): r is ProvidedRole => r !== undefined));
  const variants = await startProvidedTargets(pinning, targets.filter((t) => t.isTaskgate).map((t) => t.name), roles, { backendUrl: backend.url, issuer }, log);
  running.push(...variants.values());
  // Stopped before them (reverse order): the polled provided tasks' calls are answered first,
  // so the provided taskgates stop at once instead of waiting out their drain time.
  running.push({ stop: () => releaseHeld(backend).then(() => undefined) });
  if (variants.size) log(`provided-task and background-call taskgates up: ${[...variants.keys()].join(', ')}`);

  const cells: Cell[] = [];
  for (const scenario of settings.scenarios) {
    for (const main of targets) {
      if (SCENARIOS[scenario].taskgateOnly && !main.isTaskgate) continue;
      const role = SCENARIOS[scenario].provided?.role;
      const target = role ? variants.get(variantKey(main.name, role)) : main;
      if (!target) continue;
      const path = SCENARIOS[scenario].path;
      // A route of its own has its own audience (docs/security.md): the same principals, minted for it.
      const scenarioTokens = path === undefined ? tokens : await Promise.all(tokens.slice(0, 16).map((_, i) => issuer.mint(`bench-user-${i}`, path)));
      const specs = await prepareRequests(scenario, target, scenarioTokens);
      await checkRequests(target, scenario, specs);
      cells.push({ target, scenario, run: planLoad(load.tool, scenarioUrl(target, scenario), specs) });
    }
  }

  const plan: RoundsPlan = {
    cells,
    connections: settings.connections,
    seconds: settings.seconds,
    rounds: settings.rounds,
    maxExtraRounds: settings.extraRounds,
    foreignThreshold: FOREIGN_THRESHOLD_CORES,
    // Extra rounds must leave time for the memory and SSE checks after them.
    deadline: started + settings.limitMs - CHECKS_RESERVE_MS - scaleReserveMs,
    retryBudgetMs: settings.retryBudgetMs,
    pinning,
    backend,
    ourPids: () => [backend.pid, ...[...targets, ...variants.values()].flatMap((t) => t.pids())],
    log,
  };
  // The provided and background taskgates serve nothing but their own cells, and a creation's
  // first run opens a socket per held call (hundreds): their cells are warmed up in the full and
  // quick runs (a quick run without it put a provided creation at 1198 and 629 µs in its two
  // rounds); the others only in the full run. The smoke run checks what is measured, never a
  // figure, and must stay short: nothing is warmed up.
  const warm = mode === 'smoke' ? [] : settings.warmupSeconds > 0 ? cells : cells.filter((c) => SCENARIOS[c.scenario].provided);
  if (warm.length > 0) {
    log(`warming up ${warm.length} cells`);
    for (const cell of warm) await measureOnce(plan, cell, Math.max(...settings.connections), 0, Math.max(1, settings.warmupSeconds));
  }
  log(`${cells.length} cells × ${settings.connections.length} connection levels, ${settings.rounds} rounds of ${settings.seconds} s runs`);
  const outcome = await runRounds(plan);
  if (tracingRatio !== undefined) {
    const stats = (await (await fetch(`${backend.url}/stats`)).json()) as Record<string, number>;
    log(`trace collector: ${stats['otlp:spans'] ?? 0} spans received in ${stats['otlp:exports'] ?? 0} exports so far`);
  }

  const token = tokens[0]!;
  log('SSE: time to first byte and a large stream at a fixed read pace');
  const sse = await checkSse(targets.filter((t) => t.name !== 'taskgate-redis'), token, { samples: settings.ttfbSamples, streamBytes: settings.streamBytes, paceBytesPerSecond: 25_000_000 });
  // The load targets stop first, so the fresh gateway of the memory check has the proxy core
  // alone; the calls of the polled provided tasks are answered first, so they stop at once.
  await releaseHeld(backend);
  for (const t of [...targets, ...variants.values()]) {
    await t.stop();
    running.splice(running.indexOf(t), 1);
  }
  log(`memory: ${settings.memoryTasks} live tasks in a fresh taskgate`);
  const memory = settings.targets.includes('taskgate-memory')
    ? await checkTaskMemory({ pinning, policy, tokens, backend, count: settings.memoryTasks })
    : { skipped: 'taskgate-memory not among the targets' };
  log(`memory: ${settings.providedMemoryTasks} running provided tasks in a fresh taskgate${settings.providedQueued ? ', twice' : ''}`);
  const providedMemory = settings.targets.includes('taskgate-memory')
    ? await checkProvidedMemory({ pinning, base: { backendUrl: backend.url, issuer }, tokens, backend, count: settings.providedMemoryTasks, queued: settings.providedQueued })
    : { skipped: 'taskgate-memory not among the targets' };

  if (mode !== 'smoke') log(`push: ${settings.pushListeners} listeners × ${PUSH_TASKS_PER_LISTENER} tasks, on one replica and across two`);
  // The smoke run leaves it to `--push --smoke`, a test of its own: together they would not fit the test's time.
  const push = mode === 'smoke'
    ? { skipped: 'the smoke run leaves the status push to --push --smoke' }
    : settings.targets.includes('taskgate-memory')
    ? await checkPush({ pinning, base: { backendUrl: backend.url, issuer }, tokens, backend, settings: pushSettings(), log })
    : { skipped: 'taskgate-memory not among the targets' };

  // Last: the scale curves start fresh gateways of their own, up to a million tasks in one.
  const scale = mode !== 'full'
    ? undefined
    : settings.targets.includes('taskgate-memory')
    ? await runScale(pinning, load.tool, backend, issuer, tokens)
    : { skipped: 'taskgate-memory not among the targets' };

  const results = summarize(outcome.measurements, outcome.kept);
  const redisSkip = skipped.find((s) => s.name === 'taskgate-redis')?.reason;
  const report: BenchReport = {
    schema: 'taskgate-bench/1',
    generatedAt: new Date().toISOString(),
    mode,
    command: `${mode === 'full' ? 'npm run bench' : `npm run bench -- --${mode}`}${tracingRatio === undefined ? '' : ` --tracing ${tracingRatio}`}`,
    revision: gitRevision(),
    machine,
    pinning: pinning.note,
    loadGenerator: load.label,
    settings: { rounds: settings.rounds, seconds: settings.seconds, connections: settings.connections, foreignThresholdCores: FOREIGN_THRESHOLD_CORES, taskgateLogLevel: 'info (to /dev/null)' },
    targets: targets.map((t) => ({ name: t.name, label: TARGET_LABELS[t.name], cpuMethod: t.cpuMethod ?? null })),
    skipped,
    scenarios: settings.scenarios.map((name) => ({ name, title: SCENARIOS[name].title })),
    rounds: { kept: outcome.kept, dropped: outcome.dropped },
    results,
    goals: evaluateGoals(results, sse, redisSkip),
    memory,
    sse,
    provided: { rows: providedRows(results), memory: providedMemory },
    background: { rows: backgroundRows(results) },
    push,
    ...(scale ? { scale } : {}),
    durationSeconds: Math.round((Date.now() - started) / 1000),
    measurements: outcome.measurements,
  };
  const dir = args.out ?? join(REPO_ROOT, 'bench', 'results');
  const base = mode === 'full' ? 'latest' : mode;
  // A run on a patched policy measures another gateway: it never lands in docs/benchmarks.md.
  const written = writeOutputs(report, dir, base, mode === 'full' && !args.out && !args['no-docs'] && !process.env.BENCH_POLICY_PATCH && tracingRatio === undefined);
  printSummary(report);
  log(`wrote ${written.join(', ')}`);
}

function pushSettings(): PushSettings {
  // 10 tasks per release, 20 releases a second: 200 completions a second, a rate this shared
  // machine sustains (at 1,000 a second under other load the lag measured the queue's growth).
  return { listeners: settings.pushListeners, tasksPerListener: PUSH_TASKS_PER_LISTENER, releaseBatch: 10, releasesPerSecond: 20 };
}

/** What a measurement run alone (--push, --scale) starts first: the machine's description, the issuer and its tokens, the backend. */
async function startAlone(what: string, principals: number, loadLabel = '') {
  const machine = describeMachine();
  const pinning = detectPinning();
  log(`${what} run (${mode}): ${machine.nproc} × ${machine.cpuModel}, Node ${machine.node}; ${loadLabel}${pinning.note}`);
  const issuer = await startIssuer();
  running.push({ stop: () => issuer.close() });
  const tokens = await Promise.all(Array.from({ length: principals }, (_, i) => issuer.mint(`bench-user-${i}`)));
  const backend = await startNodeChild(pinning, './backend.ts', { cpu: pinning.loadCpu });
  running.push(backend);
  return { machine, pinning, issuer, tokens, backend };
}

/** `--push`: the status-push measurement alone (bench/push.ts), written to push.* beside the full run's files. */
async function pushAlone(): Promise<void> {
  const { machine, pinning, issuer, tokens, backend } = await startAlone('push', Math.min(MEMORY_PRINCIPALS, settings.pushListeners));
  const push = await checkPush({ pinning, base: { backendUrl: backend.url, issuer }, tokens, backend, settings: pushSettings(), log });
  const report: PushReport = {
    schema: 'taskgate-bench-push/1',
    generatedAt: new Date().toISOString(),
    mode,
    command: `npm run bench -- --push${mode === 'full' ? '' : ` --${mode}`}${args['push-listeners'] ? ` --push-listeners ${args['push-listeners']}` : ''}`,
    revision: gitRevision(),
    machine,
    pinning: pinning.note,
    settings: pushSettings(),
    push,
    durationSeconds: Math.round((Date.now() - started) / 1000),
  };
  const dir = args.out ?? join(REPO_ROOT, 'bench', 'results');
  const base = mode === 'full' ? 'push' : `push-${mode}`;
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, `${base}.json`), `${JSON.stringify(report, null, 2)}\n`);
  writeFileSync(join(dir, `${base}.md`), `${renderPushMarkdown(report)}\n`);
  console.log(`\nstatus push:\n${pushText(push)}\n`);
  log(`wrote ${join(dir, `${base}.json`)}, ${join(dir, `${base}.md`)}`);
}

function runScale(pinning: ReturnType<typeof detectPinning>, tool: LoadTool, backend: NodeChild, issuer: Awaited<ReturnType<typeof startIssuer>>, tokens: string[]): Promise<ScaleCheck> {
  log(`scale: sizes ${scaleSizes.join(', ')} (memory; Redis, push listeners and held calls up to their limits)${scaleCurves ? `, curves ${scaleCurves.join(', ')}` : ''}`);
  return checkScale({ pinning, base: { backendUrl: backend.url, issuer }, tokens, backend, load: tool, sizes: scaleSizes, curves: scaleCurves, settings: scaleSettings, log });
}

/** `--scale`: the scale curves alone (bench/scale.ts), written to scale.* beside the full run's files. */
async function scaleAlone(): Promise<void> {
  const load = chooseLoadTool();
  buildGateway();
  const { machine, pinning, issuer, tokens, backend } = await startAlone('scale', MEMORY_PRINCIPALS, `${load.label}; `);
  const report: ScaleReport = {
    schema: 'taskgate-bench-scale/1',
    generatedAt: new Date().toISOString(),
    mode,
    command: `npm run bench -- --scale${mode === 'full' ? '' : ` --${mode}`}${args['scale-sizes'] ? ` --scale-sizes ${args['scale-sizes']}` : ''}${scaleCurves ? ` --scale-curves ${scaleCurves.join(',')}` : ''}${scalePollSample ? ` --scale-poll-sample ${scalePollSample}` : ''}`,
    revision: gitRevision(),
    machine,
    pinning: pinning.note,
    loadGenerator: load.label,
    scale: await runScale(pinning, load.tool, backend, issuer, tokens),
    durationSeconds: 0,
  };
  report.durationSeconds = Math.round((Date.now() - started) / 1000);
  const dir = args.out ?? join(REPO_ROOT, 'bench', 'results');
  const written = writeScaleOutputs(report, dir, mode === 'full' ? 'scale' : `scale-${mode}`);
  log(`wrote ${written.join(', ')}`);
}

try {
  await (args.scale ? scaleAlone() : args.push ? pushAlone() : main());
} catch (error) {
  log(`failed: ${(error as Error).stack ?? String(error)}`);
  process.exitCode = 1;
} finally {
  await stopAll();
  clearTimeout(watchdog);
}
