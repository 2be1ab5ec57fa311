// Both conformance suites against the example server directly and through the gateway, in
// the same run: any scenario that passes directly and fails through taskgate is a gateway
// defect, and the failing checks are printed.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { startStack, type Stack } from '../e2e/support/harness.js';
import { runConformanceServerScenarios, type ConformanceSuite, type ScenarioOutcome } from './run-conformance.js';

function regressions(direct: Map<string, ScenarioOutcome>, via: Map<string, ScenarioOutcome>): string[] {
  const lost: string[] = [];
  for (const [name, outcome] of direct) {
    if (outcome.status !== 'pass') continue;
    const through = via.get(name);
    if (through?.status === 'pass') continue;
    const failing = (through?.checks ?? [])
      .filter((c) => c.status === 'FAILURE')
      .map((c) => `    ${c.name}: ${c.errorMessage ?? c.description ?? ''}`);
    lost.push(`${name}: ${through?.status ?? 'missing'}\n${failing.join('\n')}`);
  }
  return lost;
}

describe('conformance through the gateway', () => {
  let stack: Stack;
  before(async () => {
    // With the policy's default, bridging on: the probes run, and nothing they change may fail a scenario.
    stack = await startStack({ bridge: 'auto' });
  });
  after(() => stack.close());

  for (const suite of ['0.1', '0.2'] as ConformanceSuite[]) {
    it(`suite ${suite}: every scenario that passes directly passes through taskgate`, async () => {
      const direct = await runConformanceServerScenarios(suite, stack.servers[0]!.url);
      const via = await runConformanceServerScenarios(suite, stack.gw.url);
      const passedDirectly = [...direct.values()].filter((o) => o.status === 'pass').length;
      console.log(`conformance ${suite}: ${passedDirectly} scenarios pass directly; through the gateway:`);
      for (const [name, outcome] of via) console.log(`  ${outcome.status.padEnd(4)} ${name}`);
      // Guards against a vacuous comparison: the harness must have run the suite for real.
      assert.ok(passedDirectly >= 30, `only ${passedDirectly} scenarios passed directly`);
      assert.deepEqual(regressions(direct, via), []);
    });
  }
});
