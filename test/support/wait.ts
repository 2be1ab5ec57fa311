/**
 * The one way a test waits for something: poll a condition until it holds, within a bound,
 * and fail naming what never happened. A negative claim waits for the event that would
 * disprove it with this too, never behind a fixed sleep (../shared/STYLE.md, "Tests").
 */
import assert from 'node:assert/strict';

export async function waitFor(check: () => boolean | Promise<boolean>, what = 'a condition', ms = 10_000, everyMs = 20): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) assert.fail(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
}
