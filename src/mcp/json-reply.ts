/**
 * Rewriting upstream JSON-RPC text through a per-message hook: for `application/json` replies
 * here, and for each SSE event's data by the SSE tap.
 */
import { GatewayError } from '../errors.js';
import { parseJsonText, serializeMessages, toMcpMessages, type McpMessage, type ParsedJsonRpcBody } from './jsonrpc.js';

/** undefined keeps the message as it came, null drops it, a message replaces it. */
export type MessageRewrite = McpMessage | null | undefined;
export type MessageHook = (message: McpMessage) => Promise<MessageRewrite>;

/**
 * Parses upstream text; undefined when it is not JSON-RPC and must be relayed untouched (or, by
 * a reader, passed over: event-stream.ts).
 */
export function parseUpstreamJsonRpc(text: string): ParsedJsonRpcBody | undefined {
  let value: unknown;
  try {
    value = parseJsonText(text);
  } catch (error) {
    if (error instanceof GatewayError && error.code === 'TG_ERR_PARSE') return undefined;
    // A forbidden key is not relayed unseen: the hooks (task handles, ownership) must see
    // every JSON-RPC message, so the reply fails closed.
    throw new GatewayError('TG_ERR_BAD_GATEWAY', { detail: 'the upstream reply holds a forbidden key', cause: error });
  }
  try {
    return toMcpMessages(value);
  } catch (error) {
    if (error instanceof GatewayError) return undefined;
    throw error;
  }
}

/**
 * Runs the hook on every message of `text`, one at a time and in order. Answers undefined
 * when nothing changed (the caller relays the original bytes), null when every message was
 * dropped, or the new JSON text (a batch stays a batch).
 */
export async function rewriteJsonRpcText(text: string, onMessage: MessageHook): Promise<string | null | undefined> {
  const parsed = parseUpstreamJsonRpc(text);
  if (parsed === undefined) return undefined;
  let changed = false;
  const kept: McpMessage[] = [];
  for (const message of parsed.messages) {
    const rewrite = await onMessage(message);
    if (rewrite === undefined) {
      kept.push(message);
    } else {
      changed = true;
      if (rewrite !== null) kept.push(rewrite);
    }
  }
  if (!changed) return undefined;
  if (kept.length === 0) return null;
  return serializeMessages(kept, parsed.batch);
}

/**
 * An `application/json` upstream reply through the hook. The same Buffer comes back when
 * nothing changed or the body is not JSON-RPC; null when the hook dropped every message.
 */
export async function rewriteJsonReply(body: Buffer, onMessage: MessageHook): Promise<Buffer | null> {
  const rewritten = await rewriteJsonRpcText(body.toString('utf8'), onMessage);
  if (rewritten === undefined) return body;
  if (rewritten === null) return null;
  return Buffer.from(rewritten, 'utf8');
}
