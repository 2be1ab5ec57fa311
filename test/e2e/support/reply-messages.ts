/**
 * The JSON-RPC messages of a reply, read as a client reads them: one JSON body, or the events
 * of a text/event-stream (eventsource-parser, never by hand; an event without data is a
 * keep-alive and skipped). Every e2e helper and test that reads a raw reply reads it here.
 */
import { createParser } from 'eventsource-parser';
import { safeParse } from 'fast-content-type-parse';

export type JsonRpcMessage = Record<string, unknown>;

function isEventStream(contentType: string | null | undefined): boolean {
  return safeParse(contentType ?? '').type === 'text/event-stream';
}

/** A JSON body's message; none when the body is not a JSON object (an empty 202, a plain-text refusal). */
function messageOfJson(body: string): JsonRpcMessage[] {
  try {
    const parsed: unknown = JSON.parse(body);
    return typeof parsed === 'object' && parsed !== null ? [parsed as JsonRpcMessage] : [];
  } catch {
    return [];
  }
}

/** The messages of a whole body, given its Content-Type. */
export function messagesIn(body: string, contentType: string | null | undefined): JsonRpcMessage[] {
  if (!isEventStream(contentType)) return messageOfJson(body);
  const messages: JsonRpcMessage[] = [];
  createParser({ onEvent: (event) => void (event.data.trim() !== '' && messages.push(JSON.parse(event.data) as JsonRpcMessage)) }).feed(body);
  return messages;
}

/** Reads a whole reply to its end. */
export async function readMessages(response: Response): Promise<JsonRpcMessage[]> {
  return messagesIn(await response.text(), response.headers.get('content-type'));
}

/**
 * Reads a reply as it arrives, each message pushed into `into` as it comes, until `done` holds
 * for one (the rest of that chunk is read too; the stream, which may stay open, is cancelled
 * then) or the body ends. Resolves with `into`; rejects when the request is aborted.
 */
export async function readMessagesUntil(response: Response, done: (message: JsonRpcMessage) => boolean, into: JsonRpcMessage[] = []): Promise<JsonRpcMessage[]> {
  if (!isEventStream(response.headers.get('content-type'))) {
    into.push(...messageOfJson(await response.text()));
    return into;
  }
  let finished = false;
  const parser = createParser({
    onEvent(event) {
      if (event.data.trim() === '') return;
      const message = JSON.parse(event.data) as JsonRpcMessage;
      into.push(message);
      if (done(message)) finished = true;
    },
  });
  const reader = response.body!.getReader();
  const decoder = new TextDecoder();
  try {
    while (!finished) {
      const chunk = await reader.read();
      if (chunk.done) break;
      parser.feed(decoder.decode(chunk.value, { stream: true }));
    }
  } finally {
    await reader.cancel().catch(() => undefined);
  }
  return into;
}
