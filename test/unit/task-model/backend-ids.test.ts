import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { hideBackendId, hideBackendIdInText } from '../../../src/task-model/backend-ids.js';
import { mintHandle } from '../../../src/tasks/handle.js';

const handle = mintHandle();
const numbered = { handle, upstreamTaskId: '2' };

describe('the backend id, hidden in what clients are shown', () => {
  it('replaces the id where it stands on its own, never inside a longer word or number', () => {
    assert.equal(hideBackendIdInText('job 2 cancelled', numbered), `job ${handle} cancelled`);
    assert.equal(hideBackendIdInText('2', numbered), handle);
    assert.equal(hideBackendIdInText('#2, task-2 (2)', numbered), `#${handle}, task-${handle} (${handle})`);
    assert.equal(hideBackendIdInText('job 2. Next: job 3', numbered), `job ${handle}. Next: job 3`);
    assert.equal(hideBackendIdInText('v12 x2 2b 2.5 1,2 v1.2.3', numbered), 'v12 x2 2b 2.5 1,2 v1.2.3', 'inside a word or number it is not the id');
    const uuid = { handle, upstreamTaskId: '786512e2-9e0d-44bd-8f29-789f320fe840' };
    assert.equal(hideBackendIdInText('task 786512e2-9e0d-44bd-8f29-789f320fe840 failed', uuid), `task ${handle} failed`);
  });

  it('treats the id as text, not as a pattern', () => {
    assert.equal(hideBackendIdInText('job a.b and aXb', { handle, upstreamTaskId: 'a.b' }), `job ${handle} and aXb`);
    assert.equal(hideBackendIdInText('(x+) done', { handle, upstreamTaskId: 'x+' }), `(${handle}) done`);
  });

  it('rewrites a text once: a second pass over the handle changes nothing', () => {
    // A handle that holds the id between separators must not be rewritten inside itself.
    const awkward = { handle: 'AbC-2_dEf', upstreamTaskId: '2' };
    const once = hideBackendIdInText('job 2', awkward);
    assert.equal(once, 'job AbC-2_dEf');
    assert.equal(hideBackendIdInText(once, awkward), once);
  });

  it('leaves a task the gateway runs itself alone (its record holds the handle as the backend id)', () => {
    const value = { statusMessage: `job ${handle}` };
    assert.equal(hideBackendId(value, { handle, upstreamTaskId: handle }), false);
    assert.equal(hideBackendId({ a: 'x' }, { handle, upstreamTaskId: '' }), false);
  });

  it('whole: every string at every depth, keys and numbers left alone', () => {
    const error = { code: -32603, message: 'job 2 failed', data: { taskId: '2', log: ['job 2 started', { at: 'job 2' }], count: 2, '2': 'kept key' } };
    assert.equal(hideBackendId(error, numbered), true);
    assert.deepEqual(error, { code: -32603, message: `job ${handle} failed`, data: { taskId: handle, log: [`job ${handle} started`, { at: `job ${handle}` }], count: 2, '2': 'kept key' } });
    assert.equal(hideBackendId({ message: 'nothing here' }, numbered), false);
  });

  it('whole: a progress token is the client\'s, even when it looks like the id', () => {
    const progress = { progressToken: '2', progress: 1, message: 'job 2: half way' };
    hideBackendId(progress, numbered);
    assert.deepEqual(progress, { progressToken: '2', progress: 1, message: `job ${handle}: half way` });
  });

  it('task: the fields the backend writes, but not the record\'s own nor what the task carries for the client', () => {
    const task = {
      taskId: handle,
      status: 'failed',
      statusMessage: 'set from the record: job 2',
      error: { code: 1, message: 'job 2 failed' },
      result: { content: [{ type: 'text', text: '2 + 2' }], _meta: { 'io.modelcontextprotocol/related-task': { taskId: '2' } } },
      inputRequests: { ask: { method: 'elicitation/create', params: { message: 'Stop job 2?', _meta: { job: '2' } } } },
      _meta: { 'example.com/job': '/jobs/2' },
      vendorField: 'job 2',
    };
    assert.equal(hideBackendId(task, numbered, 'task'), true);
    assert.deepEqual(task, {
      taskId: handle,
      status: 'failed',
      statusMessage: 'set from the record: job 2',
      error: { code: 1, message: `job ${handle} failed` },
      result: { content: [{ type: 'text', text: '2 + 2' }], _meta: { 'io.modelcontextprotocol/related-task': { taskId: handle } } },
      inputRequests: { ask: { method: 'elicitation/create', params: { message: 'Stop job 2?', _meta: { job: handle } } } },
      _meta: { 'example.com/job': `/jobs/${handle}` },
      vendorField: `job ${handle}`,
    });
  });

  it('task: timestamps and the status are not text about the task', () => {
    const task = { taskId: handle, status: 'working', createdAt: '2026-08-22T10:41:23.123Z', lastUpdatedAt: '2026-08-22T10:41:24Z', note: 'job 41' };
    hideBackendId(task, { handle, upstreamTaskId: '41' }, 'task');
    assert.deepEqual(task, { taskId: handle, status: 'working', createdAt: '2026-08-22T10:41:23.123Z', lastUpdatedAt: '2026-08-22T10:41:24Z', note: `job ${handle}` });
  });

  it('meta: only the _meta, at any depth', () => {
    const result = { content: [{ type: 'text', text: 'job 2 done', _meta: { of: 'job 2' } }], _meta: { job: '2' } };
    assert.equal(hideBackendId(result, numbered, 'meta'), true);
    assert.deepEqual(result, { content: [{ type: 'text', text: 'job 2 done', _meta: { of: `job ${handle}` } }], _meta: { job: handle } });
    assert.equal(hideBackendId({ content: [{ type: 'text', text: 'job 2' }] }, numbered, 'meta'), false);
  });

  it('walks any depth without recursion', () => {
    let deep: Record<string, unknown> = { leaf: 'job 2' };
    for (let i = 0; i < 100_000; i++) deep = { next: deep };
    assert.equal(hideBackendId(deep, numbered), true);
  });
});
