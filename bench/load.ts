/**
 * Drives one load run with wrk (a Lua script builds the POST bodies and headers) or, where wrk
 * is missing, with the Node generator in load-node.ts. Both report requests, errors and
 * latency percentiles in the same shape.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { runToEnd, spawnPinned, type Pinning } from './children.js';
import type { RequestSpec } from './scenarios.js';

export type LoadTool = 'wrk' | 'node';

export interface LoadResult {
  requests: number;
  seconds: number;
  rps: number;
  errors: number;
  /** wrk's error kinds: connect, read, write, status (HTTP > 399), timeout. */
  errorKinds: Record<string, number>;
  latencyUs: { p50: number; p90: number; p99: number };
}

interface RawResult {
  requests: number;
  duration_us: number;
  errors: Record<string, number>;
  latency_us: { p50: number; p90: number; p99: number };
}

const scriptDir = mkdtempSync(join(tmpdir(), 'taskgate-bench-wrk-'));
let scripts = 0;

export function removeLoadScripts(): void {
  rmSync(scriptDir, { recursive: true, force: true });
}

/** Long-bracket Lua strings need no escaping as long as the text never holds the closer. */
function luaString(text: string): string {
  if (text.includes(']==]')) throw new Error('request text cannot be embedded in Lua');
  return `[==[${text}]==]`;
}

/** A wrk script that cycles through `specs` and prints its summary as one JSON line. */
function writeWrkScript(path: string, specs: RequestSpec[]): string {
  const requests = specs
    .map((spec) => {
      const headers = Object.entries(spec.headers).map(([k, v]) => `[ ${luaString(k)} ] = ${luaString(v)}`).join(', ');
      const body = spec.method === 'GET' ? 'nil' : luaString(spec.body);
      return `  reqs[#reqs + 1] = wrk.format("${spec.method ?? 'POST'}", ${luaString(path)}, { ${headers} }, ${body})`;
    })
    .join('\n');
  const file = join(scriptDir, `load-${++scripts}.lua`);
  writeFileSync(
    file,
    `local reqs = {}
local i = 0
init = function(args)
${requests}
  -- A start position (the script's first argument) continues a rotation from an earlier run.
  if args[1] then i = tonumber(args[1]) % #reqs end
end
request = function()
  i = i % #reqs + 1
  return reqs[i]
end
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format('BENCHJSON {"requests":%d,"duration_us":%d,"errors":{"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d},"latency_us":{"p50":%d,"p90":%d,"p99":%d}}\\n',
    summary.requests, summary.duration, e.connect, e.read, e.write, e.status, e.timeout,
    latency:percentile(50), latency:percentile(90), latency:percentile(99)))
end
`,
  );
  return file;
}

export interface LoadPlan {
  url: string;
  specs: RequestSpec[];
  connections: number;
  seconds: number;
}

/**
 * A prepared run: the wrk script is written once per target and scenario, then reused. Each run
 * cycles through `specs` from the first, or from `startAt` (a run that goes on where an earlier
 * one stopped, so that successive runs reach every request of a long list).
 */
export function planLoad(tool: LoadTool, url: string, specs: RequestSpec[]): (connections: number, seconds: number, pinning: Pinning, startAt?: number) => Promise<LoadResult> {
  const script = tool === 'wrk' ? writeWrkScript(new URL(url).pathname, specs) : undefined;
  return (connections, seconds, pinning, startAt = 0) => {
    if (script) return runWrk(script, { url, specs, connections, seconds }, pinning, startAt);
    const from = startAt % specs.length;
    return runNodeLoad({ url, specs: from === 0 ? specs : [...specs.slice(from), ...specs.slice(0, from)], connections, seconds }, pinning);
  };
}

async function runWrk(script: string, plan: LoadPlan, pinning: Pinning, startAt: number): Promise<LoadResult> {
  // wrk takes whole seconds; a thread per connection beyond one would only add context switches.
  const args = ['-t1', `-c${plan.connections}`, `-d${Math.max(1, Math.round(plan.seconds))}s`, '--timeout', '10s', '-s', script, plan.url, ...(startAt > 0 ? ['--', String(startAt)] : [])];
  const { code, stdout, stderr } = await runToEnd(spawnPinned(pinning, pinning.loadCpu, 'wrk', args, ['ignore', 'pipe', 'pipe']));
  const line = stdout.split('\n').find((l) => l.startsWith('BENCHJSON '));
  if (code !== 0 || !line) throw new Error(`wrk failed (${code}): ${stderr || stdout}`);
  return toResult(JSON.parse(line.slice('BENCHJSON '.length)) as RawResult);
}

/** The Node generator; `count` instead of a duration sends exactly that many requests. */
export async function runNodeLoad(plan: LoadPlan & { count?: number }, pinning: Pinning): Promise<LoadResult> {
  const input = { url: plan.url, specs: plan.specs, connections: plan.connections, durationMs: plan.count === undefined ? plan.seconds * 1000 : undefined, count: plan.count };
  const script = fileURLToPath(new URL('./load-node.ts', import.meta.url));
  const file = join(scriptDir, `node-load-${++scripts}.json`);
  writeFileSync(file, JSON.stringify(input));
  const child = spawnPinned(pinning, pinning.loadCpu, process.execPath, ['--import', 'tsx', script], ['ignore', 'pipe', 'pipe'], { BENCH_LOAD_FILE: file });
  const { code, stdout, stderr } = await runToEnd(child);
  const line = stdout.split('\n').find((l) => l.startsWith('{'));
  if (code !== 0 || !line) throw new Error(`node load generator failed (${code}): ${stderr}`);
  return toResult(JSON.parse(line) as RawResult);
}

function toResult(raw: RawResult): LoadResult {
  const seconds = raw.duration_us / 1e6;
  const errors = Object.values(raw.errors).reduce((a, b) => a + b, 0);
  return { requests: raw.requests, seconds, rps: raw.requests / seconds, errors, errorKinds: raw.errors, latencyUs: raw.latency_us };
}
