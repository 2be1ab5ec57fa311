/**
 * One backend instance of the soak: a node:http server with real tasks that end. Two routes, as
 * a gateway in front of two kinds of server would see them:
 *
 * - `/mcp`, a task server of both generations: the `job` tool makes a task (2025-11-25 with
 *   `params.task`, 2026-07-28 under the tasks extension) that works for `arguments.ms`, then
 *   ends `completed` (its result says `done <tag>`) or, with `arguments.fail`, `failed`;
 *   `tasks/get`, `tasks/result` (2025), `tasks/cancel` answer from its own table, and a task is
 *   forgotten at its TTL, as a real server forgets it.
 * - `/plain`, a server without tasks: the `slow` tool holds its plain reply for `arguments.ms`.
 *   The gateway runs it as a task (providedTasks) and holds the call.
 *
 * 2025 clients get a session on `initialize` (`mcp-session-id: <instance>-s<n>`); a 2025 request
 * naming a session this instance never issued is answered 404, as the SDK does, so a gateway
 * that sent a session to the wrong instance would be seen. Every task's status message names
 * the instance (`working on instance A`), which is how the soak's client knows where a task
 * lives without the gateway telling it.
 *
 * Env: SOAK_INSTANCE (its name), SOAK_POLL_MS (the poll interval of its tasks), SOAK_TTL_MS
 * (the TTL of a 2026 task; a 2025 task gets what `params.task.ttl` asks). GET /stats counts.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { listenAndAnnounce, readBody, serveParentRequests } from '../child-channel.js';

const MODERN = '2026-07-28';
const RELATED_TASK = 'io.modelcontextprotocol/related-task';
const TASKS_EXTENSION = 'io.modelcontextprotocol/tasks';
const INSTANCE = process.env.SOAK_INSTANCE ?? 'A';
const POLL_MS = Number(process.env.SOAK_POLL_MS ?? 30_000);
const TTL_MS = Number(process.env.SOAK_TTL_MS ?? 300_000);
/** The longest a `slow` call or a `job` may take: the backend stays bounded whatever it is asked. */
const MAX_MS = 30 * 60_000;

type Status = 'working' | 'completed' | 'failed' | 'cancelled';

interface Job {
  id: string;
  modern: boolean;
  tag: string;
  createdAt: number;
  endsAt: number;
  ttlMs: number;
  fails: boolean;
  cancelledAt?: number;
}

interface Rpc {
  jsonrpc?: string;
  id?: string | number;
  method?: string;
  params?: { name?: string; arguments?: Record<string, unknown>; taskId?: string; task?: { ttl?: number }; requestId?: string | number };
}

const jobs = new Map<string, Job>();
const sessions = new Set<string>();
const counters: Record<string, number> = {};
/** Held `slow` calls by JSON-RPC id, so that a 2025 notifications/cancelled can end one. */
const held = new Map<string | number, { res: ServerResponse; timer: NodeJS.Timeout }>();
let nextJob = 0;
let nextSession = 0;

function count(key: string): void {
  counters[key] = (counters[key] ?? 0) + 1;
}

function send(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(text)), ...headers });
  res.end(text);
}

function result(res: ServerResponse, id: Rpc['id'], value: unknown, headers?: Record<string, string>): void {
  send(res, 200, { jsonrpc: '2.0', id, result: value }, headers);
}

function rpcError(res: ServerResponse, id: Rpc['id'], code: number, message: string): void {
  send(res, 200, { jsonrpc: '2.0', id, error: { code, message } });
}

function statusOf(job: Job, now: number): Status {
  if (job.cancelledAt !== undefined) return 'cancelled';
  if (now < job.endsAt) return 'working';
  return job.fails ? 'failed' : 'completed';
}

function toolResult(tag: string): Record<string, unknown> {
  return { content: [{ type: 'text', text: `done ${tag}` }] };
}

/** The task as tasks/get answers it in the job's own generation. */
function taskView(job: Job, now: number): Record<string, unknown> {
  const status = statusOf(job, now);
  const stamp = (ms: number) => new Date(ms).toISOString();
  const changedAt = status === 'working' ? job.createdAt : (job.cancelledAt ?? job.endsAt);
  const base = { taskId: job.id, status, statusMessage: `${status} on instance ${INSTANCE}`, createdAt: stamp(job.createdAt), lastUpdatedAt: stamp(changedAt) };
  if (!job.modern) return { ...base, ttl: job.ttlMs, pollInterval: POLL_MS };
  const view: Record<string, unknown> = { resultType: 'complete', ...base, ttlMs: job.ttlMs, pollIntervalMs: POLL_MS };
  if (status === 'completed') view.result = { resultType: 'complete', ...toolResult(job.tag) };
  if (status === 'failed') view.error = { code: -32603, message: `job failed ${job.tag}` };
  return view;
}

function lifetime(args: Record<string, unknown>): number {
  return Math.min(Math.max(Number(args.ms) || 0, 0), MAX_MS);
}

function startJob(res: ServerResponse, rpc: Rpc, modern: boolean): void {
  const args = rpc.params?.arguments ?? {};
  if (!modern && rpc.params?.task === undefined) {
    rpcError(res, rpc.id, -32602, 'job must run as a task (params.task)');
    return;
  }
  const now = Date.now();
  const ttlMs = modern ? TTL_MS : Math.min(Number(rpc.params?.task?.ttl) || TTL_MS, MAX_MS);
  const job: Job = { id: `${INSTANCE}-${++nextJob}`, modern, tag: String(args.tag ?? ''), createdAt: now, endsAt: now + lifetime(args), ttlMs, fails: args.fail === true };
  jobs.set(job.id, job);
  count('job:created');
  const { resultType: _drop, result: _none, error: _no, ...task } = taskView(job, now);
  result(res, rpc.id, modern ? { resultType: 'task', ...task } : { task });
}

function answerTaskRequest(res: ServerResponse, rpc: Rpc, modern: boolean): void {
  const job = jobs.get(String(rpc.params?.taskId ?? ''));
  const now = Date.now();
  if (!job) {
    count(`${rpc.method}:unknown`);
    rpcError(res, rpc.id, -32602, 'Failed to retrieve task: Task not found');
    return;
  }
  switch (rpc.method) {
    case 'tasks/get':
      result(res, rpc.id, taskView(job, now));
      return;
    case 'tasks/cancel':
      if (statusOf(job, now) !== 'working') {
        if (modern) result(res, rpc.id, { resultType: 'complete' });
        else rpcError(res, rpc.id, -32602, 'Cannot cancel task: already in a terminal status');
        return;
      }
      job.cancelledAt = now;
      result(res, rpc.id, modern ? { resultType: 'complete' } : taskView(job, now));
      return;
    case 'tasks/result': {
      // 2025: blocks until the task ends, then its outcome.
      const answer = () => {
        const status = statusOf(job, Date.now());
        if (status === 'completed') result(res, rpc.id, { ...toolResult(job.tag), _meta: { [RELATED_TASK]: { taskId: job.id } } });
        else rpcError(res, rpc.id, -32603, `job ${status} ${job.tag}`);
      };
      if (statusOf(job, now) === 'working') setTimeout(answer, job.endsAt - now).unref();
      else answer();
      return;
    }
    default:
      rpcError(res, rpc.id, -32601, 'Method not found');
  }
}

/** `slow` on /plain: a plain tool whose reply comes after `arguments.ms`; the gateway makes it a task. */
function holdSlowCall(res: ServerResponse, rpc: Rpc, modern: boolean): void {
  const args = rpc.params?.arguments ?? {};
  const id = rpc.id ?? 'none';
  count('slow:called');
  const timer = setTimeout(() => {
    held.delete(id);
    count('slow:answered');
    result(res, rpc.id, modern ? { resultType: 'complete', ...toolResult(String(args.tag ?? '')) } : toolResult(String(args.tag ?? '')));
  }, lifetime(args));
  held.set(id, { res, timer });
  res.once('close', () => {
    if (held.get(id)?.res !== res) return;
    clearTimeout(timer);
    held.delete(id);
  });
}

function cancelHeld(rpc: Rpc): void {
  const call = held.get(rpc.params?.requestId ?? '');
  if (!call) return;
  clearTimeout(call.timer);
  held.delete(rpc.params!.requestId!);
  count('slow:cancelled');
  rpcError(call.res, rpc.params!.requestId, -32800, 'Request cancelled');
}

function answer(req: IncomingMessage, res: ServerResponse, raw: string): void {
  let rpc: Rpc;
  try {
    rpc = JSON.parse(raw) as Rpc;
  } catch {
    send(res, 400, { jsonrpc: '2.0', id: null, error: { code: -32700, message: 'Parse error' } });
    return;
  }
  const modern = req.headers['mcp-protocol-version'] === MODERN;
  const plain = req.url?.startsWith('/plain') === true;
  const session = req.headers['mcp-session-id'];
  if (!modern && typeof session === 'string' && !sessions.has(session)) {
    count('session:unknown');
    send(res, 404, { jsonrpc: '2.0', id: null, error: { code: -32001, message: 'Session not found' } });
    return;
  }
  if (rpc.method === 'notifications/cancelled') cancelHeld(rpc);
  if (rpc.id === undefined) {
    res.writeHead(202).end();
    return;
  }
  count(`${plain ? 'plain' : 'mcp'}:${rpc.method}`);
  switch (rpc.method) {
    case 'initialize': {
      const id = `${INSTANCE}-s${++nextSession}`;
      sessions.add(id);
      const tasks = plain ? {} : { tasks: { list: {}, cancel: {}, requests: { tools: { call: {} } } } };
      result(res, rpc.id, { protocolVersion: '2025-11-25', capabilities: { tools: {}, ...tasks }, serverInfo: { name: `soak-${INSTANCE}`, version: '1.0.0' } }, { 'mcp-session-id': id });
      return;
    }
    case 'server/discover':
      result(res, rpc.id, { resultType: 'complete', supportedVersions: [MODERN], capabilities: { tools: {}, ...(plain ? {} : { extensions: { [TASKS_EXTENSION]: {} } }) }, serverInfo: { name: `soak-${INSTANCE}`, version: '1.0.0' } });
      return;
    case 'tools/list': {
      const tools = plain ? [{ name: 'slow', inputSchema: { type: 'object' } }] : [{ name: 'job', inputSchema: { type: 'object' }, execution: { taskSupport: 'required' } }];
      result(res, rpc.id, modern ? { resultType: 'complete', tools } : { tools });
      return;
    }
    case 'tools/call':
      if (plain && rpc.params?.name === 'slow') holdSlowCall(res, rpc, modern);
      else if (!plain && rpc.params?.name === 'job') startJob(res, rpc, modern);
      else rpcError(res, rpc.id, -32602, `unknown tool ${String(rpc.params?.name)}`);
      return;
    case 'tasks/get':
    case 'tasks/cancel':
    case 'tasks/result':
      answerTaskRequest(res, rpc, modern);
      return;
    default:
      result(res, rpc.id, modern ? { resultType: 'complete' } : {});
  }
}

function stats(): Record<string, unknown> {
  const now = Date.now();
  let working = 0;
  for (const job of jobs.values()) if (statusOf(job, now) === 'working') working++;
  return { instance: INSTANCE, jobs: jobs.size, working, held: held.size, sessions: sessions.size, counters };
}

// A task is forgotten at its TTL, as the spec lets a server forget it.
setInterval(() => {
  const now = Date.now();
  for (const [id, job] of jobs) if (job.createdAt + job.ttlMs < now) jobs.delete(id);
}, 1000).unref();

const server = createServer((req, res) => {
  if (req.method === 'GET' && req.url === '/stats') {
    send(res, 200, stats());
    return;
  }
  if (req.method === 'DELETE') {
    const session = req.headers['mcp-session-id'];
    if (typeof session === 'string') sessions.delete(session);
    res.writeHead(200).end();
    return;
  }
  if (req.method !== 'POST') {
    res.writeHead(405).end();
    return;
  }
  readBody(req, (body) => answer(req, res, body));
});
// The gateway's keep-alive connections (one per held call) must outlive the pauses between requests.
listenAndAnnounce(server, { instance: INSTANCE });

serveParentRequests(async () => {
  for (const call of held.values()) clearTimeout(call.timer);
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});
