/**
 * The soak's report: one JSON object (every figure, for tools and the CI test) and its
 * Markdown, per setup: requests and their rate, errors by class (documented answers to a fault
 * or not), the faults, the invariants, memory over time with its slope, p99 per minute, the
 * gateway's own counters and the warnings it logged.
 */
import { attributeErrors, RULES, type ErrorRow } from './attribution.js';
import type { SoakClient } from './client.js';
import type { FaultRecord } from './faults.js';
import type { FinalCheck } from './final-check.js';
import type { LoggedWarnings, Replica } from './processes.js';
import type { MinuteRow, Recorder } from './recorder.js';
import { slopePerMinute, type Sampler } from './sampler.js';
import { commandTimeoutMs, type SetupName, type SoakSettings } from './settings.js';
import type { Violation } from './task-entry.js';

const MIB = 1024 * 1024;
const mib = (bytes: number) => Math.round((bytes / MIB) * 10) / 10;
const round = (value: number | null, digits = 2) => (value === null ? null : Math.round(value * 10 ** digits) / 10 ** digits);

export interface SeriesSummary {
  name: string;
  pid: number;
  samples: number;
  /** Seconds from the start of the fill. */
  fromS: number;
  toS: number;
  rssMiB: { first: number; last: number; max: number };
  heapMiB: { first: number; last: number; max: number };
  /** Least-squares slopes over the samples after the fill (null with fewer than 3). */
  rssSlopeMiBPerMin: number | null;
  heapSlopeMiBPerMin: number | null;
  /** [t s, RSS MiB, heap MiB] */
  series: [number, number, number][];
}

export interface SetupReport {
  setup: SetupName;
  replicas: string[];
  backends: string[];
  seconds: { fill: number; total: number };
  principals: number;
  requests: { total: number; perSecond: number; byKind: Record<string, number>; errors: number; documented: number; knownDefect: number; unexplained: number };
  errors: ErrorRow[];
  faults: FaultRecord[];
  perMinute: MinuteRow[];
  memory: { replicas: SeriesSummary[]; redis: { samples: number; usedMemoryMiB: { first: number; last: number; max: number }; slopeMiBPerMin: number | null; keysLast: number } | null };
  /** The gateway's counters, summed over replicas and incarnations. */
  gateway: Record<string, number>;
  tasks: {
    handles: number;
    byKind: Record<string, number>;
    ended: Record<string, number>;
    failedBy: Record<string, number>;
    lostWithBackend: number;
    expired: number;
    vanished: number;
    liveAtEnd: number;
  } & SoakClient['tallies'];
  invariants: {
    holds: boolean;
    violations: Record<string, number>;
    examples: Violation[];
    finalCheck: Omit<FinalCheck, 'violations'> & { violations: number };
  };
  warnings: Record<string, LoggedWarnings>;
  /** When each replica logged its store away and back, and why (a restart, or Redis not answering in time). */
  storeOutages: { replica: string; fromS: number; toS: number | null; why: string }[];
  /** Replica processes that exited without the soak stopping or killing them. */
  crashes: { replica: string; pid: number; atS: number; backS: number | null; code: number | null; signal: string | null; stderr: string }[];
  backendStats: Record<string, unknown>[];
}

export interface SetupInputs {
  setup: SetupName;
  settings: SoakSettings;
  t0: number;
  loadEnd: number;
  recorder: Recorder;
  client: SoakClient;
  faults: FaultRecord[];
  final: FinalCheck;
  replicas: Replica[];
  sampler: Sampler;
  backendStats: Record<string, unknown>[];
}

function stats(values: number[]): { first: number; last: number; max: number } {
  return { first: mib(values[0] ?? 0), last: mib(values.at(-1) ?? 0), max: mib(Math.max(0, ...values)) };
}

function memorySummary(inputs: SetupInputs): SetupReport['memory'] {
  const after = inputs.settings.fillMs / 1000;
  const replicas: SeriesSummary[] = inputs.sampler.replicas.flatMap((series) =>
    series.incarnations.map((inc) => {
      const settled = inc.samples.filter((s) => s.t >= after);
      return {
        name: series.name,
        pid: inc.pid,
        samples: inc.samples.length,
        fromS: inc.samples[0]?.t ?? 0,
        toS: inc.samples.at(-1)?.t ?? 0,
        rssMiB: stats(inc.samples.map((s) => s.rss)),
        heapMiB: stats(inc.samples.map((s) => s.heap)),
        rssSlopeMiBPerMin: round(slopePerMinute(settled.map((s) => ({ t: s.t, value: s.rss / MIB })))),
        heapSlopeMiBPerMin: round(slopePerMinute(settled.map((s) => ({ t: s.t, value: s.heap / MIB })))),
        series: inc.samples.map((s) => [s.t, mib(s.rss), mib(s.heap)] as [number, number, number]),
      };
    }),
  );
  const redis = inputs.sampler.redis;
  const settledRedis = redis.filter((s) => s.t >= after);
  return {
    replicas,
    redis: redis.length === 0 ? null : {
      samples: redis.length,
      usedMemoryMiB: stats(redis.map((s) => s.usedMemory)),
      slopeMiBPerMin: round(slopePerMinute(settledRedis.map((s) => ({ t: s.t, value: s.usedMemory / MIB })))),
      keysLast: redis.at(-1)!.keys,
    },
  };
}

function gatewayCounters(sampler: Sampler): Record<string, number> {
  const sum: Record<string, number> = {};
  for (const series of sampler.replicas) for (const inc of series.incarnations) for (const [key, value] of Object.entries(inc.counters)) sum[key] = (sum[key] ?? 0) + value;
  return sum;
}

function count<T>(items: T[], key: (item: T) => string | undefined): Record<string, number> {
  const out: Record<string, number> = {};
  for (const item of items) {
    const k = key(item);
    if (k !== undefined) out[k] = (out[k] ?? 0) + 1;
  }
  return out;
}

export function buildSetupReport(inputs: SetupInputs): SetupReport {
  const { client, recorder, final } = inputs;
  const outages = Object.fromEntries(inputs.replicas.map((r) => [r.name, r.storeOutages.map((o) => [o.from, o.to ?? Infinity] as [number, number])]));
  const crashWindows = Object.fromEntries(inputs.replicas.map((r) => [r.name, r.crashes.map((c) => [c.at, c.restartedAt ?? Infinity] as [number, number])]));
  const timeoutMs = commandTimeoutMs(inputs.settings);
  const errors = attributeErrors(recorder.errors, inputs.faults, { storeOutages: outages, crashes: crashWindows, commandTimeoutMs: timeoutMs });
  const unexplained = errors.reduce((s, r) => s + r.unexplained, 0);
  const knownDefect = errors.reduce((s, r) => s + r.defect, 0);
  const violations = [...client.violations, ...final.violations];
  const seconds = (inputs.loadEnd - inputs.t0) / 1000;
  const tasks = client.tasks;
  const { violations: _v, ...check } = final;
  const at = (ms: number) => Math.round((ms - inputs.t0) / 100) / 10;
  const crashes = inputs.replicas.flatMap((r) => r.crashes.map((c) => ({ replica: r.name, pid: c.pid, atS: at(c.at), backS: c.restartedAt === undefined ? null : at(c.restartedAt), code: c.code, signal: c.signal, stderr: c.stderr })));
  return {
    setup: inputs.setup,
    replicas: inputs.replicas.map((r) => r.name),
    backends: ['A', 'B'],
    seconds: { fill: inputs.settings.fillMs / 1000, total: Math.round(seconds) },
    principals: new Set(tasks.map((t) => t.principal.subject)).size,
    requests: { total: recorder.total, perSecond: Math.round(recorder.total / seconds), byKind: recorder.byKind, errors: recorder.errors.length, documented: recorder.errors.length - unexplained - knownDefect, knownDefect, unexplained },
    errors,
    faults: inputs.faults,
    perMinute: recorder.perMinute(inputs.loadEnd),
    memory: memorySummary(inputs),
    gateway: gatewayCounters(inputs.sampler),
    tasks: {
      handles: tasks.length,
      byKind: count(tasks, (t) => `${t.kind} ${t.era}`),
      ended: count(tasks, (t) => (t.state === 'ended' ? t.status : undefined)),
      failedBy: count(tasks, (t) => t.failedBy),
      lostWithBackend: tasks.filter((t) => t.state === 'lost').length,
      expired: tasks.filter((t) => t.state === 'expired').length,
      vanished: tasks.filter((t) => t.state === 'vanished').length,
      liveAtEnd: tasks.filter((t) => t.state === 'live').length,
      ...client.tallies,
    },
    invariants: {
      holds: violations.length === 0 && unexplained === 0 && crashes.length === 0,
      violations: count(violations, (v) => v.what),
      examples: violations.slice(0, 20),
      finalCheck: { ...check, violations: final.violations.length },
    },
    warnings: Object.fromEntries(inputs.replicas.map((r) => [r.name, r.warnings])),
    storeOutages: inputs.replicas.flatMap((r) => r.storeOutages.map((o) => ({ replica: r.name, fromS: at(o.from), toS: o.to === undefined ? null : at(o.to), why: o.why.slice(0, 200) }))),
    crashes,
    backendStats: inputs.backendStats,
  };
}

const n = (value: number) => value.toLocaleString('en-US');
const table = (head: string[], rows: (string | number)[][]) => [`| ${head.join(' | ')} |`, `| ${head.map((_, i) => (i === 0 ? '---' : '---:')).join(' | ')} |`, ...rows.map((r) => `| ${r.join(' | ')} |`)].join('\n');

function faultLine(f: FaultRecord): (string | number)[] {
  const seen = f.observed ? `${f.observed.cls} × ${n(f.observed.count)}${f.observed.firstAfterMs === undefined ? '' : `, first after ${f.observed.firstAfterMs} ms`}` : '–';
  return [`${f.kind} (${f.target})`, f.injectedAtS ?? '–', f.recoveredAtS ?? (f.kind === 'backend-loss' ? 'lost for good' : '–'), seen, f.error ?? 'injected'];
}

export function renderSetup(r: SetupReport, settings: SoakSettings): string {
  const store = r.setup === 'redis' ? `Redis store, ${r.replicas.length} replicas (${r.replicas.join(', ')}) behind the client's round-robin` : 'memory store, one replica';
  const provided = Math.round(settings.tasks * settings.providedShare);
  const lines = [
    `### ${store}`,
    '',
    `- **Load**: ${n(settings.tasks)} live tasks (${n(settings.tasks - provided)} backend tasks on \`/mcp\`, ${n(provided)} run by the gateway on \`/plain\`; 2025-11-25 and 2026-07-28 half each; ${r.principals} principals), polled every ${settings.pollIntervalMs / 1000} s; lifetimes ${settings.lifetimeMs[0] / 1000}–${settings.lifetimeMs[1] / 1000} s; TTL ${settings.ttlMs / 1000} s; fill ${r.seconds.fill} s, ${r.seconds.total} s in all`,
    `- **Requests**: ${n(r.requests.total)}, **${r.requests.perSecond}/s** (${Object.entries(r.requests.byKind).map(([k, v]) => `${k} ${n(v)}`).join(', ')}); errors ${n(r.requests.errors)}, documented answers to the faults ${n(r.requests.documented)}, cut by a replica crash ${n(r.requests.knownDefect)}, **unexplained ${n(r.requests.unexplained)}**`,
    `- **Invariants** ${r.invariants.holds ? '**hold**' : '**VIOLATED**'}: ${n(r.invariants.finalCheck.handles)} handles asked again through ${r.invariants.finalCheck.replicas.join(' and ')} (${n(r.invariants.finalCheck.requests)} requests in ${r.invariants.finalCheck.seconds} s); violations: ${Object.keys(r.invariants.violations).length ? Object.entries(r.invariants.violations).map(([k, v]) => `${k} ${v}`).join(', ') : 'none'} (reachable, none stuck \`working\` past its bound, nothing lost, every result its own task's)`,
    `- **Tasks**: ${n(r.tasks.handles)} handles (${Object.entries(r.tasks.byKind).map(([k, v]) => `${k} ${n(v)}`).join(', ')}); ended ${Object.entries(r.tasks.ended).map(([k, v]) => `${k} ${n(v)}`).join(', ')}; failed as documented ${Object.entries(r.tasks.failedBy).map(([k, v]) => `${k} ${v}`).join(', ') || 'none'}; lost with the backend instance ${n(r.tasks.lostWithBackend)}; expired ${n(r.tasks.expired)}; running at the end ${n(r.tasks.liveAtEnd)}; creations with no answer ${r.tasks.creationsUnknown}; sessions opened ${r.tasks.sessionsOpened}`,
    '',
    table(['fault', 'at s', 'recovered s', 'documented answer met', 'outcome'], r.faults.map(faultLine)),
    '',
    r.errors.length ? table(['error class', 'total', 'documented answer to', 'cut by a crash', 'unexplained', 'requests'], r.errors.map((e) => [e.cls, n(e.total), Object.entries(e.documented).map(([k, v]) => `${k} ${n(v)}`).join(', ') || '–', e.defect, e.unexplained, Object.entries(e.byKind).map(([k, v]) => `${k} ${n(v)}`).join(', ')])) : 'No errors.',
    '',
    table(['process', 'samples', 's', 'RSS MiB first → last (max)', 'RSS slope MiB/min', 'heap MiB first → last (max)', 'heap slope MiB/min'], [
      ...r.memory.replicas.map((m) => [`taskgate ${m.name} (pid ${m.pid})`, m.samples, `${m.fromS}–${m.toS}`, `${m.rssMiB.first} → ${m.rssMiB.last} (${m.rssMiB.max})`, m.rssSlopeMiBPerMin ?? '–', `${m.heapMiB.first} → ${m.heapMiB.last} (${m.heapMiB.max})`, m.heapSlopeMiBPerMin ?? '–']),
      ...(r.memory.redis ? [[`redis used_memory (${n(r.memory.redis.keysLast)} keys at the end)`, r.memory.redis.samples, '', `${r.memory.redis.usedMemoryMiB.first} → ${r.memory.redis.usedMemoryMiB.last} (${r.memory.redis.usedMemoryMiB.max})`, r.memory.redis.slopeMiBPerMin ?? '–', '', '']] : []),
    ]),
    '',
    table(['minute', 'req/s', 'errors', 'p50 ms', 'p99 ms', 'max ms', 'poll p99 ms', 'create p99 ms'], r.perMinute.map((m) => [m.minute, m.perSecond, m.errors, m.p50Ms, m.p99Ms, m.maxMs, m.pollP99Ms ?? '–', m.createP99Ms ?? '–'])),
    '',
    `- **Gateway counters** (summed over replicas and restarts): ${Object.entries(r.gateway).map(([k, v]) => `\`${k.replace(/^taskgate_/, '')}\` ${n(v)}`).join(', ') || 'none read'}`,
    `- **Store outages the replicas logged**: ${r.storeOutages.map((o) => `${o.replica} ${o.fromS}–${o.toS ?? 'end'} s (${o.why})`).join('; ') || 'none'}`,
    `- **Warnings logged**: ${Object.entries(r.warnings).flatMap(([name, w]) => Object.entries(w).map(([msg, e]) => `${name} "${msg}" × ${e.count}`)).join('; ') || 'none'}`,
  ];
  for (const c of r.crashes) lines.push('', `**taskgate ${c.replica} (pid ${c.pid}) exited by itself at ${c.atS} s** (code ${c.code}, signal ${c.signal}; started again at ${c.backS ?? '–'} s):`, '', '```', c.stderr.trim(), '```');
  if (r.invariants.examples.length) lines.push('', '**Violations** (first 20):', '', ...r.invariants.examples.map((v) => `- ${v.what} (task ${v.seq}): ${v.detail}`));
  const odd = r.errors.flatMap((e) => e.examples);
  if (odd.length) lines.push('', '**Unexplained errors** (examples):', '', ...odd.slice(0, 10).map((e) => `- ${e.cls} on ${e.kind} via ${e.replica} at ${e.at}${e.instance ? `, instance ${e.instance}` : ''}`));
  return lines.join('\n');
}

export function rulesMarkdown(): string {
  return RULES.map((rule) => `- ${rule.cause}${rule.verdict === 'defect' ? ' (**a crash, which fails the run**)' : ''}: ${rule.classes.map((c) => `\`${c}\``).join(', ')}: ${rule.source}`).join('\n');
}
