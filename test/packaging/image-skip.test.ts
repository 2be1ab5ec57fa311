/**
 * The container image test (image.test.ts) where no engine answers, as on the project's CI: a
 * run that built and ran nothing must say so in its totals and out loud, never pass as if it
 * had, and TASKGATE_REQUIRE_CONTAINER_ENGINE must turn it into a failure. The image test runs
 * in a child node process with `false` as its engine (`false info` exits 1, at once).
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { describe, it } from 'node:test';

const ROOT = new URL('../../', import.meta.url).pathname;
const IMAGE_TESTS = 3;

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

function runImageTest(env: Record<string, string>): Promise<Run> {
  const childEnv: NodeJS.ProcessEnv = { ...process.env, CONTAINER_ENGINE: 'false', ...env };
  // This file's own CI or requirement must not leak into the child's verdict.
  delete childEnv.CI;
  if (!('TASKGATE_REQUIRE_CONTAINER_ENGINE' in env)) delete childEnv.TASKGATE_REQUIRE_CONTAINER_ENGINE;
  delete childEnv.NODE_TEST_CONTEXT;
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', '--test', '--test-reporter=tap', 'test/packaging/image.test.ts'], { cwd: ROOT, env: childEnv, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

function total(run: Run, name: string): number {
  const found = new RegExp(`^# ${name} (\\d+)$`, 'm').exec(run.stdout);
  assert.ok(found, `no "# ${name}" total in:\n${run.stdout}`);
  return Number(found[1]);
}

describe('the image test without a container engine', () => {
  it('skips each of its tests, counted as skipped, and warns why', async () => {
    const run = await runImageTest({});
    assert.equal(run.code, 0, run.stdout + run.stderr);
    assert.equal(total(run, 'tests'), IMAGE_TESTS);
    assert.equal(total(run, 'skipped'), IMAGE_TESTS);
    assert.equal(total(run, 'pass'), 0);
    assert.match(run.stdout + run.stderr, /\*\*\* SKIPPED: no container engine answers \(false info: exit 1\)/);
  });

  for (const value of ['true', '1']) {
    it(`fails each of its tests with TASKGATE_REQUIRE_CONTAINER_ENGINE=${value}, saying why`, async () => {
      const run = await runImageTest({ TASKGATE_REQUIRE_CONTAINER_ENGINE: value });
      assert.notEqual(run.code, 0);
      assert.equal(total(run, 'fail'), IMAGE_TESTS);
      assert.equal(total(run, 'skipped'), 0);
      assert.match(run.stdout, /no container engine answers, and TASKGATE_REQUIRE_CONTAINER_ENGINE is set: false info: exit 1/);
    });
  }
});
