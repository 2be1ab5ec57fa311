/**
 * Tasks the gateway runs itself (#15) on an upstream whose credentials are an RFC 8693 token
 * exchange: the backend call the gateway holds for the task carries a token exchanged for the
 * task's owner, which the backend's resource server verifies. Real authorization server
 * (oidc-provider), real SDK 2.x server with no task runtime behind a jose verifier.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { startModernTaskServer, type ModernTaskServer } from '../../examples/modern-task-server/server.js';
import { startBearerGuard, type BearerGuard } from './support/bearer-guard.js';
import { startExchangeServer, type ExchangeServer } from './support/exchange-server.js';
import { startGateway, startJwksServer, testPolicy, type GatewayUnderTest, type JwksServer, waitUntilReady } from './support/harness.js';
import { createModernTaskClient, type ModernTaskClient } from './support/modern-client.js';

const TOOLS = 'http://tools.internal/mcp';

describe('a task the gateway runs itself, on a token-exchange upstream', () => {
  let jwks: JwksServer;
  let as: ExchangeServer;
  let backend: ModernTaskServer;
  let guard: BearerGuard;
  let gw: GatewayUnderTest;
  let alice: ModernTaskClient;

  before(async () => {
    jwks = await startJwksServer({ algs: ['ES256'] });
    as = await startExchangeServer({ subjectIssuer: jwks, subjectAudiences: ['http://127.0.0.1/mcp'], targets: [{ resource: TOOLS, scopes: ['tools:call'] }] });
    backend = await startModernTaskServer({ tasks: false });
    guard = await startBearerGuard({ backendUrl: backend.url, issuer: as.issuer, jwksUri: as.jwksUri, audience: TOOLS, requiredScopes: ['tools:call'] });
    const policy = testPolicy([guard.url], {
      auth: { mode: 'jwt', issuers: [{ issuer: jwks.issuer, jwksUri: jwks.url }] },
      upstreams: {
        tools: {
          instances: [guard.origin],
          providedTasks: { tools: ['slow_scan'], promoteAfter: '200ms' },
          credentials: { type: 'token-exchange', tokenEndpoint: as.tokenEndpoint, resource: TOOLS, scopes: ['tools:call'], client: { method: 'client_secret_basic', id: as.clients.basic.id, secret: as.clients.basic.secret } },
        },
      },
      tasks: { poll: { default: '100ms' } },
    });
    gw = await startGateway(policy);
    await waitUntilReady(gw.adminUrl);
    const token = await jwks.mint({ sub: 'alice', aud: 'http://127.0.0.1/mcp' });
    alice = await createModernTaskClient(gw.url, { headers: { authorization: `Bearer ${token}` } });
  });
  after(async () => {
    await alice?.close();
    await gw?.close();
    await Promise.all([guard?.close(), backend?.close(), as?.close(), jwks?.close()]);
  });

  it('holds the backend call with a token exchanged for the task\'s owner', async () => {
    const execution = await alice.callTool('slow_scan', { seconds: 0.8 });
    assert.equal(execution.kind, 'task', 'the call outlasted promoteAfter and became the gateway\'s task');
    const { outcome } = await execution.settle();
    assert.equal(outcome.status, 'completed');
    const call = guard.verified.find((v) => v.rpcMethod === 'tools/call');
    assert.ok(call, 'the backend call passed the resource server');
    assert.equal(call.claims.sub, 'alice');
    assert.equal(call.claims.aud, TOOLS);
    assert.equal(guard.refusals.length, 0, 'no call went without a token');
  });
});
