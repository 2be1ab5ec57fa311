/**
 * A task as the soak's client knows it, and the rules it is judged by: what outcome it must
 * end with, by when it must have ended, and which failures of a task the gateway runs are the
 * documented answers to a fault (docs/provided-tasks.md, "Failure modes").
 */
import type { Era } from './wire.js';

export type TaskKind = 'backend' | 'provided';

export interface Principal {
  subject: string;
  era: Era;
  kind: TaskKind;
  /** The gateway route: /mcp (a task server) or /plain (a server without tasks; the gateway runs them). */
  path: '/mcp' | '/plain';
  token: string;
  /** 2025: the session this principal's client opened, and the instance that holds it (from its id). */
  session?: string;
  sessionInstance?: string;
  reopening?: Promise<void>;
}

export type TaskState = 'live' | 'ended' | 'lost' | 'expired' | 'vanished';

export interface TaskEntry {
  seq: number;
  /** Sent as the call's argument; its result must say `done <tag>`. */
  tag: string;
  principal: Principal;
  era: Era;
  kind: TaskKind;
  lifetimeMs: number;
  fails: boolean;
  cancels: boolean;
  sentAt: number;
  receivedAt: number;
  handle: string;
  ttlMs: number;
  intervalMs: number;
  /** The backend instance of a backend task (its status message names it). */
  instance?: string;
  /** The instance of the 2025 session it was created in. */
  sessionInstance?: string;
  state: TaskState;
  status: string;
  statusMessage?: string;
  lastSeenAt: number;
  /**
   * When a tasks/cancel was sent, when it was acknowledged, and whether the answer said
   * `cancelled` (2025). A cancel whose answer was lost (a replica killed, Redis away) may still
   * have reached the backend.
   */
  cancelSentAt?: number;
  cancelAckedAt?: number;
  cancelCertain?: boolean;
  endedAt?: number;
  /** The fault a documented failure answered (a provided task whose replica or backend died). */
  failedBy?: 'replica-kill' | 'backend-loss';
}

export interface Violation {
  what: 'stuck' | 'vanished' | 'wrong-result' | 'unexpected-outcome' | 'unreachable' | 'new-work-on-lost-instance';
  seq: number;
  detail: string;
}

/** Stretches of time when a task may take longer than its lifetime, by the documented bounds. */
export interface Delays {
  /** Redis outages: [from, to]; a provided outcome waits for Redis, a poll cannot be answered. */
  outages: [number, number][];
  /** Replica kills and the lease a provided task of the killed replica waits out (lease + the 1 s sweep). */
  kills: { at: number; leaseMs: number }[];
}

/**
 * The outcomes a task may end with, given what the client asked of it. A 2026 cancel's ack
 * says nothing of the status: the task may have ended by itself just before it.
 */
export function acceptableOutcomes(task: TaskEntry): string[] {
  const natural = task.fails ? 'failed' : 'completed';
  if (task.cancelCertain) return ['cancelled'];
  return task.cancelSentAt === undefined ? [natural] : ['cancelled', natural];
}

/** What the client knows of the faults so far. */
export interface FaultFacts {
  replicaKills: number[];
  backendLosses: { at: number; instance: string }[];
}

const REPLICA_STOPPED = /^the gateway replica running this task stopped/;
const BACKEND_GONE = /^the backend could not be reached|^the backend's reply could not be read/;

/**
 * Whether a provided task's failure is a fault's documented answer: its replica died (any
 * replica ends it "the gateway replica running this task stopped"), or its backend instance
 * did (the call fails, "the backend could not be reached" / "…reply could not be read").
 */
export function documentedFailure(task: TaskEntry, faults: FaultFacts): TaskEntry['failedBy'] {
  if (task.kind !== 'provided' || task.status !== 'failed') return undefined;
  // A call in flight when the fault came: asked for before it, seen failed after it.
  const inFlightAt = (at: number) => task.sentAt <= at && at <= (task.endedAt ?? Infinity);
  const message = task.statusMessage ?? '';
  if (REPLICA_STOPPED.test(message) && faults.replicaKills.some(inFlightAt)) return 'replica-kill';
  // A 2025 task created in a session held by the lost instance (before its client learnt of
  // the loss) is made after the loss: its call then fails at once.
  const inLostSession = faults.backendLosses.some((loss) => loss.instance === task.sessionInstance && loss.at <= task.sentAt);
  if (BACKEND_GONE.test(message) && (faults.backendLosses.some((loss) => inFlightAt(loss.at)) || inLostSession)) return 'backend-loss';
  return undefined;
}

/**
 * The latest time a task may still be seen `working`: its end, plus a poll interval (an early
 * poll is answered from the last snapshot) and a little slack; stretched by a Redis outage it
 * ran across (its outcome is written when Redis returns), and for a provided task by a replica
 * kill it ran across (the lease lapses, the sweep ends it). A cancelled task ends at its cancel.
 */
export function workingBound(task: TaskEntry, delays: Delays): number {
  const slack = 2000 + task.intervalMs / 10;
  // The backend began the task before its answer reached the client.
  const naturalEnd = Math.min(task.cancelAckedAt ?? Infinity, task.receivedAt + task.lifetimeMs);
  let bound = naturalEnd + task.intervalMs + slack;
  for (const [from, to] of delays.outages) if (from <= bound && to >= task.sentAt) bound += to - from;
  if (task.kind === 'provided') {
    for (const kill of delays.kills) if (kill.at >= task.sentAt && kill.at <= bound) bound = Math.max(bound, kill.at + kill.leaseMs + 1000 + task.intervalMs + slack);
  }
  return bound;
}

/** The instance a backend's status message names (`working on instance A`). */
export function instanceIn(statusMessage: unknown): string | undefined {
  return typeof statusMessage === 'string' ? /on instance (\w+)$/.exec(statusMessage)?.[1] : undefined;
}
