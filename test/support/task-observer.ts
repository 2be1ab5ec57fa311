/**
 * A real TaskObserver (metrics, audit trail, detectors) for tests that drive tasks outside a
 * gateway: the audit trail writes nowhere, the log is silent.
 */
import type { Logger } from 'pino';
import { auditSchema } from '../../src/config/sections/audit.js';
import { createAuditLog } from '../../src/observability/audit.js';
import { createHandleHasher } from '../../src/observability/handle-hash.js';
import type { GatewayMetrics } from '../../src/observability/metrics.js';
import { TaskObserver } from '../../src/observability/task-observer.js';

export function quietTaskObserver(metrics: GatewayMetrics, logger: Logger): TaskObserver {
  const audit = auditSchema.parse({});
  const trail = createAuditLog({ ...audit, stdout: false }, { buffered: false, flushInterval: 250 }, () => undefined);
  return new TaskObserver(metrics, trail, createHandleHasher('test-salt-0123456789'), logger, audit);
}
