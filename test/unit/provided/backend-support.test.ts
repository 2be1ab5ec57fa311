/**
 * Which listed tools the gateway runs as tasks and which it leaves to the backend
 * (src/provided/backend-support.ts): a task is run once, by the backend when it offers one
 * itself, else by the gateway; what the backend offers is learnt from what passes through.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { BackendSupport, type ProvidedTasksPolicy } from '../../../src/provided/backend-support.js';
import { LEGACY_WIRE, MODERN_WIRE } from '../../../src/task-model/task-wire.js';

const LISTED: ProvidedTasksPolicy = { tools: ['slow_scan', 'report'], promoteAfter: 2000, timeout: 600_000 };
const ALL: ProvidedTasksPolicy = { ...LISTED, tools: 'all' };

describe('BackendSupport.provides', () => {
  it('runs nothing without a policy, and only the tools the policy lists', () => {
    const support = new BackendSupport();
    assert.equal(support.provides(undefined, 'tools', 'slow_scan', LEGACY_WIRE), false);
    assert.equal(support.provides(LISTED, 'tools', 'slow_scan', LEGACY_WIRE), true);
    assert.equal(support.provides(LISTED, 'tools', 'other', LEGACY_WIRE), false);
    assert.equal(support.provides(LISTED, 'tools', 'Slow_scan', MODERN_WIRE), false, 'names compare exactly');
    assert.equal(support.provides(ALL, 'tools', 'anything', MODERN_WIRE), true);
  });

  it('2025: runs a listed tool until the backend says it offers tasks for it itself', () => {
    const support = new BackendSupport();
    assert.equal(support.provides(ALL, 'tools', 'scan', LEGACY_WIRE), true, 'nothing learnt yet: the gateway runs it');
    for (const own of ['optional', 'required']) {
      support.learnLegacyTool('tools', 'scan', own);
      assert.equal(support.provides(ALL, 'tools', 'scan', LEGACY_WIRE), false, own);
    }
    support.learnLegacyTool('tools', 'scan', 'forbidden');
    assert.equal(support.provides(ALL, 'tools', 'scan', LEGACY_WIRE), true, 'forbidden: the backend has none of its own');
  });

  it('2025: takes a tool listed without execution.taskSupport, or with one that is no string, for one without tasks', () => {
    const support = new BackendSupport();
    for (const value of [undefined, null, true, 1, { mode: 'optional' }, ['optional']]) {
      support.learnLegacyTool('tools', 'scan', 'required');
      support.learnLegacyTool('tools', 'scan', value);
      assert.equal(support.provides(ALL, 'tools', 'scan', LEGACY_WIRE), true, JSON.stringify(value));
    }
  });

  it('2025: leaves to the backend a tool whose taskSupport it does not know, rather than risk running one task twice', () => {
    const support = new BackendSupport();
    support.learnLegacyTool('tools', 'scan', 'sometimes');
    assert.equal(support.provides(ALL, 'tools', 'scan', LEGACY_WIRE), false);
  });

  it('2026: runs listed tools until the backend\'s server/discover declares the tasks extension, and again once it stops', () => {
    const support = new BackendSupport();
    assert.equal(support.provides(ALL, 'tools', 'scan', MODERN_WIRE), true);
    support.learnModernExtension('tools', true);
    assert.equal(support.provides(ALL, 'tools', 'scan', MODERN_WIRE), false);
    support.learnModernExtension('tools', false);
    assert.equal(support.provides(ALL, 'tools', 'scan', MODERN_WIRE), true);
  });

  it('keeps what each era taught apart', () => {
    const support = new BackendSupport();
    support.learnModernExtension('tools', true);
    assert.equal(support.provides(ALL, 'tools', 'scan', LEGACY_WIRE), true, 'a 2026 extension says nothing of 2025 tools');
    support.learnLegacyTool('tools', 'other', 'required');
    support.learnModernExtension('tools', false);
    assert.equal(support.provides(ALL, 'tools', 'other', MODERN_WIRE), true, 'a 2025 taskSupport says nothing of 2026');
  });

  it('keeps what each upstream taught apart', () => {
    const support = new BackendSupport();
    support.learnLegacyTool('a', 'scan', 'required');
    support.learnModernExtension('a', true);
    assert.equal(support.provides(ALL, 'b', 'scan', LEGACY_WIRE), true);
    assert.equal(support.provides(ALL, 'b', 'scan', MODERN_WIRE), true);
    assert.equal(support.provides(ALL, 'a', 'scan', LEGACY_WIRE), false);
  });

  it('treats tool names that look like object keys as plain names', () => {
    const support = new BackendSupport();
    for (const name of ['__proto__', 'constructor', 'toString', 'hasOwnProperty']) {
      assert.equal(support.provides(ALL, 'tools', name, LEGACY_WIRE), true, name);
      support.learnLegacyTool('tools', name, 'required');
      assert.equal(support.provides(ALL, 'tools', name, LEGACY_WIRE), false, name);
    }
    assert.equal(support.provides(ALL, 'tools', 'scan', LEGACY_WIRE), true, 'nothing else learnt by them');
  });

  it('remembers at most 10 000 tools per upstream: past it the oldest is forgotten, and run by the gateway again', () => {
    const support = new BackendSupport();
    for (let i = 0; i < 10_000; i++) support.learnLegacyTool('tools', `tool-${i}`, 'required');
    support.learnLegacyTool('tools', 'tool-0', 'required'); // seen again: now the newest
    support.learnLegacyTool('tools', 'one-more', 'required');
    assert.equal(support.provides(ALL, 'tools', 'tool-0', LEGACY_WIRE), false, 'refreshed, so kept');
    assert.equal(support.provides(ALL, 'tools', 'tool-1', LEGACY_WIRE), true, 'the oldest made room');
    assert.equal(support.provides(ALL, 'tools', 'tool-2', LEGACY_WIRE), false);
    assert.equal(support.provides(ALL, 'tools', 'one-more', LEGACY_WIRE), false);
  });
});

describe('BackendSupport.lists', () => {
  it('names the tools the policy lists, whoever runs them', () => {
    const support = new BackendSupport();
    support.learnLegacyTool('tools', 'slow_scan', 'required');
    assert.equal(support.lists(LISTED, 'slow_scan'), true, 'listed although the backend runs it');
    assert.equal(support.lists(LISTED, 'other'), false);
    assert.equal(support.lists(ALL, 'other'), true);
    assert.equal(support.lists(undefined, 'slow_scan'), false);
  });
});
