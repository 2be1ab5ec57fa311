/**
 * The one way a test waits for something: poll a condition until it holds, within a bound,
 * and fail naming what never happened. A negative claim waits for the event that would
 * disprove it with this too, never behind a fixed sleep (../shared/STYLE.md, "Tests").
 *
 * `what` may be a function, read only on failure, so that the message can say what was seen
 * last (a task's status, the messages so far); `everyMs` may be one too, for a peer that says
 * how often to ask (a task's pollInterval).
 */
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';

export type Described = string | (() => string);
export type Interval = number | (() => number);

export async function waitFor(check: () => boolean | Promise<boolean>, what: Described = 'a condition', ms = 10_000, everyMs: Interval = 20): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) assert.fail(`timed out after ${ms} ms waiting for ${typeof what === 'function' ? what() : what}`);
    await sleep(typeof everyMs === 'function' ? everyMs() : everyMs);
  }
}

/** waitFor for a value: polls `check` until it returns one (not undefined), and returns it. */
export async function waitForValue<T>(check: () => T | undefined | Promise<T | undefined>, what: Described = 'a value', ms = 10_000, everyMs: Interval = 20): Promise<T> {
  let value: T | undefined;
  await waitFor(async () => (value = await check()) !== undefined, what, ms, everyMs);
  return value!;
}
