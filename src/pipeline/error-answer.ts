/**
 * One place that turns any error into the answer the client gets. Gateway errors render from
 * the catalogue; fastify's own errors (body too large, bad content type) are mapped onto it;
 * anything else is an internal error whose details stay in the log.
 */
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { GatewayError, renderErrorBody, toWireError, type ErrorCode, type JsonRpcId } from '../errors.js';
import { isModernVersion } from '../mcp/era.js';
import { isStillSending, sendThenLinger } from './lingering-close.js';
import type { Era } from '../mcp/era.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The catalogue code of the error the gateway answered this request with, if any (metrics). */
    rejection?: ErrorCode;
  }
}

export function toGatewayError(error: unknown): GatewayError {
  const known = toWireError(error);
  if (known) return known;
  const code = (error as FastifyError | undefined)?.code;
  switch (code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new GatewayError('TG_ERR_BODY_TOO_LARGE', { cause: error });
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return new GatewayError('TG_ERR_UNSUPPORTED_MEDIA_TYPE', { cause: error });
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      return new GatewayError('TG_ERR_PARSE', { cause: error });
    default:
      return new GatewayError('TG_ERR_INTERNAL', { cause: error });
  }
}

/** What a stream reports when its other end went away: a premature close, a reset, a broken pipe. */
function isHangUpError(error: unknown): boolean {
  const code = (error as { code?: unknown } | undefined)?.code;
  return code === 'ERR_STREAM_PREMATURE_CLOSE' || code === 'ECONNRESET' || code === 'EPIPE';
}

/** The JSON-RPC id an error answer should carry: the request's, once it is known. */
export function requestRpcId(request: FastifyRequest): JsonRpcId {
  const message = request.exchange?.mcp?.message;
  return message?.kind === 'request' ? message.id : null;
}

/**
 * The era an answer is written for: the mcp stage's verdict once the body is parsed; before
 * that (or on a GET or DELETE) the MCP-Protocol-Version header's. Every error the gateway
 * can raise before the mcp stage is transport-level, the same in both eras (errors.ts).
 */
export function eraOfRequest(request: FastifyRequest): Era {
  const decided = request.exchange?.mcp?.era;
  if (decided) return decided;
  return isModernVersion(request.headers['mcp-protocol-version']) ? 'modern' : 'legacy';
}

export function sendGatewayError(request: FastifyRequest, reply: FastifyReply, error: GatewayError): FastifyReply {
  request.rejection = error.code;
  const gone = reply.raw.destroyed && !reply.raw.writableFinished;
  if (gone && isHangUpError(error.cause)) {
    // The stream broke because the client hung up (logged at info when it did, proxy-route.ts):
    // the hang-up is no internal error, and there is nobody to answer.
    request.log.debug({ code: error.code, err: error.cause }, 'no answer: the client hung up');
    return reply;
  }
  if (error.code === 'TG_ERR_INTERNAL') {
    request.log.error({ err: error.cause ?? error }, 'internal error');
  } else {
    request.log.debug({ code: error.code, detail: error.detail }, 'request rejected');
  }
  if (gone) return reply;
  if (reply.sent || reply.raw.headersSent) {
    // After headers (an SSE stream already flowing) the status cannot change: end the
    // stream rather than write a second response into it. The gateway gives up on the
    // response (aborted first, so the close is not taken for a hang-up).
    request.exchange?.abort.abort();
    reply.raw.destroy();
    return reply;
  }
  reply.code(error.statusIn(eraOfRequest(request))).headers(error.headers).type('application/json');
  const body = renderErrorBody(error, requestRpcId(request));
  // Refused before the client finished sending (413, or before the body was read at all):
  // answer, then read what is still in flight before closing, so the client reads why.
  if (isStillSending(request)) return sendThenLinger(request, reply, Buffer.from(JSON.stringify(body)));
  return reply.send(body);
}
