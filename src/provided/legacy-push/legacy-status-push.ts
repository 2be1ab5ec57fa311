/**
 * 2025-11-25 status push for the tasks the gateway runs itself (DESIGN.md §10,
 * docs/provided-tasks.md "Status push"): a provided task's status changes go to the client
 * session that created it as `notifications/tasks/status`, on that session's standalone GET
 * stream when it has one open (the spec makes these notifications optional; the poll stays the
 * truth). Per replica: the open GET streams it relays, by (owner, upstream, session). Across
 * replicas: a creation is announced under the session's key on the store's task
 * announcements, so the replica holding the session's GET stream finds the task (from the
 * owner's task list) and follows it by the task's own announcements.
 */
import { createHash } from 'node:crypto';
import type { Transform } from 'node:stream';
import type { TaskRequest } from '../../tasks/task-request.js';
import type { TaskRecord } from '../../task-model/task-record.js';
import { wireOf } from '../../task-model/task-wire.js';
import { ownerOf } from '../../tasks/task-context.js';
import { SessionOutput } from './session-output.js';
import { SessionWatch, type SessionKey, type WatchDeps } from './session-watch.js';

/**
 * The announcement key of a session's task creations. Announcements are keyed by task handle
 * (32 base64url characters); a session key has a prefix no handle has, and is a digest, so
 * neither the principal nor the session id travels through Redis.
 */
function announcementKey({ owner, upstream, session }: SessionKey): string {
  const digest = createHash('sha256').update(owner).update('\0').update(upstream).update('\0').update(session).digest('base64url');
  return `session:${digest}`;
}

export class LegacyStatusPush {
  readonly #deps: WatchDeps;
  readonly #watches = new Map<string, SessionWatch>();

  constructor(deps: WatchDeps) {
    this.#deps = deps;
  }

  /** Sessions with an open GET stream on this replica. */
  get sessions(): number {
    return this.#watches.size;
  }

  /**
   * The stream to send the client for a relayed event stream: for a legacy session's standalone
   * GET, one that also carries the session's task status notifications; otherwise `tap` itself.
   */
  attach(request: TaskRequest, tap: Transform): Transform {
    if (request.httpMethod !== 'GET' || request.sessionId === undefined) return tap;
    const upstream = request.route.pool.upstream;
    // An upstream the gateway runs no tasks for has nothing to push.
    if (request.route.config.providedTasks === undefined) return tap;
    const key: SessionKey = { owner: ownerOf(request), upstream, session: request.sessionId };
    const id = announcementKey(key);
    let watch = this.#watches.get(id);
    if (!watch) {
      watch = new SessionWatch(this.#deps, key, id);
      this.#watches.set(id, watch);
      this.#deps.metrics.legacyStatusStreams.set(this.#watches.size);
    }
    const output = new SessionOutput(tap);
    watch.add(output);
    const opened = watch;
    output.stream.once('close', () => {
      if (!opened.remove(output) || this.#watches.get(id) !== opened) return;
      opened.close();
      this.#watches.delete(id);
      this.#deps.metrics.legacyStatusStreams.set(this.#watches.size);
    });
    return output.stream;
  }

  /** A legacy provided task was created: the replica holding its session's GET stream takes it up. */
  created(record: TaskRecord): void {
    if (!wireOf(record.era).sessions || record.upstreamSession === undefined) return;
    const key = { owner: record.owner, upstream: record.upstream, session: record.upstreamSession };
    // Best effort, like every announcement: the poll stays the truth.
    this.#deps.store.events.publish(announcementKey(key)).catch(() => undefined);
  }
}
