import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { parse } from 'yaml';
import { createMetrics } from '../../../src/observability/metrics.js';

const FILES = new URL('../../../helm/taskgate/files/', import.meta.url);

/** Metric names a PromQL expression reads, with histogram series suffixes folded back. */
function metricsIn(expr: string): string[] {
  return [...expr.matchAll(/\btaskgate_[a-z_]+/g)].map((m) => m[0].replace(/_(bucket|sum|count)$/, ''));
}

describe('dashboard and alert rules', () => {
  const known = new Set(createMetrics().registry.getMetricsAsArray().map((m) => m.name));

  it('the Grafana dashboard parses and queries only metrics the gateway exports', async () => {
    const dashboard = JSON.parse(await readFile(new URL('grafana-dashboard.json', FILES), 'utf8')) as {
      panels: Array<{ title: string; targets: Array<{ expr: string }> }>;
    };
    assert.ok(dashboard.panels.length >= 10);
    for (const panel of dashboard.panels) {
      for (const { expr } of panel.targets) {
        const names = metricsIn(expr);
        assert.ok(names.length > 0, `${panel.title}: no metric in ${expr}`);
        for (const name of names) assert.ok(known.has(name), `${panel.title}: ${name} is not exported`);
      }
    }
  });

  it('the alert rules parse and read only exported metrics', async () => {
    const rules = parse(await readFile(new URL('prometheus-rules.yaml', FILES), 'utf8')) as {
      groups: Array<{ rules: Array<{ alert: string; expr: string }> }>;
    };
    const all = rules.groups.flatMap((g) => g.rules);
    assert.ok(all.some((r) => r.expr.includes('detector="enumeration"')));
    assert.ok(all.some((r) => r.expr.includes('detector="poll_abuse"')));
    assert.ok(all.some((r) => r.expr.includes('detector="overdue"')));
    for (const rule of all) for (const name of metricsIn(rule.expr)) assert.ok(known.has(name), `${rule.alert}: ${name}`);
  });
});
