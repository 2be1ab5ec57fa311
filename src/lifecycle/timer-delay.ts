/**
 * Node's timers take a 32-bit signed delay: anything larger (or not a finite number) fires
 * after 1 ms instead, with a warning. A delay that comes from a peer (a backend's poll interval,
 * a Retry-After) could turn a wait of days into a tight loop, so every such delay is clamped
 * here first.
 */
export const MAX_TIMER_DELAY_MS = 2 ** 31 - 1;

export function timerDelay(ms: number): number {
  if (!Number.isFinite(ms)) return ms > 0 ? MAX_TIMER_DELAY_MS : 0;
  return Math.min(Math.max(0, ms), MAX_TIMER_DELAY_MS);
}
