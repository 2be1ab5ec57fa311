/**
 * Times every store operation and counts its failures, whichever store is behind it. A Proxy
 * rather than a hand-written wrapper per method: the Store interface grows with each issue,
 * and every method is an async call measured the same way. Each method's wrapper and its
 * histogram child are made once, on first use: the wrapper runs several times per task
 * request, and prom-client would otherwise hash the label object on every call.
 */
import type { Store } from '../store/store.js';
import type { GatewayMetrics } from './metrics.js';

type StoreMethod = (...args: unknown[]) => Promise<unknown>;

export function instrumentStore(store: Store, metrics: GatewayMetrics): Store {
  const wrappers = new Map<string, StoreMethod>();
  const wrap = (operation: string, method: StoreMethod): StoreMethod => {
    const duration = metrics.storeDuration.labels({ operation });
    return async (...args) => {
      const start = performance.now();
      try {
        return await method.apply(store, args);
      } catch (error) {
        metrics.storeErrors.inc({ operation });
        throw error;
      } finally {
        duration.observe((performance.now() - start) / 1000);
      }
    };
  };
  return new Proxy(store, {
    get(target, property, receiver) {
      const value: unknown = Reflect.get(target, property, receiver);
      if (typeof value !== 'function' || typeof property !== 'string' || property === 'close') return value;
      let wrapper = wrappers.get(property);
      if (!wrapper) {
        wrapper = wrap(property, value as StoreMethod);
        wrappers.set(property, wrapper);
      }
      return wrapper;
    },
  });
}
