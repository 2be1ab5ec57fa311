/**
 * What is still running on one policy snapshot: every client request from its start to the
 * end of its response, and every call the gateway makes on its own (cancelling an expired
 * task, the backend call of a task it runs itself). A snapshot replaced by a reload is closed (its agents and key sets let go) only once
 * this count is back to zero, so whatever started under a policy finishes under it, however
 * long it streams. A count, rather than a grace period: a period short enough to free an old
 * policy's connections soon would cut the long SSE streams that MCP clients hold open, and
 * one long enough for those would keep every replaced policy alive for that long regardless.
 */
export class InFlight {
  private count = 0;
  private onIdle: (() => void) | undefined;
  private idle: Promise<void> | undefined;

  /** Counts one piece of work in; the function returned counts it out (once, however often called). */
  enter(): () => void {
    this.count += 1;
    let left = false;
    return () => {
      if (left) return;
      left = true;
      this.leave();
    };
  }

  /**
   * Counts one piece of work in, to be counted out by exactly one `leave()`: for a client
   * request, whose response closes exactly once, without a closure made per request.
   */
  join(): void {
    this.count += 1;
  }

  leave(): void {
    this.count -= 1;
    if (this.count === 0 && this.onIdle) {
      const resolve = this.onIdle;
      this.onIdle = undefined;
      this.idle = undefined;
      resolve();
    }
  }

  get size(): number {
    return this.count;
  }

  /** Settles the next time nothing is in flight (at once when nothing is). */
  whenIdle(): Promise<void> {
    if (this.count === 0) return Promise.resolve();
    this.idle ??= new Promise<void>((resolve) => (this.onIdle = resolve));
    return this.idle;
  }
}
