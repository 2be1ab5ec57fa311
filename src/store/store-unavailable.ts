/**
 * What every store call rejects with when the shared store cannot answer. It is a gateway
 * error from the catalogue, so wherever it surfaces (preHandler, response hook) the client
 * gets 503 TG_ERR_STORE_UNAVAILABLE with its JSON-RPC id, never a 500; the library error
 * stays in `cause` for the log.
 */
import { GatewayError } from '../errors.js';

export class StoreUnavailableError extends GatewayError {
  constructor(cause?: unknown) {
    super('TG_ERR_STORE_UNAVAILABLE', { cause });
    this.name = 'StoreUnavailableError';
  }
}
