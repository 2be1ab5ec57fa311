/**
 * Where a policy came from and its hash. A policy read from a file is hashed over the file's
 * bytes, as `sha256sum` would, so an operator can check which file a replica runs; those bytes
 * hold `${NAME}` references, never the secrets they stand for. A policy built in code has no
 * file: its JSON is hashed instead.
 */
import { createHash } from 'node:crypto';
import { parseConfig, readPolicyText, type Config } from '../config/index.js';

export interface PolicySource {
  readonly config: Config;
  /** SHA-256, hex. */
  readonly hash: string;
}

export function sha256Hex(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

/** Reads and validates a policy file; throws ConfigError with every problem (as check-config). */
export async function readPolicyFile(path: string, env: NodeJS.ProcessEnv = process.env): Promise<PolicySource> {
  const text = await readPolicyText(path);
  return { config: parseConfig(text, { env, source: path }), hash: sha256Hex(text) };
}

export function hashOfConfig(config: Config): string {
  return sha256Hex(JSON.stringify(config));
}

/** The metric's value for a hash: its first 48 bits, which a double holds exactly. */
export function hashGaugeValue(hash: string): number {
  return Number.parseInt(hash.slice(0, 12), 16);
}
