/**
 * The side channel every Node child of the harness (backend, passthrough, taskgate) answers
 * over IPC: its own CPU time and memory, so that the harness reads the figures from inside the
 * process, not from a sampling tool, and a graceful stop, so that `--cpu-prof` gets written.
 */
import type { IncomingMessage, Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ChildRequest {
  seq: number;
  type: 'cpu' | 'memory' | 'counters' | 'hook' | 'stop';
  /** memory: collect garbage first (needs --expose-gc), so heap figures are live data only. */
  gc?: boolean;
  /** hook: which of the child's hooks to run, and its argument (taskgate's: bench/scale-hooks.ts). */
  hook?: string;
  args?: unknown;
}

/** Work a child does for the harness inside its own process (seeding its store, timing a read). */
export type ChildHook = (args: unknown) => Promise<unknown>;

export interface CpuReply {
  userUs: number;
  systemUs: number;
  /** CLOCK_MONOTONIC in µs, the clock of V8's CPU profiles: lets a profile be cut to a load window. */
  monotonicUs: number;
}

export interface MemoryReply {
  rss: number;
  heapUsed: number;
  heapTotal: number;
  external: number;
  arrayBuffers: number;
}

/** A gateway's own counters (its metrics), read where a scenario needs them checked. */
export interface GatewayCounters {
  /** taskgate_tasks_created_total, every label. */
  tasksCreated: number;
  /** taskgate_tasks_forgotten_total{reason="expired"}: tasks the expiry sweep removed. */
  tasksExpired: number;
  /** taskgate_polls_total by outcome: forwarded (on time; for a provided task, answered from the store) and cached (early). */
  pollsForwarded: number;
  pollsCached: number;
  /** taskgate_provided_calls_running: backend calls held for provided tasks (and background calls) now. */
  providedRunning: number;
  /** taskgate_background_calls_total{outcome="detached"}: calls answered with a handle. */
  backgroundDetached: number;
  /** taskgate_background_status_calls_total by answer: running (still running) and ended (the call's outcome). */
  statusRunning: number;
  statusEnded: number;
}

export function announceReady(details: Record<string, unknown>): void {
  process.send?.({ type: 'ready', ...details });
}

/**
 * A bench backend's start: keep-alive connections that outlive the harness's pauses between
 * runs (or, in the soak, between a held call's requests), a loopback port, and the URL (with
 * `details`) announced to the harness.
 */
export function listenAndAnnounce(server: Server, details: Record<string, unknown> = {}): void {
  server.keepAliveTimeout = 120_000;
  server.listen(0, '127.0.0.1', () => {
    const { port } = server.address() as AddressInfo;
    announceReady({ url: `http://127.0.0.1:${port}`, ...details });
  });
}

/** A request's whole body as UTF-8, handed to `then` once it has arrived. */
export function readBody(req: IncomingMessage, then: (body: string) => void): void {
  const chunks: Buffer[] = [];
  req.on('data', (chunk: Buffer) => chunks.push(chunk));
  req.on('end', () => then(Buffer.concat(chunks).toString('utf8')));
}

/**
 * Answers the harness until it says stop; `close` runs before the process exits. `counters`
 * answers `counters` and `hooks` answer `hook` (taskgate only; other children are never asked).
 * A hook that fails answers `{ error }`, which the harness's ask turns back into an error.
 */
export function serveParentRequests(close: () => Promise<void>, counters?: () => Promise<GatewayCounters>, hooks: Record<string, ChildHook> = {}): void {
  process.on('message', (message: ChildRequest) => {
    const reply = (body: unknown): void => {
      process.send?.({ type: 'reply', seq: message.seq, body });
    };
    switch (message.type) {
      case 'cpu': {
        const usage = process.cpuUsage();
        reply({ userUs: usage.user, systemUs: usage.system, monotonicUs: Number(process.hrtime.bigint() / 1000n) } satisfies CpuReply);
        return;
      }
      case 'memory': {
        const gc = (globalThis as { gc?: () => void }).gc;
        if (message.gc && gc) {
          // Twice: the first pass can leave weakly-held and finalizable objects for the next.
          gc();
          gc();
        }
        const m = process.memoryUsage();
        reply({ rss: m.rss, heapUsed: m.heapUsed, heapTotal: m.heapTotal, external: m.external, arrayBuffers: m.arrayBuffers } satisfies MemoryReply);
        return;
      }
      case 'counters':
        void (counters ? counters() : Promise.resolve(undefined)).then(reply);
        return;
      case 'hook': {
        const hook = hooks[message.hook ?? ''];
        const run = hook ? hook(message.args) : Promise.reject(new Error(`no hook ${String(message.hook)} in this child`));
        void run.then(reply, (error: Error) => reply({ error: error.stack ?? String(error) }));
        return;
      }
      case 'stop':
        void close().finally(() => {
          reply({});
          // exit() rather than waiting for the loop to drain: idle keep-alive sockets of the
          // load generator would hold it open. --cpu-prof is still written on exit().
          setTimeout(() => process.exit(0), 20);
        });
        return;
    }
  });
  process.on('disconnect', () => process.exit(0));
}
