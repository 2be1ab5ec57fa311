/**
 * The poll rule both stores apply (src/task-model/poll-rule.ts); the stores' own poll contract
 * (test/unit/store/store-poll-contract.ts) checks that they apply it atomically. Here: the
 * rule itself, step by step, and the bound it promises over a whole span of polling.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { decidePoll, decidePollAt, enforcedInterval, type PollRules, type PollState } from '../../../src/task-model/poll-rule.js';

const RULES: PollRules = { intervalMs: 1000, toleranceMs: 50, abuseFactor: 3 };

/**
 * A client polling every `everyMs` from 0 to `spanMs` (both included), under `rules`: the
 * times its polls were forwarded, and every verdict.
 */
function pollFor(spanMs: number, everyMs: number, rules: PollRules): { forwarded: number[]; verdicts: string[] } {
  let state: PollState | undefined;
  const forwarded: number[] = [];
  const verdicts: string[] = [];
  for (let now = 0; now <= spanMs; now += everyMs) {
    const decision = decidePoll(state, now, rules);
    state = decision.next;
    verdicts.push(decision.verdict);
    if (decision.verdict === 'forward') forwarded.push(now);
  }
  return { forwarded, verdicts };
}

describe('decidePoll', () => {
  it('forwards the first poll at once and books it at its arrival', () => {
    assert.deepEqual(decidePoll(undefined, 5000, RULES), { verdict: 'forward', next: { lastForwardedAt: 5000, earlyCount: 0 }, retryAfterMs: 0 });
    // A state with no forwarded poll yet (early count only) is a first poll too.
    assert.equal(decidePoll({ earlyCount: 2 }, 5000, RULES).verdict, 'forward');
  });

  it('calls a poll before the interval (less the tolerance) early, and says how long until the next is forwarded', () => {
    const state = { lastForwardedAt: 10_000, earlyCount: 0 };
    const early = decidePoll(state, 10_400, RULES);
    assert.equal(early.verdict, 'early');
    assert.equal(early.retryAfterMs, 550, 'allowed from 10_000 + 1000 - 50');
    assert.deepEqual(early.next, { lastForwardedAt: 10_000, earlyCount: 1 }, 'the clock stays on the last forwarded poll');
    assert.equal(decidePoll(state, 10_949, RULES).verdict, 'early', 'one millisecond inside the tolerance is still early');
    assert.equal(decidePoll(state, 10_950, RULES).verdict, 'forward', 'the tolerance boundary is on time');
  });

  it('runs the clock from the last forwarded poll, so a client polling slightly too fast is still forwarded in time', () => {
    // Every 900 ms against an interval of 1000: were the clock reset by each early poll,
    // nothing after the first would ever reach the backend.
    const { forwarded } = pollFor(10_000, 900, { ...RULES, abuseFactor: 100 });
    assert.deepEqual(forwarded, [0, 1800, 3600, 5400, 7200, 9000], 'every other poll: the one after an early one is due');
  });

  it('books a poll accepted within the tolerance at its due time, so the schedule cannot creep earlier', () => {
    const accepted = decidePoll({ lastForwardedAt: 0, earlyCount: 0 }, 960, RULES);
    assert.equal(accepted.verdict, 'forward');
    assert.equal(accepted.next.lastForwardedAt, 1000, 'booked when it was due, not at 960');
    // A late poll is booked at its arrival: lateness is not credited to the next cycle.
    assert.equal(decidePoll({ lastForwardedAt: 0, earlyCount: 0 }, 1700, RULES).next.lastForwardedAt, 1700);
    // Always 50 ms early, cycle after cycle: never earlier than the tolerance.
    let state: PollState = { lastForwardedAt: 0, earlyCount: 0 };
    for (let cycle = 1; cycle <= 100; cycle++) {
      const decision = decidePoll(state, cycle * 1000 - 50, RULES);
      assert.equal(decision.verdict, 'forward', `cycle ${cycle}`);
      state = decision.next;
    }
    assert.equal(state.lastForwardedAt, 100_000);
    assert.equal(decidePoll(state, 100_900, RULES).verdict, 'early', 'no tolerance earned over a hundred cycles');
  });

  it('calls more early polls than the abuse factor abusive, until a poll is forwarded again', () => {
    let state: PollState = { lastForwardedAt: 0, earlyCount: 0 };
    const verdicts: string[] = [];
    for (const now of [100, 200, 300, 400, 500]) {
      const decision = decidePoll(state, now, RULES);
      verdicts.push(decision.verdict);
      state = decision.next;
    }
    assert.deepEqual(verdicts, ['early', 'early', 'early', 'abusive', 'abusive'], 'abuseFactor 3: the fourth is abuse');
    assert.equal(state.earlyCount, 5);
    const forwarded = decidePoll(state, 1000, RULES);
    assert.equal(forwarded.verdict, 'forward', 'abuse does not hold back a poll that is due');
    assert.equal(forwarded.next.earlyCount, 0, 'the count starts again');
    assert.equal(decidePoll(forwarded.next, 1100, RULES).verdict, 'early');
  });

  it('gives an abusive poll the same retry time as an early one', () => {
    const abusive = decidePoll({ lastForwardedAt: 0, earlyCount: 3 }, 100, RULES);
    assert.equal(abusive.verdict, 'abusive');
    assert.equal(abusive.retryAfterMs, 850);
  });

  it('forwards every poll of a task whose interval is 0', () => {
    const { verdicts } = pollFor(100, 1, { intervalMs: 0, toleranceMs: 0, abuseFactor: 1 });
    assert.ok(verdicts.every((verdict) => verdict === 'forward'));
  });

  it('holds a client to a huge interval without overflowing into a short one', () => {
    const rules = { intervalMs: Number.MAX_SAFE_INTEGER, toleranceMs: 50, abuseFactor: 3 };
    const first = decidePoll(undefined, 1_000, rules);
    const early = decidePoll(first.next, 1_000 + 86_400_000, rules);
    assert.equal(early.verdict, 'early');
    assert.ok(early.retryAfterMs > 86_400_000 * 1000, 'the wait is the interval\'s, not a wrapped-around one');
  });

  it('decides on non-integer times and intervals as on whole ones (no rounding lets a poll through early)', () => {
    const rules = { intervalMs: 1000.5, toleranceMs: 0.25, abuseFactor: 3 };
    const state = { lastForwardedAt: 10.75, earlyCount: 0 };
    assert.equal(decidePoll(state, 1010.99, rules).verdict, 'early');
    assert.equal(decidePoll(state, 1011, rules).verdict, 'forward');
  });
});

describe('the bound decidePoll promises: over any span T the backend sees at most ceil(T / interval) + 1 polls', () => {
  const cases: { rules: PollRules; everyMs: number }[] = [
    { rules: { intervalMs: 1000, toleranceMs: 50, abuseFactor: 1000 }, everyMs: 1 },
    { rules: { intervalMs: 1000, toleranceMs: 50, abuseFactor: 1000 }, everyMs: 951 },
    { rules: { intervalMs: 1000, toleranceMs: 999, abuseFactor: 1000 }, everyMs: 1 },
    { rules: { intervalMs: 100, toleranceMs: 50, abuseFactor: 1000 }, everyMs: 7 },
    // The default tolerance (50 ms) against a backend that asks for a shorter interval, with
    // the default floor of 0 s: nothing in the policy keeps the tolerance below the interval.
    { rules: { intervalMs: 10, toleranceMs: 50, abuseFactor: 1000 }, everyMs: 1 },
    { rules: { intervalMs: 10, toleranceMs: 10, abuseFactor: 1000 }, everyMs: 1 },
  ];
  for (const { rules, everyMs } of cases) {
    it(`interval ${rules.intervalMs} ms, tolerance ${rules.toleranceMs} ms, a poll every ${everyMs} ms`, () => {
      const { forwarded } = pollFor(20_000, everyMs, rules);
      // Every window [start, start + T] over the run, for spans from one poll to many intervals.
      for (const spanMs of [0, 1, rules.intervalMs / 2, rules.intervalMs, 3 * rules.intervalMs + 1, 10 * rules.intervalMs]) {
        const bound = Math.ceil(spanMs / rules.intervalMs) + 1;
        for (let first = 0; first < forwarded.length; first++) {
          let within = 0;
          for (let i = first; i < forwarded.length && forwarded[i]! <= forwarded[first]! + spanMs; i++) within++;
          assert.ok(within <= bound, `${within} polls forwarded within ${spanMs} ms from ${forwarded[first]} ms, at most ${bound} promised`);
        }
      }
    });
  }
});

describe('enforcedInterval', () => {
  it('holds the client to the backend\'s interval, raised to the floor, or to the default when the backend gives none', () => {
    assert.equal(enforcedInterval(5000, 1000, 2000), 5000);
    assert.equal(enforcedInterval(200, 1000, 2000), 1000, 'raised to the floor');
    assert.equal(enforcedInterval(undefined, 1000, 2000), 2000);
    assert.equal(enforcedInterval(undefined, 3000, 2000), 3000, 'the floor governs the default too');
    assert.equal(enforcedInterval(0, 0, 2000), 0, 'a backend asking for no wait, with no floor, gets none');
  });
});

describe('decidePollAt', () => {
  it('decides as decidePoll does, on an interval passed apart from the rules', () => {
    const state = { lastForwardedAt: 0, earlyCount: 1 };
    for (const now of [0, 500, 949, 950, 1000, 5000]) {
      assert.deepEqual(decidePollAt(state, now, RULES.intervalMs, { toleranceMs: RULES.toleranceMs, abuseFactor: RULES.abuseFactor }), decidePoll(state, now, RULES));
    }
  });
});

describe('poll governance rule', () => {
  const rules = { intervalMs: 1000, toleranceMs: 50, abuseFactor: 3 };
  it('forwards the first poll and any poll after the interval, minus the tolerance', () => {
    const first = decidePoll(undefined, 10_000, rules);
    assert.equal(first.verdict, 'forward');
    const tolerated = decidePoll(first.next, 10_950, rules);
    assert.equal(tolerated.verdict, 'forward');
    assert.equal(tolerated.next.lastForwardedAt, 11_000, 'booked when it was due, so the schedule does not creep');
    assert.equal(decidePoll(first.next, 12_000, rules).next.lastForwardedAt, 12_000, 'a late poll is booked when it came');
    const early = decidePoll(first.next, 10_400, rules);
    assert.equal(early.verdict, 'early');
    assert.equal(early.retryAfterMs, 550);
  });

  it('measures from the last forwarded poll, so early polls do not push the next one back', () => {
    let state = decidePoll(undefined, 0, rules).next;
    for (const t of [300, 600, 900]) state = decidePoll(state, t, rules).next;
    assert.equal(decidePoll(state, 960, rules).verdict, 'forward');
  });

  it('calls it abuse past the factor, and forgives at the next allowed poll', () => {
    let state = decidePoll(undefined, 0, rules).next;
    const verdicts = [100, 200, 300, 400].map((t) => {
      const d = decidePoll(state, t, rules);
      state = d.next;
      return d.verdict;
    });
    assert.deepEqual(verdicts, ['early', 'early', 'early', 'abusive']);
    assert.equal(decidePoll(state, 1000, rules).verdict, 'forward');
  });

  it('enforces the floor and supplies a default', () => {
    assert.equal(enforcedInterval(200, 1000, 5000), 1000);
    assert.equal(enforcedInterval(3000, 1000, 5000), 3000);
    assert.equal(enforcedInterval(undefined, 0, 5000), 5000);
  });
});
