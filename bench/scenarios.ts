/**
 * The scenarios: what one load run sends. Every target gets byte-for-byte the same kind of
 * request (same headers, same bearer tokens, same body sizes); only taskgate needs real task
 * handles, which it minted for tasks created through it before the run.
 */
import { randomBytes } from 'node:crypto';
import { BRIDGED_PATH, PROVIDED_TOOL, STATUS_TOOL, type Target } from './targets.js';

export const SCENARIO_NAMES = [
  'tools-json', 'tools-sse', 'tasks-get-2026', 'tasks-get-2025', 'tasks-get-cached', 'task-create', 'task-create-2025',
  'provided-create-2025', 'provided-create-2026', 'provided-get-2026', 'provided-get-cached',
  'background-detach-2025', 'background-status-running-2025', 'background-status-ended-2025', 'tasks-get-bridged',
] as const;
export type ScenarioName = (typeof SCENARIO_NAMES)[number];

/**
 * A scenario of tasks the gateway runs itself (bench/provided.ts), or of background calls
 * (bench/background.ts). It runs on a taskgate of its own with the provided-task or
 * background-call policy (`role`), and each run is checked against taskgate's counters
 * (`expect`: a task created, a poll answered on time or from cache, a call detached, a status
 * call answered "running" or with the outcome, per request). A creation's (or a detached
 * call's) backend call outlives the load: `settles` makes the run wait, before its CPU is
 * read, until the calls it started have ended, so each is charged its whole call.
 */
export interface ProvidedScenario {
  readonly role: 'provided' | 'provided-cached' | 'background';
  readonly expect: 'created' | 'forwarded' | 'cached' | 'detached' | 'running' | 'ended';
  readonly settles: boolean;
}

export interface Scenario {
  readonly name: ScenarioName;
  readonly title: string;
  /** For the chart's row labels. */
  readonly short: string;
  /** Backend counter (GET /stats) one request should move, to check forwarded vs answered locally. */
  readonly backendCounter: string;
  /** Meaningful only where there is a task cache (taskgate). */
  readonly taskgateOnly: boolean;
  readonly provided?: ProvidedScenario;
  /** The taskgate route it runs on, when not /mcp (its tokens are minted for that route). */
  readonly path?: string;
}

export const SCENARIOS: Record<ScenarioName, Scenario> = {
  'tools-json': { name: 'tools-json', short: 'tools/call → JSON', title: 'tools/call, JSON reply (2025-11-25)', backendCounter: 'tools/call:echo', taskgateOnly: false },
  'tools-sse': { name: 'tools-sse', short: 'tools/call → SSE', title: 'tools/call, SSE reply (2025-11-25)', backendCounter: 'tools/call:stream', taskgateOnly: false },
  'tasks-get-2026': { name: 'tasks-get-2026', short: 'tasks/get forwarded, 2026', title: 'tasks/get forwarded, bearer token (2026-07-28)', backendCounter: 'tasks/get', taskgateOnly: false },
  'tasks-get-2025': { name: 'tasks-get-2025', short: 'tasks/get forwarded, 2025', title: 'tasks/get forwarded, bearer token (2025-11-25)', backendCounter: 'tasks/get', taskgateOnly: false },
  'tasks-get-cached': { name: 'tasks-get-cached', short: 'tasks/get from cache, 2026', title: 'early tasks/get answered from cache (2026-07-28)', backendCounter: 'tasks/get', taskgateOnly: true },
  'task-create': { name: 'task-create', short: 'task creation, 2026', title: 'task creation, tools/call (2026-07-28)', backendCounter: 'tools/call:create-task', taskgateOnly: false },
  'task-create-2025': { name: 'task-create-2025', short: 'task creation, 2025', title: 'task creation, tools/call with params.task (2025-11-25)', backendCounter: 'tools/call:create-task', taskgateOnly: false },
  'provided-create-2025': {
    name: 'provided-create-2025',
    short: 'provided task creation, 2025',
    title: 'provided task: tools/call with params.task of a plain tool the backend holds 250 ms; the whole call is charged (2025-11-25)',
    backendCounter: `tools/call:${PROVIDED_TOOL}`,
    taskgateOnly: true,
    provided: { role: 'provided', expect: 'created', settles: true },
  },
  'provided-create-2026': {
    name: 'provided-create-2026',
    short: 'provided task promotion, 2026',
    title: 'provided task: tools/call of a plain tool the backend holds 250 ms, a task after promoteAfter (1 ms); the whole call is charged (2026-07-28)',
    backendCounter: `tools/call:${PROVIDED_TOOL}`,
    taskgateOnly: true,
    provided: { role: 'provided', expect: 'created', settles: true },
  },
  'provided-get-2026': {
    name: 'provided-get-2026',
    short: 'provided tasks/get, 2026',
    title: 'tasks/get of a running provided task, on time: answered from the store (2026-07-28)',
    backendCounter: 'tasks/get',
    taskgateOnly: true,
    provided: { role: 'provided', expect: 'forwarded', settles: false },
  },
  'provided-get-cached': {
    name: 'provided-get-cached',
    short: 'provided tasks/get cached, 2026',
    title: 'early tasks/get of a running provided task, answered from cache (2026-07-28)',
    backendCounter: 'tasks/get',
    taskgateOnly: true,
    provided: { role: 'provided-cached', expect: 'cached', settles: false },
  },
  'background-detach-2025': {
    name: 'background-detach-2025',
    short: 'background call detached, 2025',
    title: 'background call: tools/call without params.task of a plain tool the backend holds 250 ms, answered with a handle after detachAfter (50 ms); the whole call is charged (2025-11-25)',
    backendCounter: `tools/call:${PROVIDED_TOOL}`,
    taskgateOnly: true,
    provided: { role: 'background', expect: 'detached', settles: true },
  },
  'background-status-running-2025': {
    name: 'background-status-running-2025',
    short: 'status tool, running call, 2025',
    title: `background call: ${STATUS_TOOL} with wait 0 of a running call, answered "still running" from the store (2025-11-25)`,
    backendCounter: `tools/call:${STATUS_TOOL}`,
    taskgateOnly: true,
    provided: { role: 'background', expect: 'running', settles: false },
  },
  'background-status-ended-2025': {
    name: 'background-status-ended-2025',
    short: 'status tool, completed call, 2025',
    title: `background call: ${STATUS_TOOL} with wait 0 of a completed call (its outcome read once before), answered with the tool's own result from the store (2025-11-25)`,
    backendCounter: `tools/call:${STATUS_TOOL}`,
    taskgateOnly: true,
    provided: { role: 'background', expect: 'ended', settles: false },
  },
  'tasks-get-bridged': {
    name: 'tasks-get-bridged',
    short: 'tasks/get bridged, 2025 → 2026',
    title: 'tasks/get forwarded of a 2025-11-25 client, bridged to a backend with 2026-07-28 tasks only (docs/bridging.md)',
    backendCounter: 'tasks/get',
    taskgateOnly: true,
    path: BRIDGED_PATH,
  },
};

/** Where a scenario's requests go on `target`: its own route, else the target's /mcp. */
export function scenarioUrl(target: Target, scenario: ScenarioName): string {
  const path = SCENARIOS[scenario].path;
  return path === undefined ? target.url : target.url.replace(/\/mcp$/, path);
}

export interface RequestSpec {
  headers: Record<string, string>;
  body: string;
  /** POST unless said (bench/floor.ts's GET rows: fastify's own published benchmark shape). */
  method?: 'GET' | 'POST';
}

type Era = '2025-11-25' | '2026-07-28';

const TASKS_EXTENSION = 'io.modelcontextprotocol/tasks';
/** Principals polling in the tasks/get scenarios, and tasks polled per principal. */
const POLLERS = 4;
const TASKS_PER_POLLER = 8;
/** Principals creating tasks in task-create, so no one principal's task list dominates. */
export const CREATORS = 64;
/** How long the backend holds the call of a provided creation: far past promoteAfter under load. */
export const CREATION_HOLD_MS = 250;
/** The calls of polled provided tasks are held for the whole run (the backend caps a hold at 30 minutes). */
const RUN_HOLD_MS = 25 * 60_000;
/** The calls behind the completed background calls: past detachAfter (50 ms), then answered. */
const ENDED_HOLD_MS = 200;
const RELATED_TASK = 'io.modelcontextprotocol/related-task';

/** One JSON-RPC request of `era`, with the headers its transport asks for. */
export function rpcRequest(era: Era, token: string, method: string, params: Record<string, unknown>, mcpName?: string): RequestSpec {
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
    'mcp-protocol-version': era,
    authorization: `Bearer ${token}`,
  };
  let framed = params;
  if (era === '2026-07-28') {
    // Every 2026 request carries its envelope and mirrors method and name in headers.
    framed = {
      ...params,
      _meta: { 'io.modelcontextprotocol/protocolVersion': era, 'io.modelcontextprotocol/clientCapabilities': { extensions: { [TASKS_EXTENSION]: {} } } },
    };
    headers['mcp-method'] = method;
    if (mcpName !== undefined) headers['mcp-name'] = mcpName;
  }
  return { headers, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params: framed }) };
}

export function toolCall(era: Era, token: string, name: string, args: Record<string, unknown>): RequestSpec {
  const params: Record<string, unknown> = { name, arguments: args };
  // 2025: a task is asked for with params.task; 2026: the declared extension is enough.
  if (era === '2025-11-25' && name === 'create-task') params.task = { ttl: 3_600_000 };
  return rpcRequest(era, token, 'tools/call', params, name);
}

/** A tools/call of the provided tool; 2025 asks for a task, 2026 declares the extension (rpcRequest). */
export function providedCall(era: Era, token: string, args: Record<string, unknown>): RequestSpec {
  const params: Record<string, unknown> = { name: PROVIDED_TOOL, arguments: args };
  if (era === '2025-11-25') params.task = { ttl: 3_600_000 };
  return rpcRequest(era, token, 'tools/call', params, PROVIDED_TOOL);
}

export function tasksGet(era: Era, token: string, handle: string): RequestSpec {
  return rpcRequest(era, token, 'tasks/get', { taskId: handle }, handle);
}

/** Sends one request and returns the JSON-RPC response it carried (JSON or the last SSE event). */
export async function send(url: string, spec: RequestSpec): Promise<{ status: number; message: Record<string, unknown> | undefined }> {
  const res = await fetch(url, { method: 'POST', headers: spec.headers, body: spec.body });
  const text = await res.text();
  const type = res.headers.get('content-type') ?? '';
  // The harness only needs the final message; the proxies' own SSE handling is what is measured.
  const payload = type.startsWith('text/event-stream') ? (text.split('\n').filter((l) => l.startsWith('data:')).pop()?.slice(5) ?? '') : text;
  let message: Record<string, unknown> | undefined;
  try {
    message = JSON.parse(payload) as Record<string, unknown>;
  } catch {
    message = undefined;
  }
  return { status: res.status, message };
}

async function createTask(target: Target, era: Era, token: string, poll: 'fast' | 'slow' | 'provided', url = target.url): Promise<string> {
  const spec = poll === 'provided' ? providedCall(era, token, { ms: RUN_HOLD_MS, group: 'run' }) : toolCall(era, token, 'create-task', { poll });
  const { status, message } = await send(url, spec);
  const result = message?.result as { taskId?: string; task?: { taskId?: string } } | undefined;
  const handle = era === '2026-07-28' ? result?.taskId : result?.task?.taskId;
  if (status !== 200 || typeof handle !== 'string') throw new Error(`${target.name}: task creation failed (${status} ${JSON.stringify(message)})`);
  return handle;
}

/**
 * The rotation of requests a load run cycles through. For taskgate the tasks are created
 * through it first (and, for the cached scenario, polled once so a snapshot exists); the other
 * targets get made-up handles of the same shape, which the backend answers all the same.
 */
export async function prepareRequests(scenario: ScenarioName, target: Target, tokens: string[]): Promise<RequestSpec[]> {
  const specs: RequestSpec[] = [];
  switch (scenario) {
    case 'tools-json':
      return tokens.slice(0, POLLERS).map((t) => toolCall('2025-11-25', t, 'echo', { text: 'hello' }));
    case 'tools-sse':
      return tokens.slice(0, POLLERS).map((t) => toolCall('2025-11-25', t, 'stream', { text: 'hello' }));
    case 'task-create':
      return tokens.slice(0, CREATORS).map((t) => toolCall('2026-07-28', t, 'create-task', { poll: 'fast' }));
    case 'task-create-2025':
      return tokens.slice(0, CREATORS).map((t) => toolCall('2025-11-25', t, 'create-task', { poll: 'fast' }));
    case 'provided-create-2025':
    case 'provided-create-2026': {
      const era: Era = scenario === 'provided-create-2025' ? '2025-11-25' : '2026-07-28';
      return tokens.slice(0, CREATORS).map((t) => providedCall(era, t, { ms: CREATION_HOLD_MS }));
    }
    case 'background-detach-2025':
      await listTools(target, tokens[0]!);
      return tokens.slice(0, CREATORS).map((t) => toolCall('2025-11-25', t, PROVIDED_TOOL, { ms: CREATION_HOLD_MS }));
    case 'background-status-running-2025':
    case 'background-status-ended-2025':
      return prepareStatusCalls(target, tokens, scenario === 'background-status-running-2025');
    default: {
      const era: Era = scenario === 'tasks-get-2025' || scenario === 'tasks-get-bridged' ? '2025-11-25' : '2026-07-28';
      const poll = scenario === 'tasks-get-cached' ? 'slow' : SCENARIOS[scenario].provided ? 'provided' : 'fast';
      const cached = scenario === 'tasks-get-cached' || scenario === 'provided-get-cached';
      for (const token of tokens.slice(0, POLLERS)) {
        for (let i = 0; i < TASKS_PER_POLLER; i++) {
          const handle = target.isTaskgate ? await createTask(target, era, token, poll, scenarioUrl(target, scenario)) : randomBytes(24).toString('base64url');
          const spec = tasksGet(era, token, handle);
          // The first poll of a task is always forwarded; it leaves the snapshot early polls get.
          if (cached) await send(scenarioUrl(target, scenario), spec);
          specs.push(spec);
        }
      }
      return specs;
    }
  }
}

/**
 * Background calls: the gateway learns from a relayed tools/list that `slow` has no
 * outputSchema, as from a host listing its tools first; until then it would not detach it.
 */
async function listTools(target: Target, token: string): Promise<void> {
  const { message } = await send(target.url, rpcRequest('2025-11-25', token, 'tools/list', {}));
  const tools = (message?.result as { tools?: { name?: unknown }[] } | undefined)?.tools ?? [];
  if (!tools.some((t) => t.name === STATUS_TOOL)) throw new Error(`${target.name}: tools/list does not list ${STATUS_TOOL}: ${JSON.stringify(message)?.slice(0, 300)}`);
}

/** A 2025 call of `slow` without params.task that the gateway detached: its handle. */
async function detachCall(target: Target, token: string, args: Record<string, unknown>): Promise<string> {
  const { status, message } = await send(target.url, toolCall('2025-11-25', token, PROVIDED_TOOL, args));
  const handle = relatedTask(message?.result);
  if (status !== 200 || handle === undefined) throw new Error(`${target.name}: the call was not detached (${status} ${JSON.stringify(message)?.slice(0, 300)})`);
  return handle;
}

/**
 * Status calls (wait 0) of background calls made before the run, 4 principals × 8: held for
 * the whole run, or ended and their outcome read once (a status call that waits for it), so
 * that the run measures the status tool answering a running call, or answering a completed
 * call's outcome again.
 */
async function prepareStatusCalls(target: Target, tokens: string[], running: boolean): Promise<RequestSpec[]> {
  await listTools(target, tokens[0]!);
  const calls = tokens.slice(0, POLLERS).flatMap((token) => Array.from({ length: TASKS_PER_POLLER }, () => token));
  return Promise.all(
    calls.map(async (token) => {
      const handle = await detachCall(target, token, running ? { ms: RUN_HOLD_MS, group: 'run' } : { ms: ENDED_HOLD_MS });
      if (!running) {
        const { message } = await send(target.url, toolCall('2025-11-25', token, STATUS_TOOL, { taskId: handle, wait: 10 }));
        if (textOf(message?.result) !== 'slow call done') throw new Error(`${target.name}: the background call did not complete: ${JSON.stringify(message)?.slice(0, 300)}`);
      }
      return toolCall('2025-11-25', token, STATUS_TOOL, { taskId: handle, wait: 0 });
    }),
  );
}

function relatedTask(result: unknown): string | undefined {
  const handle = ((result as { _meta?: Record<string, { taskId?: unknown }> } | undefined)?._meta?.[RELATED_TASK])?.taskId;
  return typeof handle === 'string' ? handle : undefined;
}

function textOf(result: unknown): string {
  const content = (result as { content?: { text?: unknown }[] } | undefined)?.content;
  return typeof content?.[0]?.text === 'string' ? content[0].text : '';
}

/** Whether a result is what the scenario's requests must get: a task, a detached call, a running or completed call's status. */
function answersAsExpected(scenario: ScenarioName, result: Record<string, unknown> | undefined): boolean {
  switch (SCENARIOS[scenario].provided?.expect) {
    case 'created':
      return scenario.endsWith('2025') ? result?.task !== undefined : result?.resultType === 'task';
    case 'detached':
      return relatedTask(result) !== undefined && textOf(result).includes('is still running, in the background');
    case 'running':
      return result?.isError === false && textOf(result).includes(') is still running.');
    case 'ended':
      return result?.isError !== true && textOf(result) === 'slow call done';
    default:
      return true;
  }
}

/** Fails loudly when a target does not answer a scenario with a JSON-RPC result of the kind it measures. */
export async function checkRequests(target: Target, scenario: ScenarioName, specs: RequestSpec[]): Promise<void> {
  const { status, message } = await send(scenarioUrl(target, scenario), specs[0]!);
  const result = message?.result as Record<string, unknown> | undefined;
  const wanted = answersAsExpected(scenario, result);
  if (status !== 200 || !result || !wanted) {
    const kind = SCENARIOS[scenario].provided?.expect;
    throw new Error(`${target.name} / ${scenario}: expected a JSON-RPC result${wanted ? '' : ` (${kind})`}, got HTTP ${status} ${JSON.stringify(message)?.slice(0, 300)}`);
  }
}
