/**
 * Sends a stream with its status line and headers on the wire at once. fastify writes a
 * stream's headers with its first chunk (it sets them with setHeader, so that a stream failing
 * before any byte can still become an error answer); for some MCP event streams that may be
 * minutes away: a standalone GET stream, a tasks/result wait or a subscriptions/listen sends
 * nothing until there is something to say (a backend's keep-alives come every 15 s, if at
 * all). The client would see no answer until then, where the backend's own answer gave it the
 * headers at once; clients give up on it or open another stream. Used for those streams: the
 * relayed GET stream (relay-response.ts) and every stream the gateway answers itself.
 */
import type { FastifyReply } from 'fastify';

export function sendStreamNow(reply: FastifyReply, stream: NodeJS.ReadableStream): FastifyReply {
  const raw = reply.raw;
  // fastify pipes the stream into the response after it has set the headers, whatever hooks
  // ran before (onSend may be asynchronous): 'pipe' is the moment they are all there.
  raw.once('pipe', () => {
    if (!raw.headersSent && !raw.destroyed) raw.flushHeaders();
  });
  return reply.send(stream);
}
