/**
 * What the scale smoke tests share (bench-scale-smoke.test.ts, bench-scale-listeners-smoke.test.ts):
 * a harness run of some scale curves at size 200, and a cheap well-formedness check of the chart.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import assert from 'node:assert/strict';
import type { ScaleReport } from '../../bench/output.js';
import { runHarness } from './run-harness.js';

/** Runs the scale curves named at size 200, compiled into `buildDir`; the report, its Markdown and its chart. */
export async function scaleRun(curves: string[], buildDir: string): Promise<{ report: ScaleReport; markdown: string; svg: string }> {
  const out = mkdtempSync(join(tmpdir(), 'taskgate-bench-scale-'));
  try {
    const { code, stderr } = await runHarness(out, ['--scale', '--scale-sizes', '200', '--scale-curves', curves.join(',')], { BENCH_BUILD_DIR: buildDir });
    assert.equal(code, 0, stderr);
    const report = JSON.parse(readFileSync(join(out, 'scale-smoke.json'), 'utf8')) as ScaleReport;
    assert.equal(report.schema, 'taskgate-bench-scale/1');
    return { report, markdown: readFileSync(join(out, 'scale-smoke.md'), 'utf8'), svg: readFileSync(join(out, 'scale-smoke.svg'), 'utf8') };
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
}

export function assertWellFormedSvg(svg: string): void {
  assert.match(svg, /^<svg xmlns="http:\/\/www\.w3\.org\/2000\/svg"[^>]*>/);
  assert.match(svg.trimEnd(), /<\/svg>$/);
  const opened = (svg.match(/<(text|title|circle)\b([^>]*[^/])?>/g) ?? []).length;
  const closed = (svg.match(/<\/(text|title|circle)>/g) ?? []).length;
  assert.equal(opened, closed);
}
