/**
 * Every complete policy shown in the README and docs/ (a yaml block with a publicUrl) must be
 * one the gateway accepts, so no page teaches a policy that fails at start. ${NAME}
 * references are filled with a placeholder value, as the environment would.
 */
import { it } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { ConfigError, parseConfig } from '../../src/config/index.js';

const root = new URL('../../', import.meta.url);
const pages = ['README.md', ...readdirSync(new URL('docs/', root)).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)];

function policiesIn(markdown: string): string[] {
  return [...markdown.matchAll(/```ya?ml\n([\s\S]*?)```/g)].map((m) => m[1]!).filter((block) => /^publicUrl:/m.test(block));
}

it('every complete policy in the README and docs/ validates', () => {
  let checked = 0;
  for (const page of pages) {
    for (const [index, policy] of policiesIn(readFileSync(new URL(page, root), 'utf8')).entries()) {
      const names = [...policy.matchAll(/\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g)].map((m) => m[1]!);
      const env = Object.fromEntries(names.map((n) => [n, n.includes('KEY') ? Buffer.alloc(32, 7).toString('base64') : 'placeholder-value']));
      try {
        parseConfig(policy, { env, source: `${page} block ${index + 1}` });
      } catch (error) {
        assert.fail(error instanceof ConfigError ? error.message : String(error));
      }
      checked++;
    }
  }
  assert.ok(checked >= 1, 'no complete policy found in the docs');
});
