/**
 * A bare HTTP backend on port 0 for tests of the gateway's own backend calls (src/provided/):
 * each test scripts how the next requests are answered, and reads what arrived. Not an MCP
 * server on purpose: the tests need replies no SDK server would send (wrong ids, bodies cut
 * short, streams that never end).
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, afterEach, before } from 'node:test';
import { Agent } from 'undici';

export interface Received {
  readonly headers: IncomingMessage['headers'];
  /** The request body as parsed JSON. */
  readonly body: { id?: unknown; method?: string; params?: Record<string, unknown>; result?: unknown; error?: unknown };
}

export type Answer = (body: Received['body'], res: ServerResponse) => void;

export interface ScriptedBackend {
  readonly origin: string;
  /** Every request so far, in arrival order. */
  readonly received: Received[];
  /** How requests are answered from now on (the default ends each with an empty 200). */
  answer: Answer;
  /** Forgets what arrived and goes back to the default answer. */
  reset(): void;
  close(): Promise<void>;
}

export async function startScriptedBackend(): Promise<ScriptedBackend> {
  const silent: Answer = (_body, res) => res.end();
  const received: Received[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}') as Received['body'];
      received.push({ headers: req.headers, body });
      backend.answer(body, res);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const backend: ScriptedBackend = {
    origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    received,
    answer: silent,
    reset() {
      received.length = 0;
      backend.answer = silent;
    },
    async close() {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
  return backend;
}

/**
 * A scripted backend and an undici agent for the tests of one file: the backend started before
 * them and reset after each, both closed after all. Read `backend` inside a test (it is set
 * once the file's tests start).
 */
export function scriptedBackendPerFile(): { readonly backend: ScriptedBackend; readonly agent: Agent } {
  const agent = new Agent({ connections: 4 });
  let started: ScriptedBackend | undefined;
  before(async () => {
    started = await startScriptedBackend();
  });
  afterEach(() => started?.reset());
  after(async () => {
    await started?.close();
    await agent.close();
  });
  return {
    get backend(): ScriptedBackend {
      if (!started) throw new Error('the scripted backend starts with the file\'s tests');
      return started;
    },
    agent,
  };
}

/** A JSON reply. */
export function replyJson(res: ServerResponse, value: unknown, status = 200): void {
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(value));
}

/** An event stream of `events`, one message each; left open when `end` is false. */
export function replyEvents(res: ServerResponse, events: unknown[], end = true): void {
  if (!res.headersSent) res.writeHead(200, { 'content-type': 'text/event-stream' });
  for (const event of events) res.write(`event: message\ndata: ${JSON.stringify(event)}\n\n`);
  if (end) res.end();
}
