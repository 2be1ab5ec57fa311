import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { ReadableStream as NodeReadableStream } from 'node:stream/web';
import {
  createMcpHandler,
  hostHeaderValidationResponse,
  localhostAllowedHostnames,
  localhostAllowedOrigins,
  originValidationResponse,
} from '@modelcontextprotocol/server';
import { conformanceFixtures } from './conformance-fixtures.js';
import { TASKS_EXTENSION, registerTaskHandlers } from './task-handlers.js';
import { TaskListen } from './task-listen.js';
import { TaskRegistry } from './task-registry.js';
import { TaskAwareServer, registerTools } from './tool-dispatch.js';
import { exampleTools } from './tools.js';
import { listenAt } from '../http-serving.js';

export interface ModernTaskServerOptions {
  host?: string;
  port?: number;
  /** serverInfo.name; lets a test tell instances apart. */
  name?: string;
  /** The pollIntervalMs every new task starts with. */
  pollIntervalMs?: number;
  /** Every task's ttlMs; the task is purged (then unknown) once it has passed. */
  defaultTtlMs?: number;
  /** How long the fixed-length tools (fail_task, tool_error, requires_task, …) work. */
  workMs?: number;
  /**
   * false: the SDK's server as it comes, with no task runtime: no extension in server/discover,
   * no tasks/* handlers, every tool call answered synchronously (MRTR input included).
   */
  tasks?: boolean;
  /**
   * true: `subscriptions/listen` agrees to the `taskIds` this server knows and pushes
   * `notifications/tasks` on each of their status changes. false (default): it acknowledges without
   * taskIds, as most servers do, and the client polls.
   */
  pushTasks?: boolean;
  /**
   * 'reject' (default): 2026-07-28 only. 'stateless': 2025 clients are served too, statelessly,
   * as the SDK does by default, with no 2025 tasks (the 2.x SDKs dropped them): a dual-era
   * server whose only tasks are the 2026 extension's.
   */
  legacy?: 'reject' | 'stateless';
}

export interface RecordedRequest {
  /** HTTP method. */
  method: string;
  /** JSON-RPC method of a POSTed message. */
  rpcMethod?: string;
  headers: IncomingHttpHeaders;
  /** The parsed POST body (the raw text when it is not JSON). */
  body?: unknown;
}

export interface ModernTaskServerStats {
  /** Every HTTP request the server received, in arrival order. */
  readonly requests: RecordedRequest[];
  /** Requests whose client went away before the response finished. */
  aborted: number;
  reset(): void;
}

export interface ModernTaskServer {
  /** e.g. http://127.0.0.1:PORT/mcp */
  url: string;
  port: number;
  stats: ModernTaskServerStats;
  tasks: {
    count(): number;
    /** Changes the interval the task advertises from its next tasks/get on. */
    setPollInterval(taskId: string, ms: number): void;
    /** Listen streams that carry taskIds, open now. */
    listeners(): number;
  };
  close(): Promise<void>;
}

const MCP_PATH = '/mcp';

/**
 * Starts a 2026-07-28-only MCP server (@modelcontextprotocol/server 2.4.0, one Server instance
 * per request as the SDK serves the modern era) with the io.modelcontextprotocol/tasks extension
 * on top: the task map lives here, outside the per-request instances.
 */
export async function startModernTaskServer(opts: ModernTaskServerOptions = {}): Promise<ModernTaskServer> {
  const host = opts.host ?? '127.0.0.1';
  const name = opts.name ?? 'taskgate-modern-tasks';
  const registry = new TaskRegistry({ pollIntervalMs: opts.pollIntervalMs ?? 500, ttlMs: opts.defaultTtlMs ?? 600_000 });
  const timings = { workMs: opts.workMs ?? 200 };
  const tools = [...exampleTools(timings), ...conformanceFixtures(timings)];
  const withTasks = opts.tasks ?? true;
  const listen = new TaskListen(registry, { push: opts.pushTasks ?? false });
  const mcp = createMcpHandler(
    () => {
      const server = new TaskAwareServer(
        { name, version: '1.0.0' },
        { capabilities: withTasks ? { tools: {}, extensions: { [TASKS_EXTENSION]: {} } } : { tools: {} } },
      );
      registerTools(server, tools, withTasks ? registry : undefined);
      if (withTasks) registerTaskHandlers(server, registry);
      return server;
    },
    { legacy: opts.legacy ?? 'reject' },
  );

  const requests: RecordedRequest[] = [];
  const stats: ModernTaskServerStats = {
    requests,
    aborted: 0,
    reset() {
      requests.length = 0;
      stats.aborted = 0;
    },
  };

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    // On Streamable HTTP a client that closes the response stream has cancelled the request.
    const disconnect = new AbortController();
    res.on('close', () => {
      if (res.writableFinished) return;
      stats.aborted += 1;
      disconnect.abort();
    });
    const record: RecordedRequest = { method: req.method ?? '', headers: req.headers };
    requests.push(record);
    const raw = req.method === 'POST' ? await readBody(req) : undefined;
    if (raw !== undefined) {
      try {
        record.body = JSON.parse(raw);
        record.rpcMethod = rpcMethodOf(record.body);
      } catch {
        record.body = raw;
      }
    }
    if (new URL(req.url ?? '/', 'http://placeholder').pathname !== MCP_PATH) {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('Not found');
      return;
    }
    const listenMessage = withTasks ? TaskListen.match(record.body) : undefined;
    const headers = headersOf(req);
    if (listenMessage !== undefined) headers.delete('content-length');
    const request = new Request(new URL(req.url ?? '/', `http://${req.headers.host ?? host}`), {
      method: req.method,
      headers,
      body: listenMessage === undefined ? raw : TaskListen.stripped(listenMessage),
      signal: disconnect.signal,
    });
    // Loopback servers are what DNS rebinding targets; the SDK's entry leaves that check to us.
    const rejected = isLoopback(host)
      ? (hostHeaderValidationResponse(request, localhostAllowedHostnames()) ??
        originValidationResponse(request, localhostAllowedOrigins()))
      : undefined;
    const response = rejected ?? (await mcp.fetch(request));
    await writeResponse(res, listenMessage === undefined || rejected !== undefined ? response : listen.serve(listenMessage, response));
  };

  const http = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      if (res.headersSent) return void res.destroy();
      res.writeHead(500, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ jsonrpc: '2.0', id: null, error: { code: -32603, message: `Internal error: ${String(error)}` } }));
    });
  });
  const { port, url } = await listenAt(http, host, opts.port ?? 0, MCP_PATH);

  return {
    url,
    port,
    stats,
    tasks: {
      count: () => registry.count(),
      setPollInterval: (taskId, ms) => registry.setPollInterval(taskId, ms),
      listeners: () => listen.open,
    },
    async close() {
      registry.close();
      await mcp.close();
      http.closeAllConnections();
      await new Promise<void>((resolve) => http.close(() => resolve()));
    },
  };
}

function headersOf(req: IncomingMessage): Headers {
  const headers = new Headers();
  for (let i = 0; i + 1 < req.rawHeaders.length; i += 2) headers.append(req.rawHeaders[i]!, req.rawHeaders[i + 1]!);
  return headers;
}

async function writeResponse(res: ServerResponse, response: Response): Promise<void> {
  const headers: Record<string, string> = {};
  response.headers.forEach((value, key) => {
    headers[key] = value;
  });
  res.writeHead(response.status, headers);
  if (response.body === null) {
    res.end();
    return;
  }
  try {
    await pipeline(Readable.fromWeb(response.body as NodeReadableStream), res);
  } catch {
    // The client went away mid-stream; the disconnect signal has already cancelled the exchange.
  }
}

function rpcMethodOf(body: unknown): string | undefined {
  if (typeof body === 'object' && body !== null && 'method' in body && typeof body.method === 'string') return body.method;
  return undefined;
}

function isLoopback(host: string): boolean {
  return host === '127.0.0.1' || host === '::1' || host === 'localhost';
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}
