/**
 * Task handles: what clients see instead of backend task ids. 192 bits from the operating
 * system's CSPRNG, base64url, so they cannot be guessed or enumerated whatever the backend
 * does, and ids from two backends can never collide.
 */
import { randomBytes } from 'node:crypto';

const HANDLE_BYTES = 24;
const HANDLE_PATTERN = /^[A-Za-z0-9_-]{32}$/;

export function mintHandle(): string {
  return randomBytes(HANDLE_BYTES).toString('base64url');
}

/** A string that could be a handle; anything else is answered as not found without a lookup. */
export function isHandleShaped(value: unknown): value is string {
  return typeof value === 'string' && HANDLE_PATTERN.test(value);
}

const SERVER_REQUEST_PREFIX = 'tg-';

/** Ids the gateway gives server→client requests it relays (legacy era). */
export function mintServerRequestId(): string {
  return `${SERVER_REQUEST_PREFIX}${randomBytes(12).toString('base64url')}`;
}

export function isServerRequestId(value: unknown): value is string {
  return typeof value === 'string' && value.startsWith(SERVER_REQUEST_PREFIX) && value.length === SERVER_REQUEST_PREFIX.length + 16;
}
