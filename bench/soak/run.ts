/**
 * `npm run soak`: 10,000 live tasks of both generations (a tenth of them run by the gateway)
 * through real taskgate processes for ten minutes, on the memory store (one replica) and on
 * Redis (two replicas), with faults in the middle; then every handle asked again. Writes
 * bench/results/soak.{json,md} and the summary block of docs/benchmarks.md ("Soak").
 *
 *   npm run soak                         the full run: two setups of 10 minutes each (about 25 minutes in all)
 *   npm run soak -- --minutes 2 --tasks 2000     a shorter run: bench/results/soak-short.*, the docs untouched
 *   npm run soak -- --smoke --out DIR    CI: 200 tasks, 24 s per setup, both setups side by side
 * Options: --minutes M, --tasks N, --poll-interval 30s, --lifetime 60s-180s, --ttl 5m,
 *          --setups memory,redis, --out DIR, --no-docs
 *
 * Exit status: 0 when every setup ran and its invariants hold, 2 when a setup ran and an
 * invariant failed (the report says which), 1 when a setup could not run.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT } from '../children.js';
import { startIssuer } from '../jwks.js';
import { describeMachine } from '../machine.js';
import { hasCommand } from '../nginx.js';
import { buildGateway, gitRevision } from '../targets.js';
import { ProcessList } from './processes.js';
import { renderSetup, rulesMarkdown, type SetupReport } from './report.js';
import { runSetup } from './setup-run.js';
import { parseSettings, type SetupName, type SoakSettings } from './settings.js';

export interface SoakReport {
  schema: 'taskgate-soak/1';
  generatedAt: string;
  mode: SoakSettings['mode'];
  command: string;
  revision: string;
  machine: ReturnType<typeof describeMachine>;
  settings: Omit<SoakSettings, 'faults' | 'out' | 'command'> & { faults: SoakSettings['faults'] };
  setups: SetupReport[];
  /** Setups that could not run, and why. */
  skipped: { setup: SetupName; reason: string }[];
  /** Every process the soak started; none may outlive it. */
  pids: { pid: number; what: string }[];
  durationSeconds: number;
}

const MARK_START = '<!-- soak:results:start -->';
const MARK_END = '<!-- soak:results:end -->';

const began = Date.now();
const log = (line: string) => console.error(`soak +${Math.round((Date.now() - began) / 1000)}s: ${line}`);

function renderMarkdown(report: SoakReport, settings: SoakSettings): string {
  const m = report.machine;
  return [
    `Run ${report.generatedAt} (${report.mode}, ${report.durationSeconds} s) on revision ${report.revision}: \`${report.command}\``,
    '',
    `- machine: ${m.nproc} × ${m.cpuModel}, Linux ${m.kernel}, Node ${m.node}; load average at start ${m.loadavgAtStart.map((v) => v.toFixed(2)).join(' ')}`,
    ...report.skipped.map((s) => `- **${s.setup} not run**: ${s.reason}`),
    '',
    ...report.setups.flatMap((setup) => [renderSetup(setup, settings), '']),
    'Errors counted as documented answers, by fault:',
    '',
    rulesMarkdown(),
  ].join('\n');
}

function summaryBlock(report: SoakReport): string {
  const lines = [`Run ${report.generatedAt} on revision ${report.revision} (\`${report.command}\`, ${report.durationSeconds} s); the whole report: [bench/results/soak.md](../bench/results/soak.md).`, ''];
  for (const r of report.setups) {
    const memory = r.memory.replicas.map((s) => `${s.name}${r.memory.replicas.filter((x) => x.name === s.name).length > 1 ? ` (pid ${s.pid})` : ''} RSS ${s.rssMiB.first}→${s.rssMiB.last} MiB (${s.rssSlopeMiBPerMin ?? '–'} MiB/min), heap ${s.heapMiB.first}→${s.heapMiB.last} MiB (${s.heapSlopeMiBPerMin ?? '–'} MiB/min)`).join('; ');
    const p99 = r.perMinute.map((m) => m.p99Ms);
    lines.push(
      `- **${r.setup}** (${r.replicas.length} replica${r.replicas.length > 1 ? 's' : ''}): ${r.requests.total.toLocaleString('en-US')} requests at ${r.requests.perSecond}/s; faults ${r.faults.map((f) => `${f.kind} at ${f.injectedAtS ?? '–'} s`).join(', ')}; errors ${r.requests.errors.toLocaleString('en-US')}, unexplained **${r.requests.unexplained}**; invariants ${r.invariants.holds ? '**hold**' : '**VIOLATED**'} (${r.invariants.finalCheck.handles.toLocaleString('en-US')} handles asked again); p99 per minute ${Math.min(...p99)}–${Math.max(...p99)} ms; ${memory}${r.memory.redis ? `; Redis ${r.memory.redis.usedMemoryMiB.last} MiB` : ''}`,
    );
  }
  return lines.join('\n');
}

function writeDocsBlock(block: string): void {
  const path = join(REPO_ROOT, 'docs', 'benchmarks.md');
  const text = readFileSync(path, 'utf8');
  const start = text.indexOf(MARK_START);
  const end = text.indexOf(MARK_END);
  if (start < 0 || end < start) throw new Error(`docs/benchmarks.md has no ${MARK_START} … ${MARK_END} block`);
  writeFileSync(path, `${text.slice(0, start + MARK_START.length)}\n${block}\n${text.slice(end)}`);
}

async function main(): Promise<number> {
  const settings = parseSettings(process.argv.slice(2));
  const started = Date.now();
  const processes = new ProcessList();
  // Whatever happens, nothing the soak started outlives it.
  process.once('exit', () => processes.killAll());
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      log(`${signal}: stopping every process started`);
      processes.killAll();
      process.exit(signal === 'SIGINT' ? 130 : 143);
    });
  }
  let entry = ['--import', 'tsx', join(REPO_ROOT, 'src', 'main.ts')];
  if (settings.gateway === 'dist') {
    process.env.BENCH_BUILD_DIR ??= settings.buildDir;
    log(`building the gateway (tsc) into ${process.env.BENCH_BUILD_DIR}`);
    entry = [join(buildGateway(), 'main.js')];
  }
  const issuer = await startIssuer();
  const skipped: SoakReport['skipped'] = [];
  const setups: SetupReport[] = [];
  const wanted = settings.setups.filter((setup) => {
    if (setup === 'redis' && !hasCommand('redis-server')) skipped.push({ setup, reason: 'redis-server not found (apt-get install -y redis-server)' });
    return !(setup === 'redis' && !hasCommand('redis-server'));
  });
  const runOne = async (setup: SetupName) => {
    log(`${setup}: starting (${settings.tasks} tasks, ${settings.loadMs / 1000} s of load after a ${settings.fillMs / 1000} s fill)`);
    try {
      setups.push(await runSetup(setup, settings, entry, issuer, processes, log));
    } catch (error) {
      log(`${setup} failed: ${(error as Error).stack ?? String(error)}`);
      skipped.push({ setup, reason: `failed: ${(error as Error).message.split('\n')[0]}` });
    }
  };
  try {
    if (settings.parallel) await Promise.all(wanted.map(runOne));
    else for (const setup of wanted) await runOne(setup);
  } finally {
    await issuer.close();
  }
  setups.sort((a, b) => settings.setups.indexOf(a.setup) - settings.setups.indexOf(b.setup));
  const { faults, out: _out, command, ...rest } = settings;
  const report: SoakReport = {
    schema: 'taskgate-soak/1',
    generatedAt: new Date().toISOString(),
    mode: settings.mode,
    command,
    revision: gitRevision(),
    machine: describeMachine(),
    settings: { ...rest, faults },
    setups,
    skipped,
    pids: processes.pids,
    durationSeconds: Math.round((Date.now() - started) / 1000),
  };
  mkdirSync(settings.out, { recursive: true });
  const markdown = renderMarkdown(report, settings);
  writeFileSync(join(settings.out, `${settings.stem}.json`), `${JSON.stringify(report, null, 2)}\n`);
  writeFileSync(join(settings.out, `${settings.stem}.md`), `${markdown}\n`);
  if (settings.writeDocs && skipped.length === 0) writeDocsBlock(summaryBlock(report));
  console.log(markdown);
  log(`wrote ${join(settings.out, settings.stem)}.{json,md}${settings.writeDocs ? ' and the docs/benchmarks.md block' : ''}`);
  if (skipped.some((s) => s.reason.startsWith('failed'))) return 1;
  return setups.every((s) => s.invariants.holds) ? 0 : 2;
}

process.exit(await main());
