/**
 * What this replica has learnt of each upstream's tools from the tools/list answers it relayed:
 * which tools declare an outputSchema (a client that validates structuredContent against it
 * would reject a background-call result, so under `outputSchema: plain` they are never
 * detached), and whether a backend tool bears the name of one of the gateway's own task tools
 * (the backend's tool then wins, see background-calls.ts). Kept per replica, in memory, like
 * what src/provided/ learns of the backend's own task support: a replica that has not relayed
 * a listing yet knows nothing, and treats every tool as one that may have a schema.
 */

/** Tools remembered per upstream; past it the oldest is forgotten (and counts as unknown again). */
const MAX_TOOLS_PER_UPSTREAM = 10_000;

interface Learnt {
  /** tool → whether its listing carried an outputSchema. */
  readonly tools: Map<string, boolean>;
}

export class ToolCatalogue {
  private readonly upstreams = new Map<string, Learnt>();

  /** Notes one listed tool of `upstream`. */
  learn(upstream: string, tool: string, hasOutputSchema: boolean): void {
    const tools = this.learnt(upstream).tools;
    tools.delete(tool);
    if (tools.size >= MAX_TOOLS_PER_UPSTREAM) tools.delete(tools.keys().next().value!);
    tools.set(tool, hasOutputSchema);
  }

  /** true: listed with an outputSchema; false: listed without one; undefined: not seen here. */
  hasOutputSchema(upstream: string, tool: string): boolean | undefined {
    return this.upstreams.get(upstream)?.tools.get(tool);
  }

  /** Whether the backend lists a tool of this name (so it is not the gateway's to answer). */
  isBackendTool(upstream: string, tool: string): boolean {
    return this.upstreams.get(upstream)?.tools.has(tool) ?? false;
  }

  private learnt(upstream: string): Learnt {
    let learnt = this.upstreams.get(upstream);
    if (!learnt) {
      learnt = { tools: new Map() };
      this.upstreams.set(upstream, learnt);
    }
    return learnt;
  }
}
