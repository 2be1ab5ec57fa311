/**
 * One setup of the soak from start to end: its processes (Redis when it has one, backend
 * instances A and B, the gateway replicas), the client's fill and load, the faults at their
 * times, the final check, and everything stopped again, on failure too.
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { delay } from '../children.js';
import type { BenchIssuer } from '../jwks.js';
import { policyProblem } from '../targets.js';
import { SoakClient } from './client.js';
import { FaultLog, runFaults } from './faults.js';
import { finalCheck } from './final-check.js';
import { policyDir, RedisProcess, Replica, startBackend, type Backend, type ProcessList } from './processes.js';
import { Recorder } from './recorder.js';
import { buildSetupReport, type SetupReport } from './report.js';
import { Sampler } from './sampler.js';
import { AFTER_FAULTS, commandTimeoutMs, type SetupName, type SoakSettings } from './settings.js';

export const BACKEND_NAMES = ['A', 'B'];
/** The provided tasks' lease: the default in full runs, shorter in the smoke run so a kill resolves within it. */
export function leaseMs(settings: SoakSettings): number {
  return settings.mode === 'smoke' ? 6000 : 15_000;
}

const ms = (value: number) => `${Math.round(value)}ms`;

/**
 * The policy every replica of a setup runs: two routes, `/mcp` to the task server and `/plain`
 * to the server without tasks whose `slow` tool the gateway runs as a task, both over
 * instances A and B. Everything not named here is the default an operator gets.
 */
export function soakPolicy(settings: SoakSettings, ports: { port: number; adminPort: number }, issuer: BenchIssuer, backends: string[], store: Record<string, unknown>): Record<string, unknown> {
  return {
    listen: { host: '127.0.0.1', port: ports.port },
    admin: { host: '127.0.0.1', port: ports.adminPort },
    publicUrl: 'http://127.0.0.1',
    auth: { mode: 'jwt', issuers: [{ issuer: issuer.issuer, jwksUri: issuer.jwksUri }] },
    // The backend serves both task generations itself: nothing to bridge, no probes needed.
    upstreams: {
      jobs: { instances: backends, bridge: 'off' },
      // One socket per held call: room for every provided task on one instance once the other is lost.
      plain: { instances: backends, bridge: 'off', connections: 2048, providedTasks: { tools: ['slow'], timeout: '10m' } },
    },
    routes: [{ path: '/mcp', upstream: 'jobs' }, { path: '/plain', upstream: 'plain' }],
    tasks: {
      ttl: { default: ms(settings.ttlMs), max: '1h' },
      // A provided task's interval: the same as the backend's tasks.
      poll: { default: ms(settings.pollIntervalMs) },
      provided: { maxRunning: 4000, lease: ms(leaseMs(settings)) },
    },
    store: settings.commandTimeout && store.type === 'redis' ? { ...store, commandTimeout: settings.commandTimeout } : store,
    logging: { level: 'info' },
  };
}

export async function runSetup(setup: SetupName, settings: SoakSettings, entry: string[], issuer: BenchIssuer, processes: ProcessList, log: (line: string) => void): Promise<SetupReport> {
  const files = policyDir();
  let redis: RedisProcess | undefined;
  const backends: Backend[] = [];
  const replicas: Replica[] = [];
  let client: SoakClient | undefined;
  let sampler: Sampler | undefined;
  try {
    if (setup === 'redis') redis = await RedisProcess.start(processes);
    const env = { SOAK_POLL_MS: String(settings.pollIntervalMs), SOAK_TTL_MS: String(settings.ttlMs) };
    backends.push(...(await Promise.all(BACKEND_NAMES.map((name) => startBackend(processes, name, env)))));
    const store = redis ? { type: 'redis', url: redis.url, snapshotKeys: [{ id: 'soak', key: randomBytes(32).toString('base64') }] } : { type: 'memory' };
    for (const name of setup === 'redis' ? ['R1', 'R2'] : ['R1']) {
      const ports = await Replica.ports();
      const policy = soakPolicy(settings, ports, issuer, backends.map((b) => b.url), store);
      const problem = policyProblem(JSON.stringify(policy));
      if (problem) throw new Error(`the soak's policy does not validate: ${problem}`);
      replicas.push(new Replica(name, ports, files.write(`${setup}-${name}.yaml`, policy), entry, processes));
    }
    await Promise.all(replicas.map((r) => r.start()));
    // A replica that crashes is started again a second later, as its supervisor would; the
    // crash is reported (with its stderr) and fails the run's invariants.
    for (const replica of replicas) {
      replica.onCrash = () => {
        log(`${setup}: taskgate ${replica.name} crashed; starting it again`);
        void delay(1000)
          .then(() => (replica.onCrash ? replica.restartAfterCrash() : undefined))
          .catch((error: unknown) => log(`${setup}: ${replica.name} did not start again: ${(error as Error).message}`));
      };
    }
    log(`${setup}: ${replicas.length} replica(s), backends ${backends.map((b) => b.name).join(' and ')}${redis ? `, redis-server on port ${redis.port} (appendonly)` : ''}`);

    const t0 = Date.now();
    const recorder = new Recorder(t0);
    const faultLog = new FaultLog();
    client = new SoakClient({ setup, settings, replicas: replicas.map((r) => ({ name: r.name, url: r.url, adminUrl: r.adminUrl })), mint: (subject, path) => issuer.mint(subject, path), recorder, faults: faultLog });
    await client.prepare();
    sampler = new Sampler(t0, settings.sampleEveryMs, replicas, redis);
    sampler.start();
    client.start();
    let stopped = false;
    const faultsDone = runFaults(settings.faults[setup], {
      t0, startMs: settings.fillMs, loadMs: settings.loadMs, stack: { redis, replicas, backends, processes }, recorder, log: faultLog,
      leaseMs: leaseMs(settings), commandTimeoutMs: commandTimeoutMs(settings), redisDownMs: settings.redisDownMs, replicaDownMs: settings.replicaDownMs, pollIntervalMs: settings.pollIntervalMs,
    }, () => stopped);
    await delay(settings.fillMs + settings.loadMs);
    const faults = await faultsDone;
    // However late the last fault settled, the load goes on a while after it.
    const settled = Math.max(0, ...faults.map((f) => f.recoveredAt ?? f.injectedAt ?? 0));
    await delay(settled + AFTER_FAULTS * settings.loadMs - Date.now());
    const loadEnd = Date.now();
    stopped = true;
    await client.stop();
    log(`${setup}: load ended after ${Math.round((loadEnd - t0) / 1000)} s, ${recorder.total} requests; checking ${client.tasks.length} handles`);
    const final = await finalCheck(client, faultLog);
    const samples = sampler;
    sampler = undefined;
    await samples.stop();
    const backendStats = await Promise.all(backends.filter((b) => b.killed === undefined).map((b) => fetch(`${b.url}/stats`).then((r) => r.json() as Promise<Record<string, unknown>>).catch(() => ({}))));
    return buildSetupReport({ setup, settings, t0, loadEnd, recorder, client, faults, final, replicas, sampler: samples, backendStats });
  } finally {
    for (const replica of replicas) replica.onCrash = undefined;
    await sampler?.stop().catch(() => undefined);
    await client?.close().catch(() => undefined);
    await Promise.all(replicas.map((r) => r.stop()));
    await Promise.all(backends.map((b) => b.child.stop()));
    await redis?.stop();
    files.remove();
    // The replicas' warnings, line by line (their counts are in the report).
    const lines = replicas.flatMap((r) => r.warningLines.map((line) => `${r.name} ${line}`));
    mkdirSync(settings.out, { recursive: true });
    writeFileSync(join(settings.out, `${settings.stem}-${setup}-warnings.log`), lines.length ? `${lines.join('\n')}\n` : '');
  }
}
