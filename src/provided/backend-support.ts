/**
 * Which tools the gateway runs as tasks, and which it leaves to the backend. The policy names
 * the tools (upstreams.*.providedTasks); a tool the backend itself offers as a task stays a
 * backend task, so the gateway never runs one task twice. The backend's own offer is learnt
 * from the answers that pass through: `execution.taskSupport` in a legacy tools/list, the tasks
 * extension in a modern server/discover. Until a replica has seen one, it runs listed tools
 * itself, and the backend is sent a plain call (no `task`, no extension declared), so it
 * cannot make a task of its own either: a task is run once, by one of them.
 */
import type { UpstreamConfig } from '../config/index.js';
import type { EraWire } from '../task-model/task-wire.js';

export type ProvidedTasksPolicy = NonNullable<UpstreamConfig['providedTasks']>;

/** Tools remembered per upstream; past it the oldest is forgotten (and run by the gateway). */
const MAX_TOOLS_PER_UPSTREAM = 10_000;

interface Learnt {
  /** Legacy: tool → the backend's own execution.taskSupport ('forbidden' when absent). */
  readonly legacyTools: Map<string, string>;
  /** Modern: whether the backend's server/discover declared the tasks extension; undefined before one was seen. */
  modernExtension?: boolean;
}

/** What a replica learnt of one upstream's own task support, as the operator console shows it. */
export interface LearntTaskSupport {
  /** Modern: the tasks extension in its server/discover; undefined before this replica saw one. */
  readonly modernExtension?: boolean;
  /** Legacy: its tools' own execution.taskSupport, by tool (the first `maxTools`, by name). */
  readonly legacyTools: Readonly<Record<string, string>>;
  /** Tools learnt in all (more than legacyTools holds when cut at maxTools). */
  readonly legacyToolsLearnt: number;
}

export class BackendSupport {
  private readonly upstreams = new Map<string, Learnt>();

  /** Whether the gateway runs `tool` of `upstream` as a task for a client of `wire`'s era. */
  provides(policy: ProvidedTasksPolicy | undefined, upstream: string, tool: string, wire: EraWire): policy is ProvidedTasksPolicy {
    if (!policy) return false;
    if (policy.tools !== 'all' && !policy.tools.includes(tool)) return false;
    const learnt = this.upstreams.get(upstream);
    // What the backend itself said in that era: the extension in server/discover, or each tool's own taskSupport.
    if (wire.taskSupport === 'extension') return !learnt?.modernExtension;
    const own = learnt?.legacyTools.get(tool);
    return own === undefined || own === 'forbidden';
  }

  /** Whether `tool` is one the policy lists (advertised as task-capable whoever runs it). */
  lists(policy: ProvidedTasksPolicy | undefined, tool: string): boolean {
    return policy !== undefined && (policy.tools === 'all' || policy.tools.includes(tool));
  }

  /** A copy of what was learnt of `upstream` (undefined: nothing yet), for reading only. */
  learntOf(upstream: string, maxTools: number): LearntTaskSupport | undefined {
    const learnt = this.upstreams.get(upstream);
    if (!learnt) return undefined;
    const names = [...learnt.legacyTools.keys()].sort().slice(0, maxTools);
    return {
      ...(learnt.modernExtension === undefined ? {} : { modernExtension: learnt.modernExtension }),
      legacyTools: Object.fromEntries(names.map((name) => [name, learnt.legacyTools.get(name)!])),
      legacyToolsLearnt: learnt.legacyTools.size,
    };
  }

  learnLegacyTool(upstream: string, tool: string, taskSupport: unknown): void {
    const tools = this.learnt(upstream).legacyTools;
    tools.delete(tool);
    if (tools.size >= MAX_TOOLS_PER_UPSTREAM) tools.delete(tools.keys().next().value!);
    tools.set(tool, typeof taskSupport === 'string' ? taskSupport : 'forbidden');
  }

  learnModernExtension(upstream: string, declared: boolean): void {
    this.learnt(upstream).modernExtension = declared;
  }

  private learnt(upstream: string): Learnt {
    let learnt = this.upstreams.get(upstream);
    if (!learnt) {
      learnt = { legacyTools: new Map() };
      this.upstreams.set(upstream, learnt);
    }
    return learnt;
  }
}
