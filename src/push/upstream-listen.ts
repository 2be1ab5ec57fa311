/**
 * A subscriptions/listen the gateway sends a backend and reads itself: an event stream whose
 * first message is the acknowledgement, then notifications, until the backend ends it (its
 * listen response) or the stream breaks. Used for the part of a client's filter that is not
 * about tasks (list-changed, resource subscriptions), opened on the route's backend as the
 * client's request would have gone (the route's instance choice, the client's headers made fit
 * for the upstream, its credentials: BackendRoute.open). Events are read by the gateway's event
 * stream reader (src/mcp/event-stream.ts), bounded by limits.maxSseEventBytes.
 */
import type { TaskRequest } from '../tasks/task-request.js';
import { GatewayError } from '../errors.js';
import { jsonObjectOf, readEventStream, type ByteStream } from '../mcp/event-stream.js';
import { isObject, type JsonObject } from '../mcp/json.js';
import { isEventStream } from '../mcp/media-type.js';
import type { JsonRpcRequest } from '../mcp/jsonrpc.js';
import { selectInstanceFor } from '../routing/route-stage.js';
import type { Store } from '../store/store.js';
import type { LocalAnswer } from '../tasks/task-context.js';
import { headerValue } from '../upstream/gateway-replies.js';
import { readBounded } from '../upstream/relay-streams.js';

export const ACKNOWLEDGED = 'notifications/subscriptions/acknowledged';

export interface UpstreamListenHandlers {
  /** A notification after the acknowledgement. */
  onNotification(message: JsonObject): void;
  /** The backend ended the subscription, or the stream broke (called once). */
  onEnd(): void;
}

export interface OpenUpstreamListen {
  /** The backend's acknowledged filter. */
  readonly acknowledged: JsonObject;
  close(): void;
}

/** Opens the listen with `filter`; a reply that is not an event stream is relayed as the client's answer. */
export async function openClientListen(request: TaskRequest, store: Store, message: JsonRpcRequest, filter: JsonObject, handlers: UpstreamListenHandlers): Promise<OpenUpstreamListen | LocalAnswer> {
  request.instance ??= await selectInstanceFor(request, store);
  const token = request.route.prepareCredentials(request);
  if (token) await token;
  const params = isObject(message.params) ? message.params : {};
  const abort = new AbortController();
  let response;
  try {
    response = await request.route.open(request, request.instance, {
      headers: { 'content-type': 'application/json' },
      message: { jsonrpc: '2.0', id: message.id, method: message.method, params: { ...params, notifications: filter } },
      signal: abort.signal,
    });
  } catch (error) {
    throw new GatewayError('TG_ERR_BAD_GATEWAY', { detail: 'the backend listen could not be opened', cause: error });
  }
  if (!isEventStream(headerValue(response.headers['content-type']))) {
    const text = await readBounded(response.body, request.route.limits.maxResponseBytes);
    return { status: response.statusCode, body: text.toString('utf8') };
  }
  const acknowledged = await readListenStream(response.body, request.route.limits.maxSseEventBytes, handlers, false);
  return { acknowledged, close: () => abort.abort() };
}

/**
 * Reads a listen stream in the background; resolves with the acknowledgement's filter once it
 * came (rejects when the stream ends first). Unless `tasks` (the gateway's own task listens),
 * notifications about tasks are dropped: they could only carry backend ids, which a client
 * must never see.
 */
export function readListenStream(body: ByteStream & { destroy(): void }, maxEventBytes: number, handlers: UpstreamListenHandlers, tasks: boolean): Promise<JsonObject> {
  return new Promise((resolve, reject) => {
    let acknowledged = false;
    let ended = false;
    const end = () => {
      if (ended) return;
      ended = true;
      body.destroy();
      if (!acknowledged) reject(new GatewayError('TG_ERR_BAD_GATEWAY', { detail: 'the backend listen ended before its acknowledgement' }));
      else handlers.onEnd();
    };
    // Its end, its break and an event past the limit all end the listen alike.
    readEventStream(body, maxEventBytes, (data) => {
      const message = jsonObjectOf(data);
      if (!message || ended) return ended;
      if (!acknowledged) {
        if (message.method !== ACKNOWLEDGED) return false;
        acknowledged = true;
        const params = isObject(message.params) ? message.params : {};
        resolve(isObject(params.notifications) ? params.notifications : {});
        return false;
      }
      if ('result' in message || 'error' in message) end();
      else if (typeof message.method === 'string' && tasks === message.method.startsWith('notifications/tasks')) handlers.onNotification(message);
      return ended;
    }).then(end, end);
  });
}
