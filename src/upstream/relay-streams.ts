/**
 * Moving an upstream reply's body on: read whole up to a limit (a JSON reply, which the tasks
 * stage inspects), or piped through to the client (an event stream, through the SSE tap).
 */
import type { Duplex } from 'node:stream';

/**
 * Drops a backend's answer the gateway will not relay (nobody to answer, an answer refused, a
 * store that failed while it arrived). undici reports a body destroyed before its end as an
 * 'error' event (RequestAbortedError), and an 'error' nobody listens for ends the process: the
 * listener here is the one that says the drop was meant.
 */
export function discardBody(stream: NodeJS.ReadableStream & { destroy(error?: Error): void }): void {
  stream.on('error', ignoreDropped);
  stream.destroy();
}

function ignoreDropped(): void {}

/**
 * Collects a reply body up to `limit` bytes. Listeners rather than `for await`: the async
 * iterator costs a promise per chunk and its own end-of-stream tracking on every JSON reply.
 */
export function readBounded(stream: NodeJS.ReadableStream & { destroy(): void }, limit: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let ended = false;
    stream.on('data', (chunk: Buffer | string) => {
      const buffer = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk);
      size += buffer.length;
      if (size > limit) {
        reject(new Error(`reply exceeds ${limit} bytes`));
        stream.destroy();
        return;
      }
      chunks.push(buffer);
    });
    stream.once('end', () => {
      ended = true;
      resolve(Buffer.concat(chunks, size));
    });
    stream.once('error', reject);
    // Destroyed without an error (the client left): settle rather than wait forever. 'close'
    // follows 'end' on every reply, and an Error's stack trace costs ~15 µs: only made when needed.
    stream.once('close', () => {
      if (!ended) reject(new Error('reply stream closed before its end'));
    });
  });
}

/**
 * Pipes an upstream stream into the stream the client is sent, as stream.pipeline would:
 * backpressure by pipe(); an error on either side destroys both, reported once; the client's
 * side closing early (it left) destroys the upstream side. Not stream.pipeline itself: it
 * makes an AbortController per call and aborts it when the streams end, which builds a
 * DOMException with a stack trace. That was ~9 % of the CPU of every SSE reply in the profile.
 */
/**
 * `drainAfterTarget`: when the client's side closes first, the upstream stream is read to its
 * end and dropped rather than destroyed (a held 2025 call, src/limits/call-hold.ts).
 */
export function relayThrough(
  source: NodeJS.ReadableStream & { destroy(error?: Error): void },
  target: Duplex,
  onError: (error: Error) => void,
  drainAfterTarget = false,
): void {
  let settled = false;
  let sourceEnded = false;
  const fail = (error: Error): void => {
    if (settled) return;
    settled = true;
    onError(error);
    source.destroy();
    target.destroy(error);
  };
  // `on`, not `once`: a stream destroyed twice may emit 'error' again, and an 'error' with no
  // listener would bring the process down.
  source.on('error', fail);
  source.once('end', () => (sourceEnded = true));
  // Closed with neither an end nor an error: the client's side must not wait for more.
  source.once('close', () => {
    if (!sourceEnded) fail(new Error('upstream event stream closed before its end'));
  });
  target.on('error', fail);
  target.once('close', () => {
    // Done, or the client left: nothing more goes to the client either way.
    settled = true;
    if (!drainAfterTarget || sourceEnded) {
      source.destroy();
      return;
    }
    // Unpiped here, not by pipe's own 'close' listener (added after this one), which would pause it again.
    source.unpipe(target);
    source.resume();
  });
  source.pipe(target);
}
