/**
 * What ProvidedContext.held holds, by task handle: a backend call this replica holds for a task
 * (task-driver.ts), or the pause before a task's next call (call-again.ts), seen from the
 * outside. A file of its own, importing nothing: call-again.ts needs it without the rest of the
 * room's context.
 */
export interface HeldCall {
  /** Stops the call because its task was cancelled (legacy: the backend is told first). */
  cancel(): Promise<void>;
  /** Stops the call and ends its task failed with `message` (shutdown). */
  fail(message: string): Promise<void>;
  /** Settles when the call and its task's last write are done. */
  readonly done: Promise<void>;
  /**
   * Takes back the lease that the lapsed-lease sweep took from this very call (this replica
   * stalled past the lease, but is running the call still). False when the task moved on.
   */
  reclaimLease(): Promise<boolean>;
}
