/**
 * The operator console in a real browser: Debian's headless Chromium, driven by playwright-core
 * (test/e2e/support/browser.ts), against gateways in front of the SDK's 2026 task server with a real
 * JWKS issuer. Tasks two principals create show up within a couple of seconds; filtering,
 * cancelling and suspending from the page reach the store and the backend; the page never
 * holds a handle, a result or an input; the page runs under its strict CSP without a
 * violation. On Redis, a console shows (and cancels) tasks made through another replica.
 *
 * The screenshots in the docs are taken by scripts/console-screenshot.ts on a richer stack.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Page } from 'playwright-core';
import { answersPing, SHARED_REDIS } from '../support/redis-servers.js';
import { chromiumMissing, launchBrowser, reportMissingBrowser, type Browser } from './support/browser.js';
import { createTask, OPERATOR_TOKEN, startConsoleStack, type ConsoleStack } from './support/console-harness.js';
import { waitFor, waitForValue } from '../support/wait.js';
import type { ModernTaskClient } from './support/modern-client.js';
import { listen } from './support/push-listener.js';
import { waitForModernStatus } from './support/task-waits.js';

/**
 * The page's `document`, for the predicates playwright runs in the browser (this file is
 * compiled without the DOM library). Predicates are functions, never strings: a string would be
 * evaluated with eval, which the console's CSP refuses, as it should.
 */
declare const document: {
  querySelectorAll(selector: string): { length: number };
  querySelector(selector: string): { textContent: string | null; getAttribute(name: string): string | null } | null;
  getElementById(id: string): { textContent: string | null } | null;
};

/** Within this the page must show what changed (it polls the API every 2 s). */
const SHOWN_WITHIN_MS = 4000;
const INPUT_MARK = 'INPUT-MARK-7f3a';

const missing = chromiumMissing();
const redisUp = await answersPing(SHARED_REDIS.port, SHARED_REDIS.host);
if (!redisUp) console.warn(`\n*** console-browser: Redis at ${SHARED_REDIS.host}:${SHARED_REDIS.port} is not answering; the Redis variant is skipped\n`);

/** Opens the console of `adminUrl` and signs in; fails on any CSP violation it reports. */
async function openConsole(browser: Browser, adminUrl: string, token: string, violations: string[]): Promise<Page> {
  const page = await browser.context.newPage();
  page.on('console', (message) => {
    if (/Content Security Policy|Refused to/i.test(message.text())) violations.push(message.text());
  });
  page.on('pageerror', (error) => violations.push(`page error: ${error.message}`));
  const response = await page.goto(`${adminUrl}/console`);
  assert.equal(response?.status(), 401, 'the page itself answers 401 without credentials');
  await page.fill('#token', token);
  await page.click('#sign-in-form button[type="submit"]');
  return page;
}

async function rowCount(page: Page): Promise<number> {
  return page.locator('#tasks-body tr[data-id]').count();
}

async function waitForRows(page: Page, count: number, ms = SHOWN_WITHIN_MS): Promise<void> {
  await page.waitForFunction((n) => document.querySelectorAll('#tasks-body tr[data-id]').length === n, count, { timeout: ms });
}

if (missing) {
  reportMissingBrowser('the operator console browser tests', missing);
} else {
  describe('operator console in Chromium (memory store)', () => {
    let stack: ConsoleStack;
    let browser: Browser;
    let page: Page;
    let alice: ModernTaskClient;
    let bob: ModernTaskClient;
    let aliceTask: string;
    let bobTask: string;
    let doneTask: string;
    const violations: string[] = [];

    before(async () => {
      stack = await startConsoleStack();
      browser = await launchBrowser();
      alice = await stack.client('alice');
      bob = await stack.client('bob');
      aliceTask = await createTask(alice, 'slow_scan', { seconds: 120, marker: INPUT_MARK });
      // A task whose result the owner has read: its answer is in the store's poll snapshot.
      doneTask = await createTask(alice, 'slow_scan', { seconds: 0.1 });
      await waitForModernStatus(alice, doneTask, 'completed');
      page = await openConsole(browser, stack.gateways[0]!.adminUrl, OPERATOR_TOKEN, violations);
    });
    after(async () => {
      await browser?.close();
      await stack?.close();
    });

    it('shows the tasks of two principals within a couple of seconds, one arriving while it is open', async () => {
      // The first rows wait for the sign-in and the page's first load as well.
      await waitForRows(page, 2, 10_000);
      const started = Date.now();
      bobTask = await createTask(bob, 'report_status', { message: 'indexing 3 of 9', seconds: 120 });
      await waitForRows(page, 3);
      assert.ok(Date.now() - started < SHOWN_WITHIN_MS, 'the new task appeared without a reload');
      const subjects = await page.locator('#tasks-body tr[data-id] td:nth-child(2) .primary').allTextContents();
      assert.deepEqual(subjects.sort(), ['alice', 'alice', 'bob']);
      assert.match(await page.locator('#tasks-body').textContent() ?? '', /indexing 3 of 9/);
    });

    it('filters by principal and by status', async () => {
      await page.fill('#filter-principal', 'bob');
      await waitForRows(page, 1);
      assert.match(await page.locator('#tasks-body tr[data-id]').textContent() ?? '', /report_status/);
      await page.fill('#filter-principal', '');
      await page.selectOption('#filter-status', 'completed');
      await waitForRows(page, 1);
      assert.match(await page.locator('#tasks-body tr[data-id]').textContent() ?? '', /completed/);
      await page.selectOption('#filter-status', '');
      await waitForRows(page, 3);
    });

    it('sorts from the keyboard, and says so in aria-sort', async () => {
      const header = page.locator('#tasks-table th:has(button[data-sort="tool"])');
      await page.focus('#tasks-table button[data-sort="tool"]');
      await page.keyboard.press('Enter');
      await page.waitForFunction(() => document.querySelector('#tasks-table th:has(button[data-sort="tool"])')?.getAttribute('aria-sort') === 'descending');
      await page.keyboard.press('Enter');
      assert.equal(await header.getAttribute('aria-sort'), 'ascending');
      await page.waitForFunction(() => document.querySelector('#tasks-body tr[data-id] td:nth-child(3)')?.textContent === 'report_status');
      assert.equal(await page.locator('#tasks-table th:has(button[data-sort="age"])').getAttribute('aria-sort'), 'none');
    });

    it('shows a task\'s polls and its push listens, the principals\' poll rates, and what an upstream taught it', async () => {
      const id = stack.audit.find((e) => e.event === 'created' && e.handle === bobTask)!.handleHash as string;
      for (let i = 0; i < 2; i++) assert.equal((await bob.raw('tasks/get', { taskId: bobTask })).status, 200);
      // forwarded / early / abusive: two polls, whatever their verdicts.
      await page.waitForFunction(
        (taskId) => (document.querySelector(`#tasks-body tr[data-id="${taskId}"] td.polls .primary`)?.textContent ?? '').split(' / ').reduce((sum, n) => sum + Number(n), 0) === 2,
        id,
        { timeout: SHOWN_WITHIN_MS },
      );
      assert.match((await page.locator(`#tasks-body tr[data-id="${id}"] td.polls .secondary`).textContent()) ?? '', /^last \d+(ms|s) ago$/);
      const listener = await listen(stack.gateways[0]!.url, `Bearer ${await stack.clientJwt('bob')}`, { taskIds: [bobTask] });
      try {
        await listener.waitFor((m) => m.method === 'notifications/subscriptions/acknowledged');
        await page.waitForFunction((taskId) => document.querySelector(`#tasks-body tr[data-id="${taskId}"] td.push`)?.textContent === '1', id, { timeout: SHOWN_WITHIN_MS });
      } finally {
        listener.close();
      }
      await page.click('#tab-button-principals');
      const row = page.locator('#principals-body tr', { hasText: 'bob' });
      await row.locator('td:nth-child(7)').filter({ hasText: /^[1-9]/ }).waitFor({ timeout: SHOWN_WITHIN_MS });
      assert.equal(await row.locator('td:nth-child(8)').textContent(), '0 / 0 / 0');
      await page.click('#tab-button-upstreams');
      await page.locator('#upstreams-body tr', { hasText: 'tools' }).locator('td:nth-child(9)', { hasText: 'nothing yet' }).waitFor({ timeout: SHOWN_WITHIN_MS });
      await page.click('#tab-button-tasks');
      assert.equal(await page.locator('#plot-lag').count(), 1, 'the push lag plot is on the page');
    });

    it('never holds a handle, a result or an input', async () => {
      await page.click(`#tasks-body tr[data-id] button.link >> nth=0`);
      await page.waitForSelector('#task-timeline li');
      const html = await page.content();
      const text = (await page.locator('body').innerText()) + html;
      for (const handle of [aliceTask, bobTask, doneTask]) assert.ok(!text.includes(handle), 'a handle is on the page');
      assert.ok(!text.includes('Scan finished'), 'a result is on the page');
      assert.ok(!text.includes(INPUT_MARK), 'an input is on the page');
      const backendIds = stack.backend.stats.requests.map((r) => (r.body as { params?: { taskId?: string } } | undefined)?.params?.taskId).filter((id): id is string => typeof id === 'string');
      assert.ok(backendIds.length > 0);
      for (const id of backendIds) assert.ok(!text.includes(id), 'a backend task id is on the page');
      await page.click('#task-close');
    });

    it('cancels a task from the page: the backend saw it, and its owner\'s tasks/get says cancelled', async () => {
      stack.backend.stats.reset();
      const id = stack.audit.find((e) => e.event === 'created' && e.handle === aliceTask)!.handleHash as string;
      await page.click(`#tasks-body tr[data-id="${id}"] button.danger`);
      await page.waitForSelector('#action-dialog[open]');
      await page.click('#action-confirm');
      assert.match((await page.locator('#action-error').textContent()) ?? '', /reason is required/, 'no reason, no cancel');
      await page.fill('#action-reason', 'stuck for two hours (INC-7)');
      await page.click('#action-confirm');
      await page.locator('#action-dialog').waitFor({ state: 'hidden' });
      await waitFor(() => stack.backend.stats.requests.some((r) => r.rpcMethod === 'tasks/cancel'), 'the backend saw tasks/cancel', 5000, 50);
      const view = await waitForModernStatus(alice, aliceTask, 'cancelled');
      assert.equal(view.status, 'cancelled');
      const audited = stack.audit.find((e) => e.event === 'operator_cancel');
      assert.equal(audited?.operatorReason, 'stuck for two hours (INC-7)');
      await page.waitForFunction((taskId) => document.querySelector(`#tasks-body tr[data-id="${taskId}"] .status`)?.textContent === 'cancelled', id, { timeout: SHOWN_WITHIN_MS });
    });

    it('suspends a principal from the page: its tasks/get is refused', async () => {
      await page.click('#tab-button-principals');
      const row = page.locator('#principals-body tr', { hasText: 'bob' });
      await row.locator('button.danger').click();
      await page.waitForSelector('#action-dialog[open]');
      await page.fill('#action-reason', 'hammering tasks/get');
      await page.selectOption('#action-duration', '5m');
      await page.click('#action-confirm');
      await page.locator('#action-dialog').waitFor({ state: 'hidden' });
      const refused = await waitForValue(async () => {
        const answer = await bob.raw('tasks/get', { taskId: bobTask });
        return answer.status === 429 ? answer : undefined;
      }, 'bob refused', 5000, 50);
      assert.equal((refused.response?.error as { code: number }).code, -31003);
      await row.getByRole('button', { name: /Lift the suspension/ }).waitFor({ timeout: SHOWN_WITHIN_MS });
      await page.click('#tab-button-tasks');
      await waitForRows(page, 3);
    });

    it('ran without a single Content-Security-Policy violation or script error', () => {
      assert.deepEqual(violations, []);
    });

    it('tells a token without a console role apart, and signs it out', async () => {
      const other = await browser.context.newPage();
      await other.goto(`${stack.gateways[0]!.adminUrl}/console`);
      await other.fill('#token', await stack.operatorJwt('openid'));
      await other.click('#sign-in-form button[type="submit"]');
      await other.waitForFunction(() => /no console role/.test(document.getElementById('sign-in-error')?.textContent ?? ''));
      assert.equal(await other.locator('#app').isHidden(), true);
      await other.close();
    });
  });

  describe('operator console in Chromium (Redis store, two replicas)', { skip: redisUp ? false : 'Redis is not answering' }, () => {
    let stack: ConsoleStack;
    let browser: Browser;

    before(async () => {
      stack = await startConsoleStack({ store: 'redis', gateways: 2 });
      browser = await launchBrowser();
    });
    after(async () => {
      await browser?.close();
      await stack?.close();
    });

    it('shows and cancels, on one replica\'s console, a task made through the other', async () => {
      const violations: string[] = [];
      const page = await openConsole(browser, stack.gateways[0]!.adminUrl, OPERATOR_TOKEN, violations);
      await page.waitForSelector('#tasks-body td.empty');
      const dave = await stack.client('dave', { gateway: 1 });
      const handle = await createTask(dave, 'slow_scan', { seconds: 120 });
      await waitForRows(page, 1);
      assert.match((await page.locator('#tasks-body tr[data-id]').textContent()) ?? '', /dave/);
      assert.equal(await rowCount(page), 1);
      // Polls through the other replica, counted in the store: this replica's console shows them.
      for (let i = 0; i < 3; i++) assert.equal((await dave.raw('tasks/get', { taskId: handle })).status, 200);
      await page.waitForFunction(
        () => (document.querySelector('#tasks-body tr[data-id] td.polls .primary')?.textContent ?? '').split(' / ').reduce((sum, n) => sum + Number(n), 0) === 3,
        undefined,
        { timeout: SHOWN_WITHIN_MS },
      );
      await page.click('#tasks-body tr[data-id] button.danger');
      await page.fill('#action-reason', 'cross-replica check');
      await page.click('#action-confirm');
      await page.locator('#action-dialog').waitFor({ state: 'hidden' });
      await waitForModernStatus(dave, handle, 'cancelled');
      assert.ok(stack.backend.stats.requests.some((r) => r.rpcMethod === 'tasks/cancel'));
      assert.ok(!(await page.content()).includes(handle));
      assert.deepEqual(violations, []);
    });
  });
}
