/**
 * A 2025-11-25 MCP server (the SDK 1.x server code) for the client hang-up tests. Its tool
 * `hold` runs until the test lets it go, and the server counts how many run at once: what a
 * concurrency cap promises is visible at the backend. Its standalone GET streams send nothing,
 * not even keep-alives, until the test has it send a notification.
 */
import { randomUUID } from 'node:crypto';
import { createServer, type ServerResponse } from 'node:http';
import { text } from 'node:stream/consumers';
import * as z from 'zod';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';
import { listenAt } from '../../../examples/http-serving.js';
import { waitFor } from '../../support/wait.js';

export interface HeldBackend {
  /** e.g. http://127.0.0.1:PORT/mcp */
  readonly url: string;
  /** Calls of `hold` working now, and the most that ever worked at once. */
  readonly running: number;
  readonly maxRunning: number;
  /** Calls of `hold` that returned. */
  readonly finished: number;
  /** JSON-RPC methods of every POST received, in order; `GET` for each GET. */
  readonly received: readonly string[];
  /** tools/call POSTs whose response headers the server has sent. */
  readonly callsAnswering: number;
  /** tools/call POSTs whose client (the gateway) closed the connection before the answer. */
  readonly callsCut: number;
  /** Lets the calls of `hold` working now return; later calls wait for the next release. */
  release(): void;
  /** Sends a log message on the standalone GET stream of every session. */
  notify(text: string): Promise<void>;
  /** Resolves once `test` holds, polled every 10 ms; fails after `ms`. */
  until(test: () => boolean, what: string, ms?: number): Promise<void>;
  close(): Promise<void>;
}

interface Session {
  readonly transport: StreamableHTTPServerTransport;
  readonly mcp: McpServer;
}

/** `jsonResponse`: POSTs are answered with one JSON body once the answer is there (no stream, no early headers). */
export async function startHeldBackend(options: { jsonResponse?: boolean } = {}): Promise<HeldBackend> {
  const sessions = new Map<string, Session>();
  const received: string[] = [];
  const callResponses: ServerResponse[] = [];
  let callsCut = 0;
  let running = 0;
  let maxRunning = 0;
  let finished = 0;
  let gate = newGate();

  const newSession = async (): Promise<Session> => {
    const mcp = new McpServer({ name: 'held-backend', version: '1.0.0' }, { capabilities: { logging: {} } });
    const inputSchema = { say: z.string().optional() };
    mcp.registerTool('hold', { description: 'Works until the test releases it; says `say` first, on its stream.', inputSchema }, async ({ say }, extra) => {
      running += 1;
      maxRunning = Math.max(maxRunning, running);
      try {
        if (say !== undefined) await extra.sendNotification({ method: 'notifications/message', params: { level: 'info', data: say } });
        await gate.opened;
      } finally {
        running -= 1;
        finished += 1;
      }
      return { content: [{ type: 'text', text: 'released' }] };
    });
    const transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      // Nothing on a quiet stream: the gateway must not wait for a first byte to answer.
      keepAliveMs: 0,
      enableJsonResponse: options.jsonResponse ?? false,
      onsessioninitialized: (id) => {
        sessions.set(id, session);
      },
    });
    const session: Session = { transport, mcp };
    await mcp.connect(transport);
    return session;
  };

  const http = createServer((req, res) => {
    void (async () => {
      const body = req.method === 'POST' ? (JSON.parse(await text(req)) as unknown) : undefined;
      const method = req.method === 'POST' ? String((body as { method?: unknown }).method ?? 'response') : (req.method ?? '');
      received.push(method);
      if (method === 'tools/call') {
        callResponses.push(res);
        // Read at 'close': the SDK still ends a response its client has closed.
        res.once('close', () => !res.writableFinished && (callsCut += 1));
      }
      const id = req.headers['mcp-session-id'];
      const session = typeof id === 'string' ? sessions.get(id) : isInitializeRequest(body) ? await newSession() : undefined;
      if (!session) {
        res.writeHead(404).end();
        return;
      }
      await session.transport.handleRequest(req, res, body);
    })().catch(() => res.destroy());
  });
  const { url } = await listenAt(http, '127.0.0.1', 0, '/mcp');

  return {
    url,
    get running() {
      return running;
    },
    get maxRunning() {
      return maxRunning;
    },
    get finished() {
      return finished;
    },
    received,
    get callsAnswering() {
      return callResponses.filter((res) => res.headersSent).length;
    },
    get callsCut() {
      return callsCut;
    },
    release() {
      gate.open();
      gate = newGate();
    },
    async notify(text) {
      await Promise.all([...sessions.values()].map((s) => s.mcp.server.sendLoggingMessage({ level: 'info', data: text })));
    },
    until: (test, what, ms = 5000) => waitFor(test, `the backend: ${what}`, ms, 10),
    async close() {
      gate.open();
      await Promise.allSettled([...sessions.values()].map((s) => s.mcp.close()));
      http.closeAllConnections();
      await new Promise<void>((resolve) => http.close(() => resolve()));
    },
  };
}

/** What the calls of `hold` wait on: `opened` settles once `open()` was called. */
function newGate(): { opened: Promise<void>; open(): void } {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { opened, open };
}
