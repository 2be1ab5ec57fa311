/**
 * The floor under taskgate's cached poll (`bench/profile.ts --target fastify-empty`): fastify
 * with one POST route and nothing else. It reads and parses the body with fastify's own JSON
 * parser (secure-json-parse, as taskgate does) and answers a fixed task of the size a cached
 * poll answers with, under the request's id: what any fastify app pays to answer a small
 * JSON-RPC request, with no proxying, auth, logging or metrics.
 */
import Fastify from 'fastify';
import { announceReady, serveParentRequests } from './child-channel.js';

// The body of a cached 2026 poll's answer in the bench (a working task).
const RESULT = JSON.stringify({
  resultType: 'complete',
  taskId: 'x'.repeat(32),
  status: 'working',
  statusMessage: 'working',
  createdAt: '2026-12-01T00:00:00.000Z',
  lastUpdatedAt: '2026-12-01T00:00:00.000Z',
  ttlMs: 600000,
  pollIntervalMs: 5000,
});

const app = Fastify({ logger: false });
app.post('/mcp', (request, reply) => {
  const id = (request.body as { id?: unknown } | undefined)?.id ?? null;
  void reply.type('application/json').send(`{"jsonrpc":"2.0","id":${JSON.stringify(id)},"result":${RESULT}}`);
});
const url = await app.listen({ host: '127.0.0.1', port: 0 });
announceReady({ url });
serveParentRequests(() => app.close());
