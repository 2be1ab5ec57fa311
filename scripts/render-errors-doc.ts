/**
 * Renders docs/errors.md from the error catalogue (src/errors.ts), so the page cannot drift
 * from what the gateway answers. Written by scripts/gen-config-schema.ts with the other
 * generated references.
 */
import { ERROR_CIRCUMSTANCES, TASKGATE_RPC_CODES, describeError, httpStatusIn, type ErrorCode } from '../src/errors.js';
import { LINGER_BYTES, LINGER_MS } from '../src/pipeline/lingering-close.js';

const INTRO = `# Errors

<!-- Generated from src/errors.ts by \`npx tsx scripts/gen-config-schema.ts\`; do not edit. -->

Every error the gateway answers by itself, with its HTTP status and the JSON-RPC error in the
body. Errors that come from an upstream MCP server (including its 4xx answers and their
JSON-RPC bodies) are relayed untouched and are not listed here.

- **Two families.** A request rejected before the gateway has read its JSON-RPC id (bad
  media type, bad JSON, bad Host) is answered with \`"id": null\`; one rejected after carries
  the request's id.
- **The body is always JSON-RPC.** \`{"jsonrpc":"2.0","id":…,"error":{"code":…,"message":…}}\`,
  with \`Content-Type: application/json\`, because MCP clients read 4xx bodies for it.
  The operator console's admin API (not MCP, on the admin listener) answers the same codes as
  \`{"error":{"code":"TG_ERR_…","message":…}}\` instead ([console.md](console.md#api-v1)).
- **Codes of our own** sit outside -32768..-32000, as the 2026-07-28 revision asks of new
  application codes: ${Object.entries(TASKGATE_RPC_CODES)
    .map(([name, code]) => `\`${code}\` (${name})`)
    .join(', ')}.
- **After an event stream has started** the HTTP status can no longer change: the gateway ends
  the stream instead.
- **Refused while the client is still sending** (413, or 401/403/404/405/415 before the body
  was read): the whole answer goes out at once with \`Connection: close\` and its length; the
  gateway then reads and discards the rest of the body, for at most ${LINGER_MS / 1000} s and
  ${LINGER_BYTES / 1024 / 1024} MiB, and closes only then (a lingering close), so a client
  that sends its whole body before reading still reads why, instead of a connection reset.
- **Messages are stable**; a detail may follow after \`: \`. Library errors never reach the
  body; they are in the log with the request id (\`x-request-id\` on every answer).

## HTTP status by protocol era

The two MCP eras put JSON-RPC errors on HTTP differently, and the gateway answers each request
the way a server of its own era would:

- **2026-07-28** requests (a \`_meta\` protocol version of 2026-07-28, or that
  \`MCP-Protocol-Version\` header) get the statuses of the 2026-07-28 transport: 404 for
  \`-32601\`, 400 for header, capability and params errors, 200 for an unknown task.
- **2025** requests (everything else: 2025-11-25 and earlier, sessions, \`initialize\`) get what
  a 2025 server (the SDK 1.x) answers: every JSON-RPC-level error (layer \`rpc\` below) in
  **HTTP 200** with the error in the body, because a 2025 client reads a 404 as "session gone"
  and never looks at the JSON-RPC error in it. Transport-level refusals (layer \`http\`: parse
  errors, 406, 413, 415, 401, 403, Host and Origin, 5xx) keep their status in both eras, as
  2025 servers keep theirs.
- **Throttling is HTTP 429 in both eras** (\`-31001\`, \`-31002\`, \`-31003\`, \`-31006\`),
  deliberately: a rate limit is the HTTP layer's own answer (RFC 6585), \`Retry-After\` has a
  meaning only with 429 and 503, so HTTP clients, retry middleware and proxies in between can
  back off on it; and to a 2025 client a 429 is a failed request, not a lost session (only a
  404 is), so its session survives. The SDK 1.x client reports it as a transport error whose
  message holds the JSON-RPC body. In the default poll mode (\`cached\`) an early poll is no
  error at all; only \`reject\` mode, abusive polling and the per-principal and per-replica
  limits answer 429.

| code | layer | HTTP (2026-07-28) | HTTP (2025) | JSON-RPC | message | when |
|---|---|---|---|---|---|---|
`;

export function renderErrorsDoc(): string {
  const rows = (Object.keys(ERROR_CIRCUMSTANCES) as ErrorCode[]).map((code) => {
    const d = describeError(code);
    return `| \`${code}\` | ${d.layer} | ${httpStatusIn(d, 'modern')} | ${httpStatusIn(d, 'legacy')} | ${d.rpcCode} | ${d.message} | ${ERROR_CIRCUMSTANCES[code]} |`;
  });
  return `${INTRO}${rows.join('\n')}\n`;
}
