/**
 * Creating tasks and waiting for a status, through the real clients of either era: what the
 * task tests share. Waits poll at the task's own interval (2025) or every 60 ms (2026) and fail
 * with the status last seen.
 */
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { CreateTaskResultSchema, TaskStatusNotificationSchema, type GetTaskResult, type TaskStatusNotification } from '@modelcontextprotocol/sdk/types.js';
import type { TaskState, TaskView } from '@modelcontextprotocol/ext-tasks/client';
import { waitForValue } from '../../support/wait.js';
import type { ModernTaskClient } from './modern-client.js';

/** 2025: a tools/call asking for a task; the task the CreateTaskResult carries. */
export async function createLegacyTask(client: Client, tool: string, args: Record<string, unknown> = {}, ttl = 60_000) {
  const created = await client.request({ method: 'tools/call', params: { name: tool, arguments: args, task: { ttl } } }, CreateTaskResultSchema);
  return created.task;
}

/** 2025: polls tasks/get until the task is in one of `wanted`; the task then. */
export async function waitForLegacyStatus(client: Client, taskId: string, wanted: string | readonly string[], ms = 10_000) {
  const statuses = typeof wanted === 'string' ? [wanted] : wanted;
  let task: GetTaskResult | undefined;
  return waitForValue(
    async () => {
      task = await client.experimental.tasks.getTask(taskId);
      return statuses.includes(task.status) ? task : undefined;
    },
    () => `task ${taskId} to be ${statuses.join(' or ')} (it stayed ${task?.status})`,
    ms,
    () => Math.max(task?.pollInterval ?? 100, 50),
  );
}

/** 2026: polls tasks/get through ext-tasks until the task is `status`; the task then. */
export async function waitForModernStatus(client: ModernTaskClient, taskId: string, status: TaskState, ms = 10_000, everyMs = 60): Promise<TaskView> {
  let view: TaskView | undefined;
  return waitForValue(
    async () => {
      view = await client.getTask(taskId);
      return view.status === status ? view : undefined;
    },
    () => `task ${taskId} to be ${status} (it is ${view?.status})`,
    ms,
    everyMs,
  );
}

/** 2025: the notifications/tasks/status a connected client receives, as they came off the wire and as its handler got them. */
export interface TaskStatusRecording {
  /** Whole JSON-RPC messages, before the client library parsed them. */
  readonly raw: Record<string, unknown>[];
  /** What the client's notification handler was given. */
  readonly handled: TaskStatusNotification[];
  /** The statuses pushed for `taskId`, in order. */
  statusesOf(taskId: string): string[];
}

export function recordTaskStatus(client: Client): TaskStatusRecording {
  const raw: Record<string, unknown>[] = [];
  const handled: TaskStatusNotification[] = [];
  const transport = client.transport!;
  const deliver = transport.onmessage!;
  transport.onmessage = (message, extra) => {
    if ('method' in message && message.method === 'notifications/tasks/status') raw.push(structuredClone(message) as Record<string, unknown>);
    deliver(message, extra);
  };
  client.setNotificationHandler(TaskStatusNotificationSchema, (notification) => {
    handled.push(notification);
  });
  return {
    raw,
    handled,
    statusesOf: (taskId) => handled.filter((n) => n.params.taskId === taskId).map((n) => n.params.status),
  };
}
