// Runs the MCP conformance CLI (server mode) against a URL and reads back per-scenario results.
//
// Results come from the CLI's `--output-dir`: one `server-<scenario>-<timestamp>/checks.json`
// per scenario that ran. A folder without checks.json is a scenario that never finished, or one
// 0.2 skipped as not applicable at the requested spec version, which it says on stdout.
import { spawn } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

export type ConformanceSuite = '0.1' | '0.2';
export type ScenarioStatus = 'pass' | 'fail' | 'skip';

export interface ConformanceCheck {
  id: string;
  name: string;
  status: 'SUCCESS' | 'FAILURE' | 'WARNING' | 'SKIPPED' | 'INFO';
  description?: string;
  errorMessage?: string;
}

export interface ScenarioOutcome {
  status: ScenarioStatus;
  checks: ConformanceCheck[];
}

export interface ConformanceRunOptions {
  /**
   * Run exactly these scenarios, one CLI process each (the CLI takes one `--scenario`). Without
   * it, one CLI process runs every server scenario the suite has for spec 2025-11-25.
   */
  scenarios?: string[];
  /** Wall-clock budget for the whole call; scenarios without a result by then are `fail`. */
  timeoutMs?: number;
  /**
   * `--spec-version` for the run (default: none per scenario, 2025-11-25 for the whole suite).
   * Scenarios that span eras (`tools-list`, `dns-rebinding-protection`) pick their era from it;
   * extension scenarios (`tasks-*`) are skipped whenever it is set, so leave it unset for them.
   */
  specVersion?: string;
}

const SUITE_PACKAGE: Record<ConformanceSuite, string> = { '0.1': 'conformance-0-1', '0.2': 'conformance-0-2' };
/** The Gen-1 revision the example server and SDK 1.x speak. */
const DEFAULT_SPEC_VERSION = '2025-11-25';
const DEFAULT_TIMEOUT_MS = 120_000;
/** 0.2's own per-scenario timeout, so one hung scenario cannot eat the whole budget. */
const SCENARIO_TIMEOUT_MS = 30_000;
const REGISTER_HOOK = fileURLToPath(new URL('../../scripts/conformance/register-hook.mjs', import.meta.url));
const RESULT_DIR = /^server-(.+)-\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}-\d{3}Z$/;
const SKIPPED_LINE = /^SKIPPED: scenario '([^']+)' is not applicable/;

export async function runConformanceServerSuite(
  suite: ConformanceSuite,
  url: string,
  opts: ConformanceRunOptions = {},
): Promise<Map<string, ScenarioStatus>> {
  const outcomes = await runConformanceServerScenarios(suite, url, opts);
  return new Map([...outcomes].map(([name, outcome]) => [name, outcome.status]));
}

/** Like runConformanceServerSuite, with every check kept, so a caller can say why a scenario failed. */
export async function runConformanceServerScenarios(
  suite: ConformanceSuite,
  url: string,
  opts: ConformanceRunOptions = {},
): Promise<Map<string, ScenarioOutcome>> {
  const deadline = Date.now() + (opts.timeoutMs ?? DEFAULT_TIMEOUT_MS);
  const outputDir = await mkdtemp(join(tmpdir(), `taskgate-conformance-${suite}-`));
  try {
    const base = ['server', '--url', url, '-o', outputDir];
    if (suite === '0.2') base.push('--timeout', String(Math.min(SCENARIO_TIMEOUT_MS, opts.timeoutMs ?? SCENARIO_TIMEOUT_MS)));
    const skipped = new Set<string>();
    if (opts.scenarios === undefined) {
      const specVersion = opts.specVersion ?? DEFAULT_SPEC_VERSION;
      await runCli(suite, [...base, '--suite', 'all', '--spec-version', specVersion], deadline, skipped);
    } else {
      const specArgs = opts.specVersion === undefined ? [] : ['--spec-version', opts.specVersion];
      for (const scenario of opts.scenarios) {
        if (Date.now() >= deadline) break;
        await runCli(suite, [...base, '--scenario', scenario, ...specArgs], deadline, skipped);
      }
    }
    const outcomes = await readOutcomes(outputDir, skipped);
    for (const scenario of opts.scenarios ?? []) {
      if (!outcomes.has(scenario)) {
        outcomes.set(scenario, { status: 'fail', checks: [noResultCheck(scenario)] });
      }
    }
    return outcomes;
  } finally {
    await rm(outputDir, { recursive: true, force: true });
  }
}

function cliPath(suite: ConformanceSuite): string {
  const require = createRequire(import.meta.url);
  return join(dirname(require.resolve(`${SUITE_PACKAGE[suite]}/package.json`)), 'dist', 'index.js');
}

/**
 * Runs the CLI to completion. Its exit code only says whether some check failed, which the
 * results say better, so it is ignored; a usage error (unknown scenario, bad URL) is thrown.
 */
async function runCli(suite: ConformanceSuite, args: string[], deadline: number, skipped: Set<string>): Promise<void> {
  const env = { ...process.env };
  // Set by `node --test` for its own children; the CLI is not one of them.
  delete env.NODE_TEST_CONTEXT;
  const child = spawn(process.execPath, ['--import', REGISTER_HOOK, cliPath(suite), ...args], {
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  const stdoutLines = createInterface({ input: child.stdout });
  stdoutLines.on('line', (line) => {
    const scenario = SKIPPED_LINE.exec(line)?.[1];
    if (scenario !== undefined) skipped.add(scenario);
  });
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
    stderr = (stderr + chunk).slice(-20_000);
  });
  const timer = setTimeout(() => child.kill('SIGKILL'), Math.max(0, deadline - Date.now()));
  try {
    await new Promise<void>((resolve, reject) => {
      child.once('error', reject);
      child.once('close', () => resolve());
    });
  } finally {
    clearTimeout(timer);
  }
  if (stderr.includes('Validation error:')) {
    throw new Error(`conformance ${suite} rejected its arguments (${args.join(' ')}):\n${stderr}`);
  }
}

async function readOutcomes(outputDir: string, skipped: Set<string>): Promise<Map<string, ScenarioOutcome>> {
  const outcomes = new Map<string, ScenarioOutcome>();
  for (const entry of (await readdir(outputDir)).sort()) {
    const scenario = RESULT_DIR.exec(entry)?.[1];
    if (scenario === undefined) continue;
    let checks: ConformanceCheck[];
    try {
      checks = JSON.parse(await readFile(join(outputDir, entry, 'checks.json'), 'utf8')) as ConformanceCheck[];
    } catch {
      outcomes.set(scenario, skipped.has(scenario) ? { status: 'skip', checks: [] } : { status: 'fail', checks: [noResultCheck(scenario)] });
      continue;
    }
    outcomes.set(scenario, { status: statusOf(checks), checks });
  }
  return outcomes;
}

/**
 * The CLI's own verdict is "no FAILURE check". A scenario that produced nothing but INFO or
 * SKIPPED checks (for example session lifecycle on a stateless server) tested nothing: `skip`.
 */
function statusOf(checks: ConformanceCheck[]): ScenarioStatus {
  if (checks.some((c) => c.status === 'FAILURE')) return 'fail';
  if (checks.some((c) => c.status === 'SUCCESS' || c.status === 'WARNING')) return 'pass';
  return 'skip';
}

function noResultCheck(scenario: string): ConformanceCheck {
  return {
    id: `${scenario}-no-result`,
    name: 'NoResult',
    status: 'FAILURE',
    errorMessage: 'the conformance CLI produced no result for this scenario (timed out or crashed)',
  };
}
