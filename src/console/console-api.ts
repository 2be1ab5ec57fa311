/**
 * The admin API, version 1 (docs/console.md, "API"): JSON under /console/api/v1, the same for
 * the page and for scripts. Every route authenticates first (401/403/503 as operator-auth.ts
 * says); the actions need the operator role and a reason. Queries and bodies are checked with
 * zod, and anything off answers 400 TG_ERR_INVALID_PARAMS naming the parameter.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { DURATION_PATTERN, parseDuration } from '../config/units.js';
import { GatewayError } from '../errors.js';
import { sanitizeStatusMessage } from '../task-model/status-message.js';
import { cancelTask, suspendPrincipal, unsuspendPrincipal, type ActionDeps, type ActionRequest } from './console-actions.js';
import { listPrincipals, listTasks, listUpstreams, principalActivityRow, TASK_STATUSES } from './console-views.js';
import type { ConsoleApiHost, ConsoleRequestContext } from './console-context.js';
import { principalOf, SORT_KEYS, taskRow, type TaskQuery } from './task-rows.js';
import { withActivity } from './task-activity.js';

const MAX_PAGE = 200;
const MAX_REASON = 500;
/** A task id is the audit trail's 12-character hash of its handle. */
const TASK_ID = /^[A-Za-z0-9_-]{12}$/;
/** A principal key: a SHA-256 in base64url (auth/principal.ts), or anonymous (auth.mode none). */
const PRINCIPAL_KEY = /^(?:[A-Za-z0-9_-]{43}|anonymous)$/;
const BODY_LIMIT = 4096;

const pageSchema = {
  offset: z.coerce.number().int().min(0).default(0),
  limit: z.coerce.number().int().min(1).max(MAX_PAGE).default(50),
};

const taskQuerySchema = z.strictObject({
  ...pageSchema,
  principal: z.string().min(1).max(256).optional(),
  upstream: z.string().min(1).max(64).optional(),
  tool: z.string().min(1).max(128).optional(),
  status: z
    .string()
    .transform((text) => text.split(','))
    .pipe(z.array(z.enum(TASK_STATUSES as [string, ...string[]])))
    .optional(),
  kind: z.enum(['backend', 'gateway', 'background']).optional(),
  sort: z.enum(SORT_KEYS).default('age'),
  order: z.enum(['asc', 'desc']).default('desc'),
});

const pageQuerySchema = z.strictObject(pageSchema);

const reasonSchema = z
  .string()
  .transform((text) => sanitizeStatusMessage(text, MAX_REASON).trim())
  .pipe(z.string().min(1, { error: 'a reason is required' }));

const cancelBodySchema = z.strictObject({ reason: reasonSchema });
const suspendBodySchema = z.strictObject({ reason: reasonSchema, duration: z.string().regex(DURATION_PATTERN, { error: 'expected a duration such as 10m or 1h' }) });

export function registerConsoleApi(api: FastifyInstance, console: ConsoleApiHost): void {
  const { deps } = console;

  api.get('/me', async (request) => {
    const { operator, policy } = await console.operatorOf(request);
    return { name: operator.name, role: operator.role, via: operator.via, principals: policy.config.console.principals };
  });

  api.get('/tasks', async (request) => {
    const { policy } = await console.operatorOf(request);
    const query = parse(taskQuerySchema, request.query, 'query');
    const taskQuery: TaskQuery = {
      principal: query.principal,
      upstream: query.upstream,
      tool: query.tool,
      statuses: query.status as TaskQuery['statuses'],
      kind: query.kind,
      sort: query.sort,
      order: query.order,
    };
    const live = await console.scan.read(policy.config.console.maxScan);
    const listing = listTasks(live, taskQuery, query, deps.hashHandle, policy.config.console);
    const records = listing.tasks.map((row) => live.byId(row.id)!);
    return { ...listing, tasks: await withActivity(listing.tasks, records, deps.store, deps.replica) };
  });

  api.get<{ Params: { id: string } }>('/tasks/:id', async (request) => {
    const { policy } = await console.operatorOf(request);
    const record = await findTask(console, request.params.id, policy.config.console.maxScan);
    const timeline = deps.timeline.entries(request.params.id);
    const [row] = await withActivity([taskRow(record, deps.hashHandle, policy.config.console, Date.now())], [record], deps.store, deps.replica);
    return { ...row, ...(timeline ? { timeline } : {}) };
  });

  api.post<{ Params: { id: string } }>('/tasks/:id/cancel', { bodyLimit: BODY_LIMIT }, async (request) => {
    const context = await console.operatorOf(request, true);
    const body = parse(cancelBodySchema, request.body ?? {}, 'body');
    // Found by its id in a scan, then read again: the action goes by the task as it is now.
    const found = await findTask(console, request.params.id, context.policy.config.console.maxScan).catch(() => undefined);
    const record = found && (await deps.store.getTask(found.handle));
    if (!record) {
      deps.metrics.consoleActions.inc({ action: 'cancel', outcome: 'not_found' });
      throw new GatewayError('TG_ERR_CONSOLE_NOT_FOUND', { detail: 'no live task with this id' });
    }
    const outcome = await cancelTask(actionDeps(console, context), record, actionRequest(request, context, body.reason));
    return { id: request.params.id, ...outcome };
  });

  api.get('/principals', async (request) => {
    const { policy } = await console.operatorOf(request);
    const page = parse(pageQuerySchema, request.query, 'query');
    const live = await console.scan.read(policy.config.console.maxScan);
    return { ...(await listPrincipals(live, page, deps.store.limits, policy.config.console, deps.replica.principals)), offset: page.offset, limit: page.limit };
  });

  api.get<{ Params: { key: string } }>('/principals/:key', async (request) => {
    const { policy } = await console.operatorOf(request);
    const key = principalKey(request.params.key);
    const live = await console.scan.read(policy.config.console.maxScan);
    const owned = live.records.filter((record) => record.owner === key);
    const suspendedForMs = await deps.store.limits.suspendedFor(key, Date.now());
    const now = Date.now();
    const seenIssuer = deps.replica.principals.read(key, now)?.issuer;
    const view = owned.map((record) => principalOf(record, policy.config.console)).find((p) => p.issuer !== undefined) ?? { key, ...(seenIssuer === undefined ? {} : { issuer: seenIssuer }) };
    return {
      ...view,
      suspendedForMs,
      thisReplica: principalActivityRow(deps.replica.principals, key, now),
      tasks: owned.map((record) => taskRow(record, deps.hashHandle, policy.config.console, now)),
    };
  });

  api.post<{ Params: { key: string } }>('/principals/:key/suspend', { bodyLimit: BODY_LIMIT }, async (request) => {
    const context = await console.operatorOf(request, true);
    const key = principalKey(request.params.key);
    const body = parse(suspendBodySchema, request.body ?? {}, 'body');
    const max = context.policy.config.console.maxSuspension;
    let durationMs: number;
    try {
      durationMs = parseDuration(body.duration);
    } catch {
      durationMs = Infinity;
    }
    if (durationMs <= 0 || durationMs > max) throw new GatewayError('TG_ERR_INVALID_PARAMS', { detail: `body.duration: more than 0s and at most console.maxSuspension (${max / 1000}s)` });
    const { until } = await suspendPrincipal(actionDeps(console, context), key, durationMs, actionRequest(request, context, body.reason));
    return { key, suspendedUntil: new Date(until).toISOString(), suspendedForMs: durationMs };
  });

  api.post<{ Params: { key: string } }>('/principals/:key/unsuspend', { bodyLimit: BODY_LIMIT }, async (request) => {
    const context = await console.operatorOf(request, true);
    const key = principalKey(request.params.key);
    const body = parse(cancelBodySchema, request.body ?? {}, 'body');
    return { key, ...(await unsuspendPrincipal(actionDeps(console, context), key, actionRequest(request, context, body.reason))) };
  });

  api.get('/upstreams', async (request) => {
    const { policy } = await console.operatorOf(request);
    const live = await console.scan.read(policy.config.console.maxScan);
    return { upstreams: listUpstreams(policy.config, policy.pools, policy.agents, live, deps.replica), providedCallsRunning: deps.providedRunning() };
  });

  api.get('/policy', async (request) => {
    await console.operatorOf(request);
    const { hash, history } = deps.reloads();
    return {
      hash,
      reloads: history
        .map((entry) => ({ at: new Date(entry.at).toISOString(), outcome: entry.outcome, source: entry.source, hash: entry.hash, changed: entry.changed, problems: entry.problems.length }))
        .reverse(),
    };
  });

  api.get('/samples', async (request) => {
    await console.operatorOf(request);
    const { statuses, polls, lag } = console.samples.series();
    return {
      intervalMs: 10_000,
      statuses: statuses.map((sample) => ({ at: new Date(sample.at).toISOString(), counts: sample.counts })),
      polls: polls.map((sample) => ({ at: new Date(sample.at).toISOString(), perMinute: sample.perMinute })),
      pushLag: lag.map((sample) => ({ at: new Date(sample.at).toISOString(), deliveries: sample.deliveries, meanMs: sample.meanMs, p95Ms: sample.p95Ms })),
    };
  });
}

/** The live task behind a console id, from a scan begun now (an action must not act on a stale list). */
async function findTask(console: ConsoleApiHost, id: string, maxScan: number) {
  if (!TASK_ID.test(id)) throw new GatewayError('TG_ERR_CONSOLE_NOT_FOUND', { detail: 'no live task with this id' });
  const record = (await console.scan.read(maxScan)).byId(id) ?? (await console.scan.read(maxScan, true)).byId(id);
  if (!record) throw new GatewayError('TG_ERR_CONSOLE_NOT_FOUND', { detail: 'no live task with this id' });
  return record;
}

function principalKey(key: string): string {
  if (!PRINCIPAL_KEY.test(key)) throw new GatewayError('TG_ERR_CONSOLE_NOT_FOUND', { detail: 'not a principal key' });
  return key;
}

function parse<T extends z.ZodType>(schema: T, value: unknown, where: string): z.output<T> {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  const issue = result.error.issues[0]!;
  const path = [where, ...issue.path.map(String)].join('.');
  throw new GatewayError('TG_ERR_INVALID_PARAMS', { detail: `${path}: ${issue.message}` });
}

function actionDeps(console: ConsoleApiHost, context: ConsoleRequestContext): ActionDeps {
  const { deps } = console;
  return { tasks: context.policy.tasks, audit: deps.audit, metrics: deps.metrics, hashHandle: deps.hashHandle };
}

function actionRequest(request: FastifyRequest, context: ConsoleRequestContext, reason: string): ActionRequest {
  return { operator: context.operator, reason, requestId: request.id, source: request.ip };
}
