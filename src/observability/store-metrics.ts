/**
 * Times every store operation and counts its failures, whichever store is behind it. A Proxy
 * rather than a hand-written wrapper per method: the Store interface grows with each issue,
 * and every method is an async call measured the same way.
 */
import type { Store } from '../store/store.js';
import type { GatewayMetrics } from './metrics.js';

export function instrumentStore(store: Store, metrics: GatewayMetrics): Store {
  return new Proxy(store, {
    get(target, property, receiver) {
      const value: unknown = Reflect.get(target, property, receiver);
      if (typeof value !== 'function' || typeof property !== 'string' || property === 'close') return value;
      return async (...args: unknown[]) => {
        const stop = metrics.storeDuration.startTimer({ operation: property });
        try {
          return await (value as (...a: unknown[]) => Promise<unknown>).apply(target, args);
        } catch (error) {
          metrics.storeErrors.inc({ operation: property });
          throw error;
        } finally {
          stop();
        }
      };
    },
  });
}
