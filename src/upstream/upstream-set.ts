/**
 * The upstreams of one policy: for each, its instance pool (balancing, cool-downs) and its
 * undici agent (keep-alive pools, timeouts). Built with the policy snapshot that uses them
 * and closed with it.
 */
import type { Config } from '../config/index.js';
import { InstancePool } from '../routing/balancer.js';
import { UpstreamAgent } from './dispatcher.js';

export class UpstreamSet {
  readonly pools = new Map<string, InstancePool>();
  readonly agents = new Map<string, UpstreamAgent>();

  constructor(upstreams: Config['upstreams']) {
    for (const [name, upstream] of Object.entries(upstreams)) {
      this.pools.set(name, new InstancePool(name, upstream.instances, upstream.cooldown));
      this.agents.set(
        name,
        new UpstreamAgent(
          { connectMs: upstream.timeouts.connect, headersMs: upstream.timeouts.headers, bodyMs: upstream.timeouts.body },
          upstream.connections,
        ),
      );
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

  async close(): Promise<void> {
    await Promise.all([...this.agents.values()].map((agent) => agent.close()));
  }
}
