/**
 * The two eras a request can speak (src/mcp/era.ts decides which), named as the code names them
 * everywhere (docs/architecture.md, "Eras"): `legacy`, MCP 2025-11-25 and earlier (sessions,
 * `params.task`); `modern`, MCP 2026-07-28 with the tasks extension. A leaf, so the error
 * catalogue can name it.
 */
export type Era = 'modern' | 'legacy';
