/**
 * Takes the console screenshots the docs show (docs/images/console.png, console-task.png,
 * console-principals.png): the test stack of test/e2e/support/console-harness.ts with a few principals
 * and tasks in every status, a push listener on some, a principal probing for handles, a
 * minute of samples for the plots, then headless Chromium on the page.
 * Usage: npx tsx scripts/console-screenshot.ts [directory]   (default docs/images)
 */
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { chromiumMissing, launchBrowser } from '../test/e2e/support/browser.js';
import { createTask, OPERATOR_TOKEN, startConsoleStack } from '../test/e2e/support/console-harness.js';
import { listen } from '../test/e2e/support/push-listener.js';

const directory = process.argv[2] ?? 'docs/images';
const missing = chromiumMissing();
if (missing) {
  console.error(`no Chromium: ${missing}`);
  process.exit(1);
}

const stack = await startConsoleStack({ plain: true });
const browser = await launchBrowser();
try {
  const alice = await stack.client('alice@example.com');
  const bob = await stack.client('bob@example.com');
  const carol = await stack.client('carol@example.com', { path: '/plain' });
  const dave = await stack.client('dave@example.com');
  const live: [typeof alice, string][] = [];
  live.push([alice, await createTask(alice, 'slow_scan', { seconds: 3600 })]);
  live.push([alice, await createTask(alice, 'report_status', { message: 'indexing shard 41 of 120', seconds: 3600 })]);
  live.push([bob, await createTask(bob, 'ask_name', {})]);
  live.push([bob, await createTask(bob, 'report_status', { message: 'waiting for the build farm', seconds: 3600 })]);
  live.push([carol, await createTask(carol, 'slow_scan', { seconds: 3600 })]);
  live.push([dave, await createTask(dave, 'fail_task', {})]);
  live.push([dave, await createTask(dave, 'slow_scan', { seconds: 20 })]);
  for (let i = 0; i < 3; i++) live.push([dave, await createTask(dave, 'slow_scan', { seconds: 1 + i * 15 })]);
  // Dave listens to his tasks: their endings are pushed, and the lag plot gets its samples.
  const daves = live.filter(([client]) => client === dave).map(([, handle]) => handle);
  const listener = await listen(stack.gateways[0]!.url, `Bearer ${await stack.clientJwt('dave@example.com')}`, { taskIds: daves });
  // Alice listens to her status report, which runs on: the Push column shows it.
  const aliceListener = await listen(stack.gateways[0]!.url, `Bearer ${await stack.clientJwt('alice@example.com')}`, { taskIds: [live[1]![1]] });
  // Mallory owns nothing and probes for handles: the Principals tab shows her refusals and the alert.
  const mallory = await stack.client('mallory@example.com');
  for (let i = 0; i < 24; i++) await mallory.raw('tasks/get', { taskId: `made-up-handle-${i}`.padEnd(32, 'x') });
  // A minute of polling by the owners: statuses move on, and the plots get their samples.
  const until = Date.now() + 65_000;
  while (Date.now() < until) {
    for (const [client, handle] of live) await client.raw('tasks/get', { taskId: handle }).catch(() => undefined);
    if (Date.now() % 7 < 3) for (const [client, handle] of live.slice(0, 2)) await client.raw('tasks/get', { taskId: handle }).catch(() => undefined);
    await sleep(400);
  }
  const page = await browser.context.newPage();
  await page.setViewportSize({ width: 1600, height: 900 });
  await page.goto(`${stack.gateways[0]!.adminUrl}/console`);
  await page.fill('#token', OPERATOR_TOKEN);
  await page.click('#sign-in-form button[type="submit"]');
  await page.waitForSelector('#tasks-body tr[data-id]');
  await page.waitForSelector('#plot-status path.series', { state: 'attached' });
  await sleep(2500);
  await page.screenshot({ path: join(directory, 'console.png'), fullPage: true });
  await page.click('#tasks-body tr[data-id] button.link >> nth=1');
  await page.waitForSelector('#task-timeline li');
  await page.locator('#task-detail').scrollIntoViewIfNeeded();
  await page.locator('#task-detail').screenshot({ path: join(directory, 'console-task.png') });
  await page.click('#task-close');
  await page.click('#tab-button-principals');
  await page.waitForSelector('#principals-body tr');
  await sleep(500);
  await page.locator('#tab-principals').screenshot({ path: join(directory, 'console-principals.png') });
  listener.close();
  aliceListener.close();
  console.log(`wrote console.png, console-task.png and console-principals.png in ${directory}`);
} finally {
  await browser.close();
  await stack.close();
}
