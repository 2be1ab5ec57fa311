/**
 * The Redis store's side of provided tasks (ProvidedStore, provided-store.ts): a task's state
 * and lease in its own slot (redis-keys.ts), its revision in the record, and the `leases`
 * index beside the `expiry` one. As for the rest of the store, the task's own keys are the
 * truth and the index follows them: every entry it hands out is checked against the lease.
 * Creation is the store's own (RedisStore.createTask, with the sealed state); RedisStore
 * wraps every call here in its fail-closed run().
 */
import type { Logger } from 'pino';
import type { ProvidedState, ProvidedTaskView } from '../task-model/provided-state.js';
import type { TaskPatch } from '../task-model/task-record.js';
import { LAPSED_LEASE_CLAIM_MS, TAKEN_LEASE_HOLDER } from './provided-store.js';
import type { RedisClient } from './redis-connection.js';
import { ownKeys, taskKeyTtl, type RedisKeys } from './redis-keys.js';
import { defineProvidedScripts } from './redis-provided-scripts.js';
import { decodeTask, patchArgs } from './redis-task-hash.js';
import type { RedisTaskIndexes } from './redis-task-indexes.js';
import type { SnapshotCipher } from './snapshot-cipher.js';

export interface RedisProvidedParts {
  readonly client: RedisClient;
  readonly keys: RedisKeys;
  readonly indexes: RedisTaskIndexes;
  readonly cipher: SnapshotCipher;
  readonly logger: Logger;
  /** In a Cluster the `leases` index is a step of its own; elsewhere it shares the lease's script. */
  readonly cluster: boolean;
}

export class RedisProvidedTasks {
  private readonly parts: RedisProvidedParts;

  constructor(parts: RedisProvidedParts) {
    this.parts = parts;
    defineProvidedScripts(parts.client);
  }

  /**
   * A state as stored: sealed like poll snapshots (snapshot-cipher.ts), bound to the handle
   * under a name of its own, so that a snapshot copied onto a state's key does not open as one.
   */
  seal(handle: string, state: ProvidedState): string {
    return this.parts.cipher.seal(JSON.stringify(state), stateAad(handle));
  }

  async read(handle: string): Promise<ProvidedTaskView | undefined> {
    const task = this.parts.keys.task(handle);
    const reply = await this.parts.client.taskgateReadProvidedTask(task.record, task.provided);
    if (!reply) return undefined;
    const [rev, sealed, ...fields] = reply;
    const record = decodeTask(fields as string[]);
    if (!record || record.kind !== 'provided' || record.expiresAt <= Date.now() || typeof rev !== 'string' || typeof sealed !== 'string') return undefined;
    const state = this.parts.cipher.open(sealed, stateAad(handle));
    if (state === undefined) {
      this.parts.logger.warn({ store: 'redis' }, 'a provided task\'s state could not be decrypted (its key is no longer in store.snapshotKeys?); the task is answered as unknown');
      return undefined;
    }
    return { record, state: JSON.parse(state) as ProvidedState, rev: Number(rev) };
  }

  async write(handle: string, rev: number, patch: TaskPatch, state: ProvidedState): Promise<boolean> {
    const now = Date.now();
    const sealed = this.seal(handle, state);
    const task = this.parts.keys.task(handle);
    const reply = await this.parts.client.taskgateWriteProvidedTask(...ownKeys(task), String(rev), String(now), patch.status ?? '', sealed, ...patchArgs(patch, now));
    if (!reply) return false;
    const [statusBefore, expiresAtBefore, ...fields] = reply;
    const record = decodeTask(fields as string[]);
    // Written: a failure from here on rejects, and the caller, reading again, finds the task
    // at rev + 1 (an owner's live entry left behind lapses at expiresAt).
    if (record) await this.parts.indexes.followUpdate(record, statusBefore ?? null, expiresAtBefore ?? null);
    return true;
  }

  async writeProgress(handle: string, statusMessage: string, lastUpdatedAtIso: string): Promise<boolean> {
    const record = this.parts.keys.task(handle).record;
    return (await this.parts.client.taskgateWriteProvidedProgress(record, String(Date.now()), statusMessage, lastUpdatedAtIso)) === 1;
  }

  async holdLease(handle: string, holder: string, until: number): Promise<boolean> {
    const { client, keys } = this.parts;
    const task = keys.task(handle);
    const now = String(Date.now());
    if (!this.parts.cluster) return (await client.taskgateHoldIndexedLease(task.record, task.lease, keys.leases(), holder, String(until), now, handle)) === 1;
    const ttl = await client.taskgateHoldLease(task.record, task.lease, holder, String(until), now);
    if (ttl <= 0) return false;
    // Only once the lease is held (the index follows the truth); should this step fail, the
    // call rejects and the caller, renewing, indexes it again.
    await client.taskgateIndexLease(keys.leases(), handle, String(until), String(ttl));
    return true;
  }

  async releaseLease(handle: string, holder: string): Promise<void> {
    const { client, keys } = this.parts;
    const lease = keys.task(handle).lease;
    if (this.parts.cluster) await client.taskgateReleaseLease(lease, holder);
    else await client.taskgateReleaseIndexedLease(lease, keys.leases(), holder, handle);
  }

  /**
   * Claims due index entries (as the expiry sweep does: re-scored to the claim's end, so a
   * caller that dies leaves them to the next), then checks each against its lease: a lapsed
   * lease is taken (held by no replica until the claim ends) and handed out, a renewed one is
   * put back in line at its end, a released one (or one of a task that ended) is dropped.
   */
  async takeLapsedLeases(now: number, limit: number): Promise<string[]> {
    const { client, keys } = this.parts;
    const leases = keys.leases();
    const claimEnd = String(now + LAPSED_LEASE_CLAIM_MS);
    const due = await client.taskgateClaimExpired(leases, String(now), String(limit), claimEnd, String(taskKeyTtl(now + LAPSED_LEASE_CLAIM_MS, now)));
    const replies = await Promise.all(
      due.map((handle) => {
        const task = keys.task(handle);
        return client.taskgateCheckLapsedLease(task.record, task.lease, String(now), claimEnd, TAKEN_LEASE_HOLDER);
      }),
    );
    const taken: string[] = [];
    const settled: Promise<unknown>[] = [];
    replies.forEach(([outcome, until, ttl], i) => {
      const handle = due[i]!;
      if (outcome === 'lapsed') taken.push(handle);
      else if (outcome === 'live') settled.push(client.taskgateIndexLease(leases, handle, until!, ttl!));
      else settled.push(client.taskgateUnindexLease(leases, handle, claimEnd));
    });
    await Promise.all(settled);
    return taken;
  }
}

function stateAad(handle: string): string {
  return `provided:${handle}`;
}
