/** The embedded store: one process, bounded maps, nothing shared. */
import type { CreateTaskOutcome, LiveTaskCursor, LiveTaskPage, PollActivity, PollLimits, PollOpening, Store, TaskListPosition } from './store.js';
import { MemoryLimitStore } from './memory-limit-store.js';
import { MemoryTaskTable } from './memory-task-table.js';
import { TtlMap } from '../lifecycle/ttl-map.js';
import { MemoryTaskEvents } from './memory-task-events.js';
import type { ProvidedState, ProvidedTaskView } from '../task-model/provided-state.js';
import { changesNothing, type ServerRequestRoute, type TaskPatch, type TaskRecord, type TaskScope } from '../task-model/task-record.js';

export interface MemoryStoreOptions {
  maxSessions: number;
  maxTasks: number;
  /** Relayed server→client requests awaiting their answer. */
  maxServerRequests?: number;
  /** Rate-limit windows (one per principal and window) held at once. */
  maxRateWindows?: number;
  sweepIntervalMs?: number;
}

export class MemoryStore implements Store {
  readonly kind = 'memory' as const;
  readonly events = new MemoryTaskEvents();
  readonly limits = new MemoryLimitStore();
  private readonly sessions: TtlMap<string>;
  private readonly serverRequests: TtlMap<ServerRequestRoute>;
  private readonly tasks: MemoryTaskTable;
  private readonly windows: TtlMap<{ start: number; count: number }>;
  private readonly sweeper: NodeJS.Timeout;

  constructor(options: MemoryStoreOptions) {
    this.sessions = new TtlMap(options.maxSessions);
    this.serverRequests = new TtlMap(options.maxServerRequests ?? 10_000);
    this.tasks = new MemoryTaskTable(options.maxTasks);
    this.windows = new TtlMap(options.maxRateWindows ?? 100_000);
    this.sweeper = setInterval(() => {
      this.sessions.sweep();
      this.serverRequests.sweep();
      this.windows.sweep();
      this.limits.sweep();
    }, options.sweepIntervalMs ?? 60_000);
    this.sweeper.unref();
  }

  async touchSession(upstream: string, sessionId: string, ttlMs: number): Promise<string | undefined> {
    const key = sessionKey(upstream, sessionId);
    const instance = this.sessions.get(key);
    if (instance !== undefined) this.sessions.set(key, instance, ttlMs);
    return instance;
  }

  async setSessionInstance(upstream: string, sessionId: string, instance: string, ttlMs: number): Promise<void> {
    this.sessions.set(sessionKey(upstream, sessionId), instance, ttlMs);
  }

  async deleteSession(upstream: string, sessionId: string): Promise<void> {
    this.sessions.delete(sessionKey(upstream, sessionId));
  }

  async createTask(record: TaskRecord, maxLivePerOwner: number): Promise<CreateTaskOutcome> {
    return this.tasks.create(record, maxLivePerOwner, Date.now());
  }

  async getTask(handle: string): Promise<TaskRecord | undefined> {
    return this.tasks.get(handle, Date.now());
  }

  async updateTask(handle: string, patch: TaskPatch): Promise<void> {
    this.tasks.update(handle, patch);
  }

  async deleteTask(handle: string): Promise<void> {
    this.tasks.delete(handle);
  }

  async createProvidedTask(record: TaskRecord, state: ProvidedState, maxLivePerOwner: number): Promise<CreateTaskOutcome> {
    return this.tasks.createProvided(record, state, maxLivePerOwner, Date.now());
  }

  async readProvidedTask(handle: string): Promise<ProvidedTaskView | undefined> {
    return this.tasks.readProvided(handle, Date.now());
  }

  async writeProvidedTask(handle: string, rev: number, patch: TaskPatch, state: ProvidedState): Promise<boolean> {
    return this.tasks.writeProvided(handle, rev, patch, state, Date.now());
  }

  async writeProvidedProgress(handle: string, statusMessage: string, lastUpdatedAtIso: string): Promise<boolean> {
    return this.tasks.writeProvidedProgress(handle, statusMessage, lastUpdatedAtIso, Date.now());
  }

  async holdLease(handle: string, holder: string, until: number): Promise<boolean> {
    return this.tasks.holdLease(handle, holder, until, Date.now());
  }

  async releaseLease(handle: string, holder: string): Promise<void> {
    this.tasks.releaseLease(handle, holder);
  }

  async takeLapsedLeases(now: number, limit: number): Promise<string[]> {
    return this.tasks.takeLapsedLeases(now, limit);
  }

  async findTaskHandle(upstream: string, instance: string, upstreamTaskId: string): Promise<string | undefined> {
    return this.tasks.findHandle(upstream, instance, upstreamTaskId);
  }

  async listTasks(scope: TaskScope, after: TaskListPosition | undefined, limit: number): Promise<TaskRecord[]> {
    return this.tasks.list(scope, after, limit, Date.now());
  }

  async scanLiveTasks(after: LiveTaskCursor | undefined, limit: number, now: number): Promise<LiveTaskPage> {
    return this.tasks.scanLive(after, limit, now);
  }

  async takeExpiredTasks(now: number, limit: number): Promise<TaskRecord[]> {
    return this.tasks.takeExpired(now, limit);
  }

  async openPoll(handle: string, scope: TaskScope, now: number, limits: PollLimits): Promise<PollOpening> {
    return this.tasks.openPoll(handle, scope, now, limits);
  }

  // Synchronous like every write here: done by the time the call returns its promise.
  async recordPoll(record: TaskRecord, patch: TaskPatch, snapshot: string, snapshotTag?: string): Promise<void> {
    // The snapshot held is its own tag here: comparing the strings is as cheap as a digest.
    if (snapshot === snapshotTag && changesNothing(record, patch)) return;
    this.tasks.recordPoll(record.handle, patch, snapshot);
  }

  async readPollSnapshot(handle: string): Promise<{ record: TaskRecord; snapshot?: string } | undefined> {
    return this.tasks.readPollSnapshot(handle, Date.now());
  }

  async invalidatePoll(handle: string): Promise<void> {
    this.tasks.invalidatePoll(handle);
  }

  async readPollActivity(handles: readonly string[]): Promise<PollActivity[]> {
    return handles.map((handle) => this.tasks.pollActivity(handle));
  }

  async countInWindow(key: string, windowMs: number, now: number): Promise<{ count: number; resetAt: number }> {
    const start = now - (now % windowMs);
    const current = this.windows.get(key, now);
    const entry = current && current.start === start ? { start, count: current.count + 1 } : { start, count: 1 };
    this.windows.set(key, entry, start + windowMs - now, now);
    return { count: entry.count, resetAt: start + windowMs };
  }

  async putServerRequest(id: string, route: ServerRequestRoute, ttlMs: number): Promise<void> {
    this.serverRequests.set(id, route, ttlMs);
  }

  async takeServerRequest(id: string): Promise<ServerRequestRoute | undefined> {
    const route = this.serverRequests.get(id);
    if (route) this.serverRequests.delete(id);
    return route;
  }

  async isReady(): Promise<boolean> {
    return true;
  }

  async close(): Promise<void> {
    clearInterval(this.sweeper);
    await this.events.close();
    this.sessions.clear();
    this.serverRequests.clear();
    this.windows.clear();
    this.tasks.clear();
    this.limits.clear();
  }
}

// Session ids are chosen by backends, so they are namespaced by upstream: two upstreams may
// hand out the same id.
function sessionKey(upstream: string, sessionId: string): string {
  return `${upstream}\u0000${sessionId}`;
}
