/**
 * The gateway as operators run it: `taskgate --config FILE` in its own process, which a test
 * can SIGTERM or SIGKILL. Resolves once it logs that it listens.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { createInterface } from 'node:readline';

const MAIN = new URL('../../src/main.ts', import.meta.url).pathname;

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
  const entry = await listening;
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
