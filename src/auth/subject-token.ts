/**
 * The client's verified access token, kept for the length of its request only, for the one
 * use the gateway has for it: an RFC 8693 exchange (token-exchange.ts). It never travels
 * upstream, and this wrapper keeps it out of logs: JSON, util.inspect and string conversion
 * all show a placeholder; only `reveal()` gives the value.
 */
import { inspect } from 'node:util';

const REDACTED = '[redacted token]';

export class SubjectToken {
  readonly #value: string;

  constructor(value: string) {
    this.#value = value;
  }

  /** The token itself, for the exchange request's body. */
  reveal(): string {
    return this.#value;
  }

  toJSON(): string {
    return REDACTED;
  }

  toString(): string {
    return REDACTED;
  }

  [inspect.custom](): string {
    return REDACTED;
  }
}
