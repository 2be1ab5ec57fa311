import type { EventId, EventStore, StreamId } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';

/**
 * An in-memory event store for one session, so `GET` with `Last-Event-ID` can resume a stream.
 *
 * The SDK ships `InMemoryEventStore` only as an example, and it cannot serve these tests:
 * it derives the stream from the text before the first `_` of an event id, so events of the
 * standalone stream (`_GET_stream`) resolve to the empty stream and never replay, and it orders
 * events by `Date.now()` plus random text, so two events in the same millisecond replay in
 * random order. Here the stream id is kept next to each event and order is a counter.
 */
export class SessionEventStore implements EventStore {
  private readonly events: Array<{ eventId: EventId; streamId: StreamId; message: JSONRPCMessage }> = [];
  private readonly streamOf = new Map<EventId, StreamId>();
  private seq = 0;

  async storeEvent(streamId: StreamId, message: JSONRPCMessage): Promise<EventId> {
    this.seq += 1;
    const eventId = `${this.seq}.${encodeURIComponent(streamId)}`;
    this.events.push({ eventId, streamId, message });
    this.streamOf.set(eventId, streamId);
    return eventId;
  }

  async replayEventsAfter(
    lastEventId: EventId,
    { send }: { send: (eventId: EventId, message: JSONRPCMessage) => Promise<void> },
  ): Promise<StreamId> {
    const streamId = this.streamOf.get(lastEventId);
    if (streamId === undefined) return '';
    const from = this.events.findIndex((e) => e.eventId === lastEventId) + 1;
    for (const event of this.events.slice(from)) {
      // Priming events carry no message (`{}`); replaying them would send an empty JSON object.
      if (event.streamId === streamId && Object.keys(event.message).length > 0) {
        await send(event.eventId, event.message);
      }
    }
    return streamId;
  }
}
