/**
 * The soak's short variant end to end (`npm run soak -- --smoke`): 200 live tasks through real
 * taskgate processes for 24 s per setup, the memory store and Redis with two replicas side by
 * side, with the faults injected. It checks that the soak ran and injected its faults, and that
 * the invariants held: every handle reachable, none stuck, nothing lost, every error the
 * documented answer to a fault (or a known defect, counted apart). Never a timing: the soak's
 * figures are measured by `npm run soak`, not asserted here. Every process the soak started
 * must be gone when it ends.
 *
 * Bounded: the soak is stopped at 85 s (SIGTERM, which stops what it started; then SIGKILL to
 * its process group), under the runner's 120 s per file.
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import type { SoakReport } from '../../bench/soak/run.js';

const root = fileURLToPath(new URL('../..', import.meta.url));
const LIMIT_MS = 85_000;

function redisInstalled(): boolean {
  return spawnSync('redis-server', ['--version'], { stdio: 'ignore' }).status === 0;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Runs the soak in a process group of its own, so that nothing it started can outlive a kill. */
async function runSoak(out: string, setups: string): Promise<{ code: number | null; stderr: string }> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'bench/soak/run.ts', '--smoke', '--setups', setups, '--out', out], { cwd: root, stdio: ['ignore', 'ignore', 'pipe'], detached: true });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString('utf8')).slice(-20_000)));
  const closed = new Promise<number | null>((resolve) => child.once('close', resolve));
  const stop = setTimeout(() => {
    child.kill('SIGTERM');
    setTimeout(() => {
      try {
        process.kill(-child.pid!, 'SIGKILL');
      } catch {
        // the group is gone already
      }
    }, 5000).unref();
  }, LIMIT_MS);
  const code = await closed;
  clearTimeout(stop);
  return { code, stderr };
}

test('soak --smoke: real gateways, the faults injected, the invariants held, nothing left running', async () => {
  const withRedis = redisInstalled();
  if (!withRedis) {
    const message = 'redis-server is not installed: the soak\'s Redis setup (two replicas, Redis restarted) did not run';
    if (process.env.CI === 'true') assert.fail(`${message} (CI=true: Redis is required)`);
    console.warn(`\n*** SKIPPED: ${message}.\n*** Install Redis (redis-server on the PATH), e.g. apt-get install redis-server.\n`);
  }
  const out = mkdtempSync(join(tmpdir(), 'taskgate-soak-smoke-'));
  try {
    const { code, stderr } = await runSoak(out, withRedis ? 'memory,redis' : 'memory');
    if (!existsSync(join(out, 'soak-smoke.json'))) assert.fail(`the soak wrote no report (exit ${code})\n${stderr}`);
    const report = JSON.parse(readFileSync(join(out, 'soak-smoke.json'), 'utf8')) as SoakReport;
    for (const { pid, what } of report.pids) assert.equal(alive(pid), false, `${what} (pid ${pid}) outlived the soak`);
    assert.equal(code, 0, `the soak exited ${code}\n${stderr}\n${readFileSync(join(out, 'soak-smoke.md'), 'utf8')}`);
    assert.equal(report.schema, 'taskgate-soak/1');
    assert.equal(report.mode, 'smoke');
    assert.deepEqual(report.skipped, []);
    assert.deepEqual(report.setups.map((s) => s.setup), withRedis ? ['memory', 'redis'] : ['memory']);

    for (const setup of report.setups) {
      const where = `setup ${setup.setup}`;
      // It ran: both generations, backend tasks and tasks the gateway ran, through every replica.
      assert.ok(setup.requests.total > 0, where);
      for (const kind of ['backend 2025-11-25', 'backend 2026-07-28', 'provided 2025-11-25', 'provided 2026-07-28']) {
        assert.ok((setup.tasks.byKind[kind] ?? 0) > 0, `${where}: no ${kind} task was created`);
      }
      assert.ok((setup.tasks.ended.completed ?? 0) > 0, `${where}: no task completed`);
      assert.deepEqual(setup.replicas, setup.setup === 'redis' ? ['R1', 'R2'] : ['R1']);

      // The faults were injected, recovered where they recover, and met their documented answer.
      const kinds = setup.setup === 'redis' ? ['redis-restart', 'replica-kill', 'backend-loss'] : ['backend-loss'];
      assert.deepEqual(setup.faults.map((f) => f.kind), kinds, where);
      for (const fault of setup.faults) {
        assert.equal(fault.error, undefined, `${where}: ${fault.kind} failed: ${fault.error}`);
        assert.equal(typeof fault.injectedAt, 'number', `${where}: ${fault.kind} injected`);
        if (fault.kind !== 'backend-loss') assert.equal(typeof fault.recoveredAt, 'number', `${where}: ${fault.kind} recovered`);
        assert.ok((fault.observed?.count ?? 0) > 0, `${where}: the client never met ${fault.kind}'s documented answer (${fault.observed?.cls})`);
      }
      assert.ok(setup.tasks.lostWithBackend > 0, `${where}: tasks lived on the lost instance`);

      // Every error was a documented answer to a fault (or the known defect, counted apart).
      for (const row of setup.errors) assert.equal(row.unexplained, 0, `${where}: ${row.cls} unexplained ×${row.unexplained}: ${JSON.stringify(row.examples)}`);
      const documented = (cls: string, cause: string) => setup.errors.find((r) => r.cls === cls)?.documented[cause as 'redis-restart'] ?? 0;
      assert.ok(documented('503 TG_ERR_UPSTREAM_UNAVAILABLE', 'backend-loss') > 0, `${where}: 503 -31005 for the lost instance's tasks`);
      if (setup.setup === 'redis') assert.ok(documented('503 TG_ERR_STORE_UNAVAILABLE', 'redis-restart') > 0, `${where}: 503 -31004 while Redis was down`);

      // Afterwards: every handle asked again through every replica; reachable, none stuck, nothing lost.
      assert.deepEqual(setup.invariants.violations, {}, `${where}: ${JSON.stringify(setup.invariants.examples, null, 1)}`);
      assert.equal(setup.invariants.holds, true, where);
      const check = setup.invariants.finalCheck;
      assert.equal(check.handles, setup.tasks.handles);
      assert.deepEqual(check.replicas, setup.replicas);
      assert.equal(check.requests, check.handles * setup.replicas.length);

      // Memory was sampled from each replica's /metrics; the killed replica is two series.
      for (const name of setup.replicas) {
        const series = setup.memory.replicas.filter((m) => m.name === name);
        assert.ok(series.length >= 1 && series.every((m) => m.samples >= 1 && m.rssMiB.max > 0 && m.heapMiB.max > 0), `${where}: memory of ${name}`);
      }
      if (setup.setup === 'redis') {
        assert.equal(setup.memory.replicas.filter((m) => m.name === 'R2').length, 2, 'R2 before its kill and after its restart');
        assert.ok((setup.memory.redis?.samples ?? 0) > 0, 'Redis used_memory sampled');
      }
      assert.ok(setup.perMinute.length >= 1 && setup.perMinute.every((m) => m.requests > 0 && typeof m.p99Ms === 'number'), `${where}: p99 per minute`);
    }
    assert.match(readFileSync(join(out, 'soak-smoke.md'), 'utf8'), /### memory store, one replica[\s\S]*\*\*Invariants\*\* \*\*hold\*\*/);
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
});
