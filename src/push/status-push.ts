/**
 * Task status pushed to the client (DESIGN.md §10, docs/status-push.md): a 2026-07-28
 * subscriptions/listen naming task handles in `notifications.taskIds` is answered by the gateway
 * itself. This is the room's one door: the tasks stage hands it every modern listen (listen);
 * it lives as long as the gateway (its streams outlive any policy), each request bringing its
 * own policy.
 *
 * The client's stream carries, after `notifications/subscriptions/acknowledged` (the handles
 * granted: the caller's own live tasks; any other is left out exactly alike, and audited),
 * a notifications/tasks with the full DetailedTask whenever what tasks/get would answer
 * changes, fed by TaskEvents from every replica (task-subscription.ts). Backend tasks are
 * polled by the gateway meanwhile (backend-poller.ts). What else the filter asks for
 * (list-changed, resource subscriptions) comes from a listen on the route's backend, relayed
 * onto the same stream (upstream-listen.ts). Once every task ended and nothing else was asked
 * for, the stream ends with the listen's response.
 */
import type { TaskRequest } from '../tasks/task-request.js';
import type { Logger } from 'pino';
import { GatewayError } from '../errors.js';
import { declaresTasksExtension, TASKS_EXTENSION } from '../mcp/era.js';
import type { JsonRpcRequest } from '../mcp/jsonrpc.js';
import type { GatewayMetrics } from '../observability/metrics.js';
import type { TaskObserver } from '../observability/task-observer.js';
import type { Store } from '../store/store.js';
import type { TaskRecord } from '../task-model/task-record.js';
import type { MethodTakeover } from '../tasks/extension-points.js';
import { ownerOf, taskKindHandler, type LocalAnswer, type TaskDeps } from '../tasks/task-context.js';
import { isObject, type JsonObject } from '../mcp/json.js';
import { BackendPoller } from './backend-poller.js';
import { grantHandles } from './granted-handles.js';
import { ListenerStream } from './listener-stream.js';
import { TaskSubscription } from './task-subscription.js';
import { UpstreamPush } from './upstream-push.js';
import { ACKNOWLEDGED, openClientListen, type OpenUpstreamListen } from './upstream-listen.js';

export interface StatusPushDeps {
  readonly store: Store;
  readonly logger: Logger;
  readonly metrics: GatewayMetrics;
  readonly observer: TaskObserver;
}

const STREAM_HEADERS = { 'cache-control': 'no-cache', 'x-accel-buffering': 'no' };

export class StatusPush implements MethodTakeover {
  readonly method = 'subscriptions/listen';
  readonly era = 'modern';
  private readonly deps: StatusPushDeps;
  private readonly poller: BackendPoller;
  private readonly upstreams: UpstreamPush;
  /** Open task listens per principal on this replica (tasks.push.maxSubscriptionsPerPrincipal). */
  private readonly openByOwner = new Map<string, number>();
  private readonly streams = new Set<ListenerStream>();
  /** Open listens per task handle on this replica (read by the operator console, via gateway.ts). */
  private readonly listenersByHandle = new Map<string, number>();
  private currentTasks: () => TaskDeps | undefined = () => undefined;

  constructor(deps: StatusPushDeps) {
    this.deps = deps;
    this.poller = new BackendPoller({ ...deps, currentTasks: () => this.currentTasks() });
    this.upstreams = new UpstreamPush(this.poller, deps.logger, () => this.currentTasks());
  }

  /** Where the gateway's own polls take the policy in force from (set once the policy is built). */
  usePolicy(currentTasks: () => TaskDeps): void {
    this.currentTasks = currentTasks;
  }

  /** Listens open on this replica, and backend tasks polled for them (tests, bench). */
  get stats(): { listeners: number; polledTasks: number } {
    return { listeners: this.streams.size, polledTasks: this.poller.size };
  }

  /** Listens open on this replica that were granted `handle` (0 for any other). */
  listenersOf(handle: string): number {
    return this.listenersByHandle.get(handle) ?? 0;
  }

  /** MethodTakeover: a modern subscriptions/listen; the answer, or undefined to forward it as it is (no taskIds). */
  async takeOver(deps: TaskDeps, request: TaskRequest, message: JsonRpcRequest): Promise<LocalAnswer | undefined> {
    const params = isObject(message.params) ? message.params : {};
    const filter = params.notifications;
    if (!isObject(filter) || !('taskIds' in filter)) return undefined;
    if (!declaresTasksExtension(message)) {
      throw new GatewayError('TG_ERR_MISSING_CAPABILITY', { data: { requiredCapabilities: { extensions: { [TASKS_EXTENSION]: {} } } } });
    }
    const limits = deps.policy.push;
    const asked = Array.isArray(filter.taskIds) ? (filter.taskIds as unknown[]) : [];
    if (asked.length > limits.maxTaskIdsPerSubscription) {
      throw new GatewayError('TG_ERR_TOO_MANY_TASK_IDS', { data: { maxTaskIds: limits.maxTaskIdsPerSubscription } });
    }
    const owner = ownerOf(request);
    const open = this.openByOwner.get(owner) ?? 0;
    if (open >= limits.maxSubscriptionsPerPrincipal) {
      throw new GatewayError('TG_ERR_TOO_MANY_SUBSCRIPTIONS', { data: { maxSubscriptions: limits.maxSubscriptionsPerPrincipal } });
    }
    // Held from here, before anything is awaited: concurrent listens cannot overshoot the cap.
    this.openByOwner.set(owner, open + 1);
    let left = false;
    const leave = () => {
      if (left) return;
      left = true;
      this.leave(owner);
    };
    try {
      return await this.start(deps, request, message, filter, asked, leave);
    } catch (error) {
      leave();
      throw error;
    }
  }

  /**
   * Ends every listener's subscription (the gateway is closing): gracefully, with the listen
   * request's SubscriptionsListenResult, as the 2026-07-28 schema asks of a server shutting
   * down, so a client can tell "listen again elsewhere" from a broken connection.
   */
  close(): void {
    for (const stream of [...this.streams]) stream.complete();
    this.upstreams.close();
    this.poller.close();
  }

  private async start(deps: TaskDeps, request: TaskRequest, message: JsonRpcRequest, filter: JsonObject, asked: unknown[], leave: () => void): Promise<LocalAnswer> {
    const granted = await grantHandles(deps, request, asked);
    const rest: JsonObject = { ...filter };
    delete rest.taskIds;
    const metrics = this.deps.metrics;
    // Made once the stream is acknowledged; the stream's callbacks may run before that.
    const held: { subscription?: TaskSubscription } = {};
    let upstream: OpenUpstreamListen | undefined;
    let started = false;
    const stream = new ListenerStream({
      subscriptionId: message.id,
      maxBufferBytes: deps.policy.push.bufferBytes,
      stallMs: deps.policy.push.stallTimeout,
      onDrop: (reason) => metrics.pushNotifications.inc({ outcome: 'dropped', reason }),
      onClose: () => {
        held.subscription?.stop();
        upstream?.close();
        if (started) {
          for (const record of granted) if (this.polled(deps, record) && this.poller.release(record.handle) && record.kind === 'backend') this.upstreams.unwatch(record);
          this.streams.delete(stream);
          for (const record of granted) this.countListener(record.handle, -1);
          metrics.pushSubscriptions.dec();
        }
        leave();
      },
    });
    let upstreamOpen = false;
    const endIfDone = () => {
      if (!upstreamOpen && held.subscription?.allEnded) stream.complete();
    };
    let acknowledged: JsonObject = {};
    // The backend's notifications wait until the stream's own acknowledgement has been written.
    let early: JsonObject[] | undefined = [];
    const relay = (note: JsonObject) => stream.notify(String(note.method), isObject(note.params) ? note.params : {});
    if (asksMore(rest)) {
      let opened: OpenUpstreamListen | LocalAnswer;
      try {
        opened = await openClientListen(request, this.deps.store, message, rest, {
          onNotification: (note) => (early ? early.push(note) : relay(note)),
          onEnd: () => {
            upstreamOpen = false;
            endIfDone();
          },
        });
      } catch (error) {
        stream.abort();
        throw error;
      }
      if (!('acknowledged' in opened)) {
        stream.abort();
        return opened;
      }
      upstream = opened;
      upstreamOpen = true;
      acknowledged = { ...opened.acknowledged };
      delete acknowledged.taskIds;
    }
    if (!stream.isOpen) return { status: 200, body: stream.body, contentType: 'text/event-stream', headers: STREAM_HEADERS };
    started = true;
    this.streams.add(stream);
    for (const record of granted) this.countListener(record.handle, 1);
    metrics.pushSubscriptions.inc();
    stream.notify(ACKNOWLEDGED, { notifications: { ...acknowledged, taskIds: granted.map((r) => r.handle) } });
    for (const note of early) relay(note);
    early = undefined;
    // Backend tasks, and tasks of a kind whose handler can ask its backend (refresh: bridged
    // tasks), are polled while listened to; only a backend task's own backend is listened to.
    for (const record of granted) if (this.polled(deps, record) && this.poller.acquire(record) && record.kind === 'backend') this.upstreams.watch(record);
    const subscription = new TaskSubscription(this.deps, stream, granted.map((r) => r.handle), endIfDone);
    held.subscription = subscription;
    request.abort.once('abort', () => stream.abort());
    // The client may have left while the handles were read or the backend listen opened.
    if (request.abort.aborted) stream.abort();
    subscription.start();
    return { status: 200, body: stream.body, contentType: 'text/event-stream', headers: STREAM_HEADERS };
  }

  /** Whether a listened-to task is polled here: a backend task, or one whose kind can be refreshed. */
  private polled(deps: TaskDeps, record: TaskRecord): boolean {
    return record.kind === 'backend' || taskKindHandler(deps, record)?.refresh !== undefined;
  }

  private countListener(handle: string, delta: number): void {
    const next = (this.listenersByHandle.get(handle) ?? 0) + delta;
    if (next > 0) this.listenersByHandle.set(handle, next);
    else this.listenersByHandle.delete(handle);
  }

  private leave(owner: string): void {
    const left = (this.openByOwner.get(owner) ?? 1) - 1;
    if (left > 0) this.openByOwner.set(owner, left);
    else this.openByOwner.delete(owner);
  }
}

/** Whether a filter (without taskIds) still asks for anything. */
function asksMore(filter: JsonObject): boolean {
  return Object.values(filter).some((value) => value === true || (Array.isArray(value) && value.length > 0));
}

