/**
 * Instance selection for new work: round-robin over an upstream's instances, skipping an
 * instance that refused a connection until its cool-down has passed.
 *
 * A policy reload that removes an instance does not strand what lives on it: the new pool
 * keeps the instance as *draining* (findInstance still finds it for the tasks, sessions and
 * relayed server requests recorded on it) but never selects it for new work. It drains for
 * as long as anything recorded on it can live (see PoolHistory), then is forgotten.
 */

export interface Instance {
  /** Origin of the instance, e.g. `http://10.0.0.5:3000`; also its stable name in records. */
  readonly url: string;
  /** Epoch ms until which the instance is skipped for new work; 0 when healthy. */
  coolingUntil: number;
}

/** What a pool rebuilt by a policy reload takes over from the pool it replaces. */
export interface PoolHistory {
  readonly previous: InstancePool;
  /** How long an instance the reload removes stays findable (it drains, taking no new work). */
  readonly drainMs: number;
  readonly now?: number;
}

interface DrainingInstance {
  readonly instance: Instance;
  /** Epoch ms after which the instance is forgotten. */
  readonly until: number;
}

export class InstancePool {
  readonly upstream: string;
  /** The instances that take new work. */
  readonly instances: readonly Instance[];
  /**
   * Where a 2025 session the store has no record of lives: the sole instance this upstream had
   * before a reload gave it more, because sessions are not recorded while there is only one
   * (see soleInstance). Undefined when every session is recorded.
   */
  readonly unrecordedSessionsOn: Instance | undefined;
  private readonly cooldownMs: number;
  private readonly draining: ReadonlyMap<string, DrainingInstance>;
  private next = 0;

  constructor(upstream: string, urls: readonly string[], cooldownMs: number, history?: PoolHistory) {
    if (urls.length === 0) throw new Error(`upstream ${upstream} has no instances`);
    this.upstream = upstream;
    this.cooldownMs = cooldownMs;
    const now = history?.now ?? Date.now();
    const previous = history?.previous;
    // An instance kept by a reload is the same object, so its cool-down carries over and a
    // request still running under the old policy cools it down for the new one too.
    this.instances = urls.map((url) => {
      const origin = new URL(url).origin;
      return previous?.findInstance(origin, now) ?? { url: origin, coolingUntil: 0 };
    });
    this.draining = previous ? InstancePool.drainingAfter(previous, this.instances, history.drainMs, now) : new Map();
    this.unrecordedSessionsOn = previous ? this.inheritUnrecordedSessions(previous, now) : undefined;
  }

  /**
   * The next instance for new work. When every instance is cooling down the one whose
   * cool-down ends first is tried anyway: refusing outright would turn a brief blip on a
   * single-instance upstream into an outage as long as the cool-down.
   */
  selectInstance(now = Date.now(), exclude?: ReadonlySet<string>): Instance | undefined {
    const count = this.instances.length;
    let fallback: Instance | undefined;
    for (let i = 0; i < count; i++) {
      const candidate = this.instances[(this.next + i) % count]!;
      if (exclude?.has(candidate.url)) continue;
      if (candidate.coolingUntil <= now) {
        this.next = (this.next + i + 1) % count;
        return candidate;
      }
      if (!fallback || candidate.coolingUntil < fallback.coolingUntil) fallback = candidate;
    }
    return fallback;
  }

  /** The instance recorded for a session or task, if it belongs (or drains) on this upstream. */
  findInstance(url: string, now = Date.now()): Instance | undefined {
    const active = this.instances.find((instance) => instance.url === url);
    if (active) return active;
    const draining = this.draining.get(url);
    return draining && draining.until > now ? draining.instance : undefined;
  }

  /**
   * The one instance every request goes to, when there is nothing to choose between: one
   * instance and none draining. Sessions are then neither looked up nor recorded.
   */
  soleInstance(now = Date.now()): Instance | undefined {
    if (this.instances.length !== 1) return undefined;
    for (const { until } of this.draining.values()) if (until > now) return undefined;
    return this.instances[0];
  }

  markRefused(instance: Instance, now = Date.now()): void {
    instance.coolingUntil = now + this.cooldownMs;
  }

  markHealthy(instance: Instance): void {
    if (instance.coolingUntil !== 0) instance.coolingUntil = 0;
  }

  /** The previous pool's instances that are gone from `kept`, each draining until its end. */
  private static drainingAfter(previous: InstancePool, kept: readonly Instance[], drainMs: number, now: number): Map<string, DrainingInstance> {
    const keptUrls = new Set(kept.map((instance) => instance.url));
    const draining = new Map<string, DrainingInstance>();
    // Still draining from an earlier reload: its end stays where it was.
    for (const entry of previous.draining.values()) {
      if (entry.until > now && !keptUrls.has(entry.instance.url)) draining.set(entry.instance.url, entry);
    }
    for (const instance of previous.instances) {
      if (!keptUrls.has(instance.url)) draining.set(instance.url, { instance, until: now + drainMs });
    }
    return draining;
  }

  private inheritUnrecordedSessions(previous: InstancePool, now: number): Instance | undefined {
    if (this.soleInstance(now)) return undefined;
    const holder = previous.soleInstance(now) ?? previous.unrecordedSessionsOn;
    return holder && this.findInstance(holder.url, now);
  }
}
