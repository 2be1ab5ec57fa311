/**
 * The benchmark harness end to end on a tiny configuration (bench/run.ts --smoke: one round,
 * the backend and taskgate, about a second of load per run; a plain tools/call, a
 * provided-task creation, a detached background call and the status tool on a running and a
 * completed one; 200 provided tasks held running) with the
 * Node load generator, so it needs neither wrk nor nginx. It checks the outputs are well formed
 * and that each scenario measured what it says, never the numbers: performance is measured by
 * `npm run bench`, not asserted by a timed test.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { runHarness } from './run-harness.js';

test('bench --smoke writes well-formed JSON, SVG and Markdown', async () => {
  const out = mkdtempSync(join(tmpdir(), 'taskgate-bench-smoke-'));
  try {
    const { code, stderr } = await runHarness(out);
    assert.equal(code, 0, stderr);

    const report = JSON.parse(readFileSync(join(out, 'smoke.json'), 'utf8')) as Record<string, unknown>;
    assert.equal(report.schema, 'taskgate-bench/1');
    assert.equal(report.mode, 'smoke');
    assert.match(String(report.loadGenerator), /^node/);
    const results = report.results as Record<string, unknown>[];
    assert.ok(results.length > 0, 'no result cells');
    for (const cell of results) {
      for (const key of ['rps', 'p50Us', 'p90Us', 'p99Us']) {
        const s = cell[key] as { median: unknown; min: unknown; max: unknown };
        for (const v of [s.median, s.min, s.max]) assert.equal(typeof v, 'number', `${key} of ${String(cell.target)}`);
      }
    }
    const taskgate = results.find((c) => c.target === 'taskgate-memory');
    assert.ok(taskgate && taskgate.proxyCpuUsPerRequest !== null, 'taskgate has a CPU figure');
    const goals = report.goals as { id: string; met: unknown }[];
    assert.deepEqual(goals.map((g) => g.id).sort(), ['cached-poll', 'forwarded-tasks-get-2025', 'forwarded-tasks-get-2026', 'redis-cpu', 'redis-p50', 'sse-ttfb']);
    assert.ok('heapBytesPerTask' in (report.memory as object), 'memory check ran');
    assert.ok('ttfbUs' in (report.sse as object), 'SSE check ran');
    const held = (report.sse as { taskgateMemory?: { liveBefore: unknown; livePeak: unknown; samples: number; flat: unknown } }).taskgateMemory;
    assert.equal(typeof held?.liveBefore, 'number', 'taskgate live memory sampled during the stream');
    assert.equal(typeof held?.livePeak, 'number');
    assert.ok((held?.samples ?? 0) >= 1, 'at least one sample while the stream ran');
    assert.equal(typeof held?.flat, 'boolean');
    assert.ok(Array.isArray(report.measurements));

    // Tasks the gateway runs itself: each run checked against taskgate's counters and the backend's.
    const cell = (scenario: string) => results.find((c) => c.target === 'taskgate-memory' && c.scenario === scenario && c.connections === 10) as { gateway?: Record<string, number>; upstreamPerRequest: number; proxyCpuUsPerRequest: unknown } | undefined;
    const creation = cell('provided-create-2025');
    assert.ok(creation?.gateway && (creation.gateway.createdPerRequest ?? 0) > 0, 'provided creations created tasks');
    assert.ok(creation.upstreamPerRequest > 0, 'each creation called the backend');
    assert.equal(typeof creation.gateway.settleMs, 'number', 'the run waited for its calls to end');
    assert.equal(creation.gateway.unsettled, 0);
    const provided = report.provided as { rows: { provided: string; providedCpu50: unknown }[]; memory: { runs?: Record<string, number>[] } };
    assert.deepEqual(provided.rows.map((r) => r.provided), ['provided-create-2025']);
    for (const row of provided.rows) assert.equal(typeof row.providedCpu50, 'number');
    const running = provided.memory.runs?.[0];
    assert.ok(running, 'the provided memory step ran');
    assert.equal(running.heldByBackend, running.tasks, 'every provided call was in flight at the backend');
    assert.equal(running.runningInGateway, running.tasks);
    assert.equal(typeof running.heapBytesPerRunningTask, 'number');
    assert.equal(running.runningAfterEnd, 0, 'the calls ended after the release');

    // Background calls, from 2025 clients without tasks: each run checked against taskgate's counters and the backend's.
    const detached = cell('background-detach-2025');
    assert.ok(detached?.gateway && detached.gateway.detachedPerRequest! > 0, 'the calls were detached');
    assert.ok(detached.upstreamPerRequest > 0, 'each detached call reached the backend');
    assert.equal(typeof detached.gateway.settleMs, 'number', 'the run waited for its calls to end');
    assert.equal(detached.gateway.unsettled, 0);
    for (const [scenario, answered] of [['background-status-running-2025', 'statusRunningPerRequest'], ['background-status-ended-2025', 'statusEndedPerRequest']] as const) {
      const status = cell(scenario);
      assert.ok(status?.gateway && status.gateway[answered]! > 0, `${scenario}: the status tool answered as the scenario says`);
      assert.equal(status.upstreamPerRequest, 0, `${scenario}: no status call reached the backend`);
      assert.ok(status.proxyCpuUsPerRequest !== null, `${scenario}: a CPU figure`);
    }
    const background = report.background as { rows: { scenario: string; cpuMost: unknown; cpu1: unknown }[] };
    assert.deepEqual(background.rows.map((r) => r.scenario), ['background-detach-2025', 'background-status-running-2025', 'background-status-ended-2025']);
    for (const row of background.rows) for (const v of [row.cpuMost, row.cpu1]) assert.equal(typeof v, 'number', row.scenario);

    const svg = readFileSync(join(out, 'smoke.svg'), 'utf8');
    assert.match(svg, /^<svg xmlns="http:\/\/www\.w3\.org\/2000\/svg"[^>]*>/);
    assert.match(svg.trimEnd(), /<\/svg>$/);
    assert.ok(svg.includes('<rect'), 'the chart has bars');
    // Every element opened is closed: a cheap well-formedness check without an XML parser.
    const opened = (svg.match(/<(rect|text|line|title)\b([^>]*[^/])?>/g) ?? []).length;
    const closed = (svg.match(/<\/(rect|text|line|title)>/g) ?? []).length;
    assert.equal(opened, closed);

    const markdown = readFileSync(join(out, 'smoke.md'), 'utf8');
    assert.match(markdown, /\| scenario \| target \|/);
    assert.match(markdown, /\*\*Provided tasks\*\*/);
    assert.match(markdown, /B per running task/);
    assert.match(markdown, /\*\*Background calls\*\*[\s\S]*`background-status-ended-2025`/);
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
});

test('BENCH_POLICY_PATCH replaces whole sections, and the patched policies the docs name validate', async () => {
  const { patchPolicy, policyProblem, taskgatePolicy } = await import('../../bench/targets.js');
  // Only the issuer's two URLs go into the policy; it is never asked for a token here.
  const issuer = { issuer: 'https://issuer.invalid', jwksUri: 'https://issuer.invalid/jwks', mint: () => Promise.resolve(''), close: () => Promise.resolve() };
  const base = JSON.parse(taskgatePolicy({ backendUrl: 'http://127.0.0.1:1', issuer })) as Record<string, unknown>;
  assert.equal(policyProblem(JSON.stringify(base)), undefined);
  assert.deepEqual(patchPolicy(base, undefined), base);
  const none = patchPolicy(base, '{"auth":{"mode":"none"}}');
  assert.deepEqual(none.auth, { mode: 'none' }, 'the issuers of the section it replaces are gone');
  assert.deepEqual(none.routes, base.routes, 'sections the patch does not name are kept');
  for (const patch of ['{"auth":{"mode":"none"}}', '{"logging":{"level":"warn"}}', '{"audit":{"stdout":false}}']) {
    assert.equal(policyProblem(JSON.stringify(patchPolicy(base, patch))), undefined, patch);
  }
  assert.throws(() => patchPolicy(base, '[1]'), /must be a JSON object/);
});

test('background rows set each background figure beside the forwarded 2025 poll of the same store', async () => {
  const { backgroundRows } = await import('../../bench/background.js');
  const spread = (median: number) => ({ median, min: median, max: median });
  const cell = (target: 'taskgate-memory' | 'taskgate-redis', scenario: string, connections: number, cpu: number, gateway?: Record<string, number>) => ({
    target, scenario, connections, rounds: 1, rps: spread(1), p50Us: spread(1), p90Us: spread(1), p99Us: spread(1),
    proxyCpuUsPerRequest: spread(cpu), backendCpuUsPerRequest: spread(1), upstreamPerRequest: scenario === 'background-detach-2025' ? 1 : 0, errors: 0, requests: 1,
    ...(gateway ? { gateway: { createdPerRequest: 0, forwardedPollsPerRequest: 0, cachedPollsPerRequest: 0, detachedPerRequest: 0, statusRunningPerRequest: 0, statusEndedPerRequest: 0, ...gateway } } : {}),
  });
  const cells = [
    cell('taskgate-memory', 'tasks-get-2025', 50, 200), cell('taskgate-memory', 'tasks-get-2025', 1, 400),
    cell('taskgate-memory', 'background-detach-2025', 50, 900, { detachedPerRequest: 1, settleMs: 260, unsettled: 0 }), cell('taskgate-memory', 'background-detach-2025', 1, 1500),
    cell('taskgate-memory', 'background-status-running-2025', 50, 150, { statusRunningPerRequest: 1 }), cell('taskgate-memory', 'background-status-running-2025', 1, 300),
    // No poll measured on this store: the row has its own figures and no ratio.
    cell('taskgate-redis', 'background-status-ended-2025', 50, 180, { statusEndedPerRequest: 1 }), cell('taskgate-redis', 'background-status-ended-2025', 1, 350),
  ];
  const rows = backgroundRows(cells as Parameters<typeof backgroundRows>[0]);
  assert.deepEqual(rows.map((r) => [r.target, r.scenario, r.cpuMost, r.cpu1, r.pollCpuMost, r.pollCpu1, r.ratioMost, r.check, r.backendPerRequest, r.settleMs]), [
    ['taskgate-memory', 'background-detach-2025', 900, 1500, 200, 400, 4.5, '1 detached', 1, 260],
    ['taskgate-memory', 'background-status-running-2025', 150, 300, 200, 400, 0.75, '1 answered running', 0, null],
    ['taskgate-redis', 'background-status-ended-2025', 180, 350, null, null, null, '1 answered with the outcome', 0, null],
  ]);
});
