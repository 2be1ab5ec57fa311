/**
 * The status-push measurement alone on a tiny configuration (bench/run.ts --push --smoke: 20
 * listeners × 10 provided tasks, on one replica and across two on a private redis-server). It
 * checks that every completion reached its listener and that each figure was measured, never
 * its value: performance is measured by `npm run bench`, not asserted by a timed test. The
 * gateway is compiled into dist/bench-push, so that the other smoke test, which may run at the
 * same time, never loads a file this one is writing.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { runHarness } from './run-harness.js';

// The status-push measurement alone at 20 listeners × 10 tasks (bench/push.ts): about 30 s after
// the build on two quiet cores. It checks that every completion reached its listener on one
// replica and across two, and that each figure was measured, never its value.
test('bench --push --smoke delivers every completion to its listener and writes the figures', async () => {
  const out = mkdtempSync(join(tmpdir(), 'taskgate-bench-push-'));
  try {
    const { code, stderr } = await runHarness(out, ['--push'], { BENCH_BUILD_DIR: 'dist/bench-push' });
    assert.equal(code, 0, stderr);
    const report = JSON.parse(readFileSync(join(out, 'push-smoke.json'), 'utf8')) as { schema: string; settings: { listeners: number; tasksPerListener: number }; push: { phases: Record<string, unknown>[]; skipped: unknown[] } };
    assert.equal(report.schema, 'taskgate-bench-push/1');
    assert.deepEqual(report.push.skipped, [], 'both setups ran (redis-server is installed where the suite runs)');
    assert.deepEqual(report.push.phases.map((p) => p.setup), ['memory', 'redis']);
    const tasks = report.settings.listeners * report.settings.tasksPerListener;
    for (const phase of report.push.phases as { setup: string; acknowledged: number; delivered: number; missing: number; unstamped: number; cleanEnds: number; listeners: number; lag: { samples: number; p50Ms: number; p99Ms: number }; gatewayLag: { count: number } | null; memory: Record<string, unknown> }[]) {
      assert.equal(phase.acknowledged, tasks, `${phase.setup}: every handle acknowledged`);
      assert.equal(phase.delivered, tasks, `${phase.setup}: every completion delivered`);
      assert.equal(phase.missing, 0);
      assert.equal(phase.unstamped, 0, 'every completion carried the backend\'s stamp in its inline result');
      assert.equal(phase.cleanEnds, phase.listeners, 'every stream ended with the listen\'s response');
      assert.equal(phase.lag.samples, tasks);
      assert.ok(phase.lag.p50Ms <= phase.lag.p99Ms);
      assert.equal(phase.gatewayLag?.count, tasks, `${phase.setup}: the listener replica observed each completion's lag once`);
      assert.equal(typeof phase.memory.heapBytesPerSubscription, 'number');
    }
    assert.match(readFileSync(join(out, 'push-smoke.md'), 'utf8'), /\*\*Status push\*\*[\s\S]*B per open subscription/);
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
});
