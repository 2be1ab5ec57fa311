/** What the bridge's phases share: the generations learnt, logs, and its operation count. */
import type { TaskRequest } from '../tasks/task-request.js';
import type { Logger } from 'pino';
import type { GatewayMetrics } from '../observability/metrics.js';
import type { BackendGenerations } from './backend-generations.js';

export const LEGACY_LABEL = '2025-11-25';
export const MODERN_LABEL = '2026-07-28';

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
      const modernClient = request.mcp?.era === 'modern';
      metrics.bridgeOperations.inc({
        upstream: request.route.pool.upstream,
        client: modernClient ? MODERN_LABEL : LEGACY_LABEL,
        backend: modernClient ? LEGACY_LABEL : MODERN_LABEL,
        method,
        outcome,
      });
    },
  };
}
