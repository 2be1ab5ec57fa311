/**
 * The read side of the admin API (docs/console.md, "API"): tasks, principals, upstreams, the
 * policy and the samples behind the plots, each built from one scan (live-scan.ts) or from
 * what this replica holds (pools, agents, reloads). Pure functions of their inputs, apart
 * from the suspension lookups, which are one store read per principal shown.
 */
import type { Config } from '../config/index.js';
import type { ConsoleConfig } from '../config/sections/console.js';
import type { HandleHasher } from '../observability/handle-hash.js';
import type { PrincipalActivityReader, RefusalReason } from '../observability/principal-activity.js';
import type { InstancePool } from '../routing/balancer.js';
import type { LimitStore } from '../store/limit-store.js';
import { isTerminalStatus, type TaskStatus } from '../task-model/task-record.js';
import type { TimelineEntry } from './audit-timeline.js';
import type { ReplicaFacts, UpstreamTaskSupport } from './console-context.js';
import type { LiveTasks } from './live-scan.js';
import { countBy, matches, principalOf, sortRows, taskRow, type PrincipalView, type TaskQuery, type TaskRow } from './task-rows.js';

export interface Page {
  readonly offset: number;
  readonly limit: number;
}

export interface TaskListing {
  readonly generatedAt: string;
  /** Live tasks the scan read (every replica's, on a shared store). */
  readonly scanned: number;
  /** More live tasks exist than console.maxScan let the scan read: counts cover those read. */
  readonly truncated: boolean;
  /** Tasks that pass the filters. */
  readonly total: number;
  readonly offset: number;
  readonly limit: number;
  readonly tasks: readonly TaskRow[];
  /** Over every task scanned (not only those filtered): the filter choices, and the summary. */
  readonly counts: {
    readonly status: Record<string, number>;
    readonly upstream: Record<string, number>;
    readonly tool: Record<string, number>;
    readonly kind: Record<string, number>;
  };
}

export function listTasks(live: LiveTasks, query: TaskQuery, page: Page, hashHandle: HandleHasher, policy: ConsoleConfig): TaskListing {
  const now = Date.now();
  const rows = live.records.map((record) => taskRow(record, hashHandle, policy, now));
  const chosen = sortRows(rows.filter((row) => matches(row, query)), query.sort, query.order);
  return {
    generatedAt: new Date(live.at).toISOString(),
    scanned: rows.length,
    truncated: live.truncated,
    total: chosen.length,
    offset: page.offset,
    limit: page.limit,
    tasks: chosen.slice(page.offset, page.offset + page.limit),
    counts: {
      status: countBy(rows, (row) => row.status),
      upstream: countBy(rows, (row) => row.upstream),
      tool: countBy(rows, (row) => row.tool),
      kind: countBy(rows, (row) => row.kind),
    },
  };
}

export interface TaskDetail extends TaskRow {
  /** This replica's audit events for the task (audit-timeline.ts); absent when it has none. */
  readonly timeline?: readonly TimelineEntry[];
}

/** A principal's task requests as this replica saw them (observability/principal-activity.ts). */
export interface PrincipalActivityRow {
  readonly pollsPerMinute: number;
  readonly refusals: Readonly<Record<RefusalReason, number>>;
  readonly enumerationAlerts: number;
  readonly lastAlertAt?: string;
  /** Since when this replica counts for it (absent: it saw no task request of it lately). */
  readonly since?: string;
}

export interface PrincipalRow extends PrincipalView {
  /** Tasks not yet terminal. */
  readonly liveTasks: number;
  /** Every unexpired task, terminal or not. */
  readonly tasks: number;
  readonly status: Record<string, number>;
  readonly upstreams: readonly string[];
  /** 0 unless suspended (by the enumeration detector or an operator). */
  readonly suspendedForMs: number;
  readonly thisReplica: PrincipalActivityRow;
}

const NO_ACTIVITY: PrincipalActivityRow = { pollsPerMinute: 0, refusals: { not_found: 0, denied: 0, throttled: 0 }, enumerationAlerts: 0 };

export function principalActivityRow(activity: PrincipalActivityReader, key: string, now: number): PrincipalActivityRow {
  const seen = activity.read(key, now);
  if (!seen) return NO_ACTIVITY;
  return {
    pollsPerMinute: seen.pollsPerMinute,
    refusals: seen.refusals,
    enumerationAlerts: seen.enumerationAlerts,
    ...(seen.lastAlertAt === undefined ? {} : { lastAlertAt: new Date(seen.lastAlertAt).toISOString() }),
    since: new Date(seen.since).toISOString(),
  };
}

/**
 * Principals with unexpired tasks, most live tasks first, then those without one that this
 * replica saw refused or alerted about lately (a prober may own nothing); suspensions read for
 * the page only.
 */
export async function listPrincipals(live: LiveTasks, page: Page, limits: LimitStore, policy: ConsoleConfig, activity: PrincipalActivityReader): Promise<{ total: number; principals: PrincipalRow[]; truncated: boolean }> {
  const groups = new Map<string, { view: PrincipalView; live: number; tasks: number; status: Map<string, number>; upstreams: Set<string> }>();
  for (const record of live.records) {
    let group = groups.get(record.owner);
    if (!group) {
      group = { view: principalOf(record, policy), live: 0, tasks: 0, status: new Map(), upstreams: new Set() };
      groups.set(record.owner, group);
    }
    // A later record may know more of its creator (created after the console was turned on).
    if (group.view.subject === undefined && group.view.issuer === undefined) group.view = principalOf(record, policy);
    group.tasks++;
    if (!isTerminalStatus(record.status)) group.live++;
    group.status.set(record.status, (group.status.get(record.status) ?? 0) + 1);
    group.upstreams.add(record.upstream);
  }
  const now = Date.now();
  for (const key of activity.flagged(now)) {
    if (groups.has(key)) continue;
    const issuer = activity.read(key, now)?.issuer;
    groups.set(key, { view: { key, ...(issuer === undefined ? {} : { issuer }) }, live: 0, tasks: 0, status: new Map(), upstreams: new Set() });
  }
  const ordered = [...groups.values()].sort((a, b) => b.live - a.live || b.tasks - a.tasks || (a.view.key < b.view.key ? -1 : 1));
  const shown = ordered.slice(page.offset, page.offset + page.limit);
  const suspended = await Promise.all(shown.map((group) => limits.suspendedFor(group.view.key, now)));
  return {
    total: ordered.length,
    truncated: live.truncated,
    principals: shown.map((group, i) => ({
      ...group.view,
      liveTasks: group.live,
      tasks: group.tasks,
      status: Object.fromEntries(group.status),
      upstreams: [...group.upstreams].sort(),
      suspendedForMs: suspended[i]!,
      thisReplica: principalActivityRow(activity, group.view.key, now),
    })),
  };
}

export interface InstanceView {
  readonly url: string;
  /** Not cooling down after a refused connection. */
  readonly healthy: boolean;
  readonly coolingForMs: number;
  /** This replica's undici pool for the instance: requests running and queued, sockets open. */
  readonly running: number;
  readonly pending: number;
  readonly connected: number;
}

export interface UpstreamView {
  readonly name: string;
  readonly instances: readonly InstanceView[];
  /** Tools the gateway runs as tasks itself on this upstream (providedTasks), if any. */
  readonly providedTools: readonly string[];
  readonly liveTasks: number;
  readonly thisReplica: {
    /** What this replica learnt of the upstream's own task support; null before it learnt anything. */
    readonly taskSupport: UpstreamTaskSupport | null;
  };
}

/** Tools of an upstream whose learnt task support a listing shows. */
const SUPPORT_TOOLS = 100;

interface PoolStatsLike {
  readonly running?: number;
  readonly pending?: number;
  readonly queued?: number;
  readonly connected?: number | boolean;
}

export function listUpstreams(config: Config, pools: ReadonlyMap<string, InstancePool>, agents: ReadonlyMap<string, { readonly stats: Record<string, unknown> }>, live: LiveTasks, replica: ReplicaFacts): UpstreamView[] {
  const now = Date.now();
  const liveByUpstream = new Map<string, number>();
  for (const record of live.records) if (!isTerminalStatus(record.status)) liveByUpstream.set(record.upstream, (liveByUpstream.get(record.upstream) ?? 0) + 1);
  return [...pools.entries()].map(([name, pool]) => {
    const stats = agents.get(name)?.stats ?? {};
    return {
      name,
      instances: pool.instances.map((instance) => {
        const pool = (stats[instance.url] ?? {}) as PoolStatsLike;
        const connected = typeof pool.connected === 'boolean' ? Number(pool.connected) : (pool.connected ?? 0);
        return {
          url: instance.url,
          healthy: instance.coolingUntil <= now,
          coolingForMs: Math.max(0, instance.coolingUntil - now),
          running: pool.running ?? 0,
          pending: (pool.pending ?? 0) + (pool.queued ?? 0),
          connected,
        };
      }),
      providedTools: providedToolsOf(config, name),
      liveTasks: liveByUpstream.get(name) ?? 0,
      thisReplica: { taskSupport: replica.taskSupport(name, SUPPORT_TOOLS) ?? null },
    };
  });
}

function providedToolsOf(config: Config, upstream: string): string[] {
  const tools = config.upstreams[upstream]?.providedTasks?.tools;
  if (tools === undefined) return [];
  return tools === 'all' ? ['all'] : [...tools];
}

export const TASK_STATUSES: readonly TaskStatus[] = ['working', 'input_required', 'completed', 'failed', 'cancelled'];
