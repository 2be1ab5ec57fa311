/**
 * toolLimits.concurrency against 2025-11-25 clients that hang up (docs/security.md, "Client
 * hang-ups"): a 2025 backend runs a call on after its client closed the connection, so the
 * call's slot is held until the backend has answered (also past a 504 at the request time
 * limit), and no longer than the slot lives, nor past shutdown. Proven at the backend, an SDK
 * 1.x server that counts the calls of its tool working at once, for a backend answering on an
 * event stream and one answering with a single JSON body.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { initializeSession, LEGACY_POST_HEADERS, startGateway, testPolicy, type GatewayUnderTest } from './support/harness.js';
import { readMessages } from './support/reply-messages.js';
import { startHeldBackend, type HeldBackend } from './support/held-backend.js';
import { waitForValue } from '../support/wait.js';

let nextId = 1;

function callHold(gw: GatewayUnderTest, session: string, signal?: AbortSignal): Promise<Response> {
  return fetch(gw.url, {
    method: 'POST',
    signal,
    headers: { ...LEGACY_POST_HEADERS, 'mcp-session-id': session },
    body: JSON.stringify({ jsonrpc: '2.0', id: nextId++, method: 'tools/call', params: { name: 'hold', arguments: {} } }),
  });
}

/** Calls `hold` until the gateway admits one (its slot given back is one store call after the answer). */
async function callUntilAdmitted(gw: GatewayUnderTest, session: string, ms = 5000): Promise<Response> {
  return waitForValue(
    async () => {
      const res = await callHold(gw, session);
      if (res.status !== 429) return res;
      await res.text();
      return undefined;
    },
    'a call admitted',
    ms,
  );
}

/**
 * A call made while another is held: its 429 body. Fails as soon as the backend has two calls
 * at work (an admitted call would wait there for a release that does not come).
 */
async function refusedCall(gw: GatewayUnderTest, session: string, backend: HeldBackend): Promise<string> {
  const attempt = new AbortController();
  const answered = callHold(gw, session, attempt.signal).then(async (res) => ({ status: res.status, text: await res.text() }));
  let running: NodeJS.Timeout | undefined;
  const ranAtBackend = new Promise<'ran'>((resolve) => {
    running = setInterval(() => backend.running > 1 && resolve('ran'), 5);
  });
  try {
    const outcome = await Promise.race([answered, ranAtBackend]);
    assert.notEqual(outcome, 'ran', `a second call ran at the backend beside the first, still at work (${backend.running} at work)`);
    const { status, text } = outcome as { status: number; text: string };
    assert.equal(status, 429, `admitted while the first call still worked at the backend: ${text}`);
    return text;
  } finally {
    clearInterval(running);
    attempt.abort();
    await answered.catch(() => undefined);
  }
}

for (const jsonResponse of [false, true]) {
  describe(`a 2025 call whose client hung up keeps its concurrency slot until the backend answered (${jsonResponse ? 'JSON' : 'SSE'} answers)`, () => {
    let backend: HeldBackend;
    let gw: GatewayUnderTest;
    let session: string;
    before(async () => {
      backend = await startHeldBackend({ jsonResponse });
      gw = await startGateway(testPolicy([backend.url], { toolLimits: { concurrency: 1 }, audit: { stdout: false } }));
      session = await initializeSession(gw.url);
    });
    after(async () => {
      await gw?.close();
      await backend?.close();
    });

    it('refuses every further call while the hung-up one works at the backend, and admits one after', async () => {
      const hangUp = new AbortController();
      const first = callHold(gw, session, hangUp.signal).then((res) => res.text()).catch(() => 'hung up');
      await backend.until(() => backend.running === 1, 'call working');
      hangUp.abort();
      assert.equal(await first, 'hung up');

      // Were the slot given back at the hang-up, the next call would be admitted one store call
      // later: for a second, every call is refused, and the backend never has two at work.
      const refusedUntil = Date.now() + 1000;
      let refusals = 0;
      while (Date.now() < refusedUntil) {
        const text = await refusedCall(gw, session, backend);
        assert.equal((JSON.parse(text) as { error: { data: { limit: string } } }).error.data.limit, 'concurrency');
        refusals += 1;
        await sleep(25);
      }
      assert.ok(refusals > 1);
      assert.equal(backend.running, 1, 'the hung-up call still works at the backend');
      assert.equal(backend.maxRunning, 1);
      assert.equal(backend.callsCut, 0, 'the held call\'s upstream request is still open');

      backend.release();
      await backend.until(() => backend.finished === 1, 'hung-up call finishing');
      const next = callUntilAdmitted(gw, session);
      await backend.until(() => backend.running === 1, 'next call working');
      backend.release();
      const res = await next;
      assert.equal(res.status, 200);
      assert.match(JSON.stringify(await readMessages(res)), /released/);
      assert.equal(backend.maxRunning, 1, 'never two calls at once under a cap of one');
      assert.equal(backend.callsCut, 0, 'the held call\'s answer was read to its end');
    });
  });
}

describe('a 2025 call answered 504 at limits.requestTimeout keeps its slot until the backend answered', () => {
  it('refuses the next call while the timed-out one still works at the backend', async () => {
    const backend = await startHeldBackend();
    const gw = await startGateway(testPolicy([backend.url], { toolLimits: { concurrency: 1 }, limits: { requestTimeout: '1s' }, audit: { stdout: false } }));
    try {
      const session = await initializeSession(gw.url);
      const timedOut = await callHold(gw, session);
      assert.equal(timedOut.status, 504);
      await timedOut.text();
      assert.equal(backend.running, 1, 'the backend still works on the call');
      const text = await refusedCall(gw, session, backend);
      assert.equal((JSON.parse(text) as { error: { data: { limit: string } } }).error.data.limit, 'concurrency');
      backend.release();
      await backend.until(() => backend.finished === 1, 'timed-out call finishing');
      const next = callUntilAdmitted(gw, session);
      await backend.until(() => backend.running === 1, 'next call working');
      backend.release();
      assert.equal((await next).status, 200);
      assert.equal(backend.maxRunning, 1);
    } finally {
      await gw.close();
      await backend.close();
    }
  });
});

describe('a call held for its backend after a hang-up is held no longer than its slot lives', () => {
  it('cuts the upstream request when toolLimits.slotTtl has passed, and the next call is admitted', async () => {
    const backend = await startHeldBackend();
    const gw = await startGateway(testPolicy([backend.url], { toolLimits: { concurrency: 1, slotTtl: '1s' }, audit: { stdout: false } }));
    try {
      const session = await initializeSession(gw.url);
      const hangUp = new AbortController();
      const first = callHold(gw, session, hangUp.signal).catch(() => undefined);
      await backend.until(() => backend.running === 1, 'call working');
      hangUp.abort();
      await first;
      await backend.until(() => backend.callsCut === 1, 'the held call cut');
      assert.equal(backend.running, 1, 'cut while the backend still worked: the slot lapsed');
      const next = callUntilAdmitted(gw, session);
      await backend.until(() => backend.running === 2, 'next call working');
      backend.release();
      assert.equal((await next).status, 200);
    } finally {
      await gw.close();
      await backend.close();
    }
  });
});

describe('a call held for its backend after a hang-up does not hold up shutdown', () => {
  it('closes the gateway while the backend still works, and the call is cut', async () => {
    const backend = await startHeldBackend();
    const gw = await startGateway(testPolicy([backend.url], { toolLimits: { concurrency: 1 }, audit: { stdout: false } }));
    try {
      const session = await initializeSession(gw.url);
      const hangUp = new AbortController();
      const first = callHold(gw, session, hangUp.signal).catch(() => undefined);
      await backend.until(() => backend.running === 1, 'call working');
      hangUp.abort();
      await first;
      // An agent closes only once its requests have ended: without the cut, close() would wait
      // for the backend, which answers only when released (after this bound).
      let timer: NodeJS.Timeout | undefined;
      const closed = await Promise.race([
        gw.close().then(() => 'closed'),
        new Promise<string>((resolve) => (timer = setTimeout(() => resolve('still closing'), 10_000))),
      ]).finally(() => clearTimeout(timer));
      assert.equal(closed, 'closed');
      assert.equal(backend.running, 1, 'the backend was still working when the gateway closed');
    } finally {
      await backend.close();
    }
  });
});
