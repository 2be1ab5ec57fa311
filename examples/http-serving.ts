/**
 * What both example MCP servers and their command lines need from node:http and the process:
 * listen (port 0 allowed) and say where, and stop cleanly on a signal.
 */
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** Listens on host:port and returns the bound port and the URL of `path` on it. */
export async function listenAt(http: Server, host: string, port: number, path: string): Promise<{ port: number; url: string }> {
  await new Promise<void>((resolve, reject) => {
    http.once('error', reject);
    http.listen(port, host, () => {
      http.off('error', reject);
      resolve();
    });
  });
  const bound = (http.address() as AddressInfo).port;
  const urlHost = host.includes(':') ? `[${host}]` : host;
  return { port: bound, url: `http://${urlHost}:${bound}${path}` };
}

/** Closes `server` on SIGINT or SIGTERM, then exits (1 if closing failed). */
export function closeOnSignals(server: { close(): Promise<void> }): void {
  const stop = (): void => {
    server.close().then(
      () => process.exit(0),
      (error: unknown) => {
        console.error(error);
        process.exit(1);
      },
    );
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}
