/** The two wires a request can speak (src/mcp/era.ts decides which): a leaf, so the error catalogue can name it. */
export type Era = 'modern' | 'legacy';
