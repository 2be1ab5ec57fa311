/**
 * The chart rolls pods only for a policy change taskgate cannot reload: the pods'
 * checksum/policy-restart annotation covers exactly the reloader's restart-only keys. The
 * key list is compared without helm; the rendering is checked when a `helm` binary is on
 * PATH (or named by $HELM), and skipped otherwise, like the chart's other render tests.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { RESTART_ONLY_KEYS } from '../../src/reload/policy-diff.js';

const CHART = new URL('../../helm/taskgate/', import.meta.url).pathname;
const TEMPLATE = join(CHART, 'templates', '_policy-reload.tpl');

function findHelm(): string | undefined {
  for (const candidate of [process.env.HELM, 'helm'].filter((c): c is string => Boolean(c))) {
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
  it('rolls the pods for a restart-only change, not for one taskgate reloads', { skip: helm ? false : 'no helm binary on PATH (set HELM=/path/to/helm to run this)' }, () => {
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
