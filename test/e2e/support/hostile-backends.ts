/**
 * Hostile backends for tasks the gateway runs itself (issue #24, items 7 and 8): real MCP SDK
 * servers whose tools answer what a broken or hostile server may. The 2026-07-28 one is the SDK
 * 2.x server (MRTR for input, one Server per request as that SDK serves the era); the 2025-11-25
 * one is the SDK 1.x low-level Server (sessions, server→client requests in the call's stream,
 * JSON-RPC errors from a tool). Both count the tools/call they were sent, per tool.
 *
 * Every tool first works for `slowMs` (a 2026 call must outlast promoteAfter to become a task),
 * except a 2026 call that carries a requestState: the loop answers it at once.
 */
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server as HttpServer, type ServerResponse } from 'node:http';
import { text } from 'node:stream/consumers';
import { setTimeout as sleep } from 'node:timers/promises';
import { createMcpHandler, ProtocolError, ProtocolErrorCode, Server as ModernServer } from '@modelcontextprotocol/server';
import { Server as LegacyServer } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { CallToolRequestSchema, ElicitResultSchema, ErrorCode, isInitializeRequest, ListToolsRequestSchema, McpError } from '@modelcontextprotocol/sdk/types.js';
import { listenAt } from '../../../examples/http-serving.js';
import { serveFetch } from './fetch-serving.js';

/** What the issue saw: three megabytes, well under the gateway's 8 MiB response and SSE event limits. */
export const HUGE = 'x'.repeat(3 * 1024 * 1024);

export interface HostileBackend {
  url: string;
  /** tools/call requests received for `tool` so far. */
  calls(tool: string): number;
  close(): Promise<void>;
}

const ask = (message: string) => ({ method: 'elicitation/create', params: { mode: 'form', message, requestedSchema: { type: 'object', properties: { name: { type: 'string' } } } } });

/**
 * 2026-07-28 tools:
 *   call_again   answers input_required with only a requestState, every time (a backend in a loop)
 *   huge_error   a JSON-RPC error whose message is 3 MB
 *   huge_input   input_required whose inputRequests hold 3 MB
 *   huge_state   input_required with a small question and a 3 MB requestState
 */
export async function startHostileModernBackend(opts: { slowMs: number }): Promise<HostileBackend> {
  const counts = new Map<string, number>();
  const names = ['call_again', 'huge_error', 'huge_input', 'huge_state'];
  const mcp = createMcpHandler(
    () => {
      const server = new ModernServer({ name: 'hostile-2026', version: '1.0.0' }, { capabilities: { tools: {} } });
      server.setRequestHandler('tools/list', () => ({ tools: names.map((name) => ({ name, inputSchema: { type: 'object' as const } })) }));
      server.setRequestHandler('tools/call', async (request, ctx) => {
        const name = request.params.name;
        counts.set(name, (counts.get(name) ?? 0) + 1);
        if (name === 'call_again' && ctx.mcpReq.requestState() !== undefined) return { resultType: 'input_required', requestState: 'again' } as never;
        await sleep(opts.slowMs);
        switch (name) {
          case 'call_again':
            return { resultType: 'input_required', requestState: 'again' } as never;
          case 'huge_error':
            throw new ProtocolError(ProtocolErrorCode.InternalError, HUGE);
          case 'huge_input':
            return { resultType: 'input_required', inputRequests: { name: ask(HUGE) } } as never;
          case 'huge_state':
            return { resultType: 'input_required', inputRequests: { name: ask('Your name?') }, requestState: HUGE } as never;
          default:
            throw new ProtocolError(ProtocolErrorCode.InvalidParams, `Unknown tool: ${name}`);
        }
      });
      return server;
    },
    { legacy: 'reject' },
  );
  const http = createServer((req, res) => {
    serveFetch(req, res, (request) => mcp.fetch(request)).catch(() => res.destroy());
  });
  const { url } = await listenAt(http, '127.0.0.1', 0, '/mcp');
  return { url, calls: (tool) => counts.get(tool) ?? 0, close: () => closeAll(http, () => mcp.close()) };
}

/**
 * 2025-11-25 tools:
 *   huge_question  asks the client (elicitation/create in the call's stream) with a 3 MB message, and waits
 *   huge_error     a JSON-RPC error whose message is 3 MB
 */
export async function startHostileLegacyBackend(opts: { slowMs: number }): Promise<HostileBackend> {
  const counts = new Map<string, number>();
  const sessions = new Map<string, StreamableHTTPServerTransport>();
  const servers: LegacyServer[] = [];
  const newSession = async (): Promise<StreamableHTTPServerTransport> => {
    const server = new LegacyServer({ name: 'hostile-2025', version: '1.0.0' }, { capabilities: { tools: {} } });
    server.setRequestHandler(ListToolsRequestSchema, () => ({
      tools: ['huge_question', 'huge_error'].map((name) => ({ name, inputSchema: { type: 'object' as const } })),
    }));
    server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
      const name = request.params.name;
      counts.set(name, (counts.get(name) ?? 0) + 1);
      await sleep(opts.slowMs);
      if (name === 'huge_error') throw new McpError(ErrorCode.InternalError, HUGE);
      if (name !== 'huge_question') throw new McpError(ErrorCode.InvalidParams, `Unknown tool: ${name}`);
      await extra.sendRequest(ask(HUGE) as never, ElicitResultSchema);
      return { content: [{ type: 'text', text: 'answered' }] };
    });
    servers.push(server);
    const transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (id) => void sessions.set(id, transport),
    });
    await server.connect(transport);
    return transport;
  };
  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const raw = req.method === 'POST' ? await text(req) : undefined;
    const body: unknown = raw === undefined ? undefined : JSON.parse(raw);
    const sessionId = req.headers['mcp-session-id'];
    const known = typeof sessionId === 'string' ? sessions.get(sessionId) : undefined;
    if (known) return known.handleRequest(req, res, body);
    if (isInitializeRequest(body)) return (await newSession()).handleRequest(req, res, body);
    res.writeHead(400, { 'content-type': 'application/json' }).end('{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"no session"}}');
  };
  const http = createServer((req, res) => {
    handle(req, res).catch(() => res.destroy());
  });
  const { url } = await listenAt(http, '127.0.0.1', 0, '/mcp');
  return {
    url,
    calls: (tool) => counts.get(tool) ?? 0,
    close: () => closeAll(http, async () => void (await Promise.allSettled(servers.map((s) => s.close())))),
  };
}

async function closeAll(http: HttpServer, closeMcp: () => Promise<void>): Promise<void> {
  await closeMcp();
  http.closeAllConnections();
  await new Promise<void>((resolve) => http.close(() => resolve()));
}
