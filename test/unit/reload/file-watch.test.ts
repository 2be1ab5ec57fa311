/**
 * The policy file watch on a real filesystem: an edit in place, a rename over the file, a
 * Kubernetes ConfigMap update (symlinks through `..data`, the old directory deleted), and a
 * symlink to a file in another directory.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, mkdirSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { watchPolicyFile, type PolicyFileWatch } from '../../../src/reload/file-watch.js';
import { waitFor } from '../../support/wait.js';

const logger = pino({ level: 'silent' });

/** What the kubelet's AtomicWriter does on a ConfigMap update. */
function configMapUpdate(dir: string, generation: string, text: string, previous?: string): void {
  mkdirSync(join(dir, generation));
  writeFileSync(join(dir, generation, 'taskgate.yaml'), text);
  symlinkSync(generation, join(dir, '..data_tmp'));
  renameSync(join(dir, '..data_tmp'), join(dir, '..data'));
  if (previous) rmSync(join(dir, previous), { recursive: true });
}

describe('watchPolicyFile', () => {
  let root: string;
  const watches: PolicyFileWatch[] = [];
  before(() => {
    root = mkdtempSync(join(tmpdir(), 'taskgate-watch-'));
  });
  after(() => {
    for (const watch of watches) watch.close();
    rmSync(root, { recursive: true, force: true });
  });

  const start = (path: string) => {
    const calls = { count: 0 };
    watches.push(watchPolicyFile(path, () => calls.count++, { logger, debounceMs: 100 }));
    return calls;
  };

  it('sees an edit in place and a file renamed over it, once per burst of events', async () => {
    const dir = join(root, 'plain');
    mkdirSync(dir);
    const file = join(dir, 'taskgate.yaml');
    writeFileSync(file, 'a: 1\n');
    const calls = start(file);
    for (let i = 0; i < 10; i++) writeFileSync(file, `a: ${i}\n`);
    await waitFor(() => calls.count >= 1, 'the edit');
    await new Promise((resolve) => setTimeout(resolve, 300));
    assert.ok(calls.count <= 2, `${calls.count} calls for one burst of writes`);
    const seen = calls.count;
    writeFileSync(join(dir, '.taskgate.yaml.tmp'), 'a: renamed\n');
    renameSync(join(dir, '.taskgate.yaml.tmp'), file);
    await waitFor(() => calls.count > seen, 'the rename');
  });

  it('sees ConfigMap updates through ..data, again after the old directory is gone', async () => {
    const dir = join(root, 'configmap');
    mkdirSync(dir);
    configMapUpdate(dir, '..2026_01_01_00_00_00.1', 'generation: 1\n');
    symlinkSync('..data/taskgate.yaml', join(dir, 'taskgate.yaml'));
    const calls = start(join(dir, 'taskgate.yaml'));
    configMapUpdate(dir, '..2026_01_01_00_01_00.2', 'generation: 2\n', '..2026_01_01_00_00_00.1');
    await waitFor(() => calls.count >= 1, 'the first update');
    const seen = calls.count;
    configMapUpdate(dir, '..2026_01_01_00_02_00.3', 'generation: 3\n', '..2026_01_01_00_01_00.2');
    await waitFor(() => calls.count > seen, 'the second update');
  });

  it('sees an edit of the real file when the configured path is a symlink into another directory', async () => {
    const real = join(root, 'real');
    const links = join(root, 'links');
    mkdirSync(real);
    mkdirSync(links);
    writeFileSync(join(real, 'policy.yaml'), 'a: 1\n');
    symlinkSync(join(real, 'policy.yaml'), join(links, 'taskgate.yaml'));
    const calls = start(join(links, 'taskgate.yaml'));
    writeFileSync(join(real, 'policy.yaml'), 'a: 2\n');
    await waitFor(() => calls.count >= 1, 'the edit of the real file');
  });

  it('stops calling once closed', async () => {
    const dir = join(root, 'closed');
    mkdirSync(dir);
    const file = join(dir, 'taskgate.yaml');
    writeFileSync(file, 'a: 1\n');
    const calls = start(file);
    watches.pop()!.close();
    writeFileSync(file, 'a: 2\n');
    await new Promise((resolve) => setTimeout(resolve, 400));
    assert.equal(calls.count, 0);
  });
});
