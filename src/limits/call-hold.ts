/**
 * A 2025 tools/call holding a `toolLimits.concurrency` slot keeps it until the backend has
 * answered, not until its client hangs up (docs/security.md, "Client hang-ups"). A 2025 server
 * does not take a closed stream for a cancellation (the transport says it SHOULD NOT), so its
 * tool runs on after the client left; a slot freed then would let the principal start another
 * call beside it, and another, each hang-up one more call running at once under a cap of one.
 *
 * So the call's upstream request does not take the client's abort signal but this hold's: a
 * client that hangs up leaves the request running, the answer is read to its end and dropped,
 * and the slot goes back once the client's response has closed and every upstream request of
 * the call (a fail-over or credential retry makes more than one) has ended. While only the
 * backend is left, the hold counts as work on its policy snapshot, so a reload does not close
 * the agent under it. It is cut (the upstream request aborted) when the slot's lifetime
 * (`toolLimits.slotTtl`, after which the store forgets the slot anyway) ends, and at shutdown.
 */
import { ClientAbort } from '../upstream/client-abort.js';

export interface HoldDeps {
  /** Gives the slot back; called once. */
  readonly release: () => void;
  /** When the store forgets the slot anyway (epoch ms): past it, nothing is held for it. */
  readonly lapsesAt: number;
  /** The open holds of one limits stage, for cutting them at shutdown. */
  readonly holds: Set<CallHold>;
  /** Counts the orphaned upstream work in on the request's policy snapshot (InFlight.enter). */
  readonly enterSnapshot: () => () => void;
}

export class CallHold {
  /** The upstream request's abort signal, in place of the client's. */
  readonly signal = new ClientAbort();
  private open = 0;
  private responseOpen = true;
  private settled = false;
  private timer: NodeJS.Timeout | undefined;
  private leaveSnapshot: (() => void) | undefined;

  constructor(private readonly deps: HoldDeps) {
    deps.holds.add(this);
  }

  /** An upstream request of the call begins; the function returned says it ended (once). */
  begin(): () => void {
    this.open += 1;
    let ended = false;
    return () => {
      if (ended) return;
      ended = true;
      this.open -= 1;
      this.settle();
    };
  }

  /** The client's response closed, finished or not (its 'close' event). */
  responseClosed(): void {
    this.responseOpen = false;
    this.settle();
    if (this.settled) return;
    // Only the backend is left: it gets what remains of the slot's lifetime.
    this.leaveSnapshot = this.deps.enterSnapshot();
    this.timer = setTimeout(() => this.cut(), Math.max(0, this.deps.lapsesAt - Date.now()));
    this.timer.unref();
  }

  /** Stops waiting for the backend: its request is aborted, which ends it (and the hold). */
  cut(): void {
    this.signal.abort();
  }

  private settle(): void {
    if (this.settled || this.responseOpen || this.open > 0) return;
    this.settled = true;
    clearTimeout(this.timer);
    this.deps.holds.delete(this);
    this.leaveSnapshot?.();
    this.deps.release();
  }
}
