/**
 * A relayed standalone GET stream (2025-11-25) that the gateway may add its own events to. The
 * SSE tap pushes each backend event as one whole chunk (src/mcp/sse-tap.ts), and this stream
 * passes chunks on whole, so an event written here always falls between two backend events,
 * never inside one.
 */
import { PassThrough, type Transform } from 'node:stream';
import { serializeSseEvent } from '../../mcp/sse-tap.js';
import { relayThrough } from '../../upstream/relay-streams.js';

/**
 * Bytes a stream may hold unsent before the gateway's own events are dropped: a client that
 * reads slowly never grows the gateway's memory (the backend's events wait on backpressure).
 */
export const MAX_PENDING_BYTES = 64 * 1024;

export class SessionOutput {
  readonly stream: PassThrough;

  /** `tap` is the relayed backend stream; errors on it are reported where it is relayed. */
  constructor(tap: Transform) {
    this.stream = new PassThrough();
    relayThrough(tap, this.stream, () => undefined);
  }

  /** Writes one JSON-RPC message as an event; false when it was dropped (closed, or the client is behind). */
  write(message: unknown): boolean {
    const stream = this.stream;
    if (stream.destroyed || stream.writableEnded) return false;
    if (stream.writableLength + stream.readableLength > MAX_PENDING_BYTES) return false;
    // No `id:`: the event is not the backend's, so it must not move the client's Last-Event-ID.
    stream.write(serializeSseEvent({ event: 'message', data: JSON.stringify(message) }));
    return true;
  }
}
