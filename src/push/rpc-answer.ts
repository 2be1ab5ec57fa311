/**
 * The JSON-RPC response in a backend's answer to a call the gateway made itself: a JSON body,
 * or an event stream whose notifications precede the response (2026-07-28 servers switch to
 * SSE only then). Parsed with eventsource-parser, never by hand.
 */
import { createParser } from 'eventsource-parser';
import { parseJsonText } from '../mcp/jsonrpc.js';
import { isEventStream } from '../mcp/media-type.js';
import { isObject, type JsonObject } from '../mcp/json.js';

export function parseRpcAnswer(body: string | undefined, contentType: string | undefined): JsonObject | undefined {
  if (body === undefined) return undefined;
  if (!isEventStream(contentType)) return parseMessage(body);
  let found: JsonObject | undefined;
  const parser = createParser({
    onEvent: (event) => {
      const message = parseMessage(event.data);
      if (message && ('result' in message || 'error' in message)) found ??= message;
    },
  });
  parser.feed(body);
  parser.feed('\n\n');
  return found;
}

/**
 * A JSON object's text, parsed with the gateway's own guard (parseJsonText: no `__proto__` or
 * `constructor.prototype` keys from a backend either); undefined for anything else.
 */
export function parseMessage(text: string): JsonObject | undefined {
  try {
    const parsed = parseJsonText(text);
    return isObject(parsed) ? parsed : undefined;
  } catch {
    return undefined;
  }
}
