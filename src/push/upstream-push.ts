/**
 * Backends that push task status themselves: for the backend tasks listened to on this replica,
 * one subscriptions/listen per owning instance (and credentials: per owner where the upstream's
 * credentials are the caller's own, token exchange or identity headers), naming the backend ids.
 * The ids the backend acknowledges stop being polled (backend-poller.ts); its notifications/tasks
 * are learned like a poll answer (stored as the snapshot, announced to every replica, the id
 * made the handle again). Most backends acknowledge without the ids: those tasks stay polled.
 * The set of ids changes as listeners come and go: the listen is opened again with the new set
 * (a moment later, so that a burst of listeners costs one), and the old one closed once the new
 * one is acknowledged. A listen that ends or breaks puts its tasks back on polls, and is opened
 * again after a pause.
 */
import type { Logger } from 'pino';
import type { TaskRecord } from '../task-model/task-record.js';
import type { TaskDeps } from '../tasks/task-context.js';
import { isObject } from '../mcp/json.js';
import type { BackendPoller } from './backend-poller.js';
import { isEventStream } from '../mcp/media-type.js';
import { headerValue } from '../upstream/gateway-replies.js';
import { readListenStream } from './upstream-listen.js';

const REOPEN_DELAY_MS = 50;
const RETRY_MS = 5000;
/** The largest event read from a backend's listen. */
const MAX_EVENT_BYTES = 1024 * 1024;

interface Group {
  /** Backend id → the task listened to. */
  readonly tasks: Map<string, TaskRecord>;
  current?: AbortController;
  timer?: NodeJS.Timeout;
}

export class UpstreamPush {
  private readonly groups = new Map<string, Group>();
  /** The group each watched task is in (its key is not recomputed: a reload may change it). */
  private readonly keys = new Map<string, string>();
  private closed = false;

  constructor(
    private readonly poller: BackendPoller,
    private readonly logger: Logger,
    private readonly currentTasks: () => TaskDeps | undefined,
  ) {}

  /** A backend task gained its first listener on this replica. */
  watch(record: TaskRecord): void {
    const key = groupKey(record, this.currentTasks());
    this.keys.set(record.handle, key);
    let group = this.groups.get(key);
    if (!group) this.groups.set(key, (group = { tasks: new Map() }));
    group.tasks.set(record.upstreamTaskId, record);
    this.reopen(key, group, REOPEN_DELAY_MS);
  }

  /** A backend task lost its last listener on this replica. */
  unwatch(record: TaskRecord): void {
    const key = this.keys.get(record.handle);
    this.keys.delete(record.handle);
    const group = key === undefined ? undefined : this.groups.get(key);
    if (!group || !group.tasks.delete(record.upstreamTaskId)) return;
    if (group.tasks.size > 0) {
      this.reopen(key!, group, REOPEN_DELAY_MS);
      return;
    }
    clearTimeout(group.timer);
    group.current?.abort();
    this.groups.delete(key!);
  }

  close(): void {
    this.closed = true;
    for (const group of this.groups.values()) {
      clearTimeout(group.timer);
      group.current?.abort();
    }
    this.groups.clear();
    this.keys.clear();
  }

  private reopen(key: string, group: Group, delayMs: number): void {
    clearTimeout(group.timer);
    group.timer = setTimeout(() => void this.open(key, group), delayMs);
    group.timer.unref();
  }

  private async open(key: string, group: Group): Promise<void> {
    const tasks = this.currentTasks();
    const first = group.tasks.values().next().value;
    if (this.closed || !tasks || !first || this.groups.get(key) !== group) return;
    const ids = [...group.tasks.entries()].filter(([, record]) => !this.poller.hasEnded(record.handle)).map(([id]) => id);
    if (ids.length === 0) return;
    const abort = new AbortController();
    let acknowledged: string[] = [];
    const ended = () => {
      if (group.current !== abort) return;
      group.current = undefined;
      for (const id of acknowledged) this.setPushed(group, id, false);
      if (!this.closed && this.groups.get(key) === group) this.reopen(key, group, RETRY_MS);
    };
    try {
      const response = await tasks.listenUpstream(first, ids, abort.signal);
      if (!isEventStream(headerValue(response.headers['content-type']))) {
        await response.body.dump();
        // No listen here (an error, a server without subscriptions): the tasks stay polled.
        return;
      }
      const filter = await readListenStream(response.body, MAX_EVENT_BYTES, {
        onNotification: (note) => void this.learn(group, note.params),
        onEnd: ended,
      }, true);
      const previous = group.current;
      group.current = abort;
      previous?.abort();
      acknowledged = (Array.isArray(filter.taskIds) ? filter.taskIds : []).filter((id): id is string => typeof id === 'string' && group.tasks.has(id));
      for (const id of ids) this.setPushed(group, id, acknowledged.includes(id));
    } catch (error) {
      abort.abort();
      this.logger.info({ err: error, upstream: first.upstream }, 'a backend task listen could not be opened; its tasks are polled');
    }
  }

  private setPushed(group: Group, id: string, pushed: boolean): void {
    const record = group.tasks.get(id);
    if (record) this.poller.setPushed(record.handle, pushed);
  }

  private async learn(group: Group, params: unknown): Promise<void> {
    if (!isObject(params) || typeof params.taskId !== 'string') return;
    const record = group.tasks.get(params.taskId);
    // An id the gateway did not ask for has no handle to show; its backend id must not leak.
    if (!record) return;
    const task = { ...params };
    delete task._meta;
    try {
      await this.poller.learn(record.handle, task);
    } catch (error) {
      this.logger.warn({ err: error, upstream: record.upstream }, 'a pushed task status could not be stored');
    }
  }
}

/** One listen per instance, and per owner where the upstream's credentials are the caller's. */
function groupKey(record: TaskRecord, tasks: TaskDeps | undefined): string {
  const perOwner = tasks?.credentialsPerCaller(record.upstream) ?? true;
  return `${record.upstream}\n${record.instance}\n${record.upstreamPath}\n${perOwner ? record.owner : ''}`;
}
