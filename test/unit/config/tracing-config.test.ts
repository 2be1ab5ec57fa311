import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseConfig } from '../../../src/config/index.js';
import { findIssue, issuesOf, MINIMAL } from './policies.js';

function tracingOf(yaml: string, env: NodeJS.ProcessEnv = {}) {
  return parseConfig(`${MINIMAL}${yaml}`, { env }).tracing;
}

describe('tracing policy', () => {
  it('is off unless a policy turns it on', () => {
    assert.deepEqual(parseConfig(MINIMAL, { env: {} }).tracing, { mode: 'none' });
  });

  it('fills the OTLP defaults and takes export headers from the environment', () => {
    const tracing = tracingOf('tracing: { mode: otlp, headers: { x-api-key: "${KEY}" }, sampling: { ratio: 0.01 } }\n', { KEY: 'k-1' });
    assert.deepEqual(tracing, {
      mode: 'otlp',
      endpoint: 'http://127.0.0.1:4318/v1/traces',
      headers: { 'x-api-key': 'k-1' },
      serviceName: 'taskgate',
      sampling: { ratio: 0.01, parent: 'follow' },
      exportTimeout: 10_000,
      maxQueueSize: 2048,
    });
  });

  it('refuses credentials in the endpoint, a ratio outside 0–1 and keys of the other mode', () => {
    const issues = issuesOf(`${MINIMAL}tracing:
  mode: otlp
  endpoint: https://user:secret@collector.example.com/v1/traces
  sampling: { ratio: 1.5, parent: always }
`);
    assert.match(findIssue(issues, 'tracing.endpoint').message, /must not contain credentials/);
    assert.ok(findIssue(issues, 'tracing.sampling.ratio'));
    assert.ok(findIssue(issues, 'tracing.sampling.parent'));
    assert.equal(findIssue(issuesOf(`${MINIMAL}tracing: { mode: none, endpoint: http://127.0.0.1:4318/v1/traces }\n`), 'tracing.endpoint').message, 'unknown key');
  });
});
