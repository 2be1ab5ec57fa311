/**
 * The scale curves of held calls and push listeners (bench/run.ts --scale --smoke --scale-curves
 * held,push) at one size a test can afford, 200, each on a gateway of its own: a socket per held
 * call, every completion delivered to both listeners of its task. No value is asserted
 * (bench-scale-smoke.test.ts has the stores' curves and says why). Compiled into
 * dist/bench-scale-listeners, apart from the other smoke tests.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { assertWellFormedSvg, scaleRun } from './scale-harness.js';

test('bench --scale --smoke measures held calls and push listeners: heap and sockets each, every completion delivered', async () => {
  const { report, markdown, svg } = await scaleRun(['held', 'push'], 'dist/bench-scale-listeners');
  const { scale } = report;
  assert.deepEqual(scale.skipped, []);
  assert.deepEqual(scale.stores, []);

  const [held] = scale.held;
  assert.equal(held?.calls, 200);
  assert.equal(typeof held.heapBytesPerCall, 'number');
  assert.ok(held.socketsPerCall >= 0.9, `about a socket per held call (${held.socketsPerCall})`);

  const [push] = scale.push;
  assert.equal(push?.listeners, 200);
  assert.equal(push.acknowledged, push.listeners, 'each listener was granted its task');
  assert.equal(push.delivered, push.listeners, 'every completion reached both of its listeners');
  assert.equal(push.missing, 0);
  assert.equal(push.cleanEnds, push.listeners, 'every stream ended with the listen\'s response');
  assert.equal(push.lag?.samples, push.listeners);
  assert.equal(typeof push.memory.heapBytesPerSubscription, 'number');
  assert.ok(push.socketsPerListener > 0.5, `about a socket per listener (${push.socketsPerListener})`);

  assert.match(markdown, /\*Gateway-run tasks with their backend call held\*[\s\S]*\*Status push: open listeners\*/);
  assertWellFormedSvg(svg);
});
