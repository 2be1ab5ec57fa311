import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { configJsonSchema } from '../../../src/config/index.js';
import { findStaleFiles, generatedFiles } from '../../../scripts/gen-config-schema.js';

describe('generated schema and docs', () => {
  it('are committed and up to date (regenerate: npx tsx scripts/gen-config-schema.ts)', async () => {
    assert.deepEqual(await findStaleFiles(), []);
  });

  it('are reported stale where the committed copy is missing', async () => {
    const empty = await mkdtemp(join(tmpdir(), 'taskgate-gen-'));
    try {
      assert.deepEqual(await findStaleFiles(empty), [
        'config/taskgate.schema.json',
        'docs/policy.md',
        'docs/errors.md',
        'docs/metrics.md',
        'helm/taskgate/files/grafana-dashboard.json',
      ]);
    } finally {
      await rm(empty, { recursive: true, force: true });
    }
  });

  it('describe the input side: durations and sizes as written, with their defaults', () => {
    const schema = configJsonSchema() as {
      additionalProperties: boolean;
      required: string[];
      properties: Record<string, { properties?: Record<string, Record<string, unknown>> }>;
    };
    assert.equal(schema.additionalProperties, false);
    assert.deepEqual(schema.required, ['publicUrl', 'auth', 'upstreams', 'routes']);
    const limits = schema.properties.limits?.properties;
    assert.equal(limits?.drainTimeout?.default, '10s');
    assert.equal(limits?.drainTimeout?.type, 'string');
    assert.equal(limits?.maxBodyBytes?.default, '1MiB');
  });

  it('give every key a description', () => {
    const undescribed: string[] = [];
    const walk = (node: unknown, path: string) => {
      if (typeof node !== 'object' || node === null) return;
      const schema = node as Record<string, unknown>;
      for (const [key, child] of Object.entries((schema.properties ?? {}) as Record<string, Record<string, unknown>>)) {
        if (typeof child.description !== 'string' || child.description === '') undescribed.push(`${path}.${key}`);
        walk(child, `${path}.${key}`);
      }
      walk(schema.additionalProperties, `${path}.<name>`);
      walk(schema.items, `${path}[]`);
      for (const option of (schema.anyOf ?? []) as unknown[]) walk(option, path);
      for (const option of (schema.oneOf ?? []) as unknown[]) walk(option, path);
    };
    walk(configJsonSchema(), '');
    assert.deepEqual(undescribed, []);
  });

  it('document every top-level key in docs/policy.md', () => {
    const doc = generatedFiles().find((f) => f.path === 'docs/policy.md')?.content ?? '';
    for (const key of ['listen', 'admin', 'publicUrl', 'auth', 'upstreams', 'routes', 'tasks', 'store', 'audit', 'limits', 'logging', 'console']) {
      assert.ok(doc.includes(`## \`${key}\``), key);
    }
    assert.ok(doc.includes('### `upstreams.<name>.timeouts`'));
    assert.ok(doc.includes('| `drainTimeout` | duration | `10s` |'));
  });
});
