/**
 * The chart rolls pods only for a policy change taskgate cannot reload: the pods'
 * checksum/policy-restart annotation covers exactly the reloader's restart-only keys. The
 * key list is compared without helm; the rendering needs a real helm, found as the chart's
 * other render tests find it (and, like them, skipped only outside CI).
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { RESTART_ONLY_KEYS } from '../../src/reload/policy-diff.js';

const ROOT = new URL('../../', import.meta.url).pathname;
const CHART = join(ROOT, 'helm', 'taskgate');
const TEMPLATE = join(CHART, 'templates', '_policy-reload.tpl');

/** $HELM, then the pinned helm of `npm run helm:install`, then helm on PATH (as helm-chart.test.ts). */
function findHelm(): string | undefined {
  const candidates = [process.env.HELM, join(ROOT, 'tools/helm/bin/helm'), 'helm'];
  for (const candidate of candidates.filter((c): c is string => Boolean(c))) {
    if (spawnSync(candidate, ['version', '--short'], { encoding: 'utf8' }).status === 0) return candidate;
  }
  return undefined;
}

describe('helm/taskgate and policy reload', () => {
  it('checksums exactly the keys the reloader refuses to change', () => {
    const text = readFileSync(TEMPLATE, 'utf8');
    const list = /range \$key := list ((?:"[^"]+" ?)+)/.exec(text);
    assert.ok(list, 'no key list in _policy-reload.tpl');
    const keys = [...list[1]!.matchAll(/"([^"]+)"/g)].map((m) => m[1]);
    assert.deepEqual([...keys].sort(), [...RESTART_ONLY_KEYS].sort());
  });

  const helm = findHelm();
  // On CI a missing helm fails this test, never skips it.
  const skip = helm || process.env.CI === 'true' ? false : 'no helm binary found: run `npm run helm:install` (or set HELM=/path/to/helm)';
  it('rolls the pods for a restart-only change, not for one taskgate reloads', { skip }, () => {
    assert.ok(helm, 'no helm binary found (CI must have one)');
    const annotation = (...args: string[]) => {
      const result = spawnSync(helm!, ['template', 'taskgate', CHART, '--namespace', 'mcp', '--show-only', 'templates/deployment.yaml', ...args], { encoding: 'utf8' });
      assert.equal(result.status, 0, result.stderr);
      const match = /checksum\/policy-restart: ([0-9a-f]{64})/.exec(result.stdout);
      assert.ok(match, 'no checksum/policy-restart annotation');
      assert.doesNotMatch(result.stdout, /checksum\/policy:/, 'the whole-policy checksum would roll the pods on every change');
      return match[1];
    };
    const base = annotation();
    for (const live of ['policy.logging.level=debug', 'policy.tasks.maxLivePerPrincipal=5', 'policy.limits.requestTimeout=30s']) {
      assert.equal(annotation('--set', live), base, `${live} rolled the pods`);
    }
    for (const fixed of ['policy.listen.port=8081', 'policy.limits.maxBodyBytes=2MiB', 'policy.logging.buffered=true']) {
      assert.notEqual(annotation('--set', fixed), base, `${fixed} did not roll the pods`);
    }
  });
});
