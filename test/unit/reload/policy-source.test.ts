/**
 * Which policy a replica runs (src/reload/policy-source.ts): a file is hashed over its bytes,
 * as sha256sum would, so the hash names the file and never the secrets its ${NAME}s stand for;
 * the gauge carries the hash's first 48 bits, exactly.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { hashGaugeValue, hashOfConfig, readPolicyFile, sha256Hex } from '../../../src/reload/policy-source.js';

const POLICY = `publicUrl: https://mcp.example.com
auth: { mode: none }
upstreams: { tools: { instances: ["\${BACKEND}"] } }
routes: [{ path: /mcp, upstream: tools }]
`;

describe('policy source', () => {
  let dir: string;
  let file: string;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'taskgate-policy-source-'));
    file = join(dir, 'policy.yaml');
    await writeFile(file, POLICY);
  });
  after(() => rm(dir, { recursive: true, force: true }));

  it('hashes as sha256sum does', () => {
    assert.equal(sha256Hex('abc'), 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
  });

  it('hashes a file over its bytes: the same hash whatever its ${NAME}s stand for', async () => {
    const one = await readPolicyFile(file, { BACKEND: 'http://10.0.0.1:3000' });
    const two = await readPolicyFile(file, { BACKEND: 'http://10.0.0.2:3000' });
    assert.equal(one.hash, sha256Hex(POLICY));
    assert.equal(two.hash, one.hash);
    assert.notEqual(hashOfConfig(one.config), hashOfConfig(two.config), 'what was built from them differs');
  });

  it('puts the first 48 bits of the hash in the gauge, a value a double holds exactly', () => {
    const hash = sha256Hex(POLICY);
    const value = hashGaugeValue(hash);
    assert.ok(Number.isSafeInteger(value));
    assert.equal(value.toString(16).padStart(12, '0'), hash.slice(0, 12));
    assert.equal(hashGaugeValue('ffffffffffff' + '0'.repeat(52)), 2 ** 48 - 1);
  });
});
