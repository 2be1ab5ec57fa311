/**
 * The entries that name a task outside its own hash slot: the owner's live set and list, the
 * backend id, the expiry index. They follow the record (the truth) one step behind it, each
 * in its own slot, all in parallel: one round trip however many slots they span.
 */
import { isTerminalStatus, type TaskRecord } from '../task-model/task-record.js';
import type { RedisClient } from './redis-connection.js';
import { listMember, taskKeyTtl, type RedisKeys } from './redis-keys.js';

export class RedisTaskIndexes {
  private readonly client: RedisClient;
  private readonly keys: RedisKeys;

  constructor(client: RedisClient, keys: RedisKeys) {
    this.client = client;
    this.keys = keys;
  }

  /**
   * After an update, given the status and expiresAt it found: the entries follow the record
   * when it ended (or revived) or its expiresAt moved. The common update (status and
   * timestamps of a running task) needs nothing more.
   */
  async followUpdate(record: TaskRecord, statusBefore: string | null, expiresAtBefore: string | null): Promise<void> {
    const wasLive = statusBefore !== null && !isTerminalStatus(statusBefore as TaskRecord['status']);
    const expiryMoved = String(record.expiresAt) !== expiresAtBefore;
    if (wasLive === !isTerminalStatus(record.status) && !expiryMoved) return;
    await this.follow(record, expiryMoved);
  }

  /** After an update that ended a task (or revived one) or moved its expiresAt. */
  async follow(record: TaskRecord, expiryMoved: boolean): Promise<void> {
    const owner = this.keys.owner(record.owner);
    const ttl = String(taskKeyTtl(record.expiresAt, Date.now()));
    const live = isTerminalStatus(record.status) ? '0' : '1';
    const steps: Promise<unknown>[] = [
      this.client.taskgateSyncOwner(owner.live, owner.tasks, record.handle, listMember(record), live, '1', String(record.expiresAt), ttl),
    ];
    if (expiryMoved) {
      steps.push(
        this.requeue(record.handle, record.expiresAt, ttl),
        this.client.taskgateSyncBackend(this.backendKey(record), record.handle, ttl),
      );
    }
    await Promise.all(steps);
  }

  /** After the record is deleted (or was never written, when a creation is taken back). */
  async forget(record: TaskRecord): Promise<void> {
    const owner = this.keys.owner(record.owner);
    await Promise.all([
      this.client.taskgateSyncOwner(owner.live, owner.tasks, record.handle, listMember(record), '0', '0', '0', '1'),
      this.client.taskgateSyncBackend(this.backendKey(record), record.handle, ''),
      this.client.taskgateSyncExpiry(this.keys.expiry(), record.handle, '', '0'),
    ]);
  }

  /** Puts a handle (back) in the expiry index at its current expiresAt. */
  async requeue(handle: string, expiresAt: number, ttl = String(taskKeyTtl(expiresAt, Date.now()))): Promise<void> {
    await this.client.taskgateSyncExpiry(this.keys.expiry(), handle, String(expiresAt), ttl);
  }

  private backendKey(record: TaskRecord): string {
    return this.keys.backend(record.upstream, record.instance, record.upstreamTaskId);
  }
}
