/**
 * Browser-based MCP clients on another origin (the Inspector's web UI, browser agents), in a
 * real browser: headless Chromium runs a page served from one origin that talks MCP with
 * fetch() to the gateway on another (http://localhost:GATEWAY_PORT), in front of the SDK's
 * own server, with a real JWT. Chromium enforces CORS itself: a preflight the gateway does not
 * answer, or an answer without the right Access-Control-* headers, fails the page's fetch.
 * A page from an origin outside listen.allowedOrigins must get nowhere.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Page } from 'playwright-core';
import { startExampleServer, type ExampleServer } from '../../examples/mcp-server/server.js';
import { chromiumMissing, launchBrowser, reportMissingBrowser, startPageServer, type Browser, type PageServer } from './support/browser.js';
import { startGateway, startJwksServer, testPolicy, waitReady, type GatewayUnderTest, type JwksServer } from './support/harness.js';

const RESOURCE = 'http://127.0.0.1/mcp';

/**
 * What the page ships: an MCP client written against fetch() as a browser app would, reading
 * the headers it needs (WWW-Authenticate, Mcp-Session-Id) from the answers.
 */
const PAGE_SCRIPT = String.raw`
const PROTOCOL = { 'mcp-protocol-version': '2025-11-25' };
const POST = { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...PROTOCOL };
const INITIALIZE = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize',
  params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'browser-page', version: '0' } } });

async function readMessage(res) {
  const text = await res.text();
  if ((res.headers.get('content-type') || '').includes('text/event-stream')) {
    const data = text.split('\n').find((line) => line.startsWith('data:'));
    return data === undefined ? undefined : JSON.parse(data.slice(5));
  }
  return text ? JSON.parse(text) : undefined;
}

async function runMcp({ gateway, token }) {
  const out = {};
  const refused = await fetch(gateway, { method: 'POST', headers: POST, body: INITIALIZE });
  const challenge = refused.headers.get('www-authenticate');
  out.unauthenticated = { status: refused.status, challenge, code: (await readMessage(refused))?.error?.code };

  // The document the challenge names, at the gateway's origin, asked for as the SDK asks.
  const named = /resource_metadata="([^"]+)"/.exec(challenge || '');
  const metadata = await fetch(new URL(new URL(named[1]).pathname, gateway), { headers: PROTOCOL });
  out.metadata = { status: metadata.status, resource: (await metadata.json()).resource };

  const auth = { authorization: 'Bearer ' + token };
  const init = await fetch(gateway, { method: 'POST', headers: { ...POST, ...auth }, body: INITIALIZE });
  const sessionId = init.headers.get('mcp-session-id');
  out.initialize = { status: init.status, sessionId, server: (await readMessage(init))?.result?.serverInfo?.name };

  const session = { ...POST, ...auth, 'mcp-session-id': sessionId };
  const initialized = await fetch(gateway, { method: 'POST', headers: session, body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }) });
  out.initialized = initialized.status;

  // The standalone stream: a GET the proxy routes relay; its headers are all the page waits for.
  const leave = new AbortController();
  const stream = await fetch(gateway, { headers: { ...auth, ...PROTOCOL, accept: 'text/event-stream', 'mcp-session-id': sessionId }, signal: leave.signal });
  out.stream = { status: stream.status, type: stream.headers.get('content-type') };
  leave.abort();

  const call = await fetch(gateway, { method: 'POST', headers: { ...session, 'mcp-method': 'tools/call', 'mcp-name': 'echo' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'echo', arguments: { text: 'from the browser' } } }) });
  out.call = { status: call.status, text: (await readMessage(call))?.result?.content?.[0]?.text };

  const closed = await fetch(gateway, { method: 'DELETE', headers: { ...auth, ...PROTOCOL, 'mcp-session-id': sessionId } });
  out.deleted = closed.status;
  return out;
}

/** One authorised initialize; how the page's fetch ended. */
async function tryInitialize({ gateway, token }) {
  try {
    const res = await fetch(gateway, { method: 'POST', headers: { ...POST, authorization: 'Bearer ' + token }, body: INITIALIZE });
    return { reached: true, status: res.status };
  } catch (error) {
    return { reached: false, error: String(error) };
  }
}
`;

interface McpRun {
  unauthenticated: { status: number; challenge: string | null; code?: number };
  metadata: { status: number; resource: string };
  initialize: { status: number; sessionId: string | null; server?: string };
  initialized: number;
  stream: { status: number; type: string | null };
  call: { status: number; text?: string };
  deleted: number;
}

async function openPage(browser: Browser, server: PageServer): Promise<Page> {
  const page = await browser.context.newPage();
  const loaded = await page.goto(`${server.origin}/`);
  assert.equal(loaded?.status(), 200);
  return page;
}

const missing = chromiumMissing();
if (missing) {
  reportMissingBrowser('the CORS browser tests (test/e2e/cors-browser.test.ts)', missing);
} else {
  describe('a browser page on another origin, through the gateway', () => {
    let backend: ExampleServer;
    let jwks: JwksServer;
    let gw: GatewayUnderTest;
    let allowedPage: PageServer;
    let otherPage: PageServer;
    let browser: Browser;
    let gatewayUrl: string;
    before(async () => {
      backend = await startExampleServer();
      jwks = await startJwksServer();
      allowedPage = await startPageServer('allowed', PAGE_SCRIPT);
      otherPage = await startPageServer('not allowed', PAGE_SCRIPT);
      gw = await startGateway(
        testPolicy([backend.url], {
          listen: { host: '127.0.0.1', port: 0, allowedOrigins: [allowedPage.origin] },
          auth: { mode: 'jwt', issuers: [{ issuer: jwks.issuer, jwksUri: jwks.url }] },
        }),
      );
      await waitReady(gw);
      // Another name than the page's, as well as another port: a cross-origin request in every respect.
      gatewayUrl = gw.url.replace('127.0.0.1', 'localhost');
      browser = await launchBrowser();
    });
    after(async () => {
      await browser?.close();
      await gw?.close();
      await otherPage?.close();
      await allowedPage?.close();
      await jwks?.close();
      await backend?.close();
    });

    it('from an allowed origin: reads the 401 challenge and the metadata, initializes, opens the GET stream and calls a tool with the session id it read, deletes the session', async () => {
      const page = await openPage(browser, allowedPage);
      const token = await jwks.mint({ aud: RESOURCE });
      const run = (await page.evaluate(`runMcp(${JSON.stringify({ gateway: gatewayUrl, token })})`)) as McpRun;

      assert.equal(run.unauthenticated.status, 401);
      assert.match(run.unauthenticated.challenge ?? '', /^Bearer .*resource_metadata="/, 'the page could not read WWW-Authenticate');
      assert.deepEqual(run.metadata, { status: 200, resource: RESOURCE });
      assert.equal(run.initialize.status, 200);
      assert.ok(run.initialize.sessionId, 'the page could not read Mcp-Session-Id');
      assert.equal(run.initialize.server, 'taskgate-example');
      assert.equal(run.initialized, 202);
      assert.deepEqual(run.stream, { status: 200, type: 'text/event-stream' });
      assert.deepEqual(run.call, { status: 200, text: 'from the browser' });
      assert.ok(run.deleted >= 200 && run.deleted < 300, `DELETE answered ${run.deleted}`);

      // The gateway answered every preflight itself; the backend saw the calls, with the session the page read.
      assert.ok(!backend.stats.requests.some((r) => r.method === 'OPTIONS'), 'a preflight reached the backend');
      const call = backend.stats.requests.find((r) => r.rpcMethod === 'tools/call');
      assert.equal(call?.sessionId, run.initialize.sessionId);
      await page.close();
    });

    it('from an origin outside listen.allowedOrigins: the page\'s fetch fails and nothing reaches the backend', async () => {
      const page = await openPage(browser, otherPage);
      const seen = backend.stats.requests.length;
      const token = await jwks.mint({ aud: RESOURCE });
      const outcome = (await page.evaluate(`tryInitialize(${JSON.stringify({ gateway: gatewayUrl, token })})`)) as { reached: boolean; error?: string };
      // The preflight was refused (403), so the browser never sent the POST: by the time the
      // fetch has failed, nothing more can reach the backend for it.
      assert.deepEqual(outcome, { reached: false, error: 'TypeError: Failed to fetch' });
      assert.equal(backend.stats.requests.length, seen, 'a request from the refused origin reached the backend');
      await page.close();
    });
  });
}
