/**
 * Instance selection for new work: round-robin over an upstream's instances, skipping an
 * instance that refused a connection until its cool-down has passed.
 */

export interface Instance {
  /** Origin of the instance, e.g. `http://10.0.0.5:3000`; also its stable name in records. */
  readonly url: string;
  /** Epoch ms until which the instance is skipped for new work; 0 when healthy. */
  coolingUntil: number;
}

export class InstancePool {
  readonly upstream: string;
  readonly instances: readonly Instance[];
  private readonly cooldownMs: number;
  private next = 0;

  constructor(upstream: string, urls: readonly string[], cooldownMs: number) {
    if (urls.length === 0) throw new Error(`upstream ${upstream} has no instances`);
    this.upstream = upstream;
    this.cooldownMs = cooldownMs;
    this.instances = urls.map((url) => ({ url: new URL(url).origin, coolingUntil: 0 }));
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

  /** The instance recorded for a session or task, if it still belongs to this upstream. */
  findInstance(url: string): Instance | undefined {
    return this.instances.find((instance) => instance.url === url);
  }

  markRefused(instance: Instance, now = Date.now()): void {
    instance.coolingUntil = now + this.cooldownMs;
  }

  markHealthy(instance: Instance): void {
    if (instance.coolingUntil !== 0) instance.coolingUntil = 0;
  }
}
