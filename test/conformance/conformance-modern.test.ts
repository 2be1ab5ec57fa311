// The 0.2 suite's tasks-extension and 2026-07-28 scenarios straight against the modern task
// server: the baseline for the same scenarios run through the gateway. About 15 s in all, most of
// it tasks-lifecycle and tasks-wire-fields waiting for their tasks to finish.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { startModernTaskServer, type ModernTaskServer } from '../../examples/modern-task-server/server.js';
import { startGateway, testPolicy, type GatewayUnderTest } from '../e2e/support/harness.js';
import { runConformanceServerScenarios, type ScenarioOutcome } from './run-conformance.js';

/** Extension scenarios: the CLI skips them whenever --spec-version is given, so none is. */
const TASKS_SCENARIOS = [
  'tasks-lifecycle',
  'tasks-capability-negotiation',
  'tasks-wire-fields',
  'tasks-request-state-removal',
  'tasks-mrtr-input',
  'tasks-request-headers',
  'tasks-dispatch-and-envelope',
  'tasks-required-task-error',
  'tasks-mrtr-composition',
];
/** Upstream skips it until it is rewritten against subscriptions/listen. */
const PENDING_UPSTREAM = 'tasks-status-notifications';
/** 2026-07-28-only scenarios: they run modern without a --spec-version. */
const MODERN_ONLY_SCENARIOS = ['server-stateless', 'http-header-validation'];
/** Scenarios of both eras: they default to 2025-11-25, which this server rejects by design. */
const BOTH_ERAS_SCENARIOS = ['tools-list', 'dns-rebinding-protection'];

function printTable(title: string, outcomes: Map<string, ScenarioOutcome>, ms: number): void {
  const width = Math.max(...[...outcomes.keys()].map((k) => k.length));
  const lines = [...outcomes].map(([name, { status, checks }]) => {
    const why = checks.filter((c) => c.status === 'FAILURE').map((c) => `${c.id}: ${c.errorMessage ?? ''}`);
    return `  ${name.padEnd(width)}  ${status}${why.length > 0 ? `  (${why.join('; ')})` : ''}`;
  });
  console.log(`${title}: ${outcomes.size} scenarios in ${ms} ms\n${lines.join('\n')}`);
}

function assertPassed(outcomes: Map<string, ScenarioOutcome>, scenarios: string[]): void {
  for (const scenario of scenarios) {
    const outcome = outcomes.get(scenario);
    const failures = outcome?.checks.filter((c) => c.status === 'FAILURE').map((c) => c.errorMessage);
    assert.equal(outcome?.status, 'pass', `${scenario}: ${JSON.stringify(failures ?? 'not run')}`);
  }
}

describe('conformance 0.2 against the modern task server', () => {
  let server: ModernTaskServer;
  let gateway: GatewayUnderTest;
  const direct = new Map<string, ScenarioOutcome>();

  before(async () => {
    server = await startModernTaskServer({ pollIntervalMs: 100 });
    // With the policy's default, bridging on: the probes run, and nothing they change may fail a scenario.
    gateway = await startGateway(testPolicy([server.url], {}, 'auto'));
  });
  after(async () => {
    await gateway?.close();
    await server?.close();
  });

  it('passes every tasks-* scenario and the 2026-07-28 transport scenarios', async () => {
    const started = Date.now();
    const outcomes = await runConformanceServerScenarios('0.2', server.url, {
      scenarios: [...TASKS_SCENARIOS, PENDING_UPSTREAM, ...MODERN_ONLY_SCENARIOS],
      timeoutMs: 100_000,
    });
    printTable('conformance 0.2 direct (modern, extension)', outcomes, Date.now() - started);
    assertPassed(outcomes, [...TASKS_SCENARIOS, ...MODERN_ONLY_SCENARIOS]);
    assert.equal(outcomes.get(PENDING_UPSTREAM)?.status, 'skip');
    for (const [name, outcome] of outcomes) direct.set(name, outcome);
  });

  it('passes through taskgate every scenario that passes directly (handles, ownership, governance on)', async () => {
    assert.ok(direct.size > 0, 'the direct run must come first');
    const started = Date.now();
    const outcomes = await runConformanceServerScenarios('0.2', gateway.url, {
      scenarios: [...TASKS_SCENARIOS, ...MODERN_ONLY_SCENARIOS],
      timeoutMs: 100_000,
    });
    printTable('conformance 0.2 through the gateway (modern, extension)', outcomes, Date.now() - started);
    assertPassed(outcomes, [...direct].filter(([, o]) => o.status === 'pass').map(([name]) => name));
  });

  it('passes the scenarios shared by both eras at --spec-version 2026-07-28', async () => {
    const started = Date.now();
    const outcomes = await runConformanceServerScenarios('0.2', server.url, {
      scenarios: BOTH_ERAS_SCENARIOS,
      specVersion: '2026-07-28',
      timeoutMs: 60_000,
    });
    printTable('conformance 0.2 direct (modern, 2026-07-28)', outcomes, Date.now() - started);
    assertPassed(outcomes, BOTH_ERAS_SCENARIOS);
  });
});
