/**
 * `tsx bench/profile.ts [--scenario tasks-get-2026] [--seconds 10] [--connections 50] [--target taskgate-memory|taskgate-redis|fastify|fastify-empty] [--syscalls] [--tracing RATIO]`:
 * taskgate on the memory store (`--target taskgate-redis`: on Redis; `--target fastify`: the plain
 * passthrough it is measured against; `--target fastify-empty`: an empty fastify route answering
 * every POST itself, bench/empty-route.ts, the floor under a cached poll; a provided-task scenario: the taskgate with its provided-task
 * policy, bench/provided.ts, whose held calls end after the window) under one
 * scenario's load with --cpu-prof, then the top self-time functions and the
 * self time per source area, counted only over the load window (start-up and the JIT warm-up
 * are cut off). Writes bench/results/profile-<scenario>.md and keeps the .cpuprofile beside it
 * for Chrome DevTools.
 *
 * `--syscalls` counts the target's system calls over the load window with `strace -c` instead
 * (no profiler): calls per request by name. On loopback a write or writev also runs the
 * receiver's TCP work, so a call saved is CPU saved, and the count holds still where time does not.
 *
 * `--tracing RATIO` profiles taskgate with OpenTelemetry tracing on at that sampling ratio,
 * exporting to the backend's collector (profile-…-tracing-RATIO.md).
 */
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawn } from 'node:child_process';
import { parseArgs } from 'node:util';
import type { CpuReply } from './child-channel.js';
import { detectPinning, REPO_ROOT, startNodeChild } from './children.js';
import { startIssuer } from './jwks.js';
import { planLoad } from './load.js';
import { hasCommand } from './nginx.js';
import { releaseHeld, startProvidedTarget } from './provided.js';
import { prepareRequests, SCENARIOS, type ScenarioName } from './scenarios.js';
import { gitRevision, isSkipped, startEmptyRouteTarget, startFastifyTarget, startRedisTaskgate, startTaskgate, taskgatePolicy } from './targets.js';
import { describeMachine } from './machine.js';
import { phaseShares, renderPhases } from './profile-phases.js';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  samples: number[];
  timeDeltas: number[];
}

const { values: args } = parseArgs({
  options: { scenario: { type: 'string', default: 'tasks-get-2026' }, seconds: { type: 'string', default: '10' }, connections: { type: 'string', default: '50' }, target: { type: 'string', default: 'taskgate-memory' }, syscalls: { type: 'boolean', default: false }, tracing: { type: 'string' } },
});
const scenario = args.scenario as ScenarioName;
if (!SCENARIOS[scenario]) throw new Error(`unknown scenario ${scenario}`);
if (!['taskgate-memory', 'taskgate-redis', 'fastify', 'fastify-empty'].includes(args.target)) throw new Error(`--target is taskgate-memory, taskgate-redis, fastify or fastify-empty, not ${args.target}`);
const passthrough = args.target === 'fastify' || args.target === 'fastify-empty';
const tracingRatio = args.tracing === undefined ? undefined : Number(args.tracing);
if (tracingRatio !== undefined && !(tracingRatio >= 0 && tracingRatio <= 1)) throw new Error(`--tracing takes a sampling ratio from 0 to 1, not ${args.tracing}`);

/**
 * What a stored profile measured: the revision, the machine, when. Read at start, before the
 * harness pins itself to the load core (which would make the machine look one core wide).
 */
const PROVENANCE = (() => {
  const machine = describeMachine();
  return `Revision ${gitRevision()}; ${machine.nproc} × ${machine.cpuModel}, Node ${machine.node}; ${new Date().toISOString()}.`;
})();

/** Where a function lives, short: src/tasks/handle.ts, node_modules/fastify, node:internal … */
function area(url: string, name: string): string {
  if (!url) return name.startsWith('(') ? name : '(native)';
  const path = url.replace(/^file:\/\//, '').replace(REPO_ROOT, '');
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(path);
  if (pkg) return `node_modules/${pkg[1]}`;
  if (path.startsWith('node:')) return path.split('/')[0]!.replace(/^node:internal.*/, 'node:internal');
  return path;
}

export function summarizeProfile(profile: CpuProfile, fromUs: number, toUs: number, top = 25): string {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  // Native and node: frames (writev, JSON.parse, stream internals) are charged to the first
  // caller in src/ or node_modules: "the socket writes of undici" says more than "node:internal".
  const areaOf = (node: ProfileNode): string => {
    let firstJs: ProfileNode | undefined;
    for (let at: ProfileNode | undefined = node; at; at = byId.get(parent.get(at.id) ?? -1)) {
      const { url, functionName } = at.callFrame;
      // (garbage collector), (idle), (program); (root) is reached from event-loop callbacks.
      if (!url && functionName.startsWith('(')) return firstJs ? area(firstJs.callFrame.url, firstJs.callFrame.functionName) : functionName;
      if (url.startsWith('file://')) return area(url, functionName);
      if (url && !firstJs) firstJs = at;
    }
    return firstJs ? area(firstJs.callFrame.url, firstJs.callFrame.functionName) : '(native)';
  };
  const self = new Map<string, number>();
  const areas = new Map<string, number>();
  let t = profile.startTime;
  let total = 0;
  for (let i = 0; i < profile.samples.length; i++) {
    t += profile.timeDeltas[i] ?? 0;
    // The time up to the next sample belongs to this one.
    const dt = profile.timeDeltas[i + 1] ?? 0;
    if (t < fromUs || t > toUs) continue;
    const node = byId.get(profile.samples[i]!)!;
    const { functionName, url, lineNumber } = node.callFrame;
    const where = areaOf(node);
    // tsx emits each source file on few lines, so a line number only helps in node_modules.
    const line = url.includes('node_modules') ? `:${lineNumber + 1}` : '';
    const key = `${functionName || '(anonymous)'} — ${url ? area(url, functionName) + line : `native, called from ${where}`}`;
    self.set(key, (self.get(key) ?? 0) + dt);
    areas.set(where, (areas.get(where) ?? 0) + dt);
    total += dt;
  }
  const rows = (map: Map<string, number>) =>
    [...map.entries()]
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(([k, us]) => `| ${(us / 1000).toFixed(0)} | ${((us / total) * 100).toFixed(1)} % | \`${k.replace(/\|/g, '\\|')}\` |`)
      .join('\n');
  return [
    `Self time over ${(total / 1e6).toFixed(1)} s of samples in the load window.`,
    '',
    '| self ms | share | function — where |',
    '| ---: | ---: | --- |',
    rows(self),
    '',
    '| self ms | share | area (native and node: frames charged to their first src/ or node_modules caller) |',
    '| ---: | ---: | --- |',
    rows(areas),
  ].join('\n');
}

/** System calls of `pid` (all its threads) while `load` runs, per request, most frequent first. */
async function countSyscalls(pid: number, dir: string, load: () => Promise<{ requests: number }>): Promise<string> {
  if (!hasCommand('strace')) throw new Error('--syscalls needs strace (Debian package strace)');
  const out = join(dir, 'strace.txt');
  const strace = spawn('strace', ['-c', '-f', '-q', '-o', out, '-p', String(pid)], { stdio: 'ignore' });
  const exited = new Promise<void>((resolve) => strace.once('exit', () => resolve()));
  await new Promise((resolve) => setTimeout(resolve, 500)); // attached to every thread
  const { requests } = await load();
  strace.kill('SIGINT');
  await exited;
  // strace -c rows: % time, seconds, usecs/call, calls, [errors,] syscall
  const rows = readFileSync(out, 'utf8')
    .split('\n')
    .map((line) => line.trim().split(/\s+/))
    .filter((f) => f.length >= 5 && /^\d/.test(f[0]!) && f.at(-1) !== 'total')
    .map((f) => ({ name: f.at(-1)!, calls: Number(f[3]) }))
    .sort((a, b) => b.calls - a.calls);
  const total = rows.reduce((sum, r) => sum + r.calls, 0);
  return [
    `### System calls of ${args.target}: ${SCENARIOS[scenario].title}, ${args.connections} connections, ${args.seconds} s (strace -c, which slows the target)`,
    '',
    PROVENANCE,
    '',
    `${requests} requests; ${(total / requests).toFixed(2)} system calls per request.`,
    '',
    '| calls/request | syscall |',
    '| ---: | --- |',
    ...rows.filter((r) => r.calls / requests >= 0.01).map((r) => `| ${(r.calls / requests).toFixed(2)} | ${r.name} |`),
  ].join('\n');
}

async function main(): Promise<void> {
  const pinning = detectPinning();
  const tool = hasCommand('wrk') ? 'wrk' : 'node';
  const profDir = mkdtempSync(join(tmpdir(), 'taskgate-bench-prof-'));
  const issuer = await startIssuer();
  const tokens = await Promise.all(Array.from({ length: 64 }, (_, i) => issuer.mint(`bench-user-${i}`)));
  const backend = await startNodeChild(pinning, './backend.ts', { cpu: pinning.loadCpu });
  const profArgs = args.syscalls ? [] : ['--cpu-prof', `--cpu-prof-dir=${profDir}`, '--cpu-prof-interval=250'];
  const role = SCENARIOS[scenario].provided?.role;
  if (role && passthrough) throw new Error(`${scenario} runs on taskgate only`);
  const started = role
    ? await startProvidedTarget(pinning, args.target as 'taskgate-memory' | 'taskgate-redis', role, { backendUrl: backend.url, issuer }, profArgs)
    : args.target === 'fastify-empty'
    ? await startEmptyRouteTarget(pinning, profArgs)
    : passthrough
    ? await startFastifyTarget(pinning, backend.url, profArgs)
    : args.target === 'taskgate-redis'
      ? await startRedisTaskgate(pinning, { backendUrl: backend.url, issuer, tracingRatio }, profArgs)
      : await startTaskgate(pinning, 'taskgate-memory', taskgatePolicy({ backendUrl: backend.url, issuer, tracingRatio }), profArgs);
  if (isSkipped(started)) throw new Error(`cannot profile ${args.target}: ${started.reason}`);
  const target = started;
  try {
    const specs = await prepareRequests(scenario, target, tokens);
    const run = planLoad(tool, target.url, specs);
    await run(Number(args.connections), 3, pinning); // warm-up, outside the window
    if (args.syscalls) {
      const text = await countSyscalls(target.child!.pid, profDir, () => run(Number(args.connections), Number(args.seconds), pinning));
      console.log(text);
      return;
    }
    const before = await target.child!.ask<CpuReply>('cpu');
    const load = await run(Number(args.connections), Number(args.seconds), pinning);
    const after = await target.child!.ask<CpuReply>('cpu');
    // Held calls (the polled provided tasks') would hold the gateway's stop for its drain time.
    await releaseHeld(backend);
    await target.stop();
    const file = readdirSync(profDir).find((f) => f.endsWith('.cpuprofile'));
    if (!file) throw new Error('no .cpuprofile was written');
    const profile = JSON.parse(readFileSync(join(profDir, file), 'utf8')) as CpuProfile;
    const cpuUs = after.userUs + after.systemUs - before.userUs - before.systemUs;
    const header = [
      `### Profile of ${args.target}: ${SCENARIOS[scenario].title}, ${args.connections} connections, ${args.seconds} s (${tool})`,
      '',
      PROVENANCE,
      '',
      `${load.requests} requests at ${load.rps.toFixed(0)}/s; ${args.target} used ${(cpuUs / load.requests).toFixed(1)} µs CPU per request (with the sampling profiler on, which adds to it).`,
      '',
    ].join('\n');
    const phases = renderPhases(phaseShares(profile, before.monotonicUs, after.monotonicUs));
    const text = `${header}${summarizeProfile(profile, before.monotonicUs, after.monotonicUs)}\n\n${phases}\n`;
    const out = join(REPO_ROOT, 'bench', 'results');
    mkdirSync(out, { recursive: true });
    const name = `profile-${args.target === 'taskgate-memory' ? '' : `${args.target}-`}${scenario}${args.connections === '50' ? '' : `-${args.connections}c`}${tracingRatio === undefined ? '' : `-tracing-${tracingRatio}`}`;
    writeFileSync(join(out, `${name}.md`), text);
    copyFileSync(join(profDir, file), join(out, `${name}.cpuprofile`));
    console.log(text);
  } finally {
    await releaseHeld(backend).catch(() => 0);
    await target.stop();
    await backend.stop();
    await issuer.close();
    rmSync(profDir, { recursive: true, force: true });
  }
}

await main();
