/**
 * The gateway as operators run it: `taskgate --config FILE` in its own process, which a test
 * can SIGTERM or SIGKILL. Resolves once it logs that it listens.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { createInterface } from 'node:readline';

const MAIN = new URL('../../../src/main.ts', import.meta.url).pathname;

export interface GatewayProcess {
  readonly child: ChildProcess;
  /** Base URL of the client-facing listener (no path). */
  readonly url: string;
  readonly adminUrl: string;
  /** Every JSON log line so far. */
  readonly lines: Array<Record<string, unknown>>;
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

export function runTaskgate(args: string[], env: NodeJS.ProcessEnv = {}): ChildProcess {
  return spawn(process.execPath, ['--import', 'tsx', MAIN, ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
}

/** How long a gateway may take to say it listens before the test gives up on it. */
const START_TIMEOUT_MS = 20_000;

export async function startGatewayProcess(policyFile: string, env: NodeJS.ProcessEnv = {}): Promise<GatewayProcess> {
  const child = runTaskgate(['--config', policyFile], env);
  const lines: Array<Record<string, unknown>> = [];
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = once(child, 'exit');
  const listening = new Promise<Record<string, unknown>>((resolve, reject) => {
    createInterface({ input: child.stdout! }).on('line', (line) => {
      let entry: Record<string, unknown>;
      try {
        entry = JSON.parse(line) as Record<string, unknown>;
      } catch {
        return; // the audit trail and the general log are both JSON; anything else is noise
      }
      lines.push(entry);
      if (entry.msg === 'taskgate listening') resolve(entry);
    });
    void exited.then(() => reject(new Error(`taskgate exited before listening:\n${stderr}`)));
  });
  // A gateway that never says it listens (a policy that logs above info, a hang) must not
  // outlive the test that started it: it is killed here, since no caller holds it yet.
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`taskgate did not log "taskgate listening" within ${START_TIMEOUT_MS} ms (is logging.level above info?)\n${stderr}`));
    }, START_TIMEOUT_MS);
  });
  const entry = await Promise.race([listening, timeout]).finally(() => clearTimeout(timer));
  return {
    child,
    url: String(entry.url),
    adminUrl: String(entry.adminUrl),
    lines,
    async stop(signal: NodeJS.Signals = 'SIGTERM') {
      if (child.exitCode !== null || child.signalCode !== null) return child.exitCode;
      child.kill(signal);
      const [code] = (await exited) as [number | null];
      return code;
    },
  };
}
