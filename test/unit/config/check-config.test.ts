import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { checkConfigCommand } from '../../../src/config/index.js';
import { MINIMAL } from './policies.js';

function capture() {
  const lines = { log: [] as string[], error: [] as string[] };
  return { lines, out: { log: (s: string) => lines.log.push(s), error: (s: string) => lines.error.push(s) } };
}

describe('checkConfigCommand', () => {
  let dir: string;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'taskgate-check-config-'));
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('prints OK and returns 0 for a valid policy', async () => {
    const file = join(dir, 'ok.yaml');
    await writeFile(file, MINIMAL);
    const { lines, out } = capture();
    assert.equal(await checkConfigCommand(file, out), 0);
    assert.deepEqual(lines, { log: [`${file}: OK`], error: [] });
  });

  it('prints every problem as file:line:col path: message and returns 1', async () => {
    const file = join(dir, 'bad.yaml');
    await writeFile(file, `${MINIMAL}listen:\n  hots: 0.0.0.0\nlimits:\n  drainTimeout: 10\n`);
    const { lines, out } = capture();
    assert.equal(await checkConfigCommand(file, out), 1);
    assert.deepEqual(lines.log, []);
    assert.deepEqual(lines.error, [
      `${file}:10:3 listen.hots: unknown key`,
      `${file}:12:17 limits.drainTimeout: expected a duration such as 500ms, 30s, 5m or 1h (a whole number and a unit: ms, s, m, h, d)`,
    ]);
  });

  it('prints problems without a position as file path: message', async () => {
    const file = join(dir, 'partial.yaml');
    await writeFile(file, 'logging: { level: info }\n');
    const { lines, out } = capture();
    assert.equal(await checkConfigCommand(file, out), 1);
    assert.deepEqual(lines.error, [`${file} publicUrl: required`, `${file} auth: required`, `${file} upstreams: required`, `${file} routes: required`]);
  });

  it('returns 1 for a file that cannot be read', async () => {
    const file = join(dir, 'missing.yaml');
    const { lines, out } = capture();
    assert.equal(await checkConfigCommand(file, out), 1);
    assert.deepEqual(lines.error, [`${file}: cannot read the policy file (ENOENT)`]);
  });
});
