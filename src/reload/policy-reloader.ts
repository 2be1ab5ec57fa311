/**
 * Policy hot reload (docs/operations.md, "Policy reload"): the policy in force is one frozen
 * PolicySnapshot behind one reference. A reload validates the new policy completely, builds
 * its snapshot beside the old one (keeping what did not change), then swaps the reference;
 * a request reads the reference once, at its start, so it runs wholly under one policy. The
 * replaced snapshot is closed once everything that started on it has finished (InFlight).
 *
 * All or nothing: a policy that is invalid, or that changes a key fixed at start (listeners,
 * store, audit trail; RESTART_ONLY_KEYS), changes nothing at all, and says why. Applying the
 * rest would leave the gateway running a policy that is in no file, and replicas that read
 * the same file would then differ by when they started.
 *
 * Reloads run one at a time, in the order asked.
 */
import { ConfigError, formatIssue, parseConfig, readPolicyText, type Config, type ConfigIssue } from '../config/index.js';
import { PolicySnapshot, type SharedParts } from '../pipeline/policy-snapshot.js';
import { comparePolicies } from './policy-diff.js';
import { hashGaugeValue, hashOfConfig, sha256Hex } from './policy-source.js';

export type ReloadOutcome = 'applied' | 'unchanged' | 'invalid' | 'restart_required' | 'failed';

export interface ReloadResult {
  readonly outcome: ReloadOutcome;
  /** Hash of the policy in force afterwards. */
  readonly hash: string;
  /** Key paths the new policy changes (restart-only ones included when refused for them). */
  readonly changed: readonly string[];
  /** Why the policy was refused: one `file:line:col path: message` line each, as check-config prints them. */
  readonly problems: readonly string[];
}

/** One reload as the operator console shows it (src/console/): what the log line says, kept. */
export interface ReloadRecord extends ReloadResult {
  /** Epoch ms. */
  readonly at: number;
  readonly source: string;
}

export interface ReloadFileOptions {
  /** Skip (return undefined) when the file's bytes are those of the last attempt: a file watch fires for unrelated changes too. */
  readonly onlyIfChanged?: boolean;
}

/** The longest a reload waits for a new issuer's key set before swapping anyway. */
const MAX_KEY_WAIT_MS = 10_000;
/** Changed paths listed in the log line; the rest are counted. */
const MAX_LOGGED_PATHS = 100;
/** Reloads remembered for the console, newest last. */
const KEPT_RELOADS = 20;
const RESTART_MESSAGE = 'fixed while taskgate runs; restart it to apply this (nothing in this policy was applied)';

export class PolicyReloader {
  private active: PolicySnapshot;
  private activeHash: string;
  /** Hash of the file bytes last tried, applied or not. */
  private lastFileHash: string | undefined;
  private readonly draining = new Set<Promise<void>>();
  private queue: Promise<unknown> = Promise.resolve();
  private readonly shared: SharedParts;
  private readonly kept: ReloadRecord[] = [];

  constructor(initial: PolicySnapshot, hash: string, shared: SharedParts) {
    this.active = initial;
    this.activeHash = hash;
    this.lastFileHash = hash;
    this.shared = shared;
    shared.metrics.configHash.set(hashGaugeValue(hash));
    shared.metrics.configLastReloadSuccessful.set(1);
    shared.metrics.configDrainingPolicies.set(0);
  }

  /** The policy in force. Read it once per request, at its start. */
  current(): PolicySnapshot {
    return this.active;
  }

  get hash(): string {
    return this.activeHash;
  }

  /** The last reloads on this replica, oldest first (paths only, never values). */
  get history(): readonly ReloadRecord[] {
    return this.kept;
  }

  /** Replaces the policy with `config` (already validated), unless it is refused. */
  reload(config: Config, source = 'policy'): Promise<ReloadResult> {
    return this.enqueue(() => this.apply(config, hashOfConfig(config), source));
  }

  /** Reads, validates and applies the policy file at `path`; every problem is logged. */
  reloadFile(path: string, options: ReloadFileOptions = {}): Promise<ReloadResult | undefined> {
    return this.enqueue(async () => {
      let text: string;
      try {
        text = await readPolicyText(path);
      } catch (error) {
        if (error instanceof ConfigError) return this.refuse('invalid', path, [], issueLines(path, error.issues));
        throw error;
      }
      const hash = sha256Hex(text);
      if (options.onlyIfChanged && hash === this.lastFileHash) return undefined;
      this.lastFileHash = hash;
      let config: Config;
      try {
        config = parseConfig(text, { source: path });
      } catch (error) {
        if (error instanceof ConfigError) return this.refuse('invalid', path, [], issueLines(path, error.issues));
        throw error;
      }
      return this.apply(config, hash, path);
    });
  }

  /** Waits for a reload under way, then closes the policy in force and every replaced one. */
  async close(): Promise<void> {
    await this.queue.catch(() => undefined);
    await this.active.close();
    await Promise.all(this.draining);
  }

  private enqueue<T>(run: () => Promise<T>): Promise<T> {
    const result = this.queue.then(run, run);
    this.queue = result.catch(() => undefined);
    return result;
  }

  private async apply(config: Config, hash: string, source: string): Promise<ReloadResult> {
    const current = this.active;
    const { changed, restartOnly } = comparePolicies(current.config, config);
    if (restartOnly.length > 0) {
      const problems = issueLines(source, restartOnly.map((path) => ({ path, message: RESTART_MESSAGE })));
      return this.refuse('restart_required', source, changed, problems);
    }
    const previousHash = this.activeHash;
    if (changed.length === 0) {
      this.setHash(hash);
      this.shared.metrics.configLastReloadSuccessful.set(1);
      return this.report('unchanged', source, [], [], { previousHash });
    }
    let next: PolicySnapshot;
    try {
      next = await PolicySnapshot.build(config, this.shared, current);
    } catch (error) {
      // A key file that cannot be read is a problem of the policy, reported like the others.
      if (error instanceof ConfigError) return this.refuse('invalid', source, changed, issueLines(source, error.issues));
      this.shared.logger.error({ err: error }, 'policy reload failed while building the new policy');
      return this.refuse('failed', source, changed, [`${source}: the new policy could not be built (${(error as Error).name})`]);
    }
    await this.awaitKeys(next);
    this.swap(next);
    this.setHash(hash);
    this.shared.metrics.configLastReloadSuccessful.set(1);
    const result = this.report('applied', source, changed, [], { previousHash, drainingPolicies: this.draining.size });
    // After the log line, which a quieter level would otherwise swallow.
    if (changed.includes('logging.level')) this.shared.logger.level = config.logging.level;
    return result;
  }

  /**
   * A new issuer's keys are fetched before its policy goes live, so that its tokens are not
   * refused for want of keys; an issuer that cannot be reached in time does not hold the
   * reload back (its tokens get 503 until the keys come, as at start).
   */
  private async awaitKeys(next: PolicySnapshot): Promise<void> {
    if (!next.auth) return;
    const issuers = next.config.auth.mode === 'jwt' ? next.config.auth.issuers : [];
    const waitMs = Math.min(MAX_KEY_WAIT_MS, Math.max(0, ...issuers.map((issuer) => issuer.jwks.timeout)));
    if (!(await next.auth.whenLoaded(waitMs))) {
      this.shared.logger.warn({ event: 'policy_reload', waitedMs: waitMs }, 'applying the new policy before every issuer\'s key set could be fetched; its tokens get 503 until then');
    }
  }

  private swap(next: PolicySnapshot): void {
    const replaced = this.active;
    this.active = next;
    const gauge = this.shared.metrics.configDrainingPolicies;
    const closed: Promise<void> = replaced.inFlight
      .whenIdle()
      .then(() => replaced.close())
      .catch((error: unknown) => this.shared.logger.warn({ err: error }, 'closing a replaced policy failed'))
      .finally(() => {
        this.draining.delete(closed);
        gauge.set(this.draining.size);
      });
    this.draining.add(closed);
    gauge.set(this.draining.size);
  }

  private setHash(hash: string): void {
    this.activeHash = hash;
    this.shared.metrics.configHash.set(hashGaugeValue(hash));
  }

  private refuse(outcome: ReloadOutcome, source: string, changed: string[], problems: string[]): ReloadResult {
    this.shared.metrics.configLastReloadSuccessful.set(0);
    return this.report(outcome, source, changed, problems);
  }

  /** Counts the outcome and writes the one audit-style line naming what changed (paths only, never values). */
  private report(outcome: ReloadOutcome, source: string, changed: string[], problems: string[], extra: Record<string, unknown> = {}): ReloadResult {
    this.shared.metrics.configReloads.inc({ outcome });
    const line = {
      event: 'policy_reload',
      outcome,
      source,
      hash: this.activeHash,
      changed: changed.slice(0, MAX_LOGGED_PATHS),
      ...(changed.length > MAX_LOGGED_PATHS ? { changedNotListed: changed.length - MAX_LOGGED_PATHS } : {}),
      ...(problems.length > 0 ? { problems } : {}),
      ...extra,
    };
    const logger = this.shared.logger;
    if (outcome === 'applied') logger.info(line, 'policy reloaded');
    else if (outcome === 'unchanged') logger.info(line, 'policy reloaded: nothing to change');
    else if (outcome === 'restart_required') logger.error(line, 'policy reload refused: it changes keys that need a restart; the policy in force is unchanged');
    else logger.error(line, `policy reload refused: ${problems.length === 1 ? '1 problem' : `${problems.length} problems`}; the policy in force is unchanged`);
    const result = { outcome, hash: this.activeHash, changed, problems };
    this.kept.push({ ...result, changed: changed.slice(0, MAX_LOGGED_PATHS), at: Date.now(), source });
    if (this.kept.length > KEPT_RELOADS) this.kept.shift();
    return result;
  }
}

function issueLines(source: string, issues: readonly ConfigIssue[]): string[] {
  return issues.map((issue) => formatIssue(source, issue));
}
