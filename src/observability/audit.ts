/**
 * The audit trail: one JSON line per task operation, apart from the general log, to stdout, a
 * file or both. It is the only place a raw task handle and a principal's subject are written.
 *
 * Lines are pino's shape (`level`, `time`, `log: "audit"`, the event's fields, `msg`: the
 * event name) and go to pino's destinations (sonic-boom, as logging.buffered says), but are
 * serialised here, by one native JSON.stringify of the event: a task operation writes one per
 * request, and pino's generic per-key serialisation cost several times that in the cached poll
 * profile. The event has no field to redact and nothing pino adds (no mixin, no bindings).
 */
import type { DestinationStream } from 'pino';
import type { AuditConfig } from '../config/sections/audit.js';
import { isoTimestamp, logDestination, type LogWriting } from './logger.js';

export type AuditEventName =
  | 'created'
  | 'get'
  | 'result'
  | 'update'
  | 'cancel'
  | 'list'
  | 'expired'
  | 'denied'
  | 'throttled'
  | 'limited'
  | 'suspended'
  // An operator's act through the console (src/console/): who, on what, and why.
  | 'operator_cancel'
  | 'operator_suspend'
  | 'operator_unsuspend';

/** Who acted through the console: a static token's name, or a JWT's issuer and subject. */
export interface AuditOperator {
  readonly name: string;
  readonly role: string;
  readonly via: 'token' | 'jwt';
  readonly issuer?: string;
}

export interface AuditEvent {
  event: AuditEventName;
  allowed: boolean;
  /** Why an operation was not allowed: not_found, denied (another owner's), or the limit hit. */
  reason?: string;
  /** The raw handle (for a refused lookup: the value the client sent, cut to 64 characters). */
  handle?: string;
  handleHash?: string;
  principal?: { issuer: string; subject: string; tenant?: string; clientId?: string };
  tool?: string;
  upstream?: string;
  instance?: string;
  /** The task status the gateway saw with this operation. */
  status?: string;
  source?: string;
  requestId?: string;
  /** Operator actions: who acted, the reason they gave, the principal key acted on, for how long. */
  operator?: AuditOperator;
  operatorReason?: string;
  owner?: string;
  durationMs?: number;
}

export interface AuditLog {
  record(event: AuditEvent): void;
  close(): Promise<void>;
}

/** pino's number for info, the level every audit line has. */
const INFO = 30;

/** One line: pino's fields first, then the event's (undefined ones left out), then msg. */
export function auditLine(event: AuditEvent): string {
  // The event always has `event` and `allowed`, so the object's text is never empty.
  return `{"level":${INFO}${isoTimestamp()},"log":"audit",${JSON.stringify(event).slice(1, -1)},"msg":"${event.event}"}\n`;
}

/**
 * `destination` replaces the policy's (tests capture the stream). The policy's are written as
 * logging.buffered says, like the general log; `onDrop` counts lines a stuck one dropped.
 */
export function createAuditLog(config: AuditConfig, writing: LogWriting, onDrop: () => void, destination?: DestinationStream): AuditLog {
  const streams: DestinationStream[] = [];
  const owned: ReturnType<typeof logDestination>[] = [];
  if (destination) streams.push(destination);
  else {
    if (config.stdout) owned.push(logDestination(1, writing, onDrop));
    if (config.file) owned.push(logDestination(config.file, writing, onDrop));
    streams.push(...owned);
  }
  if (streams.length === 0) return { record: () => undefined, close: async () => undefined };
  return {
    record: (event) => {
      const line = auditLine(event);
      for (const stream of streams) stream.write(line);
    },
    close: async () => {
      // Ending writes what is left and stops the batch timer; stdout itself stays open.
      for (const stream of owned) {
        stream.flush();
        stream.end();
      }
    },
  };
}
