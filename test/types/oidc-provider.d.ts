// oidc-provider ships no type declarations; the tests use this much of it (test/e2e/support/exchange-server.ts).
declare module 'oidc-provider' {
  import type { IncomingMessage, ServerResponse } from 'node:http';

  class OidcError extends Error {
    error: string;
    constructor(description?: string, detail?: string);
  }

  export const errors: {
    InvalidRequest: typeof OidcError;
    InvalidGrant: typeof OidcError;
    InvalidTarget: typeof OidcError;
    InvalidScope: typeof OidcError;
  };

  export default class Provider {
    constructor(issuer: string, configuration: Record<string, unknown>);
    registerGrantType(name: string, handler: (ctx: never) => Promise<void>, params?: string[], dupes?: string[]): void;
    callback(): (req: IncomingMessage, res: ServerResponse) => void;
    on(event: string, listener: (...args: never[]) => void): this;
  }
}
