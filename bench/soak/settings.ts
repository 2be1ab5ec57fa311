/**
 * What one soak run does: its options, the defaults of the full run (`npm run soak`) and of
 * the smoke run CI makes (`--smoke`), and the fault schedule of each setup.
 *
 * The load is sized for a shared two-core machine: 10,000 live tasks polled every 30 s are
 * about 330 polls a second, with a task ending and another created every 12 ms or so (tasks
 * live one to three minutes), some 450 requests a second in all, through one replica or
 * spread over two.
 */
import { parseArgs } from 'node:util';
import { join } from 'node:path';
import { parseDuration } from '../../src/config/units.js';
import { REPO_ROOT } from '../children.js';

export type SetupName = 'memory' | 'redis';
export type FaultKind = 'redis-restart' | 'replica-kill' | 'backend-loss';
export type Mode = 'full' | 'short' | 'smoke';

export interface FaultPlan {
  kind: FaultKind;
  /** When, as a share of the load's duration. */
  at: number;
}

export interface SoakSettings {
  mode: Mode;
  command: string;
  /** How long the load runs, after the fill. */
  loadMs: number;
  /** Live tasks the client keeps. */
  tasks: number;
  /** Share of them the gateway runs itself (the plain server's `slow` tool). */
  providedShare: number;
  /** Share of backend tasks that end `failed`, and of all tasks the client cancels at their first poll. */
  failShare: number;
  cancelShare: number;
  pollIntervalMs: number;
  /** A task works for a lifetime drawn evenly from this range. */
  lifetimeMs: [number, number];
  ttlMs: number;
  tasksPerPrincipal: number;
  /** The initial tasks are created over this long. */
  fillMs: number;
  sampleEveryMs: number;
  /** How long Redis stays down, and the killed replica. */
  redisDownMs: number;
  replicaDownMs: number;
  setups: SetupName[];
  /** The setups run side by side (the smoke run, to stay within CI's time). */
  parallel: boolean;
  faults: Record<SetupName, FaultPlan[]>;
  out: string;
  /** The file names' stem: soak (full), soak-short, soak-smoke. */
  stem: string;
  writeDocs: boolean;
  /**
   * `dist`: the gateway compiled by tsc (what `npm start` runs), built into `buildDir` (under
   * the repo, so node_modules resolve). `source`: src/main.ts under tsx, as the e2e tests run
   * it, which spares the smoke run the build (10–35 s on these machines).
   */
  gateway: 'dist' | 'source';
  buildDir: string;
  /** store.commandTimeout, when not the default: the smoke run's CI machine may stall Redis. */
  commandTimeout?: string;
}

/**
 * Redis: the restart first, the replica next, the backend last (a lost instance stays lost to
 * the end, so it comes when the others have been seen to recover). Memory: one replica holds
 * every task in its own memory, so killing it would prove only that a restart forgets them all
 * (documented), and there is no Redis: the backend instance is the fault that applies.
 */
const FAULTS: Record<SetupName, FaultPlan[]> = {
  memory: [{ kind: 'backend-loss', at: 0.5 }],
  redis: [
    { kind: 'redis-restart', at: 0.25 },
    { kind: 'replica-kill', at: 0.45 },
    { kind: 'backend-loss', at: 0.65 },
  ],
};

/** The load goes on at least this share of its duration after the last fault has settled. */
export const AFTER_FAULTS = 0.15;

const FULL = { minutes: 10, tasks: 10_000, pollInterval: '30s', lifetime: '60s-180s', ttl: '5m' };
const SMOKE = { minutes: 0.4, tasks: 200, pollInterval: '2s', lifetime: '3s-8s', ttl: '20s' };

function range(text: string): [number, number] {
  const [low, high = low] = text.split('-').map((part) => parseDuration(part.trim()));
  if (low === undefined || high === undefined || high < low) throw new Error(`--lifetime wants MIN-MAX (60s-180s), not ${text}`);
  return [low, high];
}

/** store.commandTimeout the replicas run with: the smoke run's, or the gateway's default (500ms). */
export function commandTimeoutMs(settings: SoakSettings): number {
  return parseDuration(settings.commandTimeout ?? '500ms');
}

export function parseSettings(argv: string[]): SoakSettings {
  const { values } = parseArgs({
    args: argv,
    options: {
      smoke: { type: 'boolean', default: false },
      minutes: { type: 'string' },
      tasks: { type: 'string' },
      'poll-interval': { type: 'string' },
      lifetime: { type: 'string' },
      ttl: { type: 'string' },
      setups: { type: 'string', default: 'memory,redis' },
      out: { type: 'string' },
      'no-docs': { type: 'boolean', default: false },
      gateway: { type: 'string' },
    },
  });
  const base = values.smoke ? SMOKE : FULL;
  const minutes = Number(values.minutes ?? base.minutes);
  const tasks = Number(values.tasks ?? base.tasks);
  if (!(minutes > 0) || !(tasks >= 10)) throw new Error('--minutes must be above 0 and --tasks at least 10');
  const pollIntervalMs = parseDuration(values['poll-interval'] ?? base.pollInterval);
  const lifetimeMs = range(values.lifetime ?? base.lifetime);
  const ttlMs = parseDuration(values.ttl ?? base.ttl);
  if (ttlMs <= lifetimeMs[1] + pollIntervalMs) throw new Error('--ttl must outlast the longest lifetime and a poll interval');
  const setups = values.setups.split(',').map((s) => s.trim()) as SetupName[];
  for (const setup of setups) if (!(setup in FAULTS)) throw new Error(`unknown setup ${setup} (memory, redis)`);
  const isFull = !values.smoke && minutes === FULL.minutes && tasks === FULL.tasks && values['poll-interval'] === undefined && values.lifetime === undefined && values.ttl === undefined && setups.length === 2;
  const mode: Mode = values.smoke ? 'smoke' : isFull ? 'full' : 'short';
  const loadMs = Math.round(minutes * 60_000);
  return {
    mode,
    command: `npm run soak${argv.length ? ` -- ${argv.join(' ')}` : ''}`,
    loadMs,
    tasks,
    providedShare: 0.1,
    failShare: 0.05,
    cancelShare: 0.02,
    pollIntervalMs,
    lifetimeMs,
    ttlMs,
    // Each principal stays well inside the default per-principal limits (100 live, 120 creations
    // a minute): at most 25 tasks, and about 60 creations a minute.
    tasksPerPrincipal: Math.max(2, Math.min(25, Math.floor(((lifetimeMs[0] + lifetimeMs[1]) / 2 + pollIntervalMs) / 1000))),
    // The fill is a tenth of the run, at most a minute: 10,000 creations at ~170 a second.
    fillMs: Math.min(60_000, Math.round(loadMs / 10)),
    sampleEveryMs: Math.max(1000, Math.min(10_000, Math.round(loadMs / 60))),
    redisDownMs: values.smoke ? 1500 : 5000,
    replicaDownMs: values.smoke ? 1500 : 5000,
    setups,
    parallel: values.smoke,
    faults: FAULTS,
    out: values.out ?? join(REPO_ROOT, 'bench', 'results'),
    stem: mode === 'full' ? 'soak' : `soak-${mode}`,
    writeDocs: mode === 'full' && !values['no-docs'],
    gateway: values.gateway === 'source' || (values.smoke && values.gateway !== 'dist') ? 'source' : 'dist',
    buildDir: values.smoke ? 'dist/soak-smoke' : 'dist/soak',
    ...(values.smoke ? { commandTimeout: '5s' } : {}),
  };
}
