/**
 * After the load and the faults: every handle the client was ever given is asked once more
 * (`tasks/get`), through every replica. What each must answer:
 *
 * - a task past its TTL: not found (the gateway forgets it; one within 2 s of its TTL may still answer);
 * - a backend task on the lost instance (ended or not): 503 TG_ERR_UPSTREAM_UNAVAILABLE, the
 *   documented answer, or its last answer from the poll cache;
 * - a task that ended: the status it ended with;
 * - a task still running: `working` only within its bound, else it is stuck;
 * - anything else (not found before its TTL, an error) is a task lost or unreachable.
 */
import type { FaultView, ReplicaTarget, SoakClient } from './client.js';
import { REQUEST_TIMEOUT_MS } from './client.js';
import { workingBound, type TaskEntry, type Violation } from './task-entry.js';
import { classify, OK, post, request } from './wire.js';

export interface FinalCheck {
  handles: number;
  replicas: string[];
  requests: number;
  seconds: number;
  /** Answers by what was expected of the task: `ended: ok completed`, `lost: 503 …`, … */
  answers: Record<string, number>;
  violations: Violation[];
}

const EXPIRY_SLACK_MS = 2000;

type Expectation = 'expired' | 'lost' | 'near-ttl' | 'ended' | 'live';

function expectationOf(task: TaskEntry, faults: FaultView, now: number): Expectation {
  if (now > task.receivedAt + task.ttlMs + EXPIRY_SLACK_MS) return 'expired';
  if (task.kind === 'backend' && faults.isLost(task.instance)) return 'lost';
  if (now > task.sentAt + task.ttlMs - EXPIRY_SLACK_MS) return 'near-ttl';
  return task.state === 'ended' ? 'ended' : 'live';
}

const NOT_FOUND = ' TG_ERR_TASK_NOT_FOUND';

function judge(task: TaskEntry, expectation: Expectation, cls: string, result: Record<string, unknown> | undefined, now: number, askedAt: number, faults: FaultView): string | undefined {
  const status = result ? String(result.status) : undefined;
  const nearTtl = now > task.sentAt + task.ttlMs - EXPIRY_SLACK_MS;
  // A task that ended must keep the status it ended with, whoever answers.
  const keptEnd = task.state !== 'ended' || status === task.status;
  switch (expectation) {
    case 'expired':
      return cls.endsWith(NOT_FOUND) ? undefined : `answered ${cls} ${status ?? ''} ${now - task.receivedAt - task.ttlMs} ms past its TTL`;
    case 'lost':
      // The documented 503, its last answer from the poll cache, or not found at its TTL.
      if (cls === '503 TG_ERR_UPSTREAM_UNAVAILABLE' || (nearTtl && cls.endsWith(NOT_FOUND))) return undefined;
      if (cls !== OK) return `on the lost instance, answered ${cls}`;
      return keptEnd ? undefined : `ended ${task.status} on the lost instance, now says ${status}`;
    case 'near-ttl':
      if (cls.endsWith(NOT_FOUND)) return undefined;
      if (cls !== OK) return `answered ${cls} at its TTL`;
      return keptEnd ? undefined : `ended ${task.status}, now says ${status}`;
    case 'ended':
      if (cls !== OK) return `ended ${task.status}, now answers ${cls}`;
      return keptEnd ? undefined : `ended ${task.status}, now says ${status}`;
    case 'live':
      if (cls !== OK) return `running, answers ${cls}`;
      if ((status === 'working' || status === 'input_required') && askedAt > workingBound(task, faults)) return `still ${status} when asked ${Math.round(askedAt - task.sentAt)} ms after creation (lifetime ${task.lifetimeMs} ms)`;
      return undefined;
  }
}

export async function finalCheck(client: SoakClient, faults: FaultView, width = 32): Promise<FinalCheck> {
  const started = Date.now();
  const answers: Record<string, number> = {};
  const violations: Violation[] = [];
  let requests = 0;
  const ask = async (task: TaskEntry, target: ReplicaTarget) => {
    const p = task.principal;
    const answer = await post(target.pool, p.path, request(p.era, p.token, 'tasks/get', { taskId: task.handle }, task.handle, p.session), REQUEST_TIMEOUT_MS);
    requests++;
    const now = Date.now();
    const cls = classify(answer);
    const expectation = expectationOf(task, faults, now);
    const result = cls === OK ? answer.message?.result : undefined;
    const key = `${expectation}: ${cls}${result ? ` ${String(result.status)}` : ''}`;
    answers[key] = (answers[key] ?? 0) + 1;
    const problem = judge(task, expectation, cls, result, now, now - answer.ms, faults);
    if (problem) violations.push({ what: 'unreachable', seq: task.seq, detail: `${task.kind} ${task.era} task via ${target.name}: ${problem}` });
  };
  let index = 0;
  await Promise.all(Array.from({ length: width }, async () => {
    while (index < client.tasks.length) {
      const task = client.tasks[index++]!;
      // One replica after the other: a poll that arrives while another replica's forwarded poll
      // of the same task is still on its way back gets the snapshot from before it, which
      // may be older than one interval (the last answer the gateway has seen).
      for (const target of client.targets) await ask(task, target);
    }
  }));
  return { handles: client.tasks.length, replicas: client.targets.map((t) => t.name), requests, seconds: Math.round((Date.now() - started) / 100) / 10, answers, violations };
}
