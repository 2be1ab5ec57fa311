/** What the bridge's phases share: the generations learnt, logs, and its operation count. */
import type { TaskRequest } from '../tasks/task-request.js';
import type { Logger } from 'pino';
import type { Era } from '../mcp/era-name.js';
import type { GatewayMetrics } from '../observability/metrics.js';
import { LEGACY_WIRE, MODERN_WIRE, type EraWire } from '../task-model/task-wire.js';
import type { BackendGenerations } from './backend-generations.js';

/** A bridged client's backend speaks the other era than the client. */
const BACKEND_WIRE: Readonly<Record<Era, EraWire>> = { legacy: MODERN_WIRE, modern: LEGACY_WIRE };

export function backendWireFor(client: EraWire): EraWire {
  return BACKEND_WIRE[client.era];
}

export interface BridgeContext {
  readonly logger: Logger;
  readonly metrics: GatewayMetrics;
  readonly generations: BackendGenerations;
  /** Counts one bridged operation (taskgate_bridge_operations_total) for the request's client era. */
  count(request: TaskRequest, method: string, outcome: 'ok' | 'error'): void;
}

export function createBridgeContext(logger: Logger, metrics: GatewayMetrics, generations: BackendGenerations): BridgeContext {
  return {
    logger,
    metrics,
    generations,
    count(request, method, outcome) {
      metrics.bridgeOperations.inc({
        upstream: request.route.pool.upstream,
        client: request.wire.revision,
        backend: backendWireFor(request.wire).revision,
        method,
        outcome,
      });
    },
  };
}
