/**
 * What stands for a task handle in the general log: a short salted SHA-256. A handle is a
 * bearer secret for its task's owner, so the raw value is written only to the audit stream;
 * the hash lets an operator join the two logs without the general log leaking the handle.
 */
import { createHash, randomBytes } from 'node:crypto';

export type HandleHasher = (handle: string) => string;

export function createHandleHasher(salt: string = randomBytes(16).toString('base64url')): HandleHasher {
  return (handle) => createHash('sha256').update(salt).update('\u0000').update(handle).digest('base64url').slice(0, 12);
}
