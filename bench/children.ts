/**
 * The processes the harness starts: each target, the backend and the load generator run as
 * children, pinned with taskset (the proxy under test on one core, everything else on the
 * other), and are stopped by their own PID only.
 */
import { spawn, spawnSync, type ChildProcess, type StdioOptions } from 'node:child_process';
import { availableParallelism } from 'node:os';
import { fileURLToPath } from 'node:url';
import type { ChildRequest } from './child-channel.js';

export const REPO_ROOT = fileURLToPath(new URL('..', import.meta.url));

export interface Pinning {
  enabled: boolean;
  /** Core of the proxy under test. */
  proxyCpu: string;
  /** Core of the backend, the load generator, redis and the harness itself. */
  loadCpu: string;
  note: string;
}

export function detectPinning(): Pinning {
  const cores = availableParallelism();
  const taskset = spawnSync('taskset', ['--version'], { stdio: 'ignore' }).status === 0;
  if (cores < 2 || !taskset) {
    return { enabled: false, proxyCpu: '', loadCpu: '', note: cores < 2 ? 'one core: nothing pinned' : 'taskset not found: nothing pinned' };
  }
  // The harness itself moves to the load core so that it never competes with the proxy.
  spawnSync('taskset', ['-cp', '1', String(process.pid)], { stdio: 'ignore' });
  return { enabled: true, proxyCpu: '0', loadCpu: '1', note: 'proxy on cpu 0; backend, load generator, redis and harness on cpu 1' };
}

/** Spawns `command` on `cpu` (taskset execs it, so the PID is the command's own). */
export function spawnPinned(pinning: Pinning, cpu: string, command: string, args: string[], stdio: StdioOptions, env?: NodeJS.ProcessEnv): ChildProcess {
  const pinned = pinning.enabled && cpu !== '';
  return spawn(pinned ? 'taskset' : command, pinned ? ['-c', cpu, command, ...args] : args, {
    cwd: REPO_ROOT,
    stdio,
    env: { ...process.env, ...env },
  });
}

export interface NodeChild {
  readonly pid: number;
  readonly url: string;
  /** Everything the child announced when it became ready. */
  readonly details: Record<string, unknown>;
  ask<T>(type: ChildRequest['type'], extra?: Partial<ChildRequest>): Promise<T>;
  /** The last 4,000 characters the child wrote to stderr (why it failed, when it did). */
  stderrTail(): string;
  stop(): Promise<void>;
}

export interface NodeChildOptions {
  cpu: string;
  env?: NodeJS.ProcessEnv;
  /** Node flags before the script (--expose-gc, --cpu-prof …). */
  execArgv?: string[];
  /** A command the child runs under, before node (valgrind and its options: bench/floor.ts). */
  wrapper?: string[];
  readyTimeoutMs?: number;
}

/** Starts an entry of bench/ (TypeScript under tsx, or a compiled .js as it is) and waits for its `ready` message. */
export async function startNodeChild(pinning: Pinning, script: string, options: NodeChildOptions): Promise<NodeChild> {
  // A compiled entry (bench/floor.ts compiles its children) runs without tsx's loader.
  const loader = script.endsWith('.js') ? [] : ['--import', 'tsx'];
  const args = [...(options.execArgv ?? []), ...loader, fileURLToPath(new URL(script, import.meta.url))];
  const [command, ...wrapperArgs] = options.wrapper ?? [process.execPath];
  const child = spawnPinned(pinning, options.cpu, command!, options.wrapper ? [...wrapperArgs, process.execPath, ...args] : args, ['ignore', 'ignore', 'pipe', 'ipc'], options.env);
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr = (stderr + chunk.toString('utf8')).slice(-4000);
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const pending = new Map<number, (body: unknown) => void>();
  let seq = 0;
  let details: Record<string, unknown> = {};

  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${script} not ready in time\n${stderr}`)), options.readyTimeoutMs ?? 30_000);
    child.on('message', (message: { type?: string; seq?: number; body?: unknown }) => {
      if (message.type === 'ready') {
        clearTimeout(timer);
        details = message as Record<string, unknown>;
        resolve();
      } else if (message.type === 'reply' && message.seq !== undefined) {
        pending.get(message.seq)?.(message.body);
        pending.delete(message.seq);
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`${script} exited (${code}) before it was ready\n${stderr}`));
    });
  });

  const ask = <T>(type: ChildRequest['type'], extra: Partial<ChildRequest> = {}): Promise<T> =>
    new Promise<T>((resolve, reject) => {
      const id = ++seq;
      const timer = setTimeout(() => reject(new Error(`${script}: no answer to ${type}`)), 15_000);
      pending.set(id, (body) => {
        clearTimeout(timer);
        resolve(body as T);
      });
      child.send({ ...extra, seq: id, type } satisfies ChildRequest);
    });

  return {
    pid: child.pid!,
    url: String(details.url),
    details,
    ask,
    stderrTail: () => stderr,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      await Promise.race([ask('stop').catch(() => undefined), delay(5000)]);
      await Promise.race([exited, delay(5000)]);
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGKILL');
        await exited;
      }
    },
  };
}

/** Runs a command to completion, keeping its stdout; used for wrk and the Node load generator. */
export function runToEnd(child: ChildProcess): Promise<{ code: number | null; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
  child.stderr?.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString('utf8')).slice(-4000)));
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, stdout, stderr }));
  });
}

export function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
