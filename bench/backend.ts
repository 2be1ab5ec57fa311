/**
 * The benchmark backend: a node:http server that answers canned JSON-RPC at once, so that what
 * a load run measures is the proxy in front of it, not an MCP server. Every target proxies to
 * one instance of this process, started once per run.
 *
 * Tool names pick the reply: `echo` (JSON), `stream` (a two-event SSE reply), `create-task`
 * (a task creation result of the request's era, living `arguments.ttlMs` or an hour, working or,
 * with `arguments.completed`, already completed), `big-stream` (an SSE stream of
 * `arguments.bytes`, for the flat-memory check) and `slow` (a plain tool with no task support
 * that holds its JSON reply: the tool the gateway runs as a task, bench/provided.ts). Task ids
 * starting with `slow-` are given a one hour poll interval, every other task 0 ms, so that the
 * gateway forwards polls of the fast ones and answers early polls of the slow ones from its cache.
 *
 * `tools/list` lists these five, none with an outputSchema.
 *
 * Under the path `/bridged` its `server/discover` declares the 2026-07-28 tasks extension (and
 * its `initialize`, as everywhere, no 2025 tasks), so a taskgate route there bridges 2025 clients.
 *
 * GET /stats returns request counters (and `held:slow`, the calls held now): the harness uses
 * them to check that polls it calls "forwarded" reached the backend and that cached ones did
 * not. POST /release[?group=g] answers the held `slow` calls (of one group) at once.
 *
 * POST /v1/traces is a trace collector for runs with tracing on (`--tracing RATIO`): it takes
 * the gateway's OTLP/HTTP exports, counts the spans in them (`otlp:spans`, decoded with the
 * official OTLP definitions) and answers success, so the exporter's work is measured against a
 * collector that keeps up, on the load core rather than the proxy's.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import otlp from 'otlp-definitions/build/src/generated/root.js';
import { listenAndAnnounce, readBody, serveParentRequests } from './child-channel.js';

const MODERN = '2026-07-28';
const SLOW_POLL_MS = 3_600_000;
const TTL_MS = 3_600_000;
// One fixed timestamp: the replies stay byte-identical from run to run.
const STAMP = '2026-01-01T00:00:00.000Z';
const counters: Record<string, number> = {};
/** What tools/list answers. */
const TOOLS = ['echo', 'stream', 'create-task', 'big-stream', 'slow'];
let nextTask = 0;

interface Rpc {
  id?: string | number;
  method?: string;
  params?: { name?: string; arguments?: Record<string, unknown>; taskId?: string };
}

function count(key: string): void {
  counters[key] = (counters[key] ?? 0) + 1;
}

function sendJson(res: ServerResponse, id: Rpc['id'], result: unknown, close = false): void {
  const body = JSON.stringify({ jsonrpc: '2.0', id, result });
  const headers: Record<string, string | number> = { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) };
  if (close) headers.connection = 'close';
  res.writeHead(200, headers);
  res.end(body);
}

function sseBlock(message: unknown): string {
  return `event: message\ndata: ${JSON.stringify(message)}\n\n`;
}

function taskFields(taskId: string, modern: boolean, ttl = TTL_MS, status = 'working'): Record<string, unknown> {
  const poll = taskId.startsWith('slow-') ? SLOW_POLL_MS : 0;
  return modern
    ? { taskId, status, createdAt: STAMP, lastUpdatedAt: STAMP, ttlMs: ttl, pollIntervalMs: poll }
    : { taskId, status, createdAt: STAMP, lastUpdatedAt: STAMP, ttl, pollInterval: poll };
}

function answerToolCall(res: ServerResponse, rpc: Rpc, modern: boolean): void {
  const name = rpc.params?.name;
  const args = rpc.params?.arguments ?? {};
  count(`tools/call:${name}`);
  switch (name) {
    case 'stream': {
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
      res.write(sseBlock({ jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data: 'working' } }));
      res.end(sseBlock({ jsonrpc: '2.0', id: rpc.id, result: { content: [{ type: 'text', text: 'streamed ok' }] } }));
      return;
    }
    case 'create-task': {
      const taskId = `${args.poll === 'slow' ? 'slow' : 'fast'}-${++nextTask}`;
      // `ttlMs` (at least a second) and `completed`: finished tasks that expire soon, to warm a
      // gateway up without keeping them, nor a cancel for each when they expire (bench/scale-store.ts).
      const ttl = typeof args.ttlMs === 'number' ? Math.min(Math.max(args.ttlMs, 1000), TTL_MS) : TTL_MS;
      const task = taskFields(taskId, modern, ttl, args.completed === true ? 'completed' : 'working');
      sendJson(res, rpc.id, modern ? { resultType: 'task', ...task } : { task });
      return;
    }
    case 'big-stream':
      streamBytes(res, rpc.id, Number(args.bytes ?? 0));
      return;
    case 'slow':
      holdSlowCall(res, rpc.id, args, modern);
      return;
    default:
      sendJson(res, rpc.id, { content: [{ type: 'text', text: `echo ${JSON.stringify(args).slice(0, 64)}` }] });
  }
}

/** The most `slow` calls held at once, and the longest hold: the backend stays bounded. */
const MAX_HELD = 25_000;
const MAX_HOLD_MS = 30 * 60_000;

interface HeldCall {
  res: ServerResponse;
  id: Rpc['id'];
  modern: boolean;
  close: boolean;
  /** `arguments.stamp`: the reply says when it was sent (bench/push.ts times delivery from it). */
  stamp: boolean;
  group: string | undefined;
  timer?: NodeJS.Timeout;
}

const held = new Set<HeldCall>();
/** Groups released by POST /release: later calls of theirs are answered at once (at most 16 kept). */
const released = new Set<string>();

function heldCalls(): number {
  return held.size;
}

/**
 * `slow`: a plain tool (no task support) that answers after `arguments.ms` (at most 30
 * minutes) or when its `group` is released, whichever comes first. `close: true` answers with
 * `Connection: close`, so a caller's pool does not keep the socket (the memory check); `stamp:
 * true` puts the wall-clock time of the answer in its text (the status push's delivery lag). A call
 * whose client goes away is forgotten. Past MAX_HELD held calls, it answers a JSON-RPC error.
 */
function holdSlowCall(res: ServerResponse, id: Rpc['id'], args: Record<string, unknown>, modern: boolean): void {
  const ms = Math.min(Math.max(Number(args.ms) || 0, 0), MAX_HOLD_MS);
  const group = typeof args.group === 'string' ? args.group.slice(0, 32) : undefined;
  const call: HeldCall = { res, id, modern, close: args.close === true, stamp: args.stamp === true, group };
  if (ms === 0 || (group !== undefined && released.has(group))) {
    answerSlow(call);
    return;
  }
  if (held.size >= MAX_HELD) {
    count('slow:refused');
    const body = JSON.stringify({ jsonrpc: '2.0', id, error: { code: -32000, message: `bench backend: more than ${MAX_HELD} calls held` } });
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) }).end(body);
    return;
  }
  call.timer = setTimeout(() => answerSlow(call), ms);
  held.add(call);
  res.once('close', () => {
    clearTimeout(call.timer);
    held.delete(call);
  });
}

function answerSlow(call: HeldCall): void {
  clearTimeout(call.timer);
  held.delete(call);
  if (call.res.writableEnded || call.res.destroyed) return;
  // Wall clock with sub-millisecond digits: the listeners of bench/push.ts (same host) read it.
  const text = call.stamp ? `slow call done at ${(performance.timeOrigin + performance.now()).toFixed(3)}` : 'slow call done';
  const result = { content: [{ type: 'text', text }] };
  sendJson(call.res, call.id, call.modern ? { resultType: 'complete', ...result } : result, call.close);
}

/** Answers the held calls of `group` (every held call when undefined); returns how many. */
function releaseHeld(group: string | undefined): number {
  if (group !== undefined) {
    if (released.size >= 16) released.clear();
    released.add(group);
  }
  const calls = [...held].filter((call) => group === undefined || call.group === group);
  for (const call of calls) answerSlow(call);
  return calls.length;
}

/** `total` bytes of progress notifications, written with backpressure, then the result. */
function streamBytes(res: ServerResponse, id: Rpc['id'], total: number): void {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  const padding = 'x'.repeat(16 * 1024);
  let sent = 0;
  let progress = 0;
  const pump = (): void => {
    while (sent < total) {
      const block = sseBlock({ jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: 1, progress: ++progress, message: padding } });
      sent += block.length;
      if (!res.write(block)) {
        res.once('drain', pump);
        return;
      }
    }
    res.end(sseBlock({ jsonrpc: '2.0', id, result: { content: [{ type: 'text', text: `sent ${sent} bytes` }] } }));
  };
  pump();
}

function answer(req: IncomingMessage, res: ServerResponse, raw: string): void {
  let rpc: Rpc;
  try {
    rpc = JSON.parse(raw) as Rpc;
  } catch {
    res.writeHead(400).end();
    return;
  }
  const modern = req.headers['mcp-protocol-version'] === MODERN;
  // Under /bridged the backend says it serves 2026-07-28 tasks and no 2025 ones (its initialize
  // declares none anywhere): what the gateway bridges a 2025 client to (docs/bridging.md).
  if (rpc.method === 'server/discover' && req.url?.startsWith('/bridged')) {
    count('server/discover');
    sendJson(res, rpc.id, { resultType: 'complete', supportedVersions: [MODERN], capabilities: { tools: {}, extensions: { 'io.modelcontextprotocol/tasks': {} } }, ttlMs: 0, cacheScope: 'public' });
    return;
  }
  switch (rpc.method) {
    case 'tools/call':
      answerToolCall(res, rpc, modern);
      return;
    case 'tools/list':
      // Its tools, none with an outputSchema: a gateway that relays the list learns that it may
      // detach their calls (background calls under the default outputSchema: plain).
      count('tools/list');
      sendJson(res, rpc.id, { ...(modern ? { resultType: 'complete' } : {}), tools: TOOLS.map((name) => ({ name, inputSchema: { type: 'object' } })) });
      return;
    case 'tasks/get': {
      count('tasks/get');
      const task = taskFields(String(rpc.params?.taskId ?? ''), modern);
      sendJson(res, rpc.id, modern ? { resultType: 'complete', ...task } : task);
      return;
    }
    default:
      count(String(rpc.method));
      if (rpc.id === undefined) res.writeHead(202).end();
      else sendJson(res, rpc.id, modern ? { resultType: 'complete' } : {});
  }
}

type TraceRequestDecoder = { decode(bytes: Uint8Array): { resourceSpans: { scopeSpans: { spans: unknown[] }[] }[] } };
const traceRequests = (otlp as unknown as { opentelemetry: { proto: { collector: { trace: { v1: { ExportTraceServiceRequest: TraceRequestDecoder } } } } } })
  .opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest;

function collectSpans(req: IncomingMessage, res: ServerResponse): void {
  const chunks: Buffer[] = [];
  req.on('data', (chunk: Buffer) => chunks.push(chunk));
  req.on('end', () => {
    const decoded = traceRequests.decode(Buffer.concat(chunks));
    for (const resource of decoded.resourceSpans) for (const scope of resource.scopeSpans) counters['otlp:spans'] = (counters['otlp:spans'] ?? 0) + scope.spans.length;
    count('otlp:exports');
    res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end();
  });
}

const server = createServer((req, res) => {
  if (req.method === 'POST' && req.url === '/v1/traces') {
    collectSpans(req, res);
    return;
  }
  if (req.method === 'GET' && req.url === '/stats') {
    const body = JSON.stringify({ ...counters, 'held:slow': heldCalls() });
    res.writeHead(200, { 'content-type': 'application/json' }).end(body);
    return;
  }
  if (req.method === 'POST' && req.url?.startsWith('/release')) {
    const group = new URL(req.url, 'http://backend').searchParams.get('group') ?? undefined;
    const body = JSON.stringify({ released: releaseHeld(group) });
    res.writeHead(200, { 'content-type': 'application/json' }).end(body);
    return;
  }
  if (req.method !== 'POST') {
    res.writeHead(405).end();
    return;
  }
  readBody(req, (body) => answer(req, res, body));
});
// Keep-alive connections from the proxies must outlive the pauses between load runs.
listenAndAnnounce(server);

serveParentRequests(async () => {
  releaseHeld(undefined);
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});
