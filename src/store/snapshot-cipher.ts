/**
 * Poll snapshots are a task's last tasks/get answer, which can carry a tool's result: in a
 * shared store they are kept encrypted (AES-256-GCM), so that a Redis dump, a replica or a
 * backup does not hold results in the clear.
 *
 * Sealed form: `<keyId>.<iv>.<ciphertext>.<tag>` (base64url parts). The key id lets keys
 * rotate: the first configured key seals, any configured key opens. The task handle is bound
 * in as additional data, so a snapshot copied onto another task's key does not open.
 */
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';

const ALGORITHM = 'aes-256-gcm';
const IV_BYTES = 12;
const TAG_BYTES = 16;
const KEY_BYTES = 32;

export interface SnapshotKey {
  readonly id: string;
  /** 32 bytes, base64. */
  readonly key: string;
}

export class SnapshotCipher {
  private readonly sealing: { id: string; key: Buffer };
  private readonly keys: ReadonlyMap<string, Buffer>;

  constructor(keys: readonly SnapshotKey[]) {
    const decoded = keys.map(({ id, key }) => ({ id, key: Buffer.from(key, 'base64') }));
    const first = decoded[0];
    if (!first) throw new RangeError('a snapshot cipher needs at least one key');
    for (const { id, key } of decoded) {
      if (key.length !== KEY_BYTES || id.includes('.')) throw new RangeError(`snapshot key ${JSON.stringify(id)} is not a 32-byte key with a dot-free id`);
    }
    this.sealing = first;
    this.keys = new Map(decoded.map(({ id, key }) => [id, key]));
  }

  seal(plaintext: string, handle: string): string {
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv(ALGORITHM, this.sealing.key, iv, { authTagLength: TAG_BYTES });
    cipher.setAAD(Buffer.from(handle, 'utf8'));
    const ciphertext = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
    return [this.sealing.id, iv.toString('base64url'), ciphertext.toString('base64url'), cipher.getAuthTag().toString('base64url')].join('.');
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
