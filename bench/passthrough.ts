/**
 * The "plain fastify" target: fastify + @fastify/http-proxy forwarding every request to the
 * backend with no parsing, no auth and no logging. It is what taskgate is built on, so the
 * difference between the two is the cost of taskgate's own stages.
 *
 * Env: BENCH_UPSTREAM (backend origin).
 */
import Fastify from 'fastify';
import httpProxy from '@fastify/http-proxy';
import { announceReady, serveParentRequests } from './child-channel.js';

const upstream = process.env.BENCH_UPSTREAM;
if (!upstream) throw new Error('BENCH_UPSTREAM is required');

const app = Fastify({ logger: false });
await app.register(httpProxy, {
  upstream,
  // The same pool size as a taskgate upstream's default (upstreams.*.connections: 128).
  undici: { connections: 128, pipelining: 1 },
  disableRequestLogging: true,
});
const url = await app.listen({ host: '127.0.0.1', port: 0 });
announceReady({ url });
serveParentRequests(() => app.close());
