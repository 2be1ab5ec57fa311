/**
 * The TTL policy (DESIGN.md §3, "Lifetimes and limits"): every lifetime a task gets, asked
 * for by a client, advertised by a backend or chosen by the gateway, is held to tasks.ttl.max
 * and the tool's own maxTtl below it (never unlimited), in whole milliseconds (rounded down:
 * the gateway never promises more than was said). One place for the rule, so the lifetime a
 * client is told and the one the record keeps cannot drift apart between the rooms that make
 * tasks (the tasks stage, gateway-run tasks, background calls, the bridge).
 */
import type { TasksConfig } from '../config/sections/tasks.js';
import type { TaskRecord } from './task-record.js';
import { wholeTtlMs } from './task-wire.js';

export type TtlPolicy = Pick<TasksConfig, 'ttl' | 'tools'>;

/** The longest lifetime a task of `tool` may have. */
export function ttlCap(policy: TtlPolicy, tool: string): number {
  return Math.min(policy.tools[tool]?.maxTtl ?? Infinity, policy.ttl.max);
}

/**
 * The lifetime for a task of `tool` that someone wants (a legacy client's `params.task.ttl`, a
 * capability's own choice): `wanted` when it is a usable number, else tasks.ttl.default;
 * either within the cap.
 */
export function ttlWithin(policy: TtlPolicy, tool: string, wanted?: unknown): number {
  const ms = typeof wanted === 'number' && Number.isFinite(wanted) && wanted >= 0 ? wanted : policy.ttl.default;
  return wholeTtlMs(Math.min(ms, ttlCap(policy, tool)));
}

/**
 * The lifetime of a task whose backend advertised `advertised` (null: forever; undefined: not
 * said), held to `limit`: the cap, or what the gateway asked the backend for when it asked.
 */
export function advertisedTtl(advertised: number | null | undefined, limit: number): number {
  return wholeTtlMs(advertised === null || advertised === undefined ? limit : Math.min(advertised, limit));
}

/**
 * The lifetime after a backend reports one again (it may change during a task, modern): it
 * never grows past the cap, and never shrinks below what the client was already promised.
 */
export function changedTtl(policy: TtlPolicy, record: Pick<TaskRecord, 'tool' | 'ttlMs'>, advertised: number | null | undefined): number {
  if (advertised === undefined) return record.ttlMs;
  const cap = ttlCap(policy, record.tool);
  return Math.max(record.ttlMs, Math.min(advertised ?? cap, cap));
}
