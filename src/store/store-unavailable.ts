/**
 * What every store call rejects with when the shared store cannot answer: a local error
 * (errors.ts LocalError), which the edge answers 503 TG_ERR_STORE_UNAVAILABLE with the
 * request's JSON-RPC id, never a 500 (toWireError); the library error stays in `cause` for the log.
 */
import { LocalError } from '../errors.js';

export class StoreUnavailableError extends LocalError {
  constructor(cause?: unknown) {
    super('store-unavailable', 'the state store did not answer', { cause });
    this.name = 'StoreUnavailableError';
  }
}
