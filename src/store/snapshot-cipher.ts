/**
 * Poll snapshots are a task's last tasks/get answer, which can carry a tool's result: in a
 * shared store they are kept encrypted (AES-256-GCM), so that a Redis dump, a replica or a
 * backup does not hold results in the clear.
 *
 * Sealed form: `<keyId>.<iv>.<ciphertext>.<tag>` (base64url parts). The key id lets keys
 * rotate: the first configured key seals, any configured key opens. The task handle is bound
 * in as additional data, so a snapshot copied onto another task's key does not open.
 */
import { createCipheriv, createDecipheriv, createHash, createSecretKey, hash, randomFillSync, type KeyObject } from 'node:crypto';

const ALGORITHM = 'aes-256-gcm';
const IV_BYTES = 12;
const TAG_BYTES = 16;
const KEY_BYTES = 32;
/** IVs are cut from a pool of random bytes refilled 256 at a time (as Node pools randomUUID). */
const IV_POOL_BYTES = IV_BYTES * 256;
/** Length of a snapshot tag: 132 bits of base64url. */
const TAG_CHARS = 22;

export interface SnapshotKey {
  readonly id: string;
  /** 32 bytes, base64. */
  readonly key: string;
}

export class SnapshotCipher {
  private readonly sealing: { id: string; key: KeyObject };
  private readonly keys: ReadonlyMap<string, KeyObject>;
  private readonly ivPool = Buffer.alloc(IV_POOL_BYTES);
  private ivOffset = IV_POOL_BYTES;
  /** Secret prefix of snapshot tags, derived from the sealing key. */
  private readonly tagSecret: string;

  constructor(keys: readonly SnapshotKey[]) {
    const decoded = keys.map(({ id, key }) => ({ id, key: Buffer.from(key, 'base64') }));
    const first = decoded[0];
    if (!first) throw new RangeError('a snapshot cipher needs at least one key');
    for (const { id, key } of decoded) {
      if (key.length !== KEY_BYTES || id.includes('.')) throw new RangeError(`snapshot key ${JSON.stringify(id)} is not a 32-byte key with a dot-free id`);
    }
    // Key objects are made once: given raw bytes, every createCipheriv would import the key
    // again (it showed in the Redis poll profile, with the IV's own call for randomness).
    this.sealing = { id: first.id, key: createSecretKey(first.key) };
    this.keys = new Map(decoded.map(({ id, key }) => [id, createSecretKey(key)]));
    this.tagSecret = createHash('sha256').update('taskgate snapshot tag\u0000').update(first.key).digest('base64url');
  }

  /**
   * A short keyed digest of a snapshot: equal tags mean equal plaintexts for this handle, so a
   * store can tell an unchanged answer without opening what it holds. Keyed because store
   * keys carry the handle: a bare hash would let whoever reads the store confirm a guess at a
   * result. A secret prefix is enough for an equality check (no one verifies a tag as a MAC),
   * and crypto.hash is one native call.
   */
  tag(plaintext: string, handle: string): string {
    return hash('sha256', `${this.tagSecret}${handle}\u0000${plaintext}`, 'base64url').slice(0, TAG_CHARS);
  }

  seal(plaintext: string, handle: string): string {
    const iv = this.nextIv();
    const cipher = createCipheriv(ALGORITHM, this.sealing.key, iv, { authTagLength: TAG_BYTES });
    cipher.setAAD(Buffer.from(handle, 'utf8'));
    const ciphertext = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
    return [this.sealing.id, iv.toString('base64url'), ciphertext.toString('base64url'), cipher.getAuthTag().toString('base64url')].join('.');
  }

  /** A fresh random IV (GCM needs one never reused under a key; 96 random bits per seal). */
  private nextIv(): Buffer {
    if (this.ivOffset === IV_POOL_BYTES) {
      randomFillSync(this.ivPool);
      this.ivOffset = 0;
    }
    // A copy: the pool is overwritten on refill, the IV travels in the sealed string.
    const iv = Buffer.from(this.ivPool.subarray(this.ivOffset, this.ivOffset + IV_BYTES));
    this.ivOffset += IV_BYTES;
    return iv;
  }

  /** The plaintext, or undefined when no configured key opens it (unknown id, tampering). */
  open(sealed: string, handle: string): string | undefined {
    const [id, iv, ciphertext, tag, ...rest] = sealed.split('.');
    const key = id === undefined ? undefined : this.keys.get(id);
    if (!key || iv === undefined || ciphertext === undefined || tag === undefined || rest.length > 0) return undefined;
    try {
      const decipher = createDecipheriv(ALGORITHM, key, Buffer.from(iv, 'base64url'), { authTagLength: TAG_BYTES });
      decipher.setAAD(Buffer.from(handle, 'utf8'));
      decipher.setAuthTag(Buffer.from(tag, 'base64url'));
      return Buffer.concat([decipher.update(Buffer.from(ciphertext, 'base64url')), decipher.final()]).toString('utf8');
    } catch {
      return undefined;
    }
  }
}
