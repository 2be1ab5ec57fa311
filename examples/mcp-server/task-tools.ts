import { setTimeout as sleep } from 'node:timers/promises';
import * as z from 'zod';
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { isTerminal } from '@modelcontextprotocol/sdk/experimental/tasks';
import type { CreateTaskRequestHandlerExtra, TaskRequestHandlerExtra } from '@modelcontextprotocol/sdk/experimental/tasks';
import type { RequestTaskStore } from '@modelcontextprotocol/sdk/shared/protocol.js';
import type { CallToolResult, GetTaskResult } from '@modelcontextprotocol/sdk/types.js';

/** Retention when the client asks for none; the store would otherwise keep tasks forever. */
const DEFAULT_TTL_MS = 5 * 60_000;
/** Short, so SDK clients that honour pollInterval finish tests quickly. */
const POLL_INTERVAL_MS = 200;
const SCAN_STEP_MS = 250;
/** How long ask_name waits for an answer before the task fails. */
const ASK_TIMEOUT_MS = 10 * 60_000;

/**
 * Task tools (2025-11-25 experimental tasks), built on the SDK's own task runtime. Work runs
 * after createTask has answered, so it stops on `shutdown` rather than holding the process open.
 */
export function registerTaskTools(server: McpServer, shutdown: AbortSignal): void {
  const getTask = async (_args: unknown, extra: TaskRequestHandlerExtra): Promise<GetTaskResult> =>
    extra.taskStore.getTask(extra.taskId);
  const getTaskResult = async (_args: unknown, extra: TaskRequestHandlerExtra): Promise<CallToolResult> =>
    (await extra.taskStore.getTaskResult(extra.taskId)) as CallToolResult;

  server.experimental.tasks.registerToolTask(
    'slow_scan',
    {
      description: 'Scans for about `seconds` seconds, updating statusMessage each step; honours tasks/cancel.',
      inputSchema: { seconds: z.number().min(0).max(3600).default(3) },
      execution: { taskSupport: 'optional' },
    },
    {
      async createTask({ seconds }, extra) {
        const task = await createTask(extra);
        void runScan(task.taskId, seconds, extra.taskStore, shutdown);
        return { task };
      },
      getTask,
      getTaskResult,
    },
  );

  server.experimental.tasks.registerToolTask(
    'report_status',
    {
      description: 'Works for `seconds`, reporting `message` as its statusMessage from creation on and at every step: a backend whose status text the caller chooses.',
      inputSchema: { message: z.string().max(4096), seconds: z.number().min(0).max(3600).default(30) },
      execution: { taskSupport: 'optional' },
    },
    {
      async createTask({ message, seconds }, extra) {
        const task = await createTask(extra);
        await extra.taskStore.updateTaskStatus(task.taskId, 'working', message);
        void reportStatus(task.taskId, message, seconds, extra.taskStore, shutdown);
        return { task: await extra.taskStore.getTask(task.taskId) };
      },
      getTask,
      getTaskResult,
    },
  );

  server.experimental.tasks.registerToolTask(
    'ask_name',
    {
      description: 'Goes input_required, asks the client for a name by elicitation, then says hello.',
      inputSchema: {},
      execution: { taskSupport: 'required' },
    },
    {
      async createTask(_args, extra) {
        const task = await createTask(extra);
        void askName(server, task.taskId, extra.taskStore);
        return { task };
      },
      getTask,
      getTaskResult,
    },
  );

  server.experimental.tasks.registerToolTask(
    'fail_task',
    {
      description: 'Works for `delayMs`, then ends failed with an isError result.',
      inputSchema: { delayMs: z.number().int().min(0).max(60_000).default(100), reason: z.string().default('scan failed') },
      execution: { taskSupport: 'optional' },
    },
    {
      async createTask({ delayMs, reason }, extra) {
        const task = await createTask(extra);
        void failLater(task.taskId, delayMs, reason, extra.taskStore, shutdown);
        return { task };
      },
      getTask,
      getTaskResult,
    },
  );
}

function createTask(extra: CreateTaskRequestHandlerExtra) {
  return extra.taskStore.createTask({ ttl: extra.taskRequestedTtl ?? DEFAULT_TTL_MS, pollInterval: POLL_INTERVAL_MS });
}

async function runScan(taskId: string, seconds: number, store: RequestTaskStore, shutdown: AbortSignal): Promise<void> {
  const steps = Math.max(1, Math.ceil((seconds * 1000) / SCAN_STEP_MS));
  const stepMs = (seconds * 1000) / steps;
  try {
    for (let i = 1; i <= steps; i++) {
      await sleep(stepMs, undefined, { signal: shutdown });
      // The SDK's tasks/cancel only marks the task: the work itself has to notice and stop.
      const task = await store.getTask(taskId);
      if (isTerminal(task.status)) return;
      await store.updateTaskStatus(taskId, 'working', `scanned ${i}/${steps}`);
    }
    await store.storeTaskResult(taskId, 'completed', {
      content: [{ type: 'text', text: `scan complete: ${steps} steps in ${seconds}s` }],
    });
  } catch {
    // Cancelled, expired or shut down between two steps: nothing is left to report to.
  }
}

/** Each step sends the same status again, so a status notification follows every step. */
async function reportStatus(taskId: string, message: string, seconds: number, store: RequestTaskStore, shutdown: AbortSignal): Promise<void> {
  const steps = Math.max(1, Math.ceil((seconds * 1000) / SCAN_STEP_MS));
  try {
    for (let i = 1; i <= steps; i++) {
      await sleep(SCAN_STEP_MS, undefined, { signal: shutdown });
      const task = await store.getTask(taskId);
      if (isTerminal(task.status)) return;
      await store.updateTaskStatus(taskId, 'working', message);
    }
    await store.storeTaskResult(taskId, 'completed', { content: [{ type: 'text', text: 'reported' }] });
  } catch {
    // Cancelled, expired or shut down between two steps.
  }
}

async function askName(server: McpServer, taskId: string, store: RequestTaskStore): Promise<void> {
  try {
    await store.updateTaskStatus(taskId, 'input_required', 'waiting for a name');
    // `relatedTask` makes the SDK queue the request for the tasks/result stream of this task
    // instead of sending it on whatever stream is open.
    const answer = await server.server.elicitInput(
      {
        mode: 'form',
        message: 'What is your name?',
        requestedSchema: { type: 'object', properties: { name: { type: 'string', title: 'Name' } }, required: ['name'] },
      },
      { relatedTask: { taskId }, timeout: ASK_TIMEOUT_MS },
    );
    const name = answer.action === 'accept' ? answer.content?.name : undefined;
    if (typeof name !== 'string') {
      await store.storeTaskResult(taskId, 'failed', {
        content: [{ type: 'text', text: `No name given (${answer.action})` }],
        isError: true,
      });
      return;
    }
    await store.updateTaskStatus(taskId, 'working');
    await store.storeTaskResult(taskId, 'completed', { content: [{ type: 'text', text: `Hello, ${name}` }] });
  } catch {
    // Cancelled while waiting, timed out, or the session closed: the task keeps its last status.
  }
}

async function failLater(
  taskId: string,
  delayMs: number,
  reason: string,
  store: RequestTaskStore,
  shutdown: AbortSignal,
): Promise<void> {
  try {
    await sleep(delayMs, undefined, { signal: shutdown });
    await store.storeTaskResult(taskId, 'failed', { content: [{ type: 'text', text: reason }], isError: true });
  } catch {
    // Cancelled first, or shut down.
  }
}
