/**
 * Which task era each backend instance serves, as the probes found it
 * (generation-probe.ts): kept per upstream and instance, probed again on every policy reload and
 * every five minutes, and, for an instance that gave no answer, again and again (backing off)
 * until it answers, so an instance that comes back is learnt anew. Operators see the facts in
 * `taskgate_bridge_backend_generation` and in one log line per instance whenever they change,
 * so they can tell why a client got tasks or did not.
 *
 * Bridging is decided only on what is certain: an era the instance answered for.
 */
import type { Logger } from 'pino';
import type { GatewayMetrics } from '../observability/metrics.js';
import { probeInstance, type InstanceGenerations, type ProbeTarget } from './generation-probe.js';
import type { ExchangeLimits } from './rpc-exchange.js';

/** What an instance serves, as one label value. */
export type GenerationLabel = 'none' | '2025-11-25' | '2026-07-28' | 'both' | 'unknown';

const GENERATION_LABELS: readonly GenerationLabel[] = ['none', '2025-11-25', '2026-07-28', 'both', 'unknown'];
const RETRY_FIRST_MS = 1000;
const RETRY_MAX_MS = 30_000;
/** Every instance is asked again this often: one redeployed with another SDK is learnt anew. */
const REFRESH_MS = 5 * 60_000;

interface Entry {
  facts: InstanceGenerations;
  label: GenerationLabel;
  retryMs: number;
  timer?: NodeJS.Timeout;
  /** Bumped by every refresh: a probe started by an older one writes nothing. */
  epoch: number;
}

export class BackendGenerations {
  private readonly entries = new Map<string, Entry>();
  private readonly running = new Set<Promise<void>>();
  private targets: readonly ProbeTarget[] = [];
  private refreshTimer: NodeJS.Timeout | undefined;
  private closed = false;

  constructor(
    private readonly deps: { readonly logger: Logger; readonly metrics: GatewayMetrics },
    private readonly limits: ExchangeLimits,
  ) {}

  /** What the instance serves, as far as known. */
  of(upstream: string, instance: string): InstanceGenerations {
    return this.entries.get(key(upstream, instance))?.facts ?? {};
  }

  /** Probes every target now (a start, a reload); instances no longer listed are forgotten. */
  refresh(targets: readonly ProbeTarget[]): void {
    if (this.closed) return;
    const wanted = new Set(targets.map((target) => key(target.upstream, target.origin)));
    for (const [name, entry] of this.entries) {
      if (wanted.has(name)) continue;
      clearTimeout(entry.timer);
      this.entries.delete(name);
      const [upstream, instance] = name.split('\u0000') as [string, string];
      for (const label of GENERATION_LABELS) this.deps.metrics.bridgeBackendGeneration.remove({ upstream, instance, generation: label });
    }
    this.targets = targets;
    for (const target of targets) this.probe(target);
    clearInterval(this.refreshTimer);
    this.refreshTimer = setInterval(() => {
      for (const target of this.targets) this.probe(target);
    }, REFRESH_MS);
    this.refreshTimer.unref();
  }

  /** Resolves once no probe is running (tests; the first probes at start). */
  async settled(): Promise<void> {
    while (this.running.size > 0) await Promise.all([...this.running]);
  }

  close(): void {
    this.closed = true;
    clearInterval(this.refreshTimer);
    for (const entry of this.entries.values()) clearTimeout(entry.timer);
  }

  private probe(target: ProbeTarget): void {
    const name = key(target.upstream, target.origin);
    let entry = this.entries.get(name);
    if (!entry) {
      entry = { facts: {}, label: 'unknown', retryMs: RETRY_FIRST_MS, epoch: 0 };
      this.entries.set(name, entry);
      this.show(target, entry);
    }
    clearTimeout(entry.timer);
    const epoch = ++entry.epoch;
    const current = entry;
    const run = probeInstance(target, this.limits)
      .then((facts) => this.learn(target, current, epoch, facts))
      .catch((error: unknown) => this.deps.logger.warn({ err: error, upstream: target.upstream }, 'a backend generation probe failed'))
      .finally(() => this.running.delete(run));
    this.running.add(run);
  }

  private learn(target: ProbeTarget, entry: Entry, epoch: number, facts: InstanceGenerations): void {
    if (this.closed || entry.epoch !== epoch || this.entries.get(key(target.upstream, target.origin)) !== entry) return;
    // A question without an answer keeps what an earlier probe learnt for it.
    const merged: InstanceGenerations = {
      modern: facts.modern ?? entry.facts.modern,
      modernTasks: facts.modernTasks ?? entry.facts.modernTasks,
      legacy: facts.legacy ?? entry.facts.legacy,
      legacyTasks: facts.legacyTasks ?? entry.facts.legacyTasks,
      legacyTools: facts.legacyTools ?? (facts.legacyTasks === false ? undefined : entry.facts.legacyTools),
    };
    entry.facts = merged;
    const label = labelOf(merged);
    if (label !== entry.label) {
      entry.label = label;
      this.show(target, entry);
    }
    if (facts.authRefused) {
      this.deps.logger.warn({ upstream: target.upstream, instance: target.origin }, 'the backend refused the generation probe\'s credentials: it is not bridged (docs/bridging.md)');
    }
    const answered = (facts.modern !== undefined && facts.legacy !== undefined) || facts.authRefused === true;
    if (answered) {
      entry.retryMs = RETRY_FIRST_MS;
      return;
    }
    // No answer from the instance (down, starting, unreachable): asked again until it answers.
    entry.timer = setTimeout(() => this.probe(target), entry.retryMs);
    entry.timer.unref();
    entry.retryMs = Math.min(entry.retryMs * 2, RETRY_MAX_MS);
  }

  private show(target: ProbeTarget, entry: Entry): void {
    for (const label of GENERATION_LABELS) {
      this.deps.metrics.bridgeBackendGeneration.set({ upstream: target.upstream, instance: target.origin, generation: label }, label === entry.label ? 1 : 0);
    }
    if (entry.label === 'unknown' && entry.facts.modern === undefined && entry.facts.legacy === undefined) return;
    this.deps.logger.info(
      { upstream: target.upstream, instance: target.origin, taskGeneration: entry.label, modern: entry.facts.modern, legacy: entry.facts.legacy },
      'backend task generation learnt',
    );
  }
}

/** The generation label of what an instance serves. */
export function labelOf(facts: InstanceGenerations): GenerationLabel {
  if (facts.modernTasks === undefined && facts.legacyTasks === undefined) return 'unknown';
  if (facts.modernTasks && facts.legacyTasks) return 'both';
  if (facts.modernTasks) return '2026-07-28';
  if (facts.legacyTasks) return '2025-11-25';
  // One question unanswered, the other "no tasks": not yet certain.
  return facts.modernTasks === false && facts.legacyTasks === false ? 'none' : 'unknown';
}

function key(upstream: string, instance: string): string {
  return `${upstream}\u0000${instance}`;
}
