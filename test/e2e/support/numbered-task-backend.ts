/**
 * A 2026-07-28 task backend that numbers its tasks ("7001", "7002", …) and writes about them
 * the way real job runners do: "job 7001 working", "job 7001 cancelled", an error that quotes
 * the id. On the real SDK server (@modelcontextprotocol/server, one Server per request, the
 * example server's TaskAwareServer for the CreateTaskResult), with a task map the test drives:
 * `set(id, fields)` makes the task answer whatever the test wants on its next tasks/get,
 * including shapes a careless backend sends (fractional lifetimes, an error without a code).
 */
import { createServer } from 'node:http';
import { text } from 'node:stream/consumers';
import { createMcpHandler, ProtocolError, ProtocolErrorCode } from '@modelcontextprotocol/server';
import * as z from 'zod';
import { TaskAwareServer } from '../../../examples/modern-task-server/tool-dispatch.js';
import { TASKS_EXTENSION } from '../../../examples/modern-task-server/task-handlers.js';
import { listenAt } from '../../../examples/http-serving.js';
import { serveFetch } from './fetch-serving.js';

const TaskIdParams = z.looseObject({ taskId: z.string() });

export interface NumberedTaskBackend {
  url: string;
  /** The backend id of every task created so far, oldest first. */
  readonly ids: string[];
  /** Fields the task answers tasks/get with from now on (merged into what it has). */
  set(id: string, fields: Record<string, unknown>): void;
  /** Every JSON-RPC method the backend was asked, in order. */
  readonly received: string[];
  close(): Promise<void>;
}

export interface NumberedTaskBackendOptions {
  /** The first id; the next task gets the next number. */
  firstId?: number;
  /** The Task fields every new task starts with, besides its id and status. */
  created?: (id: string) => Record<string, unknown>;
  /** The tasks/update and tasks/cancel ack (default `{ resultType: 'complete' }`). */
  ack?: (id: string) => Record<string, unknown>;
}

export async function startNumberedTaskBackend(options: NumberedTaskBackendOptions = {}): Promise<NumberedTaskBackend> {
  let next = options.firstId ?? 7001;
  const tasks = new Map<string, Record<string, unknown>>();
  const ids: string[] = [];
  const received: string[] = [];
  const now = () => new Date().toISOString();
  const ack = (id: string) => options.ack?.(id) ?? { resultType: 'complete' };

  const mcp = createMcpHandler(
    () => {
      const server = new TaskAwareServer({ name: 'numbered-jobs', version: '1.0.0' }, { capabilities: { tools: {}, extensions: { [TASKS_EXTENSION]: {} } } });
      server.setRequestHandler('tools/list', () => ({ tools: [{ name: 'job', description: 'Starts a numbered job.', inputSchema: { type: 'object' } }] }));
      server.setRequestHandler('tools/call', () => {
        const id = String(next++);
        const task = { taskId: id, status: 'working', statusMessage: `job ${id} working`, createdAt: now(), lastUpdatedAt: now(), ttlMs: 600_000, pollIntervalMs: 100, ...options.created?.(id) };
        tasks.set(id, task);
        ids.push(id);
        return { resultType: 'task', ...task } as never;
      });
      server.setRequestHandler('tasks/get', { params: TaskIdParams }, (params) => ({ resultType: 'complete', ...known(params.taskId) }) as never);
      server.setRequestHandler('tasks/update', { params: TaskIdParams }, (params) => {
        known(params.taskId);
        return ack(params.taskId) as never;
      });
      server.setRequestHandler('tasks/cancel', { params: TaskIdParams }, (params) => {
        const task = known(params.taskId);
        if (task.status === 'working' || task.status === 'input_required') Object.assign(task, { status: 'cancelled', statusMessage: `job ${params.taskId} cancelled`, lastUpdatedAt: now() });
        return ack(params.taskId) as never;
      });
      return server;
    },
    { legacy: 'reject' },
  );
  const known = (id: string): Record<string, unknown> => {
    const task = tasks.get(id);
    if (!task) throw new ProtocolError(ProtocolErrorCode.InvalidParams, `Failed to retrieve task: no job ${id}`);
    return task;
  };

  const http = createServer((req, res) => {
    void (async () => {
      const body = req.method === 'POST' ? await text(req) : undefined;
      if (body !== undefined) received.push(methodOf(body));
      await serveFetch(req, res, (request) => mcp.fetch(request), body);
    })().catch(() => res.destroy());
  });
  const { url } = await listenAt(http, '127.0.0.1', 0, '/mcp');
  return {
    url,
    ids,
    received,
    set: (id, fields) => void Object.assign(known(id), fields, { lastUpdatedAt: now() }),
    async close() {
      await mcp.close();
      http.closeAllConnections();
      await new Promise<void>((resolve) => http.close(() => resolve()));
    },
  };
}

function methodOf(body: string): string {
  try {
    const parsed = JSON.parse(body) as { method?: unknown };
    return typeof parsed.method === 'string' ? parsed.method : '(response)';
  } catch {
    return '(not json)';
  }
}
