/**
 * `npx tsx bench/floor.ts [--mode callgrind|cpu|syscalls] [--rows a,b] ...`: the per-request
 * floor (issue #29). The same 2026 `tasks/get` request, the same load generator and the same
 * connections for every row: bare node:http answering it as bench/backend.ts does, fastify
 * answering it from an empty route, the ladder of taskgate's listener options, parser, route
 * shape and hooks added one at a time (bench/floor-server.ts), the bench backend itself, and the
 * real gateway answering a cached and a forwarded poll, with and without its auth, request log
 * line and audit event.
 *
 * Modes:
 * - `callgrind` (default): each row's process runs under `valgrind --tool=callgrind`; after a
 *   warm-up its counters are zeroed, a fixed number of requests is sent, and the counters are
 *   dumped: user-space instructions per request, the same whatever else the machine runs. What
 *   it does not count is the kernel (system calls: `--mode syscalls` counts those).
 * - `cpu`: each row on the proxy core natively, wrk on the other; process.cpuUsage() per
 *   request at 1 and 50 connections, rows alternated round by round, with the other tenants'
 *   load of each run beside it (noisy on a shared machine: read it with the callgrind counts).
 * - `syscalls`: `strace -c -f` over a fixed number of requests: system calls per request.
 *
 * Rows run one after another; `--rows` picks some (two invocations with different rows may run
 * side by side in callgrind mode, the second with `--proxy-cpu 1`: instruction counts do not
 * depend on the other core).
 * Writes bench/results/floor-<mode>[-<tag>].md and .json.
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { delay, detectPinning, REPO_ROOT, startNodeChild, type NodeChild, type Pinning } from './children.js';
import type { CpuReply } from './child-channel.js';
import { FLOOR_STEP_TEXT, FLOOR_STEPS, PUBLISHED_STEP_TEXT, PUBLISHED_STEPS } from './floor-steps.js';
import { startIssuer, type BenchIssuer } from './jwks.js';
import { Pool } from 'undici';
import { planLoad, removeLoadScripts, type LoadResult } from './load.js';
import { describeMachine, foreignLoad, round, snapshotBusy } from './machine.js';
import { hasCommand } from './nginx.js';
import { prepareRequests, type RequestSpec, type ScenarioName } from './scenarios.js';
import { buildGateway, gitRevision, taskgatePolicy, waitUntilReady, type Target } from './targets.js';

type Mode = 'callgrind' | 'cpu' | 'syscalls';

const { values: args } = parseArgs({
  options: {
    mode: { type: 'string', default: 'callgrind' },
    rows: { type: 'string' },
    requests: { type: 'string', default: '1000' },
    warmup: { type: 'string', default: '5000' },
    connections: { type: 'string', default: '50,1' },
    rounds: { type: 'string', default: '3' },
    seconds: { type: 'string', default: '2' },
    tag: { type: 'string' },
    'proxy-cpu': { type: 'string' },
    /** cpu and syscalls modes: node flags for every row (`--single-threaded`: no V8 helper threads). */
    'node-flags': { type: 'string' },
    /** Reuse dist/floor as compiled (an invocation beside another, which compiled it). */
    'no-compile': { type: 'boolean', default: false },
  },
});
const mode = args.mode as Mode;
if (!['callgrind', 'cpu', 'syscalls'].includes(mode)) throw new Error(`--mode is callgrind, cpu or syscalls, not ${args.mode}`);
const REQUESTS = Number(args.requests);
const WARMUP = Number(args.warmup);
const CONNECTIONS = args.connections.split(',').map(Number);
const NODE_FLAGS = args['node-flags']?.split(' ').filter(Boolean) ?? [];

/** Whole top-level policy sections replaced, as BENCH_POLICY_PATCH does (bench/targets.ts). */
const NO_AUTH = { auth: { mode: 'none' } };
const NO_LOG_LINE = { logging: { level: 'warn' } };
const NO_AUDIT = { audit: { stdout: false } };

interface RowSpec {
  name: string;
  text: string;
  /** The scenario whose requests the row gets: every ladder row the 2026 tasks/get of the bench. */
  scenario: ScenarioName;
  kind: 'ladder' | 'published' | 'backend' | 'taskgate';
  /** cpu mode only: the row runs on the load core beside the load generator (the bench's direct row). */
  onLoadCore?: boolean;
  policyPatch?: Record<string, unknown>;
}

const ROWS: RowSpec[] = [
  ...FLOOR_STEPS.map((step): RowSpec => ({ name: step, text: FLOOR_STEP_TEXT[step], scenario: 'tasks-get-2026', kind: 'ladder' })),
  ...PUBLISHED_STEPS.map((step): RowSpec => ({ name: step, text: PUBLISHED_STEP_TEXT[step], scenario: 'tasks-get-2026', kind: 'published' })),
  { name: 'backend.ts', text: 'bench/backend.ts itself (the direct row\'s backend), on the proxy core', scenario: 'tasks-get-2026', kind: 'backend' },
  { name: 'backend.ts@load-core', text: 'bench/backend.ts on the load core beside the load generator, as the bench\'s direct row measures it (cpu mode)', scenario: 'tasks-get-2026', kind: 'backend', onLoadCore: true },
  { name: 'taskgate-cached', text: 'taskgate (memory store, JWT, log line, audit): an early tasks/get answered from its cache', scenario: 'tasks-get-cached', kind: 'taskgate' },
  { name: 'cached-no-auth', text: 'the same with auth.mode none', scenario: 'tasks-get-cached', kind: 'taskgate', policyPatch: NO_AUTH },
  { name: 'cached-no-log-line', text: 'the same with logging.level warn (no request line)', scenario: 'tasks-get-cached', kind: 'taskgate', policyPatch: NO_LOG_LINE },
  { name: 'cached-no-audit', text: 'the same with audit.stdout false (no audit event)', scenario: 'tasks-get-cached', kind: 'taskgate', policyPatch: NO_AUDIT },
  { name: 'cached-none-of-three', text: 'the same with auth none, no log line, no audit event', scenario: 'tasks-get-cached', kind: 'taskgate', policyPatch: { ...NO_AUTH, ...NO_LOG_LINE, ...NO_AUDIT } },
  { name: 'taskgate-forwarded', text: 'taskgate (memory store, JWT, log line, audit): a 2026 tasks/get forwarded to the backend', scenario: 'tasks-get-2026', kind: 'taskgate' },
  { name: 'forwarded-none-of-three', text: 'the same with auth none, no log line, no audit event', scenario: 'tasks-get-2026', kind: 'taskgate', policyPatch: { ...NO_AUTH, ...NO_LOG_LINE, ...NO_AUDIT } },
];

const chosen = args.rows ? args.rows.split(',').map((name) => {
  const row = ROWS.find((r) => r.name === name.trim());
  if (!row) throw new Error(`no row ${name}; rows: ${ROWS.map((r) => r.name).join(', ')}`);
  return row;
}) : ROWS.filter((r) => !(r.onLoadCore && mode !== 'cpu'));

interface Shared {
  pinning: Pinning;
  issuer: BenchIssuer;
  tokens: string[];
  backend: NodeChild;
  /** The ladder's and the backend rows' requests: the bench's 2026 tasks/get of made-up handles. */
  plainSpecs: RequestSpec[];
}

interface Started {
  child: NodeChild;
  url: string;
  specs: RequestSpec[];
  stop(): Promise<void>;
}

const VALGRIND_READY_MS = 900_000;

let compiledDir: string | undefined;

/**
 * The children this tool starts, compiled by tsc into dist/floor (as the gateway is into
 * dist/src): run as plain JavaScript, without tsx's loader. Under valgrind the loader's module
 * hooks, on a thread of their own, made a gateway take more than ten minutes to start; and
 * esbuild's keepNames, which tsx sets, wraps every function made at run time in a `__name`
 * call, a cost of the harness rather than of the code measured.
 */
function compiledChildren(): string {
  if (compiledDir) return compiledDir;
  if (args['no-compile']) return (compiledDir = '../dist/floor/bench');
  const dist = join(REPO_ROOT, 'dist');
  mkdirSync(dist, { recursive: true });
  const project = join(dist, 'floor.tsconfig.json');
  const files = ['bench/floor-server.ts', 'bench/taskgate-child.ts', 'bench/backend.ts'].map((f) => join(REPO_ROOT, f));
  writeFileSync(project, JSON.stringify({ extends: '../tsconfig.json', compilerOptions: { noEmit: false, sourceMap: false, outDir: './floor', rootDir: '..' }, include: ['../src'], files }));
  const tsc = spawnSync(process.execPath, [join(REPO_ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', project], { stdio: ['ignore', 'pipe', 'pipe'], encoding: 'utf8' });
  if (tsc.status !== 0) throw new Error(`compiling the floor children failed\n${tsc.stdout}${tsc.stderr}`);
  compiledDir = '../dist/floor/bench';
  return compiledDir;
}
/** The published benchmark's request: a GET with no headers of its own (autocannon sends none). */
const GET_SPECS: RequestSpec[] = [{ method: 'GET', headers: {}, body: '' }];

async function startRow(row: RowSpec, shared: Shared, wrapper: string[] | undefined, execArgv: string[] = []): Promise<Started> {
  const { pinning } = shared;
  const cpu = row.onLoadCore ? pinning.loadCpu : pinning.proxyCpu;
  const readyTimeoutMs = wrapper ? VALGRIND_READY_MS : 30_000;
  if (row.kind === 'ladder' || row.kind === 'published') {
    const child = await startNodeChild(pinning, `${compiledChildren()}/floor-server.js`, { cpu, env: { FLOOR_STEP: row.name }, wrapper, execArgv, readyTimeoutMs });
    return { child, url: child.url, specs: row.kind === 'published' ? GET_SPECS : shared.plainSpecs, stop: () => child.stop() };
  }
  if (row.kind === 'backend') {
    const child = await startNodeChild(pinning, `${compiledChildren()}/backend.js`, { cpu, wrapper, execArgv, readyTimeoutMs });
    return { child, url: `${child.url}/mcp`, specs: shared.plainSpecs, stop: () => child.stop() };
  }
  const policy = { ...(JSON.parse(taskgatePolicy({ backendUrl: shared.backend.url, issuer: shared.issuer })) as Record<string, unknown>), ...row.policyPatch };
  const child = await startNodeChild(pinning, `${compiledChildren()}/taskgate-child.js`, { cpu, env: { BENCH_POLICY: JSON.stringify(policy), BENCH_GATEWAY_DIR: buildGateway() }, wrapper, execArgv, readyTimeoutMs });
  await waitUntilReady(String(child.details.adminUrl), readyTimeoutMs);
  const url = `${child.url}/mcp`;
  const target = { name: 'taskgate-memory', url, isTaskgate: true } as Target;
  const specs = await prepareRequests(row.scenario, target, shared.tokens);
  return { child, url, specs, stop: () => child.stop() };
}

/**
 * Load for the counted modes: undici pools kept for the row's whole life, one per connection
 * level, driven from this process (on the load core). A load generator started per window
 * opened its connections anew each time, and a connection's set-up and close cost the server
 * about as much as hundreds of requests: with 50 new connections per 200 requests the same
 * server measured 397k to 908k instructions per request from window to window.
 */
class KeptLoad {
  private readonly pools = new Map<number, Pool>();

  constructor(private readonly url: URL, private readonly specs: RequestSpec[]) {}

  async send(connections: number, count: number): Promise<LoadResult> {
    let pool = this.pools.get(connections);
    if (!pool) this.pools.set(connections, (pool = new Pool(this.url.origin, { connections, pipelining: 1 })));
    let next = 0;
    let errors = 0;
    const kinds: Record<string, number> = {};
    const started = performance.now();
    const user = async (): Promise<void> => {
      for (let index = next++; index < count; index = next++) {
        const spec = this.specs[index % this.specs.length]!;
        const method = spec.method ?? 'POST';
        try {
          const res = await pool.request({ path: this.url.pathname, method, headers: spec.headers, body: method === 'GET' ? undefined : spec.body });
          const text = await res.body.text();
          if (res.statusCode > 399) {
            errors++;
            const kind = `${res.statusCode} ${text.slice(0, 120)}`;
            kinds[kind] = (kinds[kind] ?? 0) + 1;
          }
        } catch (error) {
          errors++;
          const kind = (error as Error).message.slice(0, 120);
          kinds[kind] = (kinds[kind] ?? 0) + 1;
        }
      }
    };
    await Promise.all(Array.from({ length: connections }, user));
    const seconds = (performance.now() - started) / 1000;
    return { requests: count - errors, seconds, rps: count / seconds, errors, errorKinds: kinds, latencyUs: { p50: 0, p90: 0, p99: 0 } };
  }

  async close(): Promise<void> {
    for (const pool of this.pools.values()) await pool.close();
  }
}

function checkLoad(row: RowSpec, load: LoadResult, wanted: number): void {
  if (load.errors > 0 || load.requests !== wanted) throw new Error(`${row.name}: ${load.requests} of ${wanted} requests answered, ${load.errors} errors (${JSON.stringify(load.errorKinds)})`);
}

// ---- callgrind

/** Sends callgrind a command; it is read when the process next runs, so callers that may be idle wake it. */
function callgrindControl(pid: number, ...what: string[]): Promise<void> {
  return new Promise((resolve, reject) => {
    const control = spawn('callgrind_control', [...what, String(pid)], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    control.stdout.on('data', (chunk: Buffer) => (out += chunk.toString('utf8')));
    control.stderr.on('data', (chunk: Buffer) => (out += chunk.toString('utf8')));
    const timer = setTimeout(() => control.kill(), 300_000);
    control.once('close', (code) => {
      clearTimeout(timer);
      if (code === 0 && out.includes('OK')) resolve();
      else reject(new Error(`callgrind_control ${what.join(' ')} ${pid} failed: ${out}`));
    });
  });
}

/** The instruction count of the newest dump of `pid` in `dir` (the `summary:` line). */
function lastDump(dir: string, pid: number, dumps: number): number {
  const file = join(dir, `cg.${pid}.${dumps}`);
  const summary = readFileSync(file, 'utf8').split('\n').find((line) => line.startsWith('summary:'));
  if (!summary) throw new Error(`${file} has no summary line`);
  return Number(summary.slice('summary:'.length).trim());
}

interface CallgrindCell {
  connections: number;
  /** Instructions per request in each window, in order. */
  perRequest: number[];
  /** Each window's wall time under valgrind. */
  seconds: number[];
}

/** Two windows in a row within this of each other: the process is warm (the JIT done with this path). */
const SETTLED = 0.03;
const MAX_WINDOWS = 4;

/**
 * V8 runs single-threaded under callgrind (`--single-threaded`: no background compiler or GC
 * threads), so that a function's optimisation happens when its call count says, not when a
 * starved background thread gets its turn: with background threads, windows after a 3,000
 * request warm-up still differed by 2× (the optimising compiler's work landing in them). The
 * work itself is the same, counted on the main thread. `--predictable-gc-schedule` fixes the
 * heap's growth, which V8 otherwise sizes from allocation per millisecond: under valgrind's
 * clock that put full collections in some windows and not others (fastify's empty route read
 * 129k and 276k instructions per request in two windows in a row).
 *
 * Even so, on the shared VM of 2026-12-06 only some rows settled (bench/results/floor-callgrind.md):
 * others disagreed by up to 2× from window to window, with a long warm-up too, for a reason not
 * found there; work done by the clock (connection checks, keep-alive timers, prom-client's
 * event-loop monitor) lands in windows that last a hundred times longer than natively, and a
 * window stretched to a minute also trips the gateway's 10 s headersTimeout (408s). Read a row
 * only when its windows settled, and run one or two invocations at a time.
 */
async function measureCallgrind(row: RowSpec, shared: Shared, dir: string): Promise<CallgrindCell[]> {
  // Start-up and warm-up run uninstrumented (several times faster); counting starts after them.
  const wrapper = ['valgrind', '--tool=callgrind', '--instr-atstart=no', `--callgrind-out-file=${join(dir, 'cg.%p')}`, '--dump-instr=no'];
  const started = await startRow(row, shared, wrapper, ['--single-threaded', '--predictable-gc-schedule']);
  const pid = started.child.pid;
  const load = new KeptLoad(new URL(started.url), started.specs);
  // A command is read when the process runs: one request wakes an idle one.
  const command = async (...what: string[]): Promise<void> => {
    const sent = callgrindControl(pid, ...what);
    await delay(200);
    await load.send(1, 1);
    await sent;
  };
  let dumps = 0;
  try {
    // Every level's connections are opened in the warm-up and kept: no window opens one.
    for (const connections of CONNECTIONS) checkLoad(row, await load.send(connections, WARMUP), WARMUP);
    await command('-i', 'on');
    const cells: CallgrindCell[] = [];
    for (const connections of CONNECTIONS) {
      const cell: CallgrindCell = { connections, perRequest: [], seconds: [] };
      while (cell.perRequest.length < MAX_WINDOWS && !settled(cell.perRequest)) {
        await callgrindControl(pid, '-z');
        const window = await load.send(connections, REQUESTS);
        checkLoad(row, window, REQUESTS);
        await callgrindControl(pid, '-d');
        cell.perRequest.push(Math.round(lastDump(dir, pid, ++dumps) / REQUESTS));
        cell.seconds.push(Math.round(window.seconds * 10) / 10);
      }
      cells.push(cell);
      log(`${row.name}: ${connections} conns: ${cell.perRequest.map((n) => n.toLocaleString('en')).join(', ')} instructions per request (windows of ${cell.seconds.join(', ')} s)${settled(cell.perRequest) ? '' : ' (not settled)'}`);
    }
    return cells;
  } finally {
    await load.close();
    await started.stop();
  }
}

function settled(windows: number[]): boolean {
  const [a, b] = windows.slice(-2);
  return a !== undefined && b !== undefined && Math.abs(a - b) <= SETTLED * Math.max(a, b);
}

/** The mean of the last two windows once they agree; otherwise the median of all of them. */
function figure(cell: CallgrindCell): number {
  if (!settled(cell.perRequest)) return Math.round(median(cell.perRequest));
  const last = cell.perRequest.slice(-2);
  return Math.round(last.reduce((x, y) => x + y, 0) / last.length);
}

// ---- cpu (process.cpuUsage under wrk)

interface CpuRun {
  round: number;
  connections: number;
  requests: number;
  rps: number;
  cpuUsPerRequest: number;
  foreignCores: number;
}

async function childCpuUs(child: NodeChild): Promise<number> {
  const cpu = await child.ask<CpuReply>('cpu');
  return cpu.userUs + cpu.systemUs;
}

async function measureCpu(rows: RowSpec[], shared: Shared): Promise<Map<string, CpuRun[]>> {
  const tool = hasCommand('wrk') ? 'wrk' : 'node';
  if (tool !== 'wrk') log('wrk not found: the Node load generator drives the cpu mode');
  const started = new Map<string, Started>();
  const runs = new Map<string, CpuRun[]>();
  try {
    for (const row of rows) started.set(row.name, await startRow(row, shared, undefined, NODE_FLAGS));
    const plans = new Map([...started].map(([name, s]) => [name, planLoad(tool, s.url, s.specs)]));
    const ours = (): number[] => [shared.backend.pid, ...[...started.values()].map((s) => s.child.pid)];
    // Warm-up: every row once at each level, outside the figures.
    for (const row of rows) for (const c of CONNECTIONS) await plans.get(row.name)!(c, 1, shared.pinning);
    for (let r = 0; r < Number(args.rounds); r++) {
      // Rotated, so that no row always follows the same other row.
      const order = rows.map((_, i) => rows[(i + r) % rows.length]!);
      for (const row of order) {
        for (const connections of r % 2 === 0 ? CONNECTIONS : [...CONNECTIONS].reverse()) {
          const child = started.get(row.name)!.child;
          const busy0 = snapshotBusy(ours());
          const cpu0 = await childCpuUs(child);
          const load = await plans.get(row.name)!(connections, Number(args.seconds), shared.pinning);
          const cpu1 = await childCpuUs(child);
          const foreign = foreignLoad(busy0, snapshotBusy(ours()));
          const run: CpuRun = { round: r + 1, connections, requests: load.requests, rps: round(load.rps, 0), cpuUsPerRequest: round((cpu1 - cpu0) / Math.max(1, load.requests), 1), foreignCores: foreign.foreignCores };
          (runs.get(row.name) ?? runs.set(row.name, []).get(row.name)!).push(run);
          log(`${row.name}: round ${r + 1}, ${connections} conns: ${run.cpuUsPerRequest} µs/request at ${run.rps}/s (other load ${run.foreignCores} cores)`);
        }
      }
    }
    return runs;
  } finally {
    for (const s of started.values()) await s.stop();
  }
}

// ---- syscalls (strace -c)

async function measureSyscalls(row: RowSpec, shared: Shared, dir: string): Promise<{ connections: number; perRequest: Record<string, number> }[]> {
  if (!hasCommand('strace')) throw new Error('--mode syscalls needs strace (Debian package strace)');
  const started = await startRow(row, shared, undefined);
  const load = new KeptLoad(new URL(started.url), started.specs);
  try {
    for (const connections of CONNECTIONS) checkLoad(row, await load.send(connections, WARMUP), WARMUP);
    const out: { connections: number; perRequest: Record<string, number> }[] = [];
    for (const connections of CONNECTIONS) {
      const file = join(dir, `strace-${started.child.pid}-${connections}.txt`);
      const strace = spawn('strace', ['-c', '-f', '-q', '-o', file, '-p', String(started.child.pid)], { stdio: 'ignore' });
      const exited = new Promise<void>((resolve) => strace.once('exit', () => resolve()));
      await delay(500);
      checkLoad(row, await load.send(connections, REQUESTS), REQUESTS);
      strace.kill('SIGINT');
      await exited;
      const perRequest: Record<string, number> = {};
      for (const line of readFileSync(file, 'utf8').split('\n')) {
        const f = line.trim().split(/\s+/);
        if (f.length >= 5 && /^\d/.test(f[0]!) && f.at(-1) !== 'total') perRequest[f.at(-1)!] = round(Number(f[3]) / REQUESTS, 2);
      }
      out.push({ connections, perRequest });
      log(`${row.name}: ${connections} conns: ${JSON.stringify(perRequest)}`);
    }
    return out;
  } finally {
    await load.close();
    await started.stop();
  }
}

// ---- output

const startedAt = Date.now();
function log(line: string): void {
  console.error(`[floor ${((Date.now() - startedAt) / 1000).toFixed(0).padStart(4)} s] ${line}`);
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

// Read before detectPinning moves this process to one core (the machine would look one core wide).
const machine = describeMachine();

function header(): string[] {
  return [
    `Revision ${gitRevision()}; ${machine.nproc} × ${machine.cpuModel}, Node ${machine.node}; ${new Date().toISOString()}; load average at start ${machine.loadavgAtStart.map((l) => l.toFixed(2)).join(' ')}.`,
    `Command: \`npx tsx bench/floor.ts ${process.argv.slice(2).join(' ')}\``,
    '',
  ];
}

function renderCallgrind(results: Map<string, CallgrindCell[]>): string {
  const levels = CONNECTIONS;
  const first = levels[0]!;
  const lines = [
    `### The floor in instructions: ${REQUESTS} requests per window after ${WARMUP} of warm-up (valgrind --tool=callgrind, user space only)`,
    '',
    ...header(),
    `Instructions per request: the mean of the last two windows of ${REQUESTS} requests, windows repeated until two in a row agree within ${SETTLED * 100} % (at most ${MAX_WINDOWS}; the median of all when none did; all windows in brackets, in order). V8 single-threaded with a fixed GC schedule (see measureCallgrind); window times are in the .json. "step" is the row minus the ladder row above it, a taskgate row minus the ladder's last row, a GET row minus get:node-http; "÷" is against node-http (the GET rows: get:node-http).`,
    '',
    `| row | what | ${levels.map((c) => `${c} conns`).join(' | ')} | step (${first} conns) | ÷ (${first} conns) |`,
    `| --- | --- | ${levels.map(() => '---:').join(' | ')} | ---: | ---: |`,
  ];
  const at = (name: string): number | undefined => {
    const cell = results.get(name)?.[0];
    return cell ? figure(cell) : undefined;
  };
  const base = at('node-http');
  let previous: number | undefined;
  for (const row of chosen) {
    const cells = results.get(row.name);
    if (!cells) continue;
    const value = figure(cells[0]!);
    const reference = row.kind === 'taskgate' ? at('+onResponse') : row.kind === 'published' ? at('get:node-http') : row.kind === 'ladder' && row.name !== 'listener.ts' ? previous : undefined;
    const step = reference === undefined || reference === value ? '' : `${value - reference >= 0 ? '+' : ''}${(value - reference).toLocaleString('en')}`;
    const against = row.kind === 'published' ? at('get:node-http') : base;
    const ratio = against ? `${(value / against).toFixed(2)}×` : '';
    const columns = cells.map((c) => `**${figure(c).toLocaleString('en')}** (${c.perRequest.map((n) => n.toLocaleString('en')).join(', ')}${settled(c.perRequest) ? '' : ', not settled'})`);
    lines.push(`| ${row.name} | ${row.text} | ${columns.join(' | ')} | ${step} | ${ratio} |`);
    if (row.kind === 'ladder' && row.name !== 'listener.ts') previous = value;
  }
  return lines.join('\n');
}

function renderCpu(runs: Map<string, CpuRun[]>): string {
  const lines = [
    `### The floor in CPU time: process.cpuUsage() per request, wrk, ${args.rounds} rounds of ${args.seconds} s per cell`,
    '',
    ...header(),
    'Median (min–max) over the rounds; "other load" is the most CPU other processes used during any of the row\'s runs (cores). Each row on the proxy core (cpu 0), wrk and the backend on the load core (cpu 1), except the row that says otherwise.',
    '',
    `| row | ${CONNECTIONS.map((c) => `${c} conns µs/req | req/s`).join(' | ')} | other load |`,
    `| --- | ${CONNECTIONS.map(() => '---: | ---:').join(' | ')} | ---: |`,
  ];
  for (const row of chosen) {
    const mine = runs.get(row.name);
    if (!mine) continue;
    const cells = CONNECTIONS.map((c) => {
      const at = mine.filter((m) => m.connections === c);
      const cpu = at.map((m) => m.cpuUsPerRequest);
      return `${round(median(cpu), 1)} (${Math.min(...cpu)}–${Math.max(...cpu)}) | ${round(median(at.map((m) => m.rps)), 0)}`;
    });
    lines.push(`| ${row.name} | ${cells.join(' | ')} | ${Math.max(...mine.map((m) => m.foreignCores))} |`);
  }
  return lines.join('\n');
}

function renderSyscalls(results: Map<string, { connections: number; perRequest: Record<string, number> }[]>): string {
  const lines = [`### System calls per request (strace -c -f over ${REQUESTS} requests after ${WARMUP} of warm-up)`, '', ...header()];
  for (const row of chosen) {
    const cells = results.get(row.name);
    if (!cells) continue;
    for (const { connections, perRequest } of cells) {
      const total = Object.values(perRequest).reduce((a, b) => a + b, 0);
      const named = Object.entries(perRequest).filter(([, n]) => n >= 0.05).sort((a, b) => b[1] - a[1]).map(([name, n]) => `${name} ${n}`);
      lines.push(`- ${row.name}, ${connections} conns: **${round(total, 2)}** per request (${named.join(', ')})`);
    }
  }
  return lines.join('\n');
}

async function main(): Promise<void> {
  const detected = detectPinning();
  // Two callgrind invocations side by side each take a core: counts do not depend on it, time does.
  const pinning = args['proxy-cpu'] === undefined ? detected : { ...detected, proxyCpu: args['proxy-cpu'] };
  const issuer = await startIssuer();
  const work = mkdtempSync(join(tmpdir(), 'taskgate-floor-'));
  let backend: NodeChild | undefined;
  try {
    const tokens = await Promise.all(Array.from({ length: 4 }, (_, i) => issuer.mint(`bench-user-${i}`)));
    backend = await startNodeChild(pinning, './backend.ts', { cpu: pinning.loadCpu });
    const plainSpecs = await prepareRequests('tasks-get-2026', { name: 'direct', url: '', isTaskgate: false } as unknown as Target, tokens);
    const shared: Shared = { pinning, issuer, tokens, backend, plainSpecs };
    if (chosen.some((r) => r.kind === 'taskgate')) buildGateway();
    log(`${mode}: ${chosen.map((r) => r.name).join(', ')}`);
    let text: string;
    let raw: unknown;
    if (mode === 'callgrind') {
      if (!hasCommand('valgrind')) throw new Error('--mode callgrind needs valgrind (Debian package valgrind)');
      const results = new Map<string, CallgrindCell[]>();
      for (const row of chosen) results.set(row.name, await measureCallgrind(row, shared, work));
      text = renderCallgrind(results);
      raw = Object.fromEntries(results);
    } else if (mode === 'cpu') {
      const runs = await measureCpu(chosen, shared);
      text = renderCpu(runs);
      raw = Object.fromEntries(runs);
    } else {
      const results = new Map<string, { connections: number; perRequest: Record<string, number> }[]>();
      for (const row of chosen) results.set(row.name, await measureSyscalls(row, shared, work));
      text = renderSyscalls(results);
      raw = Object.fromEntries(results);
    }
    const out = join(REPO_ROOT, 'bench', 'results');
    mkdirSync(out, { recursive: true });
    const name = `floor-${mode}${args.tag ? `-${args.tag}` : ''}`;
    writeFileSync(join(out, `${name}.md`), `${text}\n`);
    writeFileSync(join(out, `${name}.json`), `${JSON.stringify({ revision: gitRevision(), generatedAt: new Date().toISOString(), argv: process.argv.slice(2), rows: chosen, results: raw }, null, 2)}\n`);
    console.log(text);
    log(`wrote bench/results/${name}.md and .json`);
  } finally {
    await backend?.stop();
    await issuer.close();
    removeLoadScripts();
    for (const f of readdirSync(work)) rmSync(join(work, f), { force: true });
    rmSync(work, { recursive: true, force: true });
  }
}

await main();
