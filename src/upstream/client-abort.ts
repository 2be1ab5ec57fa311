/**
 * Tells an upstream request that its client went away. undici takes an EventEmitter with an
 * `aborted` flag and an 'abort' event wherever it takes an AbortSignal (its request API checks
 * for `on` or `addEventListener`), and that is what this is: Node's AbortController and the
 * EventTarget listener undici adds to its signal cost several microseconds on every request
 * (they showed in the forwarded tasks/get profile), where a plain emitter costs next to nothing.
 */
import { EventEmitter } from 'node:events';

export class ClientAbort extends EventEmitter {
  aborted = false;

  abort(): void {
    if (this.aborted) return;
    this.aborted = true;
    this.emit('abort');
  }
}
