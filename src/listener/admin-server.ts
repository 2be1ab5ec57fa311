/**
 * The admin listener: liveness, readiness and Prometheus metrics, on its own port so that
 * they are never exposed on the client-facing one.
 */
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';

export interface ReadinessCheck {
  readonly name: string;
  check(): Promise<boolean>;
  /** False: the result is reported in the body but does not make the replica unready. */
  readonly required?: boolean;
}

export function buildAdminServer(options: { logger: Logger; registry: Registry; checks: ReadinessCheck[] }): FastifyInstance {
  const admin = Fastify({ loggerInstance: options.logger.child({ listener: 'admin' }) as FastifyBaseLogger, logController: new LogController({ disableRequestLogging: true }) });

  admin.get('/healthz', async () => ({ status: 'ok' }));

  admin.get('/readyz', async (_request, reply) => {
    const results: Record<string, boolean> = {};
    await Promise.all(
      options.checks.map(async (c) => {
        results[c.name] = await c.check().catch(() => false);
      }),
    );
    const ready = options.checks.every((c) => c.required === false || results[c.name]);
    return reply.code(ready ? 200 : 503).send({ status: ready ? 'ready' : 'not ready', checks: results });
  });

  admin.get('/metrics', async (_request, reply) => {
    const body = await options.registry.metrics();
    return reply.header('content-type', options.registry.contentType).send(body);
  });

  return admin;
}
