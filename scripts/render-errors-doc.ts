/**
 * Renders docs/errors.md from the error catalogue (src/errors.ts), so the page cannot drift
 * from what the gateway answers. Written by scripts/gen-config-schema.ts with the other
 * generated references.
 */
import { ERROR_CIRCUMSTANCES, TASKGATE_RPC_CODES, describeError, type ErrorCode } from '../src/errors.js';

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
- **Codes of our own** sit outside -32768..-32000, as the 2026-07-28 revision asks of new
  application codes: ${Object.entries(TASKGATE_RPC_CODES)
    .map(([name, code]) => `\`${code}\` (${name})`)
    .join(', ')}.
- **After an event stream has started** the HTTP status can no longer change: the gateway ends
  the stream instead.
- **Messages are stable**; a detail may follow after \`: \`. Library errors never reach the
  body; they are in the log with the request id (\`x-request-id\` on every answer).

| code | HTTP | JSON-RPC | message | when |
|---|---|---|---|---|
`;

export function renderErrorsDoc(): string {
  const rows = (Object.keys(ERROR_CIRCUMSTANCES) as ErrorCode[]).map((code) => {
    const d = describeError(code);
    return `| \`${code}\` | ${d.httpStatus} | ${d.rpcCode} | ${d.message} | ${ERROR_CIRCUMSTANCES[code]} |`;
  });
  return `${INTRO}${rows.join('\n')}\n`;
}
