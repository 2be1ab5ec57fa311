// Both conformance suites straight against the example server: the baseline that the
// through-gateway comparison is measured against. Each suite takes about 1–2 s here.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { startExampleServer, type ExampleServer } from '../../examples/mcp-server/server.js';
import { runConformanceServerScenarios, type ConformanceSuite, type ScenarioOutcome } from './run-conformance.js';

/** Server scenarios of spec 2025-11-25 that the example server is expected to pass in both suites. */
const GEN1_SCENARIOS = [
  'server-initialize',
  'logging-set-level',
  'ping',
  'completion-complete',
  'tools-list',
  'tools-call-simple-text',
  'tools-call-image',
  'tools-call-audio',
  'tools-call-embedded-resource',
  'tools-call-mixed-content',
  'tools-call-with-logging',
  'tools-call-error',
  'tools-call-with-progress',
  'tools-call-sampling',
  'tools-call-elicitation',
  'json-schema-2020-12',
  'elicitation-sep1034-defaults',
  'server-sse-polling',
  'server-sse-multiple-streams',
  'elicitation-sep1330-enums',
  'resources-list',
  'resources-read-text',
  'resources-read-binary',
  'resources-templates-read',
  'resources-subscribe',
  'resources-unsubscribe',
  'prompts-list',
  'prompts-get-simple',
  'prompts-get-with-args',
  'prompts-get-embedded-resource',
  'prompts-get-with-image',
  'dns-rebinding-protection',
];

const EXPECTED_PASS: Record<ConformanceSuite, string[]> = {
  '0.1': GEN1_SCENARIOS,
  '0.2': [...GEN1_SCENARIOS, 'server-session-lifecycle'],
};

function printTable(suite: ConformanceSuite, outcomes: Map<string, ScenarioOutcome>, ms: number): void {
  const width = Math.max(...[...outcomes.keys()].map((k) => k.length));
  const lines = [...outcomes].map(([name, { status, checks }]) => {
    const why = checks.filter((c) => c.status === 'FAILURE').map((c) => `${c.id}: ${c.errorMessage ?? ''}`);
    return `  ${name.padEnd(width)}  ${status}${why.length > 0 ? `  (${why.join('; ')})` : ''}`;
  });
  console.log(`conformance ${suite} direct: ${outcomes.size} scenarios in ${ms} ms\n${lines.join('\n')}`);
}

describe('conformance suites against the example server', () => {
  let server: ExampleServer;

  before(async () => {
    server = await startExampleServer({ eventStore: true });
  });
  after(async () => {
    await server.close();
  });

  for (const suite of ['0.1', '0.2'] as const) {
    it(`suite ${suite}: every Gen-1 server scenario passes`, async () => {
      const started = Date.now();
      const outcomes = await runConformanceServerScenarios(suite, server.url, { timeoutMs: 90_000 });
      printTable(suite, outcomes, Date.now() - started);
      for (const scenario of EXPECTED_PASS[suite]) {
        const outcome = outcomes.get(scenario);
        const failures = outcome?.checks.filter((c) => c.status === 'FAILURE').map((c) => c.errorMessage);
        assert.equal(outcome?.status, 'pass', `${scenario}: ${JSON.stringify(failures ?? 'not run')}`);
      }
    });
  }

  it('runs an explicit scenario list, one CLI process per scenario', async () => {
    const statuses = await runConformanceServerScenarios('0.2', server.url, {
      scenarios: ['ping', 'server-session-lifecycle', 'server-stateless'],
      timeoutMs: 60_000,
    });
    assert.equal(statuses.get('ping')?.status, 'pass');
    assert.equal(statuses.get('server-session-lifecycle')?.status, 'pass');
    // A 2026-07-28 scenario: an SDK 1.x server cannot pass it, and the harness must say so.
    assert.equal(statuses.get('server-stateless')?.status, 'fail');
  });
});
