/**
 * The README's first command runs the demo; this keeps it working. It runs the demo script
 * as a child process, as `npm run demo` does, and checks the story it tells.
 */
import { it } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';

it('the demo runs to the end: created, polled, throttled, refused to another principal, cancelled; then servers with no tasks get them, and a host with no tasks a long tool', () => {
  const script = new URL('../../examples/demo/run.ts', import.meta.url).pathname;
  const run = spawnSync(process.execPath, ['--import', 'tsx', script], { encoding: 'utf8', timeout: 90_000 });
  assert.equal(run.status, 0, `demo failed:\n${run.stdout}\n${run.stderr}`);
  assert.match(run.stdout, /task created; alice holds the gateway's handle [A-Za-z0-9_-]{32}\n/);
  assert.match(run.stdout, /poll 5: refused .*-31001/);
  assert.match(run.stdout, /the backend saw 1 of those 5 polls/);
  const refusals = [...run.stdout.matchAll(/^ {4}(?:alice's handle|an unknown handle): (.*)$/gm)].map((m) => m[1]);
  assert.equal(refusals.length, 2);
  assert.equal(refusals[0], refusals[1], 'a foreign task must look exactly like an unknown one');
  assert.match(refusals[0]!, /-32602/);
  assert.match(run.stdout, /tasks\/get → completed/);
  assert.match(run.stdout, /tasks\/result → scan complete/);
  assert.match(run.stdout, /bob: tasks\/cancel → cancelled/);
  assert.match(run.stdout, /taskgate_polls_total\{outcome="cached"\} [1-9]/);
  // Servers with no tasks of their own, made task-capable by the gateway, in both eras.
  assert.match(run.stdout, /the backend declares no tasks; through the gateway: capabilities\.tasks \{.*"call":\{\}.*slow_report taskSupport optional/);
  assert.match(run.stdout, /taskCreated: [A-Za-z0-9_-]{32} /);
  assert.match(run.stdout, /result: Report ready after 2s/);
  assert.match(run.stdout, /tools\/call quick_echo → a plain result at once/);
  assert.match(run.stdout, /tools\/call slow_scan → after [\d.]+s \(promoteAfter\) resultType "task"/);
  assert.match(run.stdout, /tasks\/get → completed, the result inline: Scan finished after 3s/);
  // A host without tasks, its request timeout under the tool's duration: cut off directly,
  // answered through the gateway with a background call and finished through the status tool.
  assert.match(run.stdout, /directly, with a 3 s request timeout: McpError: MCP error -32001: Request timed out/);
  assert.match(run.stdout, /tools\/list also shows: taskgate_task_status, taskgate_task_cancel/);
  assert.match(run.stdout, /\| Background call handle: [A-Za-z0-9_-]{32}\n/);
  assert.match(run.stdout, /taskgate_task_status → the tool's own result: Report ready after 5s/);
  assert.match(run.stdout, /taskgate_background_calls_total\{upstream="plain-2025",outcome="delivered"\} 1/);
  // The gateway's own lines go to files, not into the story.
  assert.doesNotMatch(run.stdout, /"level":\d+/);
  assert.match(run.stdout, /Its audit trail \(\d+ events: created 5,.*\): \S+audit\.log/);
  assert.match(run.stdout, /demo finished/);
  assert.doesNotMatch(run.stderr, /Deprecation|Warning/);
});
