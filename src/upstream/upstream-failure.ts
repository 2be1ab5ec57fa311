/**
 * Why a call to a backend failed, decided once for every call the gateway makes (the forward
 * of a client's request and the gateway's own calls alike), from undici's and Node's error
 * codes (on the error or its cause), and the catalogue code each kind is answered with
 * (reply-from's lib/errors.js is the model: 503 when nothing was reached, 504 on a timeout,
 * 502 otherwise; the library's error kept as the cause).
 */
import { GatewayError, toWireError, type ErrorCode } from '../errors.js';

export type UpstreamFailureKind = 'refused' | 'timeout' | 'reset' | 'other';

const REFUSED = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EHOSTUNREACH']);
const TIMEOUT = new Set(['UND_ERR_CONNECT_TIMEOUT', 'UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT', 'FST_REPLY_FROM_GATEWAY_TIMEOUT']);
const RESET = new Set(['ECONNRESET', 'UND_ERR_SOCKET']);

export function classifyUpstreamError(error: unknown): UpstreamFailureKind {
  const codes = [(error as { code?: string } | undefined)?.code, (error as { cause?: { code?: string } } | undefined)?.cause?.code];
  if (codes.some((c) => c !== undefined && REFUSED.has(c))) return 'refused';
  if (codes.some((c) => c !== undefined && TIMEOUT.has(c))) return 'timeout';
  if (codes.some((c) => c !== undefined && RESET.has(c))) return 'reset';
  return 'other';
}

/** The catalogue code a client is answered with when its backend call failed this way. */
export function upstreamFailureCode(kind: UpstreamFailureKind): ErrorCode {
  return kind === 'timeout' ? 'TG_ERR_UPSTREAM_TIMEOUT' : kind === 'refused' ? 'TG_ERR_UPSTREAM_UNAVAILABLE' : 'TG_ERR_BAD_GATEWAY';
}

/**
 * A failed backend call as the client's answer, the library's error kept as the cause; a
 * GatewayError (a refusal of the gateway's own, a token exchange's) is the answer already, and
 * a local error (the store's) gets its catalogue code (toWireError).
 */
export function upstreamFailure(error: unknown): GatewayError {
  return toWireError(error) ?? new GatewayError(upstreamFailureCode(classifyUpstreamError(error)), { cause: error });
}

/** 401 and 403 from a backend answer the gateway's credentials, never the client's. */
export function isCredentialRefusal(statusCode: number): boolean {
  return statusCode === 401 || statusCode === 403;
}
