/**
 * Which of the client's errors were the documented answers to a fault: each error class the
 * gateway documents for a fault, accepted only inside that fault's window (and, where it
 * concerns one instance or one replica, only for that one). Errors a replica's crash caused are
 * counted apart (a crash itself fails the run). Whatever is left is unexplained: the two gateway
 * defects the soak found (docs/benchmarks.md, "Soak", Findings) are fixed, so errors like
 * theirs now count as unexplained.
 */
import type { FaultRecord } from './faults.js';
import type { ErrorEvent } from './recorder.js';
import type { FaultKind } from './settings.js';

/**
 * What an error answered: a fault; a task's TTL passing; a cancel that came after the task
 * ended; or the store not answering within store.commandTimeout when no fault was injected
 * (the replica says so in its log: on a machine busy with other work, Redis or the replica can
 * stall that long).
 */
export type Cause = FaultKind | 'ttl' | 'late-cancel' | 'store-timeout' | 'replica-crash';

/** What a rule may look at besides the error: the fault of its cause, the replicas' own store outages. */
export interface RuleContext {
  fault?: FaultRecord;
  /** [from, to] of each outage the replica logged (to: Infinity while it lasted). */
  storeOutages: Record<string, [number, number][]>;
  /** [crash, back] of each time the replica crashed (back: Infinity if it never was). */
  crashes: Record<string, [number, number][]>;
  /** store.commandTimeout in force: a 503 -31004 that took at least this long waited out a store command. */
  commandTimeoutMs: number;
}

interface Rule {
  cause: Cause;
  /** A documented answer, or a known defect of the gateway's (named in `source`). */
  verdict: 'documented' | 'defect';
  classes: string[];
  /** Where the gateway (or the nature of the fault) says so. */
  source: string;
  /** Whether the error falls in the reach of `ctx.fault` (the faults of the rule's cause, one by one). */
  covers(event: ErrorEvent, ctx: RuleContext): boolean;
}

/** Between a replica's log line and the answers it gave (the line is written when the connection gives up, or comes back). */
const OUTAGE_SLACK_MS = 1000;
/** Requests in flight to a lost instance when it died, or sent before its refusal was learnt. */
const IN_FLIGHT_MS = 5000;

/** Whether the request was in flight at some time between the fault's injection and `endMs`. */
const within = (event: ErrorEvent, fault: FaultRecord | undefined, endMs: number | undefined) =>
  fault?.injectedAt !== undefined && event.at >= fault.injectedAt && event.sentAt <= (endMs ?? Infinity);

export const RULES: Rule[] = [
  {
    cause: 'redis-restart',
    verdict: 'documented',
    classes: ['503 TG_ERR_STORE_UNAVAILABLE'],
    source: 'docs/operations.md "Failing closed": task operations and 2025 sessions answer 503 -31004 while Redis is away, and until each connection is back (one the restart left half-open is dropped after store.commandTimeout)',
    covers: (e, { fault: f }) => within(e, f, (f?.recoveredAt ?? Infinity) + (f?.graceMs ?? 0)),
  },
  {
    cause: 'replica-kill',
    verdict: 'documented',
    classes: ['connection refused', 'connection closed'],
    source: 'a process killed with SIGKILL answers nothing: its connections are cut or refused until it is back (the load balancer\'s health check takes it out)',
    covers: (e, { fault: f }) => e.replica === f?.target && within(e, f, (f.recoveredAt ?? Infinity) + f.graceMs),
  },
  {
    cause: 'backend-loss',
    verdict: 'documented',
    classes: ['503 TG_ERR_UPSTREAM_UNAVAILABLE'],
    source: 'docs/operations.md runbook "TaskgateUpstreamRefusing": sessions and tasks that live on the refusing instance get 503 -31005',
    covers: (e, { fault: f }) => e.instance === f?.target && within(e, f, undefined),
  },
  {
    cause: 'backend-loss',
    verdict: 'documented',
    classes: ['502 TG_ERR_BAD_GATEWAY', '503 TG_ERR_UPSTREAM_UNAVAILABLE', '504 TG_ERR_UPSTREAM_TIMEOUT'],
    source: 'docs/errors.md TG_ERR_BAD_GATEWAY "the upstream failed mid-request": requests in flight to the instance when it died',
    covers: (e, { fault: f }) => within(e, f, (f?.injectedAt ?? 0) + IN_FLIGHT_MS),
  },
  {
    cause: 'ttl',
    verdict: 'documented',
    classes: ['200 TG_ERR_TASK_NOT_FOUND'],
    source: 'docs/policy.md tasks.ttl.max: after its TTL the handle is forgotten (a poll that comes later is answered not found)',
    covers: (e) => e.ttlEndsAt !== undefined && e.at > e.ttlEndsAt,
  },
  {
    cause: 'late-cancel',
    verdict: 'documented',
    classes: ['200 TG_ERR_TASK_TERMINAL', '200 backend error -32602'],
    source: 'docs/errors.md TG_ERR_TASK_TERMINAL: a 2025-11-25 tasks/cancel of a task that has already ended (the backend answers its own -32602 alike)',
    covers: (e) => e.kind === 'cancel',
  },
  {
    cause: 'store-timeout',
    verdict: 'documented',
    classes: ['503 TG_ERR_STORE_UNAVAILABLE'],
    source: 'docs/operations.md "Failing closed": Redis did not answer within store.commandTimeout, with no fault injected: the replica that answered logged its store unreachable then, or the answer itself took at least that long',
    covers: (e, { storeOutages, commandTimeoutMs }) =>
      e.at - e.sentAt >= commandTimeoutMs || (storeOutages[e.replica] ?? []).some(([from, to]) => e.at >= from - OUTAGE_SLACK_MS && e.sentAt <= to + OUTAGE_SLACK_MS),
  },
  {
    cause: 'replica-crash',
    verdict: 'defect',
    classes: ['connection refused', 'connection closed'],
    source: 'a replica crashed (the report shows its stderr) and was started again a second later, as a supervisor would: its connections were cut or refused meanwhile',
    covers: (e, { crashes }) => (crashes[e.replica] ?? []).some(([from, to]) => e.at >= from - OUTAGE_SLACK_MS && e.sentAt <= to + OUTAGE_SLACK_MS),
  },
];

export interface ErrorRow {
  cls: string;
  total: number;
  /** By cause: how many were its documented answer. */
  documented: Partial<Record<Cause, number>>;
  /** Known gateway defects (see RULES). */
  defect: number;
  unexplained: number;
  /** By request kind (create, poll, …). */
  byKind: Record<string, number>;
  /** A few of the unexplained, for the report. */
  examples: ErrorEvent[];
}

const OWN_CAUSES = new Set<Cause>(['ttl', 'late-cancel', 'store-timeout', 'replica-crash']);

export function attributeErrors(errors: ErrorEvent[], faults: FaultRecord[], facts: Omit<RuleContext, 'fault'> = { storeOutages: {}, crashes: {}, commandTimeoutMs: 500 }): ErrorRow[] {
  const rows = new Map<string, ErrorRow>();
  for (const event of errors) {
    let row = rows.get(event.cls);
    if (!row) rows.set(event.cls, (row = { cls: event.cls, total: 0, documented: {}, defect: 0, unexplained: 0, byKind: {}, examples: [] }));
    row.total++;
    row.byKind[event.kind] = (row.byKind[event.kind] ?? 0) + 1;
    const rule = RULES.find((r) => r.classes.includes(event.cls) && (OWN_CAUSES.has(r.cause) ? r.covers(event, facts) : faults.some((fault) => fault.kind === r.cause && r.covers(event, { ...facts, fault }))));
    if (rule?.verdict === 'documented') row.documented[rule.cause] = (row.documented[rule.cause] ?? 0) + 1;
    else if (rule) row.defect++;
    else {
      row.unexplained++;
      if (row.examples.length < 5) row.examples.push(event);
    }
  }
  return [...rows.values()].sort((a, b) => b.total - a.total);
}
