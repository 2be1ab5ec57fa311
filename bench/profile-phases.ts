/**
 * A CPU profile cut into the phases of a request (bench/profile.ts, issue #29's per-phase
 * budget): each sample goes to the frame nearest its leaf that belongs to a phase (the log line
 * inside the request-log hook, the socket write inside fastify's reply inside the tasks stage),
 * and a sample with no such frame to the library or runtime area nearest its leaf (fastify's
 * own routing and hooks, node's HTTP parser). Native frames (JSON.parse, writev) and shared
 * helpers belong to whatever phase called them.
 *
 * Inclusive by phase, not self by function: "the auth stage" is jose, the token cache and the
 * digest together, which a self-time table spreads over a dozen rows.
 */

export interface ProfileFrame {
  id: number;
  callFrame: { functionName: string; url: string };
  children?: number[];
}

export interface PhaseProfile {
  nodes: ProfileFrame[];
  startTime: number;
  samples: number[];
  timeDeltas: number[];
}

interface PhaseRule {
  phase: string;
  /** Matches a fragment of the frame's url and, when given, its function name exactly. */
  url: string;
  fn?: string;
}

const REPLY = 'reply: fastify send and the socket write';
const LOG_LINE = 'request log: the log line';
const AUDIT = 'request log: the audit event';
const METRICS = 'metrics (prom-client, store timings included)';
const AUTH = 'auth: bearer token, token cache, JWT';
const UPSTREAM = 'upstream hop: forward, undici both ways';
const WAY_BACK = 'way back: reply read, id rewrite, snapshot';
const GLUE = 'pipeline glue: context, hooks of mcp-routes';
const FASTIFY = 'fastify: routing, hooks, body read, request objects';
const NODE_HTTP = 'node http: parser, request/response objects, sockets';

/**
 * The phases' own files (or functions): a sample goes to the one nearest the leaf. Helpers
 * shared by several phases (mcp/json, the task-model wire, the lifecycle primitives) are not here, so
 * their samples go to the phase that called them.
 */
const OWN: PhaseRule[] = [
  { phase: REPLY, url: 'node_modules/fastify/lib/reply.js' },
  { phase: LOG_LINE, url: '/observability/logger.', fn: 'writeInfoLine' },
  { phase: AUDIT, url: '/observability/task-observer.' },
  { phase: AUDIT, url: '/observability/audit.' },
  { phase: METRICS, url: 'node_modules/prom-client' },
  { phase: METRICS, url: '/observability/metrics.' },
  { phase: 'request log: the rest of the hook', url: '/observability/request-log.' },
  { phase: 'request log: the rest of the hook', url: '/pipeline/request-log-hook.' },
  { phase: AUTH, url: '/auth/' },
  { phase: AUTH, url: 'node_modules/jose' },
  { phase: 'mcp stage: UTF-8 check, JSON parse, era, headers', url: '/mcp/mcp-stage.' },
  { phase: 'limits stage', url: '/limits/' },
  { phase: 'store', url: '/store/' },
  { phase: 'tasks stage: lookup, owner check, poll rule', url: '/tasks/task-requests.' },
  { phase: WAY_BACK, url: '/pipeline/way-back.' },
  { phase: WAY_BACK, url: '/pipeline/stream-reply.' },
  { phase: WAY_BACK, url: '/tasks/task-responses.' },
  { phase: UPSTREAM, url: '/upstream/' },
  { phase: UPSTREAM, url: '/pipeline/forward.' },
  { phase: UPSTREAM, url: 'node_modules/undici' },
  { phase: 'routing stage', url: '/routing/' },
  { phase: 'listener: Host/Origin, CORS', url: '/listener/' },
  { phase: 'listener: Host/Origin, CORS', url: '/pipeline/client-app.' },
  { phase: 'listener: Host/Origin, CORS', url: '/pipeline/error-answer.' },
  { phase: GLUE, url: '/pipeline/' },
];

/** Where a sample with no phase frame on its stack goes: the library or runtime it was in. */
const AREAS: PhaseRule[] = [
  { phase: FASTIFY, url: 'node_modules/fastify' },
  { phase: FASTIFY, url: 'node_modules/find-my-way' },
  { phase: FASTIFY, url: 'node_modules/avvio' },
  { phase: FASTIFY, url: 'node_modules/toad-cache' },
  { phase: FASTIFY, url: 'node_modules/@fastify' },
  { phase: FASTIFY, url: 'node_modules/secure-json-parse' },
  { phase: FASTIFY, url: 'node_modules/fast-content-type-parse' },
  { phase: 'pino, sonic-boom (outside the request log)', url: 'node_modules/pino' },
  { phase: 'pino, sonic-boom (outside the request log)', url: 'node_modules/sonic-boom' },
  { phase: NODE_HTTP, url: 'node:_http' },
  { phase: NODE_HTTP, url: 'node:net' },
  { phase: NODE_HTTP, url: 'node:internal/stream_base_commons' },
  { phase: NODE_HTTP, url: 'node:internal/streams' },
  { phase: NODE_HTTP, url: 'node:events' },
  { phase: 'node: ticks, timers, promises', url: 'node:internal/process' },
  { phase: 'node: ticks, timers, promises', url: 'node:internal/timers' },
  { phase: 'node: ticks, timers, promises', url: 'node:timers' },
];

function match(rules: PhaseRule[], frame: ProfileFrame): string | undefined {
  const { functionName, url } = frame.callFrame;
  if (!url) return undefined;
  return rules.find((rule) => url.includes(rule.url) && (rule.fn === undefined || rule.fn === functionName))?.phase;
}

export interface PhaseShare {
  phase: string;
  /** Share of the busy (not idle) samples of the window. */
  share: number;
}

/** Busy samples of the window by phase, largest first; idle time is left out, GC is its own phase. */
export function phaseShares(profile: PhaseProfile, fromUs: number, toUs: number): PhaseShare[] {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const memo = new Map<number, string>();
  const phaseOf = (id: number): string => {
    const known = memo.get(id);
    if (known) return known;
    let own: string | undefined;
    let area: string | undefined;
    let top: string | undefined;
    for (let at = byId.get(id); at && own === undefined; at = byId.get(parent.get(at.id) ?? -1)) {
      const name = at.callFrame.functionName;
      if (!at.callFrame.url && name.startsWith('(') && name !== '(root)') top = name;
      own = match(OWN, at);
      area ??= match(AREAS, at);
    }
    const result = own ?? area ?? (top === '(garbage collector)' ? 'GC' : top === '(program)' ? '(program): V8 and native outside JavaScript' : top ?? 'other');
    memo.set(id, result);
    return result;
  };
  // Each sample counts once, whatever the time to the next one: on a busy machine a process
  // descheduled for milliseconds leaves a long gap after one sample, and weighing samples by that
  // gap charged a stall to whatever function it fell on (9.9 % to a one-line Proxy trap in one
  // profile here). The sampling interval is fixed, so counts are the on-CPU estimate.
  const totals = new Map<string, number>();
  let busy = 0;
  let t = profile.startTime;
  for (let i = 0; i < profile.samples.length; i++) {
    t += profile.timeDeltas[i] ?? 0;
    if (t < fromUs || t > toUs) continue;
    const phase = phaseOf(profile.samples[i]!);
    if (phase === '(idle)') continue;
    totals.set(phase, (totals.get(phase) ?? 0) + 1);
    busy++;
  }
  return [...totals.entries()].map(([phase, n]) => ({ phase, share: n / Math.max(busy, 1) })).sort((a, b) => b.share - a.share);
}

/** A Markdown table of the phases: share of the busy samples, and `busySamples` for scale. */
export function renderPhases(shares: PhaseShare[]): string {
  return [
    'Busy samples by phase (each sample to the phase frame nearest its leaf, else its library or runtime area; idle left out; samples counted, not weighed by time):',
    '',
    '| phase | share of busy samples |',
    '| --- | ---: |',
    ...shares.map((s) => `| ${s.phase} | ${(s.share * 100).toFixed(1)} % |`),
  ].join('\n');
}
