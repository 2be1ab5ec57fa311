/**
 * The HTTP server clients connect to, with the listener's connection limits (limits.*):
 * header size, the time to send headers (slowloris), the keep-alive idle time and the
 * connection cap. These are Node's own server settings; the gateway only chooses them.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { LimitsConfig } from '../config/index.js';

/**
 * Node checks header and request deadlines on a timer, every 30 s by default, so a 10 s
 * headersTimeout could hold a connection 40 s. A quarter of the timeout, between 100 ms and
 * 1 s, keeps the overshoot small for a scan of the open connections that costs microseconds.
 */
function checkingIntervalFor(headersTimeoutMs: number): number {
  return Math.min(1000, Math.max(100, Math.floor(headersTimeoutMs / 4)));
}

/** A warning about refused connections at most this often, with the count since the last. */
const DROP_WARNING_INTERVAL_MS = 10_000;

/**
 * Called for each connection the server closes unanswered because `maxConnections` were open
 * (Node's 'drop' event), and with a warning's worth (the count since the last) at most every
 * DROP_WARNING_INTERVAL_MS, so a flood of refused connections costs a counter, not a log line each.
 */
export interface DroppedConnections {
  counted(): void;
  warn(dropped: number, maxConnections: number): void;
}

export function createClientServer(limits: LimitsConfig, handler: (req: IncomingMessage, res: ServerResponse) => void, dropped?: DroppedConnections): Server {
  const server = createServer(
    {
      maxHeaderSize: limits.maxHeaderBytes,
      headersTimeout: limits.headersTimeout,
      connectionsCheckingInterval: checkingIntervalFor(limits.headersTimeout),
    },
    handler,
  );
  server.keepAliveTimeout = limits.keepAliveTimeout;
  if (limits.maxConnections > 0) server.maxConnections = limits.maxConnections;
  if (dropped) watchDrops(server, limits.maxConnections, dropped);
  return server;
}

function watchDrops(server: Server, maxConnections: number, dropped: DroppedConnections): void {
  let since = 0;
  let timer: NodeJS.Timeout | undefined;
  server.on('drop', () => {
    dropped.counted();
    since++;
    if (timer) return;
    // The first drop warns at once; later ones are summed into one warning per interval.
    dropped.warn(since, maxConnections);
    since = 0;
    timer = setTimeout(() => {
      timer = undefined;
      if (since > 0) dropped.warn(since, maxConnections);
      since = 0;
    }, DROP_WARNING_INTERVAL_MS).unref();
  });
  server.once('close', () => clearTimeout(timer));
}
