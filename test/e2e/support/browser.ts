/**
 * A real browser for the claims only a browser can check (CORS): Debian's Chromium
 * (/usr/bin/chromium, or $TASKGATE_CHROMIUM), headless, driven by playwright-core, with a fresh
 * profile per launch; and a page server, so that a page has an origin of its own.
 * Playwright's own browser downloads are not used. Where Chromium is missing the evidence
 * cannot run: on CI (CI=true) that is a failure, elsewhere a skip that says so loudly and is
 * counted as one (as the Redis tests do, test/support/redis-servers.ts).
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { it } from 'node:test';
import { chromium, type BrowserContext } from 'playwright-core';

const CHROMIUM = process.env.TASKGATE_CHROMIUM ?? '/usr/bin/chromium';
const INSTALL_HINT = 'Install Debian\'s chromium (apt-get install chromium), or name another with TASKGATE_CHROMIUM.';

/** Why no browser can run here, or undefined when Chromium answers --version. */
export function chromiumMissing(): string | undefined {
  const probe = spawnSync(CHROMIUM, ['--version'], { encoding: 'utf8', timeout: 20_000 });
  if (probe.status === 0) return undefined;
  return `${CHROMIUM} --version: ${probe.error?.message ?? ((probe.stderr || probe.stdout).trim() || `exit ${probe.status}`)}`;
}

/** Registers the one test that stands for the browser tests that cannot run: failed on CI, skipped elsewhere. */
export function reportMissingBrowser(what: string, reason: string): void {
  const message = `no Chromium (${reason}): ${what} did not run`;
  if (process.env.CI === 'true') {
    it(message, () => assert.fail(`${message} (CI=true: the browser tests are required). ${INSTALL_HINT}`));
    return;
  }
  console.warn(`\n*** SKIPPED: ${message}.\n*** ${INSTALL_HINT}\n`);
  it(message, { skip: message }, () => undefined);
}

export interface Browser {
  readonly context: BrowserContext;
  close(): Promise<void>;
}

export async function launchBrowser(): Promise<Browser> {
  const profile = await mkdtemp(join(tmpdir(), 'taskgate-chromium-'));
  try {
    const context = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM,
      headless: true,
      args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    });
    return {
      context,
      async close() {
        await context.close();
        await rm(profile, { recursive: true, force: true });
      },
    };
  } catch (error) {
    await rm(profile, { recursive: true, force: true });
    throw error;
  }
}

export interface PageServer {
  /** The page's origin, e.g. http://127.0.0.1:PORT. */
  readonly origin: string;
  close(): Promise<void>;
}

/**
 * Serves one HTML page with `script` (plain JavaScript, as a page would ship it) on 127.0.0.1,
 * port 0: an origin of its own for the script to run in. Tests call the script's functions
 * with page.evaluate of a string, so no TypeScript helper code ends up in the browser.
 */
export async function startPageServer(title: string, script: string): Promise<PageServer> {
  const html = `<!doctype html><html><head><meta charset="utf-8"><title>${title}</title><script>${script}</script></head><body>${title}</body></html>`;
  const server = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    res.end(html);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    origin: `http://127.0.0.1:${port}`,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
