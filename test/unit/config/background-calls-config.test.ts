/** The policy keys of background calls (upstreams.*.backgroundCalls). */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseConfig } from '../../../src/config/index.js';
import { findIssue, issuesOf, MINIMAL } from './policies.js';

const withBackground = (section: string) => `${MINIMAL.replace('    instances: [http://127.0.0.1:3000]\n', `    instances: [http://127.0.0.1:3000]\n    backgroundCalls: ${section}\n`)}`;

describe('upstreams.*.backgroundCalls', () => {
  it('fills the defaults', () => {
    const config = parseConfig(withBackground('{ tools: all }'), { env: {}, source: 'test.yaml' });
    assert.deepEqual(config.upstreams.tools!.backgroundCalls, {
      tools: 'all',
      detachAfter: 20_000,
      timeout: 600_000,
      statusWait: 20_000,
      outputSchema: 'plain',
      toolNames: { status: 'taskgate_task_status', cancel: 'taskgate_task_cancel' },
    });
  });

  it('refuses task tool names that collide with each other or with a listed tool, or that hosts would not accept', () => {
    const same = issuesOf(withBackground('{ tools: [report], toolNames: { status: check, cancel: check } }'));
    assert.match(findIssue(same, 'upstreams.tools.backgroundCalls.toolNames.cancel').message, /must differ from status/);
    const listed = issuesOf(withBackground('{ tools: [report, check], toolNames: { status: check } }'));
    assert.match(findIssue(listed, 'upstreams.tools.backgroundCalls.tools[1]').message, /gateway's own status tool/);
    const odd = issuesOf(withBackground('{ tools: all, toolNames: { status: "check status" } }'));
    assert.match(findIssue(odd, 'upstreams.tools.backgroundCalls.toolNames.status').message, /letters, digits/);
  });

  it('refuses a zero detach time or timeout, and an unknown outputSchema mode', () => {
    const issues = issuesOf(withBackground('{ tools: all, detachAfter: 0s, timeout: 0s, outputSchema: strip }'));
    assert.match(findIssue(issues, 'upstreams.tools.backgroundCalls.detachAfter').message, /more than 0s/);
    assert.match(findIssue(issues, 'upstreams.tools.backgroundCalls.timeout').message, /more than 0s/);
    findIssue(issues, 'upstreams.tools.backgroundCalls.outputSchema');
  });
});
