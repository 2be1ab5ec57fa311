/**
 * nginx as the plain reverse proxy to compare with: Debian's nginx-light, one worker,
 * keep-alive to the backend, response buffering off (MCP event streams must not be held
 * back). Installed with apt-get when missing and the harness runs as root; otherwise skipped.
 */
import { spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { connect, createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { delay, spawnPinned, type Pinning } from './children.js';
import { childPids } from './machine.js';

export function hasCommand(name: string): boolean {
  return spawnSync('sh', ['-c', `command -v ${name}`], { stdio: 'ignore' }).status === 0;
}

/** Installs a Debian package when allowed; returns why it could not when it is still missing. */
export function ensureDebianTool(command: string, pkg: string, allowInstall: boolean): string | undefined {
  if (hasCommand(command)) return undefined;
  if (!allowInstall) return `${command} not found (installing is off)`;
  if (process.getuid?.() !== 0) return `${command} not found and not root: apt-get install -y ${pkg} to add it`;
  console.error(`bench: installing ${pkg} with apt-get …`);
  const install = spawnSync('apt-get', ['install', '-y', '-qq', pkg], { stdio: ['ignore', 'ignore', 'inherit'], timeout: 180_000 });
  if (install.status !== 0) {
    // The package lists may be missing on a fresh image: refresh once and try again.
    spawnSync('apt-get', ['update', '-qq'], { stdio: 'ignore', timeout: 120_000 });
    spawnSync('apt-get', ['install', '-y', '-qq', pkg], { stdio: 'ignore', timeout: 180_000 });
  }
  return hasCommand(command) ? undefined : `apt-get install ${pkg} failed`;
}

export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

export async function waitForPort(port: number, timeoutMs = 10_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const ok = await new Promise<boolean>((resolve) => {
      const socket = connect(port, '127.0.0.1', () => {
        socket.destroy();
        resolve(true);
      });
      socket.once('error', () => resolve(false));
    });
    if (ok) return;
    if (Date.now() > until) throw new Error(`nothing listening on 127.0.0.1:${port}`);
    await delay(50);
  }
}

export interface NginxProcess {
  readonly url: string;
  /** Master and worker: both are counted as proxy CPU. */
  pids(): number[];
  stop(): Promise<void>;
}

export async function startNginx(pinning: Pinning, backendUrl: string): Promise<NginxProcess> {
  const dir = mkdtempSync(join(tmpdir(), 'taskgate-bench-nginx-'));
  const port = await freePort();
  const backend = new URL(backendUrl);
  const temp = ['client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi'].map((name) => `  ${name}_temp_path ${dir}/${name};`).join('\n');
  writeFileSync(
    join(dir, 'nginx.conf'),
    `daemon off;
master_process on;
worker_processes 1;
pid ${dir}/nginx.pid;
error_log ${dir}/error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
${temp}
  upstream backend { server ${backend.host}; keepalive 128; }
  server {
    listen 127.0.0.1:${port};
    location / {
      proxy_pass http://backend;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_buffering off;
    }
  }
}
`,
  );
  const child: ChildProcess = spawnPinned(pinning, pinning.proxyCpu, 'nginx', ['-e', `${dir}/error.log`, '-p', dir, '-c', join(dir, 'nginx.conf')], ['ignore', 'ignore', 'pipe']);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  await Promise.race([waitForPort(port), exited.then(() => Promise.reject(new Error('nginx exited at start')))]);
  const master = child.pid!;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    pids: () => [master, ...childPids(master)],
    async stop() {
      if (child.exitCode === null) {
        const workers = childPids(master);
        child.kill('SIGQUIT'); // nginx's graceful shutdown, sent to our master only
        await Promise.race([exited, delay(5000)]);
        if (child.exitCode === null && child.signalCode === null) {
          child.kill('SIGKILL');
          // Workers of a killed master are ours too; they are stopped by their PIDs.
          for (const pid of workers) {
            try {
              process.kill(pid, 'SIGKILL');
            } catch {
              // already gone
            }
          }
        }
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
