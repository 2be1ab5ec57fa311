/**
 * The history behind the console's plots (src/console/console-samples.ts), fed from a real
 * metrics registry: live tasks by status (one sample per interval, the latest scan in it
 * winning), poll rates per minute from the poll counter, and push delivery lag from its
 * histogram (mean, and the bucket that holds the 95th percentile).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ConsoleSamples, SAMPLE_MS } from '../../../src/console/console-samples.js';
import type { LiveTasks } from '../../../src/console/live-scan.js';
import { createMetrics } from '../../../src/observability/metrics.js';
import type { TaskRecord } from '../../../src/task-model/task-record.js';
import { taskRecord } from '../../support/task-records.js';

const T0 = 1_800_000_000_000;

function scan(at: number, statuses: TaskRecord['status'][]): LiveTasks {
  return { at, records: statuses.map((status) => taskRecord({ status })), truncated: false, byId: () => undefined };
}

describe('console samples', () => {
  it('keeps one status sample per interval, the latest scan in it winning', () => {
    const samples = new ConsoleSamples();
    samples.noteScan(scan(T0, ['working']));
    samples.noteScan(scan(T0 + SAMPLE_MS / 2, ['working', 'failed']));
    samples.noteScan(scan(T0 + SAMPLE_MS, ['completed']));
    const { statuses } = samples.series();
    assert.deepEqual(statuses.map((s) => s.at), [T0, T0 + SAMPLE_MS]);
    assert.deepEqual(statuses[0]!.counts, { working: 1, input_required: 0, completed: 0, failed: 1, cancelled: 0 });
    assert.equal(samples.lastStatusAt, T0 + SAMPLE_MS);
  });

  it('turns the poll counter\'s totals into polls per minute between ticks', async () => {
    const metrics = createMetrics({ defaultMetrics: false });
    const samples = new ConsoleSamples();
    await samples.notePolls(metrics, T0);
    metrics.polls.inc({ outcome: 'forwarded' }, 3);
    metrics.polls.inc({ outcome: 'cached' }, 12);
    await samples.notePolls(metrics, T0 + 30_000);
    assert.deepEqual(samples.series().polls, [{ at: T0 + 30_000, perMinute: { forwarded: 6, cached: 24, rejected: 0 } }]);
  });

  it('reads the delivery lag of each interval: its mean, and the bucket holding its 95th percentile', async () => {
    const metrics = createMetrics({ defaultMetrics: false });
    const samples = new ConsoleSamples();
    metrics.pushDeliveryLag.observe(20);
    await samples.noteLag(metrics, T0);
    await samples.noteLag(metrics, T0 + SAMPLE_MS);
    for (let i = 0; i < 19; i++) metrics.pushDeliveryLag.observe(0.004);
    metrics.pushDeliveryLag.observe(0.2);
    await samples.noteLag(metrics, T0 + 2 * SAMPLE_MS);
    const [quiet, busy] = samples.series().lag;
    assert.deepEqual(quiet, { at: T0 + SAMPLE_MS, deliveries: 0, meanMs: null, p95Ms: null }, 'what came before the first tick is not this interval\'s');
    assert.equal(busy!.deliveries, 20);
    assert.equal(busy!.meanMs, 13.8);
    assert.equal(busy!.p95Ms, 5, '19 of 20 within the 5 ms bucket');
  });
});
