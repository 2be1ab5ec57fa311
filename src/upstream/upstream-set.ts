/**
 * The upstreams of one policy: for each, its instance pool (balancing, cool-downs) and its
 * undici agent (keep-alive pools, timeouts). Built with the policy snapshot that uses them
 * and closed with it.
 *
 * Built after a reload, it keeps what the previous policy built for an upstream whose part of
 * the policy did not change: the agent (and its open connections) while the timeouts and
 * connection count are the same, the pool (with its cool-downs and round-robin position)
 * while the instances and cool-down are the same. An agent is shared by both snapshots and
 * closed by the last one to close; a pool rebuilt for new instances takes over the ones kept
 * and drains the ones removed (routing/balancer.ts).
 */
import { isDeepStrictEqual } from 'node:util';
import type { Config, UpstreamConfig } from '../config/index.js';
import { SharedResource } from '../lifecycle/shared-resource.js';
import { InstancePool } from '../routing/balancer.js';
import { UpstreamAgent } from './dispatcher.js';

interface UpstreamEntry {
  readonly config: UpstreamConfig;
  readonly pool: InstancePool;
  readonly agent: SharedResource<UpstreamAgent>;
}

export interface UpstreamSetOptions {
  /** The set of the policy this one replaces, whose unchanged parts are kept. */
  readonly previous?: UpstreamSet;
  /** How long an instance removed by the reload keeps draining. */
  readonly drainMs?: number;
}

export class UpstreamSet {
  readonly pools = new Map<string, InstancePool>();
  readonly agents = new Map<string, UpstreamAgent>();
  private readonly entries = new Map<string, UpstreamEntry>();
  private closed = false;

  constructor(upstreams: Config['upstreams'], options: UpstreamSetOptions = {}) {
    for (const [name, upstream] of Object.entries(upstreams)) {
      const entry = buildEntry(name, upstream, options.previous?.entries.get(name), options.drainMs ?? 0);
      this.entries.set(name, entry);
      this.pools.set(name, entry.pool);
      this.agents.set(name, entry.agent.value);
    }
  }

  pool(name: string): InstancePool {
    const pool = this.pools.get(name);
    // The relation checks make every route name an upstream; this is a defect, not bad input.
    if (!pool) throw new Error(`no upstream named ${name}`);
    return pool;
  }

  agent(name: string): UpstreamAgent {
    const agent = this.agents.get(name);
    if (!agent) throw new Error(`no upstream named ${name}`);
    return agent;
  }

  /** Lets go of every agent; an agent another snapshot still holds stays open. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await Promise.all([...this.entries.values()].map((entry) => entry.agent.release()));
  }
}

function buildEntry(name: string, upstream: UpstreamConfig, previous: UpstreamEntry | undefined, drainMs: number): UpstreamEntry {
  const sameAgent =
    previous !== undefined &&
    !previous.agent.closed &&
    isDeepStrictEqual(previous.config.timeouts, upstream.timeouts) &&
    previous.config.connections === upstream.connections;
  const agent = sameAgent
    ? previous.agent.hold()
    : new SharedResource(
        new UpstreamAgent(
          { connectMs: upstream.timeouts.connect, headersMs: upstream.timeouts.headers, bodyMs: upstream.timeouts.body },
          upstream.connections,
        ),
        (closing) => closing.close(),
      );
  const samePool = previous !== undefined && isDeepStrictEqual(previous.config.instances, upstream.instances) && previous.config.cooldown === upstream.cooldown;
  const pool = samePool
    ? previous.pool
    : new InstancePool(name, upstream.instances, upstream.cooldown, previous ? { previous: previous.pool, drainMs } : undefined);
  return { config: upstream, pool, agent };
}
