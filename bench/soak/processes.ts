/**
 * The processes of a soak stack, each started and stopped by its own PID: a private
 * redis-server with an append-only file (so a restart loses nothing, as a production Redis
 * with persistence), the backend instances (bench/soak/backend.ts) and the gateway replicas,
 * `node dist/src/main.js --config FILE` exactly as an operator starts taskgate, on fixed ports so
 * that a replica killed and started again comes back where its clients look for it.
 *
 * Every process started is registered in a ProcessList; `killAll` ends whatever is still
 * running (on a failure, a signal, or the way out), and the list of PIDs goes into the report
 * so that the CI test can check nothing outlived the run.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { delay, REPO_ROOT, startNodeChild, type NodeChild, type Pinning } from '../children.js';
import { freePort, waitForPort } from '../nginx.js';

/** The machine's shared Redis: never started, stopped or written by the soak. */
const SHARED_REDIS_PORT = 6379;
const NO_PINNING: Pinning = { enabled: false, proxyCpu: '', loadCpu: '', note: 'not pinned' };

export class ProcessList {
  readonly pids: { pid: number; what: string }[] = [];
  private readonly live = new Map<number, ChildProcess | NodeChild>();

  add(pid: number, what: string, handle: ChildProcess | NodeChild): void {
    this.pids.push({ pid, what });
    this.live.set(pid, handle);
  }

  forget(pid: number): void {
    this.live.delete(pid);
  }

  /** SIGKILL to every process still registered; synchronous, so it works on the way out too. */
  killAll(): void {
    for (const pid of this.live.keys()) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
    this.live.clear();
  }
}

async function exitOf(child: ChildProcess, ms: number): Promise<boolean> {
  if (child.exitCode !== null || child.signalCode !== null) return true;
  return Promise.race([once(child, 'exit').then(() => true), delay(ms).then(() => false)]);
}

export class RedisProcess {
  readonly url: string;
  private child: ChildProcess | undefined;
  readonly restarts: number[] = [];

  private constructor(
    readonly port: number,
    private readonly dir: string,
    private readonly processes: ProcessList,
  ) {
    this.url = `redis://127.0.0.1:${port}`;
  }

  static async start(processes: ProcessList): Promise<RedisProcess> {
    const port = await freePort();
    if (port === SHARED_REDIS_PORT) throw new Error('refusing the shared Redis port');
    const redis = new RedisProcess(port, mkdtempSync(join(tmpdir(), 'taskgate-soak-redis-')), processes);
    await redis.spawn();
    return redis;
  }

  get pid(): number | undefined {
    return this.child?.pid;
  }

  private async spawn(): Promise<void> {
    // appendfsync everysec is Redis's default for AOF; a SIGTERM writes and syncs it before exit.
    const args = ['--port', String(this.port), '--bind', '127.0.0.1', '--dir', this.dir, '--appendonly', 'yes', '--appendfsync', 'everysec', '--save', '', '--maxmemory-policy', 'noeviction', '--daemonize', 'no'];
    const child = spawn('redis-server', args, { stdio: 'ignore', cwd: this.dir });
    this.child = child;
    this.processes.add(child.pid!, 'redis-server', child);
    child.once('exit', () => this.processes.forget(child.pid!));
    await waitForPort(this.port, 10_000);
  }

  /** A restart as `systemctl restart` makes it: SIGTERM (the AOF written), then started on the same port and directory. */
  async stopForRestart(): Promise<void> {
    const child = this.child!;
    child.kill('SIGTERM');
    if (!(await exitOf(child, 10_000))) throw new Error('redis-server did not stop on SIGTERM within 10 s');
  }

  async startAgain(): Promise<void> {
    this.restarts.push(Date.now());
    await this.spawn();
  }

  async stop(): Promise<void> {
    const child = this.child;
    if (child && !(await exitOf(child, 0))) {
      child.kill('SIGKILL');
      await exitOf(child, 5000);
    }
    rmSync(this.dir, { recursive: true, force: true });
  }
}

export interface Backend {
  readonly name: string;
  readonly url: string;
  readonly child: NodeChild;
  killed?: number;
}

export async function startBackend(processes: ProcessList, name: string, env: Record<string, string>): Promise<Backend> {
  const child = await startNodeChild(NO_PINNING, './soak/backend.ts', { cpu: '', env: { ...env, SOAK_INSTANCE: name } });
  processes.add(child.pid, `backend ${name}`, child);
  return { name, url: child.url, child };
}

/** SIGKILL: the instance is lost, as a node that vanished; it is never started again. */
export function killBackend(processes: ProcessList, backend: Backend): void {
  process.kill(backend.child.pid, 'SIGKILL');
  processes.forget(backend.child.pid);
  backend.killed = Date.now();
}

const WARNING_LINES = 500;

/** Log lines a replica wrote at warn level or above, counted by message (with one example each). */
export interface LoggedWarnings {
  [msg: string]: { level: number; count: number; first: string };
}

/**
 * One taskgate replica: `node <build>/src/main.js --config <file>` (or src/main.ts under tsx),
 * restartable on its ports.
 */
export class Replica {
  readonly url: string;
  readonly adminUrl: string;
  /** Start times of each incarnation (epoch ms); the killed ones have a `killedAt`. */
  readonly incarnations: { startedAt: number; pid: number; killedAt?: number }[] = [];
  readonly warnings: LoggedWarnings = {};
  /** The warning lines themselves (the first WARNING_LINES), and every error line (up to as many), for the report's log file. */
  readonly warningLines: string[] = [];
  /**
   * When this replica said its store was away ("store unreachable …" / "store connection
   * lost …") until it said "store reachable again", and why (the error it logged).
   */
  readonly storeOutages: { from: number; to?: number; why: string }[] = [];
  /** Exits the soak did not cause (a crash): code or signal, the end of stderr, and when it was started again. */
  readonly crashes: { pid: number; at: number; code: number | null; signal: string | null; stderr: string; restartedAt?: number }[] = [];
  /** Called on a crash: the soak starts the replica again, as a supervisor (Kubernetes) would. */
  onCrash: (() => void) | undefined;
  private ending = false;
  private child: ChildProcess | undefined;
  private stderr = '';

  /** Starts the replica again after a crash; the crash record notes when it was back. */
  async restartAfterCrash(): Promise<void> {
    await this.start();
    const crash = this.crashes.at(-1);
    if (crash) crash.restartedAt = Date.now();
  }

  constructor(
    readonly name: string,
    private readonly ports: { port: number; adminPort: number },
    private readonly policyFile: string,
    /** Node's arguments before `--config`: the compiled main.js, or tsx and src/main.ts. */
    private readonly entry: string[],
    private readonly processes: ProcessList,
  ) {
    this.url = `http://127.0.0.1:${ports.port}`;
    this.adminUrl = `http://127.0.0.1:${ports.adminPort}`;
  }

  static async ports(): Promise<{ port: number; adminPort: number }> {
    return { port: await freePort(), adminPort: await freePort() };
  }

  get pid(): number | undefined {
    return this.child?.pid;
  }

  async start(): Promise<void> {
    const child = spawn(process.execPath, [...this.entry, '--config', this.policyFile], { cwd: REPO_ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    this.child = child;
    this.processes.add(child.pid!, `taskgate ${this.name}`, child);
    this.incarnations.push({ startedAt: Date.now(), pid: child.pid! });
    this.ending = false;
    this.stderr = '';
    // A new process knows nothing of the last one's outage.
    const open = this.storeOutages.at(-1);
    if (open && open.to === undefined) open.to = Date.now();
    child.once('exit', (code, signal) => {
      this.processes.forget(child.pid!);
      if (this.ending) return;
      this.crashes.push({ pid: child.pid!, at: Date.now(), code, signal, stderr: this.stderr.slice(-2000) });
      this.onCrash?.();
    });
    child.stderr!.on('data', (chunk: Buffer) => (this.stderr = (this.stderr + chunk.toString('utf8')).slice(-4000)));
    createInterface({ input: child.stdout! }).on('line', (line) => this.readLine(line));
    await this.waitReady(30_000);
  }

  /** Only warnings and worse are kept: the info line of every request is read and dropped. */
  private readLine(line: string): void {
    const info = line.startsWith('{"level":30') || line.startsWith('{"level":20');
    if (info && !line.includes('"msg":"store reachable again"')) return;
    let entry: { level?: number; msg?: string; time?: string; err?: { message?: string } };
    try {
      entry = JSON.parse(line) as typeof entry;
    } catch {
      return;
    }
    this.noteStore(entry);
    if (typeof entry.level !== 'number' || entry.level < 40) return;
    const kept = this.warningLines.length < (entry.level >= 50 ? 2 * WARNING_LINES : WARNING_LINES);
    if (kept) this.warningLines.push(line.length > 600 ? `${line.slice(0, 600)}…` : line);
    const msg = String(entry.msg ?? '');
    const seen = (this.warnings[msg] ??= { level: entry.level, count: 0, first: line.slice(0, 600) });
    seen.count++;
  }

  private noteStore(entry: { msg?: string; time?: string; err?: { message?: string } }): void {
    const at = entry.time ? Date.parse(entry.time) : Date.now();
    const open = this.storeOutages.at(-1)?.to === undefined ? this.storeOutages.at(-1) : undefined;
    if (entry.msg === 'store reachable again') {
      if (open) open.to = at;
    } else if (!open && /^store (unreachable|connection lost);/.test(entry.msg ?? '')) {
      this.storeOutages.push({ from: at, why: entry.err?.message ?? entry.msg! });
    }
  }

  async waitReady(ms: number): Promise<void> {
    const until = Date.now() + ms;
    for (;;) {
      if (this.child && (this.child.exitCode !== null || this.child.signalCode !== null)) throw new Error(`taskgate ${this.name} exited before it was ready\n${this.stderr}`);
      const res = await fetch(`${this.adminUrl}/readyz`).catch(() => undefined);
      await res?.text();
      if (res?.status === 200) return;
      if (Date.now() > until) throw new Error(`taskgate ${this.name} not ready within ${ms} ms\n${this.stderr}`);
      await delay(100);
    }
  }

  async kill(): Promise<void> {
    const child = this.child!;
    this.ending = true;
    child.kill('SIGKILL');
    await exitOf(child, 5000);
    this.incarnations.at(-1)!.killedAt = Date.now();
  }

  /** SIGTERM (the gateway drains), SIGKILL if it has not exited 15 s later. */
  async stop(): Promise<void> {
    const child = this.child;
    if (!child || (await exitOf(child, 0))) return;
    this.ending = true;
    child.kill('SIGTERM');
    if (!(await exitOf(child, 15_000))) {
      child.kill('SIGKILL');
      await exitOf(child, 5000);
    }
  }
}

/** A temp directory for the policy files, removed by the returned function. */
export function policyDir(): { dir: string; write(name: string, policy: unknown): string; remove(): void } {
  const dir = mkdtempSync(join(tmpdir(), 'taskgate-soak-'));
  return {
    dir,
    write(name, policy) {
      const file = join(dir, name);
      // JSON is YAML: the policy loader reads it as it is.
      writeFileSync(file, JSON.stringify(policy, null, 2));
      return file;
    },
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}
