/**
 * The audit trail: one JSON line per task operation, on its own pino instance so that it can
 * go to stdout, a file or both, apart from the general log. It is the only place a raw task
 * handle and a principal's subject are written.
 */
import pino, { type DestinationStream, type Logger } from 'pino';
import type { AuditConfig } from '../config/sections/audit.js';
import { isoTimestamp, logDestination, type LogWriting } from './logger.js';

export type AuditEventName = 'created' | 'get' | 'result' | 'update' | 'cancel' | 'list' | 'expired' | 'denied' | 'throttled';

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
}

export interface AuditLog {
  record(event: AuditEvent): void;
  close(): Promise<void>;
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
  const logger: Logger = pino(
    { base: { log: 'audit' }, timestamp: isoTimestamp, messageKey: 'msg' },
    streams.length === 1 ? streams[0]! : pino.multistream(streams.map((stream) => ({ stream }))),
  );
  return {
    record: (event) => logger.info(event, event.event),
    close: async () => {
      logger.flush();
      // Ending writes what is left and stops the batch timer; stdout itself stays open.
      for (const stream of owned) stream.end();
    },
  };
}
