/**
 * What one replica saw each principal do with its tasks, for the operator console
 * (docs/console.md, "Principals"): tasks/get per minute, refused task requests by reason, and
 * the enumeration detector's alerts. The TaskObserver feeds it as it audits; it keeps nothing
 * until the console turns it on (`active`), so a gateway without the console pays one branch.
 *
 * Per replica and in memory: on a shared store each replica sees the requests it served.
 * Bounded: MAX_PRINCIPALS principals, each forgotten after IDLE_MS without a task request (the
 * one seen longest ago first when full).
 */
import { TtlMap } from '../lifecycle/ttl-map.js';

const MAX_PRINCIPALS = 10_000;
const IDLE_MS = 60 * 60_000;
const MINUTE_MS = 60_000;

export type RefusalReason = 'not_found' | 'denied' | 'throttled';

export interface PrincipalActivityView {
  /** tasks/get (and background status checks) over the last minute: a sliding estimate. */
  readonly pollsPerMinute: number;
  /** Task requests refused since `since`: unknown or expired handle, another's, too early or too many. */
  readonly refusals: Readonly<Record<RefusalReason, number>>;
  /** Times the enumeration detector fired for it (on this replica) since `since`. */
  readonly enumerationAlerts: number;
  readonly lastAlertAt?: number;
  /** When this replica began counting for it (epoch ms). */
  readonly since: number;
  /** The issuer of its token, when it had one. */
  readonly issuer?: string;
}

/** What the console reads. */
export interface PrincipalActivityReader {
  /** Set by the console on each request and tick: counting happens only while it is on. */
  active: boolean;
  read(key: string, now: number): PrincipalActivityView | undefined;
  /** Principals with refusals or alerts, for the principals listing (bounded by MAX_PRINCIPALS). */
  flagged(now: number): string[];
}

class Tally {
  /** Start of the current minute window, and the polls in it and in the one before. */
  windowStart: number;
  current = 0;
  previous = 0;
  notFound = 0;
  denied = 0;
  throttled = 0;
  alerts = 0;
  lastAlertAt: number | undefined;

  constructor(
    readonly since: number,
    public issuer: string | undefined,
  ) {
    this.windowStart = since;
  }

  roll(now: number): void {
    const passed = Math.floor((now - this.windowStart) / MINUTE_MS);
    if (passed <= 0) return;
    this.previous = passed === 1 ? this.current : 0;
    this.current = 0;
    this.windowStart += passed * MINUTE_MS;
  }

  /** The previous window weighted by how much of it the last minute still covers, plus the current one. */
  perMinute(now: number): number {
    this.roll(now);
    const covered = 1 - (now - this.windowStart) / MINUTE_MS;
    return Math.round((this.previous * covered + this.current) * 10) / 10;
  }
}

export class PrincipalActivity implements PrincipalActivityReader {
  active = false;
  private readonly tallies = new TtlMap<Tally>(MAX_PRINCIPALS);

  poll(key: string, issuer: string | undefined, now = Date.now()): void {
    if (!this.active) return;
    const tally = this.touch(key, issuer, now);
    tally.roll(now);
    tally.current++;
  }

  refused(key: string, issuer: string | undefined, reason: RefusalReason, now = Date.now()): void {
    if (!this.active) return;
    const tally = this.touch(key, issuer, now);
    if (reason === 'not_found') tally.notFound++;
    else if (reason === 'denied') tally.denied++;
    else tally.throttled++;
  }

  alert(key: string, now = Date.now()): void {
    if (!this.active) return;
    const tally = this.touch(key, undefined, now);
    tally.alerts++;
    tally.lastAlertAt = now;
  }

  read(key: string, now: number): PrincipalActivityView | undefined {
    const tally = this.tallies.get(key, now);
    if (!tally) return undefined;
    return {
      pollsPerMinute: tally.perMinute(now),
      refusals: { not_found: tally.notFound, denied: tally.denied, throttled: tally.throttled },
      enumerationAlerts: tally.alerts,
      ...(tally.lastAlertAt === undefined ? {} : { lastAlertAt: tally.lastAlertAt }),
      since: tally.since,
      ...(tally.issuer === undefined ? {} : { issuer: tally.issuer }),
    };
  }

  flagged(now: number): string[] {
    const keys: string[] = [];
    for (const key of this.tallies.keys()) {
      const tally = this.tallies.get(key, now);
      if (tally && (tally.alerts > 0 || tally.notFound + tally.denied + tally.throttled > 0)) keys.push(key);
    }
    return keys;
  }

  /** The principal's tally, its idle deadline moved on (and moved last in line to be dropped). */
  private touch(key: string, issuer: string | undefined, now: number): Tally {
    const tally = this.tallies.get(key, now) ?? new Tally(now, issuer);
    if (issuer !== undefined) tally.issuer = issuer;
    this.tallies.set(key, tally, IDLE_MS, now);
    return tally;
  }
}
