/**
 * Tells an upstream request that its client went away. undici takes an emitter with an
 * `aborted` flag, `once('abort')` and `removeListener('abort')` wherever it takes an
 * AbortSignal (its request API checks for `on` or `addEventListener`), and that is what this
 * is. Node's AbortController, and the EventTarget listener undici adds to one, cost several
 * microseconds on every request (they showed in the forwarded tasks/get profile); an
 * EventEmitter still builds its listener table and a `once` wrapper per listener. Every
 * request makes one of these, most never get a listener (a request answered locally) and
 * none fires more than once, so it is hand-written: a flag and, once someone listens, an array.
 */
export type AbortListener = () => void;

export class ClientAbort {
  aborted = false;
  private listeners: AbortListener[] | undefined;

  /** The only event is 'abort', which fires at most once: `once` and `on` are the same. */
  on(_event: 'abort', listener: AbortListener): this {
    if (this.aborted) return this;
    (this.listeners ??= []).push(listener);
    return this;
  }

  once(event: 'abort', listener: AbortListener): this {
    return this.on(event, listener);
  }

  off(_event: 'abort', listener: AbortListener): this {
    const at = this.listeners?.indexOf(listener) ?? -1;
    if (at >= 0) this.listeners!.splice(at, 1);
    return this;
  }

  removeListener(event: 'abort', listener: AbortListener): this {
    return this.off(event, listener);
  }

  abort(): void {
    if (this.aborted) return;
    this.aborted = true;
    const listeners = this.listeners;
    this.listeners = undefined;
    // As an EventEmitter would: each listener in the order added, a throw stops the rest.
    if (listeners) for (const listener of listeners) listener();
  }
}
