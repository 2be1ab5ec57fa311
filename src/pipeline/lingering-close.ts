/**
 * An answer given while the client is still sending its body (413, or a refusal before the
 * body was read: 401, 403, 404, 405, 415): the whole answer goes out at once, with
 * `Connection: close` and its length, so the client can read it whenever it looks; then the
 * rest of the body is read and thrown away, and only then is the connection closed.
 *
 * Closing at once (what Node does after `Connection: close`) leaves unread bytes in the
 * socket, and the kernel answers them with a reset: a client still uploading gets EPIPE or
 * ECONNRESET and never reads why (a 5 MB body died after 1 to 2 MB). nginx calls the remedy
 * a lingering close; like nginx's it is bounded in time and in bytes, so that a client that
 * never stops sending is cut off all the same. Hand-written: no HTTP library offers it for
 * a Node server, whose own close is the immediate one.
 */
import { Readable } from 'node:stream';
import type { IncomingMessage } from 'node:http';
import type { FastifyReply, FastifyRequest } from 'fastify';

/** Longest the rest of a refused body is read (nginx's lingering_timeout is 5 s between reads). */
export const LINGER_MS = 5_000;
/** Most bytes of a refused body read and thrown away; past it the connection is cut. */
export const LINGER_BYTES = 64 * 1024 * 1024;

/** Whether the client may still be sending this request's body. */
export function isStillSending(request: FastifyRequest): boolean {
  return !request.raw.complete && !request.raw.destroyed;
}

/**
 * Sends `body` (headers already set on `reply`) and ends the answer once the request body has
 * been read to its end, or LINGER_MS or LINGER_BYTES have passed; Node then closes the
 * connection, cleanly when everything was read.
 */
export function sendThenLinger(request: FastifyRequest, reply: FastifyReply, body: Buffer): FastifyReply {
  reply.header('connection', 'close').header('content-length', body.length);
  const answer = new Readable({ read() {} });
  answer.push(body);
  discardRest(request.raw).then(() => answer.push(null), () => answer.push(null));
  return reply.send(answer);
}

function discardRest(body: IncomingMessage): Promise<void> {
  return new Promise((resolve) => {
    let read = 0;
    const done = (): void => {
      clearTimeout(timer);
      body.off('data', onData).off('end', done).off('close', done).off('error', done);
      // Whatever still arrives is not ours to read any more: resuming keeps the parser from
      // stalling until the connection closes.
      body.resume();
      resolve();
    };
    const onData = (chunk: Buffer): void => {
      read += chunk.length;
      if (read > LINGER_BYTES) done();
    };
    const timer = setTimeout(done, LINGER_MS);
    body.on('data', onData).once('end', done).once('close', done).once('error', done);
    body.resume();
  });
}
