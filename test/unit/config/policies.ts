/** Policies shared by the config tests. Not a test file itself. */
import assert from 'node:assert/strict';
import { ConfigError, parseConfig, type ConfigIssue } from '../../../src/config/index.js';

export const MINIMAL = `publicUrl: https://mcp.example.com
auth: { mode: none }
upstreams:
  tools:
    instances: [http://127.0.0.1:3000]
routes:
  - path: /mcp
    upstream: tools
`;

/** The issues parseConfig reports for `text`, failing the test if it does not throw. */
export function issuesOf(text: string, env: NodeJS.ProcessEnv = {}): ConfigIssue[] {
  try {
    parseConfig(text, { env, source: 'test.yaml' });
  } catch (err) {
    assert.ok(err instanceof ConfigError, `expected a ConfigError, got ${String(err)}`);
    return [...err.issues];
  }
  assert.fail('expected the policy to be rejected');
}

export function findIssue(issues: ConfigIssue[], path: string): ConfigIssue {
  const found = issues.find((i) => i.path === path);
  assert.ok(found, `no issue at ${path}; got:\n${issues.map((i) => `${i.path}: ${i.message}`).join('\n')}`);
  return found;
}
