/**
 * Rounds of load runs. One round runs every (scenario, target, connections) cell once; the
 * order is rotated from round to round so that no target always runs first (cold) or last
 * (after the task store has grown). Each run reads the proxy's own CPU time before and after,
 * the backend's counters, and how much CPU went to processes that are not ours. A run disturbed
 * by that foreign load is repeated; a round where it stayed high on average is dropped, and
 * replaced while the time budget allows.
 */
import { delay, type NodeChild, type Pinning } from './children.js';
import type { CpuReply } from './child-channel.js';
import type { LoadResult } from './load.js';
import { foreignLoad, round, snapshotBusy, type ForeignLoad } from './machine.js';
import { gatewayPerRequest, readCounters, settleHeldCalls, type GatewayPerRequest } from './provided.js';
import { SCENARIOS, type ScenarioName } from './scenarios.js';
import type { Target, TargetName } from './targets.js';

export type RunLoad = (connections: number, seconds: number, pinning: Pinning) => Promise<LoadResult>;

export interface Cell {
  target: Target;
  scenario: ScenarioName;
  run: RunLoad;
}

export interface Measurement {
  round: number;
  target: TargetName;
  scenario: ScenarioName;
  connections: number;
  load: LoadResult;
  /** Proxy CPU per request; absent for the backend-direct floor. */
  proxyCpuUsPerRequest?: number;
  backendCpuUsPerRequest: number;
  /** Backend requests of the scenario's kind per client request: ~1 forwarded, ~0 answered locally. */
  upstreamPerRequest: number;
  foreign: ForeignLoad;
  /** Set when the cell was measured again because of other load; this is the quietest attempt. */
  retries?: number;
  /** Provided-task scenarios: taskgate's own counters per request, and the wait for its calls to end. */
  gateway?: GatewayPerRequest;
}

export interface RoundsPlan {
  cells: Cell[];
  connections: number[];
  seconds: number;
  rounds: number;
  /** Extra rounds allowed to replace dropped ones. */
  maxExtraRounds: number;
  /** Foreign CPU (cores, averaged over a round) above which the round is dropped. */
  foreignThreshold: number;
  /** No extra round starts after this (ms since epoch). */
  deadline: number;
  /** Total time that repeated runs may take, so that the rounds still end in time. */
  retryBudgetMs: number;
  pinning: Pinning;
  backend: NodeChild;
  ourPids: () => number[];
  log: (line: string) => void;
}

export interface RoundsOutcome {
  measurements: Measurement[];
  kept: number[];
  dropped: { round: number; foreignCores: number }[];
}

async function backendStats(backend: NodeChild): Promise<Record<string, number>> {
  const res = await fetch(`${backend.url}/stats`);
  return (await res.json()) as Record<string, number>;
}

async function backendCpu(backend: NodeChild): Promise<number> {
  const cpu = await backend.ask<CpuReply>('cpu');
  return cpu.userUs + cpu.systemUs;
}

export async function measureOnce(plan: RoundsPlan, cell: Cell, connections: number, roundNo: number, seconds = plan.seconds): Promise<Measurement> {
  const { backendCounter: counter, provided } = SCENARIOS[cell.scenario];
  // Counters are read outside the CPU window; only the settling wait (a few IPC asks) is inside.
  const gateway0 = provided ? await readCounters(cell.target) : undefined;
  const stats0 = await backendStats(plan.backend);
  const proxy0 = await cell.target.cpuUs();
  const backend0 = await backendCpu(plan.backend);
  const busy0 = snapshotBusy(plan.ourPids());
  const load = await cell.run(connections, seconds, plan.pinning);
  const busy1 = snapshotBusy(plan.ourPids());
  const settled = gateway0 && provided?.settles ? await settleHeldCalls(cell.target, gateway0.providedRunning) : undefined;
  const proxy1 = await cell.target.cpuUs();
  const backend1 = await backendCpu(plan.backend);
  const stats1 = await backendStats(plan.backend);
  const gateway1 = gateway0 ? await readCounters(cell.target) : undefined;
  const requests = Math.max(1, load.requests);
  return {
    round: roundNo,
    target: cell.target.name,
    scenario: cell.scenario,
    connections,
    load,
    proxyCpuUsPerRequest: proxy0 === undefined || proxy1 === undefined ? undefined : round((proxy1 - proxy0) / requests, 1),
    backendCpuUsPerRequest: round((backend1 - backend0) / requests, 1),
    upstreamPerRequest: round(((stats1[counter] ?? 0) - (stats0[counter] ?? 0)) / requests, 3),
    foreign: foreignLoad(busy0, busy1),
    ...(gateway0 && gateway1 ? { gateway: gatewayPerRequest(gateway0, gateway1, requests, settled) } : {}),
  };
}

function rotate<T>(items: readonly T[], by: number): T[] {
  const k = items.length === 0 ? 0 : by % items.length;
  return [...items.slice(k), ...items.slice(0, k)];
}

/** The cells of round `r` in their rotated order. */
export function roundOrder(cells: Cell[], connections: number[], r: number): { cell: Cell; connections: number }[] {
  const scenarios = rotate([...new Set(cells.map((c) => c.scenario))], r);
  const targets = rotate([...new Set(cells.map((c) => c.target.name))], r);
  const levels = r % 2 === 0 ? connections : [...connections].reverse();
  const order: { cell: Cell; connections: number }[] = [];
  for (const scenario of scenarios) {
    for (const target of targets) {
      const cell = cells.find((c) => c.scenario === scenario && c.target.name === target);
      if (cell) for (const c of levels) order.push({ cell, connections: c });
    }
  }
  return order;
}

export async function runRounds(plan: RoundsPlan): Promise<RoundsOutcome> {
  const measurements: Measurement[] = [];
  const kept: number[] = [];
  const dropped: RoundsOutcome['dropped'] = [];
  let roundMs = 0;
  let retryMs = 0;
  for (let r = 0; kept.length < plan.rounds && r < plan.rounds + plan.maxExtraRounds; r++) {
    if (r >= plan.rounds && Date.now() + roundMs > plan.deadline) {
      plan.log(`no time left for another round to replace a dropped one`);
      break;
    }
    await waitForQuiet(plan, () => retryMs, (ms) => (retryMs += ms));
    const started = Date.now();
    const mine: Measurement[] = [];
    for (const { cell, connections } of roundOrder(plan.cells, plan.connections, r)) {
      let m = await measureOnce(plan, cell, connections, r + 1);
      // Another tenant's burst lands on the idle proxy core: measure that cell again after a
      // pause (twice at most, and only while time allows), keeping the quieter run.
      for (let retry = 1; retry <= 2 && m.foreign.foreignCores > plan.foreignThreshold && retryMs < plan.retryBudgetMs; retry++) {
        const retryStarted = Date.now();
        plan.log(`${cell.target.name} / ${cell.scenario} / ${connections}: ${m.foreign.foreignCores} cores of other load, measuring again`);
        await delay(1500);
        const again = { ...(await measureOnce(plan, cell, connections, r + 1)), retries: retry };
        if (again.foreign.foreignCores < m.foreign.foreignCores) m = again;
        retryMs += Date.now() - retryStarted;
      }
      // A proxy answering errors fast would look good: say so where it happens.
      if (m.load.errors > m.load.requests * 0.01) plan.log(`${m.target} / ${m.scenario} / ${connections}: ${m.load.errors} errors of ${m.load.requests} (${JSON.stringify(m.load.errorKinds)})`);
      mine.push(m);
    }
    roundMs = Date.now() - started;
    const seconds = mine.reduce((s, m) => s + m.load.seconds, 0);
    const foreignCores = round(mine.reduce((s, m) => s + m.foreign.foreignCores * m.load.seconds, 0) / Math.max(seconds, 1e-3), 3);
    measurements.push(...mine);
    if (foreignCores > plan.foreignThreshold) {
      dropped.push({ round: r + 1, foreignCores });
      plan.log(`round ${r + 1}: dropped, other processes used ${foreignCores} cores (threshold ${plan.foreignThreshold})`);
    } else {
      kept.push(r + 1);
      plan.log(`round ${r + 1}: kept (${(roundMs / 1000).toFixed(0)} s, foreign load ${foreignCores} cores)`);
    }
  }
  return { measurements, kept, dropped };
}

/**
 * Before a round: while other processes keep more than the threshold busy, wait (sampling 2 s
 * at a time) rather than start a round that would be dropped. Shares the retry budget.
 */
async function waitForQuiet(plan: RoundsPlan, spent: () => number, spend: (ms: number) => void): Promise<void> {
  while (spent() < plan.retryBudgetMs) {
    const before = snapshotBusy(plan.ourPids());
    await delay(2000);
    const foreign = foreignLoad(before, snapshotBusy(plan.ourPids())).foreignCores;
    if (foreign <= plan.foreignThreshold) return;
    plan.log(`other processes use ${foreign} cores; waiting before the next round`);
    spend(2000);
  }
}
