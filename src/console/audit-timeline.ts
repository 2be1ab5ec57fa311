/**
 * A task's audit timeline for the console's task page: the audit events this replica wrote
 * about it, kept in memory from its creation on, without the raw handle or the principal (the
 * audit trail itself stays the record of both). A run of like events (the owner's polls that
 * saw the same status) is one entry with a count and its last time. Bounded: MAX_TASKS tasks,
 * the oldest forgotten first, MAX_EVENTS entries each (the creation and the latest ones). Only a task
 * created here while the console was on has one; on a shared store, other replicas' events
 * about it are in their audit trails, not here.
 */
import type { AuditEvent, AuditLog } from '../observability/audit.js';

const MAX_TASKS = 5000;
const MAX_EVENTS = 50;

export interface TimelineEntry {
  readonly at: string;
  /** Like events in a row (a run of polls that saw one status), and when the last was. */
  count: number;
  lastAt: string;
  readonly event: AuditEvent['event'];
  readonly allowed: boolean;
  readonly reason?: string;
  readonly status?: string;
  readonly requestId?: string;
  readonly operator?: { readonly name: string; readonly role: string; readonly via: string };
  readonly operatorReason?: string;
}

export class AuditTimeline {
  /** Whether events are kept: the console is on (set by the console on each request). */
  active = false;
  private readonly byTask = new Map<string, TimelineEntry[]>();

  /** `audit`, with every event about a task also kept here while active. */
  tap(audit: AuditLog): AuditLog {
    return {
      record: (event) => {
        audit.record(event);
        if (this.active && event.handleHash !== undefined) this.add(event.handleHash, event);
      },
      close: () => audit.close(),
    };
  }

  entries(id: string): readonly TimelineEntry[] | undefined {
    return this.byTask.get(id);
  }

  private add(id: string, event: AuditEvent): void {
    let entries = this.byTask.get(id);
    // Only a creation starts a timeline: refused lookups of made-up handles must not fill it.
    if (!entries) {
      if (event.event !== 'created') return;
      entries = [];
      this.byTask.set(id, entries);
      if (this.byTask.size > MAX_TASKS) this.byTask.delete(this.byTask.keys().next().value!);
    }
    const at = new Date().toISOString();
    const last = entries.at(-1);
    if (last && last.event === event.event && last.allowed === event.allowed && last.status === event.status && last.reason === event.reason && event.operator === undefined && last.operator === undefined) {
      last.count++;
      last.lastAt = at;
      return;
    }
    entries.push({
      at,
      count: 1,
      lastAt: at,
      event: event.event,
      allowed: event.allowed,
      ...(event.reason === undefined ? {} : { reason: event.reason }),
      ...(event.status === undefined ? {} : { status: event.status }),
      ...(event.requestId === undefined ? {} : { requestId: event.requestId }),
      ...(event.operator === undefined ? {} : { operator: { name: event.operator.name, role: event.operator.role, via: event.operator.via } }),
      ...(event.operatorReason === undefined ? {} : { operatorReason: event.operatorReason }),
    });
    // The creation stays; the oldest event after it makes room.
    if (entries.length > MAX_EVENTS) entries.splice(1, 1);
  }
}
