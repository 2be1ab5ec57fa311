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

export function createClientServer(limits: LimitsConfig, handler: (req: IncomingMessage, res: ServerResponse) => void): Server {
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
  return server;
}
