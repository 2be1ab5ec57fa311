import { randomUUID } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { InMemoryTaskMessageQueue, InMemoryTaskStore } from '@modelcontextprotocol/sdk/experimental/tasks';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';
import { SessionEventStore } from './event-store.js';
import { registerExampleTools } from './tools.js';
import { registerTaskTools } from './task-tools.js';
import { registerConformanceFixtures } from './conformance-fixtures.js';
import { listenAt } from '../http-serving.js';

export interface ExampleServerOptions {
  host?: string;
  port?: number;
  /** serverInfo.name; lets a test tell instances apart. */
  name?: string;
  enableJsonResponse?: boolean;
  /** Keep every session's events so `GET` with `Last-Event-ID` can resume a stream. */
  eventStore?: boolean;
  /**
   * false: a server with no tasks at all (no capability, no task tools), as most deployed
   * servers are: what the gateway's own tasks (upstreams.*.providedTasks) are for.
   */
  tasks?: boolean;
}

export interface RecordedRequest {
  /** HTTP method. */
  method: string;
  /** JSON-RPC method of a POSTed request or notification (absent for responses). */
  rpcMethod?: string;
  sessionId?: string;
  headers: IncomingHttpHeaders;
  /** The request target as received (path and query). */
  url: string;
  /** The parsed POST body (the raw text when it is not JSON). */
  body?: unknown;
}

export interface ExampleServerStats {
  /** Every HTTP request the server received, in arrival order. */
  readonly requests: RecordedRequest[];
  /** Requests whose client went away before the response finished. */
  aborted: number;
  /** Tool calls cancelled by their client (notifications/cancelled) while they worked. */
  cancelled: number;
  reset(): void;
}

export interface ExampleServer {
  /** e.g. http://127.0.0.1:PORT/mcp */
  url: string;
  port: number;
  stats: ExampleServerStats;
  close(): Promise<void>;
}

interface Session {
  transport: StreamableHTTPServerTransport;
  mcp: McpServer;
}

const MCP_PATH = '/mcp';
const LOOPBACK_HOSTNAMES = new Set(['localhost', '127.0.0.1', '[::1]']);

/**
 * Starts a stateful Streamable HTTP MCP server (SDK 1.x) with the example tools, the task tools
 * and the conformance fixtures. One McpServer and transport per session, as the SDK requires;
 * one task store for the whole server, which binds each task to the session that created it.
 */
export async function startExampleServer(opts: ExampleServerOptions = {}): Promise<ExampleServer> {
  const host = opts.host ?? '127.0.0.1';
  const name = opts.name ?? 'taskgate-example';
  const sessions = new Map<string, Session>();
  const taskStore = new InMemoryTaskStore();
  const taskMessageQueue = new InMemoryTaskMessageQueue();
  const shutdown = new AbortController();
  const requests: RecordedRequest[] = [];
  const stats: ExampleServerStats = {
    requests,
    aborted: 0,
    cancelled: 0,
    reset() {
      requests.length = 0;
      stats.aborted = 0;
      stats.cancelled = 0;
    },
  };
  const withTasks = opts.tasks ?? true;

  const newSession = async (): Promise<Session> => {
    const mcp = new McpServer(
      { name, version: '1.0.0' },
      withTasks
        ? { capabilities: { logging: {}, tasks: { list: {}, cancel: {}, requests: { tools: { call: {} } } } }, taskStore, taskMessageQueue }
        : { capabilities: { logging: {} } },
    );
    registerExampleTools(mcp, { onCancelled: () => (stats.cancelled += 1) });
    if (withTasks) registerTaskTools(mcp, shutdown.signal);
    registerConformanceFixtures(mcp);
    const transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      enableJsonResponse: opts.enableJsonResponse ?? false,
      eventStore: opts.eventStore ? new SessionEventStore() : undefined,
      retryInterval: opts.eventStore ? 500 : undefined,
      onsessioninitialized: (sessionId) => {
        sessions.set(sessionId, session);
      },
    });
    const session: Session = { transport, mcp };
    transport.onclose = () => {
      if (transport.sessionId !== undefined) sessions.delete(transport.sessionId);
    };
    await mcp.connect(transport);
    return session;
  };

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    res.on('close', () => {
      if (!res.writableFinished) stats.aborted += 1;
    });
    const sessionId = headerValue(req.headers['mcp-session-id']);
    const record: RecordedRequest = { method: req.method ?? '', sessionId, headers: req.headers, url: req.url ?? '' };
    requests.push(record);

    if (new URL(req.url ?? '/', 'http://placeholder').pathname !== MCP_PATH) {
      return sendJsonError(res, 404, -32000, 'Not found');
    }
    // Loopback servers are what DNS rebinding targets, so they check Host and Origin themselves.
    if (isLoopback(host) && !hasLoopbackHostAndOrigin(req)) {
      return sendJsonError(res, 403, -32000, 'Forbidden: Host or Origin is not a loopback name');
    }

    let body: unknown;
    if (req.method === 'POST') {
      const raw = await readBody(req);
      try {
        body = JSON.parse(raw);
      } catch {
        record.body = raw;
        return sendJsonError(res, 400, -32700, 'Parse error');
      }
      record.body = body;
      record.rpcMethod = rpcMethodOf(body);
    }

    if (sessionId !== undefined) {
      const session = sessions.get(sessionId);
      if (!session) return sendJsonError(res, 404, -32001, 'Session not found');
      return session.transport.handleRequest(req, res, body);
    }
    if (req.method === 'POST' && isInitializeRequest(body)) {
      const session = await newSession();
      await session.transport.handleRequest(req, res, body);
      // A rejected initialize never gets a session id: nothing will route to it again.
      if (session.transport.sessionId === undefined) await session.mcp.close();
      return;
    }
    if (req.method === 'POST' || req.method === 'GET' || req.method === 'DELETE') {
      return sendJsonError(res, 400, -32000, 'Bad Request: Mcp-Session-Id header is required');
    }
    res.setHeader('Allow', 'GET, POST, DELETE');
    return sendJsonError(res, 405, -32000, 'Method not allowed');
  };

  const http = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      if (!res.headersSent) sendJsonError(res, 500, -32603, `Internal error: ${String(error)}`);
      else res.destroy();
    });
  });
  const { port, url } = await listenAt(http, host, opts.port ?? 0, MCP_PATH);

  return {
    url,
    port,
    stats,
    async close() {
      shutdown.abort();
      await Promise.allSettled([...sessions.values()].map((s) => s.mcp.close()));
      sessions.clear();
      taskStore.cleanup();
      // Open SSE responses would keep close() waiting forever.
      http.closeAllConnections();
      await new Promise<void>((resolve) => http.close(() => resolve()));
    },
  };
}

function headerValue(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

function rpcMethodOf(body: unknown): string | undefined {
  const first: unknown = Array.isArray(body) ? body[0] : body;
  if (typeof first === 'object' && first !== null && 'method' in first && typeof first.method === 'string') {
    return first.method;
  }
  return undefined;
}

function isLoopback(host: string): boolean {
  return host === '127.0.0.1' || host === '::1' || host === 'localhost';
}

function hasLoopbackHostAndOrigin(req: IncomingMessage): boolean {
  const hostname = (value: string): string | undefined => {
    try {
      return new URL(value).hostname;
    } catch {
      return undefined;
    }
  };
  const hostHeader = req.headers.host;
  if (hostHeader === undefined || !LOOPBACK_HOSTNAMES.has(hostname(`http://${hostHeader}`) ?? '')) return false;
  const origin = req.headers.origin;
  return origin === undefined || LOOPBACK_HOSTNAMES.has(hostname(origin) ?? '');
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

function sendJsonError(res: ServerResponse, status: number, code: number, message: string): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ jsonrpc: '2.0', error: { code, message }, id: null }));
}
