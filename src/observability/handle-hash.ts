/**
 * What stands for a task handle in the general log: a short salted SHA-256. A handle is a
 * bearer secret for its task's owner, so the raw value is written only to the audit stream;
 * the hash lets an operator join the two logs without the general log leaking the handle.
 */
import { createHash, randomBytes } from 'node:crypto';
import { TtlMap } from '../lifecycle/ttl-map.js';

export type HandleHasher = (handle: string) => string;

/** Handles repeat (a polled task comes back every interval), so recent hashes are kept. */
const CACHED_HASHES = 10_000;

export function createHandleHasher(salt: string = randomBytes(16).toString('base64url')): HandleHasher {
  // Oldest first out; a handle seen again is simply hashed again after eviction.
  const recent = new TtlMap<string>(CACHED_HASHES);
  return (handle) => {
    const known = recent.get(handle);
    if (known !== undefined) return known;
    const hash = createHash('sha256').update(salt).update('\u0000').update(handle).digest('base64url').slice(0, 12);
    recent.set(handle, hash, Infinity);
    return hash;
  };
}
