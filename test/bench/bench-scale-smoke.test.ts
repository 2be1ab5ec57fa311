/**
 * The scale curves of the stores (bench/run.ts --scale --smoke --scale-curves memory,redis) at
 * one size a test can afford, 200: a point on the memory store and one on a private
 * redis-server, each on processes of its own. It checks that each point was measured and
 * measured what it says (the population is the size, forwarded polls reached the backend,
 * cached ones did not), never a value: performance is measured by `npm run bench`, not asserted
 * by a timed test. The gateway is compiled into dist/bench-scale-stores, so that the other smoke
 * tests, which may run at the same time, never load a file this one is writing. How curves of
 * several points are judged and drawn is checked on made-up points, without processes; the
 * held calls and push listeners have a file of their own (bench-scale-listeners-smoke.test.ts),
 * so that each harness run stays inside the runner's time per file on a loaded machine.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { CellSummary } from '../../bench/report.js';
import type { ScaleCheck } from '../../bench/scale.js';
import type { StorePoint } from '../../bench/scale-store.js';
import { assertWellFormedSvg, scaleRun } from './scale-harness.js';

test('bench --scale --smoke measures both stores: tasks put in place, heap or used_memory per task, creations, polls', async () => {
  const { report, markdown, svg } = await scaleRun(['memory', 'redis'], 'dist/bench-scale-stores');
  const { scale } = report;
  assert.deepEqual(scale.skipped, [], 'every point ran (redis-server is installed where the suite runs)');
  assert.deepEqual(scale.stores.map((p) => `${p.store} ${p.size}`), ['memory 200', 'redis 200']);
  for (const point of scale.stores) {
    assert.equal(point.baselineTasks + point.seededTasks + point.createdTasks, point.size, `${point.store}: the population is the size`);
    assert.equal(point.creation.count, point.createdTasks, `${point.store}: every creation over HTTP made a task`);
    for (const v of [point.heap.perTask, point.creation.perSecond, point.creation.cpuUsPerCreation, point.reads.scanPageMs, point.reads.listPageMs]) assert.equal(typeof v, 'number', point.store);
    if (point.store === 'redis') assert.equal(typeof point.redisMemory?.perTask, 'number', 'Redis used_memory read');
    assert.ok(point.polls.sample.fast > 0 && point.polls.sample.slow > 0, `${point.store}: tasks of both kinds polled`);
    const forwarded = point.polls.cells.find((c) => c.scenario === 'tasks-get-2026');
    const cached = point.polls.cells.find((c) => c.scenario === 'tasks-get-cached');
    assert.equal(forwarded?.upstreamPerRequest, 1, `${point.store}: every forwarded poll reached the backend`);
    assert.equal(cached?.upstreamPerRequest, 0, `${point.store}: no cached poll reached the backend`);
    for (const cell of [forwarded!, cached!]) {
      assert.equal(cell.errors, 0, `${point.store} ${cell.scenario}`);
      assert.equal(typeof cell.proxyCpuUsPerRequest?.median, 'number', `${point.store} ${cell.scenario}: a CPU figure`);
    }
  }
  assert.match(markdown, /\*memory store: tasks and creation\*[\s\S]*\*Redis store: polls\*[\s\S]*\*Verdicts\*/);
  assertWellFormedSvg(svg);
});

test('scale curves of several points: a verdict each, flat within the tolerance or how far it moves, and drawn', async () => {
  const { scaleCurves, scaleMarkdown, verdictOf } = await import('../../bench/scale-figures.js');
  const { renderScaleChart } = await import('../../bench/scale-chart.js');
  const spread = (median: number) => ({ median, min: median * 0.9, max: median * 1.1 });
  const cell = (scenario: 'tasks-get-2026' | 'tasks-get-cached', connections: number, cpu: number): CellSummary => ({
    target: 'taskgate-memory', scenario, connections, rounds: 1, rps: spread(1000), p50Us: spread(300), p90Us: spread(400), p99Us: spread(900),
    proxyCpuUsPerRequest: spread(cpu), backendCpuUsPerRequest: spread(30), upstreamPerRequest: scenario === 'tasks-get-2026' ? 1 : 0, errors: 0, requests: 1000,
  });
  const point = (size: number, heapPerTask: number, forwardedCpu: number): StorePoint => ({
    store: 'memory', size, principals: 100, baselineTasks: 200, seededTasks: size - 1200, createdTasks: 1000,
    seeding: { seconds: 1, perSecond: size, refused: {} },
    creation: { count: 1000, seconds: 1, perSecond: 3000, errors: 0, cpuUsPerCreation: 300, p50Us: 1000, p99Us: 5000, foreignCores: 0 },
    heap: { before: 0, seeded: 0, created: heapPerTask * (size - 200), perTask: heapPerTask, perSeededTask: heapPerTask, perCreatedTask: heapPerTask },
    rssPerTask: heapPerTask, reads: { scanPageMs: size / 1000, listPageMs: 0.1, listOwnerTasks: size / 100 },
    polls: { sample: { fast: 500, slow: 500 }, cells: [cell('tasks-get-2026', 1, forwardedCpu), cell('tasks-get-2026', 50, forwardedCpu), cell('tasks-get-cached', 1, 100), cell('tasks-get-cached', 50, 100)], kept: [1], dropped: [] },
  });
  const check: ScaleCheck = {
    sizes: [1_500, 10_000, 100_000, 1_000_000],
    settings: { rounds: 1, seconds: 1, connections: [1, 50], pollSample: 500, creations: 1000, retryBudgetMs: 0, foreignThreshold: 0.25, settleReads: 1 },
    // At 1,000 tasks the heap grows by under a MiB: its figure (here far off) is shown but not judged.
    stores: [point(1_500, 300, 200), point(10_000, 950, 200), point(100_000, 960, 240), point(1_000_000, 1000, 400)],
    push: [],
    held: [],
    skipped: [{ what: 'redis store, 1000000 tasks', reason: 'failed: made up' }],
  };
  const curves = new Map(scaleCurves(check).map((c) => [c.id, c]));
  assert.deepEqual(curves.get('memory-heap')?.points.map((p) => [p.x, p.y, p.unresolved ?? false]), [[1_500, 300, true], [10_000, 950, false], [100_000, 960, false], [1_000_000, 1000, false]]);
  const heap = verdictOf(curves.get('memory-heap')!);
  assert.equal(heap.flat, true, heap.text);
  assert.match(heap.text, /10k → 1M \(1500 not judged: below the measurement's resolution\)/);
  const cpu = verdictOf(curves.get('memory-forwarded-cpu')!);
  assert.equal(cpu.flat, false, 'a poll costing twice as much at a million tasks is not flat');
  assert.equal(cpu.lastOverFirst, 2);
  assert.match(cpu.text, /NOT flat: largest ÷ smallest 2× \(over 1\.3×\); grows 2× 1500 → 1M/);
  assert.equal(verdictOf(curves.get('memory-cached-cpu')!).flat, true);
  assert.equal(curves.has('redis-used-memory'), false, 'no Redis point, no Redis curve');
  const markdown = scaleMarkdown(check);
  assert.match(markdown, /- memory store: gateway heap B per live task: flat/);
  assert.match(markdown, /\*\*redis store, 1000000 tasks not measured\*\*: failed: made up/);
  const svg = renderScaleChart(check, 'made-up points');
  assertWellFormedSvg(svg);
  assert.ok(svg.includes('<path'), 'the curves are drawn');
});
