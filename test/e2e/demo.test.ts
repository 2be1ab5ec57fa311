/**
 * The README's first command runs the demo; this keeps it working. It runs the demo script
 * as a child process, as `npm run demo` does, and checks the story it tells.
 */
import { it } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';

it('the demo runs to the end and shows a task created, polled, completed and cancelled', () => {
  const script = new URL('../../examples/demo/run.ts', import.meta.url).pathname;
  const run = spawnSync(process.execPath, ['--import', 'tsx', script], { encoding: 'utf8', timeout: 90_000 });
  assert.equal(run.status, 0, `demo failed:\n${run.stdout}\n${run.stderr}`);
  assert.match(run.stdout, /task created: \S+ \(status working/);
  assert.match(run.stdout, /tasks\/get → completed/);
  assert.match(run.stdout, /tasks\/result → scan complete/);
  assert.match(run.stdout, /tasks\/cancel → cancelled/);
  assert.match(run.stdout, /demo finished/);
  assert.doesNotMatch(run.stderr, /Deprecation|Warning/);
});
