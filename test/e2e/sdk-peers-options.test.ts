// The example MCP server's options (an event store for resumption, JSON replies, ...), with the
// real SDK 1.x client and raw requests, directly and through the gateway (see sdk-peers.test.ts).
import { afterEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { EventSourceMessage } from 'eventsource-parser/stream';
import { startTarget, connect, textOf, closeOpenClients, rawHeaders, toolCall, sseEvents } from './support/sdk-peer-clients.js';
import { waitFor } from '../support/wait.js';

afterEach(closeOpenClients);

for (const via of ['direct', 'gateway'] as const) {
  describe(`example MCP server options (${via})`, () => {
    it('resumes a POST stream from Last-Event-ID (eventStore: true)', async () => {
      const server = await startTarget(via, { eventStore: true });
      try {
        const { client, transport } = await connect(server);
        const sessionId = transport.sessionId!;
        const abort = new AbortController();
        const res = await fetch(server.url, {
          method: 'POST',
          headers: rawHeaders(sessionId),
          body: JSON.stringify(toolCall(41, 'notify_progress', { count: 4, delayMs: 100 })),
          signal: abort.signal,
        });
        const first = sseEvents(res);
        const priming = (await first.next()).value as EventSourceMessage;
        assert.equal(priming.data, '');
        const seen = (await first.next()).value as EventSourceMessage;
        assert.match(seen.data, /step 1 of 4/);
        abort.abort();
        await sleep(600); // the rest is sent while nobody listens, and kept by the event store

        const resumed = await fetch(server.url, {
          headers: { ...rawHeaders(sessionId), accept: 'text/event-stream', 'last-event-id': seen.id! },
          // A broken replay would otherwise wait on the stream forever.
          signal: AbortSignal.timeout(5_000),
        });
        assert.equal(resumed.status, 200);
        const replayed: string[] = [];
        for await (const event of sseEvents(resumed)) {
          replayed.push(event.data);
          if (event.data.includes('"id":41')) break;
        }
        assert.ok(!replayed.some((d) => d.includes('step 1 of 4')));
        assert.ok(replayed.some((d) => d.includes('step 4 of 4')));
        assert.match(replayed.at(-1)!, /sent 4 notifications/);
        await client.close();
      } finally {
        await server.close();
      }
    });

    it('replays standalone GET stream events missed while disconnected (eventStore: true)', async () => {
      const server = await startTarget(via, { eventStore: true });
      try {
        // A raw session, so no SDK client holds the GET stream open.
        const init = await fetch(server.url, {
          method: 'POST',
          headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
          body: JSON.stringify({
            jsonrpc: '2.0',
            id: 0,
            method: 'initialize',
            params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
          }),
        });
        await init.body?.cancel();
        const sessionId = init.headers.get('mcp-session-id')!;
        const post = async (message: unknown): Promise<void> => {
          const res = await fetch(server.url, { method: 'POST', headers: rawHeaders(sessionId), body: JSON.stringify(message) });
          for await (const event of sseEvents(res)) void event;
        };
        await post({ jsonrpc: '2.0', method: 'notifications/initialized' });

        // The GET stream has no priming event: the cursor is the id of the last event received.
        const abort = new AbortController();
        const get = await fetch(server.url, { headers: { ...rawHeaders(sessionId), accept: 'text/event-stream' }, signal: abort.signal });
        await post(toolCall(1, 'ping_listeners', { text: 'first' }));
        const seen = (await sseEvents(get).next()).value as EventSourceMessage;
        assert.match(seen.data, /first/);
        abort.abort();
        await waitFor(() => server.stats.aborted >= 1, 'the GET stream to close');
        await post(toolCall(2, 'ping_listeners', { text: 'while you were away' }));

        const resumed = await fetch(server.url, {
          headers: { ...rawHeaders(sessionId), accept: 'text/event-stream', 'last-event-id': seen.id! },
          // A broken replay would otherwise wait on the stream forever.
          signal: AbortSignal.timeout(5_000),
        });
        const replayed: string[] = [];
        for await (const event of sseEvents(resumed)) {
          replayed.push(event.data);
          if (event.data.includes('while you were away')) break;
        }
        // What followed `first` on the stream: its list_changed, then the missed message.
        assert.deepEqual(
          replayed.map((d) => (JSON.parse(d) as { method: string }).method),
          ['notifications/tools/list_changed', 'notifications/message'],
        );
      } finally {
        await server.close();
      }
    });

    it('answers with JSON instead of SSE (enableJsonResponse: true)', async () => {
      const server = await startTarget(via, { enableJsonResponse: true });
      try {
        const { client, transport } = await connect(server);
        const res = await fetch(server.url, {
          method: 'POST',
          headers: rawHeaders(transport.sessionId!),
          body: JSON.stringify(toolCall(3, 'echo', { text: 'json please' })),
        });
        assert.match(res.headers.get('content-type') ?? '', /^application\/json/);
        const body = (await res.json()) as { id: number; result: CallToolResult };
        assert.equal(body.id, 3);
        assert.equal(textOf(body.result), 'json please');
        await client.close();
      } finally {
        await server.close();
      }
    });
  });
}
