/**
 * The operator console (DESIGN.md §13, docs/console.md): a room of its own on the admin
 * listener, which gateway.ts registers and the core knows nothing of. It serves the page at
 * /console and the admin API at /console/api/v1, reads the store through its bounded scan,
 * and acts through the same paths a task's owner and the expiry sweep use.
 *
 * Every route is there whatever the policy says, so a reload can turn the console on or off
 * (fastify cannot add routes to a listening server); while console.enabled is false they all
 * answer 404. Every answer carries the security headers of console-http.ts.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { registerConsoleApi } from './console-api.js';
import type { ConsoleApiHost, ConsoleDeps, ConsoleRequestContext } from './console-context.js';
import { ConsoleAssets, errorAnswer, secureHeaders } from './console-http.js';
import { ConsoleSamples, IDLE_SCAN_MS, SAMPLE_MS } from './console-samples.js';
import { LiveScan } from './live-scan.js';
import { OperatorAuthority } from './operator-auth.js';
import { GatewayError } from '../errors.js';

export class OperatorConsole implements ConsoleApiHost {
  readonly auth: OperatorAuthority;
  readonly scan: LiveScan;
  readonly samples = new ConsoleSamples();
  private readonly assets = new ConsoleAssets();
  private sampler: NodeJS.Timeout | undefined;
  private sampling: Promise<void> | undefined;

  constructor(readonly deps: ConsoleDeps) {
    this.auth = new OperatorAuthority({ logger: deps.logger, metrics: deps.metrics });
    this.scan = new LiveScan(deps.store, deps.hashHandle, (tasks) => this.samples.noteScan(tasks));
    // Kept in step with the policy on every console request and sampler tick (a reload may turn it on).
    this.setActive(deps.currentPolicy().config.console.enabled);
    this.auth.prepare(deps.currentPolicy().config.console);
  }

  /** Adds the routes to the admin listener (before it listens) and starts the sampler. */
  register(admin: FastifyInstance): void {
    admin.register(
      async (scope) => {
        scope.addHook('onRequest', async (request, reply) => {
          secureHeaders(reply, request.url.startsWith('/console/assets/'));
          const { enabled } = this.deps.currentPolicy().config.console;
          this.setActive(enabled);
          if (!enabled) throw new GatewayError('TG_ERR_CONSOLE_NOT_FOUND');
        });
        scope.setErrorHandler((error, request, reply) => this.answerError(error, request, reply));
        scope.setNotFoundHandler((_request, reply) => this.answerError(new GatewayError('TG_ERR_CONSOLE_NOT_FOUND'), _request, reply));
        // The page itself holds no data: without credentials it is sent with 401 (and with a
        // non-console token with 403), so a browser still shows the sign-in form it is.
        // ('/' under the prefix answers both /console and /console/.)
        scope.get('/', async (request, reply) => {
          const page = await this.assets.get('console.html');
          if (!page) throw new Error('console.html is missing from the console assets (was the build run?)');
          const status = await this.pageStatus(request);
          return reply.code(status).type(page.contentType).send(page.body);
        });
        scope.get<{ Params: { file: string } }>('/assets/:file', async (request, reply) => {
          const asset = await this.assets.get(request.params.file);
          if (!asset) throw new GatewayError('TG_ERR_CONSOLE_NOT_FOUND');
          return reply.type(asset.contentType).send(asset.body);
        });
        await scope.register(async (api) => registerConsoleApi(api, this), { prefix: '/api/v1' });
      },
      { prefix: '/console' },
    );
    this.sampler = setInterval(() => {
      this.sampling ??= this.sample().finally(() => (this.sampling = undefined));
    }, SAMPLE_MS);
    this.sampler.unref();
    // The counters' values now: the first tick's rates then cover its own interval, not all
    // that came before it.
    if (this.deps.currentPolicy().config.console.enabled) this.sampling = this.noteMetrics(Date.now()).finally(() => (this.sampling = undefined));
  }

  /** The operator behind an API request; actions also need the operator role. */
  async operatorOf(request: FastifyRequest, acting = false): Promise<ConsoleRequestContext> {
    const policy = this.deps.currentPolicy();
    const operator = await this.auth.authenticate(request, policy.config.console);
    if (acting) this.auth.requireOperator(operator);
    this.deps.metrics.consoleRequests.inc({ outcome: 'ok' });
    return { operator, policy };
  }

  async close(): Promise<void> {
    clearInterval(this.sampler);
    await this.sampling;
    await this.auth.close();
  }

  /** What the console keeps of this replica's traffic (timelines, principals' activity) is kept only while it is on. */
  private setActive(enabled: boolean): void {
    this.deps.timeline.active = enabled;
    this.deps.replica.principals.active = enabled;
  }

  private async pageStatus(request: FastifyRequest): Promise<number> {
    try {
      await this.operatorOf(request);
      return 200;
    } catch (error) {
      if (error instanceof GatewayError && (error.code === 'TG_ERR_UNAUTHORIZED' || error.code === 'TG_ERR_CONSOLE_FORBIDDEN')) return error.code === 'TG_ERR_UNAUTHORIZED' ? 401 : 403;
      throw error;
    }
  }

  private answerError(error: unknown, request: FastifyRequest, reply: FastifyReply): FastifyReply {
    // A body fastify could not parse (not JSON, too large) is the client's mistake.
    const fastifyError = error as { statusCode?: number; code?: string };
    const cause = !(error instanceof GatewayError) && typeof fastifyError.statusCode === 'number' && fastifyError.statusCode < 500 ? new GatewayError('TG_ERR_INVALID_PARAMS', { detail: 'the request body is not a JSON object this API takes', cause: error }) : error;
    const answer = errorAnswer(cause);
    if (!answer.known) request.log.error({ err: error }, 'console request failed');
    return reply.code(answer.status).headers(answer.headers).send(answer.body);
  }

  /** Poll outcomes every tick; a scan for the status plot only when no viewer made one lately. */
  private async sample(): Promise<void> {
    const policy = this.deps.currentPolicy().config.console;
    this.setActive(policy.enabled);
    if (!policy.enabled) return;
    // A reload may have brought a new operator issuer: its keys are fetched before they are needed.
    this.auth.prepare(policy);
    const now = Date.now();
    try {
      await this.noteMetrics(now);
      const last = this.scan.lastAt;
      if (last === undefined || now - last >= IDLE_SCAN_MS) await this.scan.read(policy.maxScan);
    } catch (error) {
      this.deps.logger.debug({ err: error }, 'console sample skipped');
    }
  }

  private async noteMetrics(now: number): Promise<void> {
    await this.samples.notePolls(this.deps.metrics, now);
    await this.samples.noteLag(this.deps.metrics, now);
  }
}
