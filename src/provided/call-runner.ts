/**
 * One backend call of a task the gateway runs: the plain tools/call the backend can answer,
 * held open by the gateway rather than by the client. It reads the reply as the client would
 * (a JSON body, or an event stream read with the same event size limit as relayed streams),
 * reports progress and server→client requests as they come, and settles with the backend's
 * answer to this call or with why there is none. It touches no store: the task driver
 * (task-driver.ts) decides what each report means for the task. It sends through the route's
 * channel to the instance (src/upstream/, BackendRoute.channelTo), with the call's own limits.
 */
import type { Dispatcher } from 'undici';
import type { JsonRpcRequest, JsonRpcResponse, McpMessage } from '../mcp/jsonrpc.js';
import { composeSend, type OutgoingMessage, type Send, type SendLayer, type UpstreamChannel } from '../upstream/gateway-send.js';
import { readReplyMessages } from '../upstream/gateway-replies.js';
import { classifyUpstreamError } from '../upstream/upstream-failure.js';

/**
 * Where the call goes: the instance, the headers it is sent with (credentials included), and
 * the hold on the policy snapshot a call outlives its request under.
 */
export type CallTarget = UpstreamChannel;

export interface CallLimits {
  /** The call may take this long in all, headers and body (what is left of the task's timeout). */
  readonly timeoutMs: number;
  /** The failure's message past timeoutMs (default: that the backend did not answer within it). */
  readonly timeoutMessage?: string;
  /**
   * 2025-11-25: a disconnect is no cancellation there, so a call the gateway stops is first
   * named in notifications/cancelled in its session. (2026: closing the stream is the cancel.)
   */
  readonly cancelNotice: boolean;
  readonly maxResponseBytes: number;
  readonly maxSseEventBytes: number;
}

export interface CallReports {
  /** A notifications/progress for this call: its text, for the task's statusMessage. */
  onProgress?(message: string): void;
  /** A server→client request in the call's stream (2025: elicitation, sampling). */
  onServerRequest?(request: JsonRpcRequest): Promise<void>;
}

/** Why a call has no answer; `aborted`: stopped because its task was cancelled or is gone. */
export type CallFailure = 'timeout' | 'unreachable' | 'bad_reply' | 'shutdown' | 'aborted';

export type CallOutcome =
  /** The backend answered this call: a result or a JSON-RPC error, with the HTTP status it came with. */
  | { readonly kind: 'answer'; readonly status: number; readonly response: JsonRpcResponse }
  | { readonly kind: 'failure'; readonly failure: CallFailure; readonly message: string };

const PROGRESS_TEXT_MAX = 512;
/** How long a 2025 backend is given to take notifications/cancelled before its call is cut. */
const CANCEL_NOTICE_MS = 1000;

/**
 * Another instance for a call whose instance refused the connection (nothing reached it), or
 * undefined when there is none to try: only a call bound to no session may move.
 */
export type FailOver = () => CallTarget | undefined;

export class CallRunner {
  readonly callId: string;
  private target: CallTarget;
  private readonly limits: CallLimits;
  private readonly reports: CallReports;
  private readonly trace: SendLayer | undefined;
  private readonly failOver: FailOver | undefined;
  /** The target's send, with the call's trace context when it is traced. */
  private sendOn: Send;
  private readonly controller = new AbortController();
  private abortReason: { failure: CallFailure; message: string } | undefined;
  /** Settles once, with the call's outcome. */
  readonly outcome: Promise<CallOutcome>;

  /**
   * `trace`: the call's trace context, in every request the call sends (gateway-send.ts,
   * traceContext). `failOver`: where the call goes instead when its instance refuses the
   * connection, as a client's own new work fails over (pipeline/forward.ts).
   */
  constructor(callId: string, message: OutgoingMessage, target: CallTarget, limits: CallLimits, reports: CallReports, trace?: SendLayer, failOver?: FailOver) {
    this.callId = callId;
    this.target = target;
    this.trace = trace;
    this.failOver = failOver;
    this.sendOn = composeSend(target.send, trace);
    this.limits = limits;
    this.reports = reports;
    this.outcome = this.run(message);
  }

  get timeoutMs(): number {
    return this.limits.timeoutMs;
  }

  get origin(): string {
    return this.target.origin;
  }

  /** The target with its headers (credentials included), for the next call of the same task. */
  get callTarget(): CallTarget {
    return this.target;
  }

  /**
   * 2025-11-25: tells the backend that this call is cancelled (notifications/cancelled with the
   * call's id, in its session), waiting at most CANCEL_NOTICE_MS for it. Best effort.
   */
  private async notifyCancelled(reason: string): Promise<void> {
    await this.send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: this.callId, reason } }, CANCEL_NOTICE_MS);
  }

  /**
   * 2025-11-25: answers a server→client request of the backend's that no client will answer
   * (a JSON-RPC error with its id), in the call's session, so the backend is not left waiting.
   */
  async refuseServerRequest(id: string | number, message: string): Promise<void> {
    await this.send({ jsonrpc: '2.0', id, error: { code: -32603, message } }, CANCEL_NOTICE_MS);
  }

  /** One message to the backend, in the call's session, waiting at most `ms`. Best effort. */
  private async send(message: OutgoingMessage, ms: number): Promise<void> {
    try {
      await this.sendOn({ headers: this.target.headers, message, headersTimeout: ms, bodyTimeout: ms }, (reply) => reply.body.dump());
    } catch {
      // Best effort: a cancel notice is followed by closing the call's stream, and a refused
      // question by the call's own timeout.
    }
  }

  /**
   * Stops the call; the outcome settles as a failure of `failure` with `message`. A 2025
   * backend is told first (at most CANCEL_NOTICE_MS).
   */
  abort(failure: CallFailure, message: string): void {
    if (this.abortReason) return;
    this.abortReason = { failure, message };
    if (!this.limits.cancelNotice) {
      this.controller.abort();
      return;
    }
    void this.notifyCancelled(message).finally(() => this.controller.abort());
  }

  private async run(message: OutgoingMessage): Promise<CallOutcome> {
    const timeoutMessage = this.limits.timeoutMessage ?? `the backend did not answer within ${this.limits.timeoutMs} ms`;
    const timer = setTimeout(() => this.abort('timeout', timeoutMessage), this.limits.timeoutMs);
    timer.unref();
    try {
      for (;;) {
        try {
          return await this.sendOnce(message);
        } catch (error) {
          if (this.abortReason) return { kind: 'failure', ...this.abortReason };
          // Refused: nothing reached the instance, so the same call may go to another.
          const next = classifyUpstreamError(error) === 'refused' ? this.failOver?.() : undefined;
          if (!next) return { kind: 'failure', failure: 'unreachable', message: `the backend could not be reached: ${describe(error)}` };
          this.target = next;
          this.sendOn = composeSend(next.send, this.trace);
        }
      }
    } finally {
      clearTimeout(timer);
    }
  }

  private sendOnce(message: OutgoingMessage): Promise<CallOutcome> {
    // The call's own limit governs, not the upstream's idle timers for relayed requests.
    const request = { headers: this.target.headers, message, signal: this.controller.signal, headersTimeout: this.limits.timeoutMs, bodyTimeout: this.limits.timeoutMs };
    return this.sendOn(request, async (reply) => {
      try {
        return await this.read(reply);
      } catch (error) {
        reply.body.destroy();
        if (this.abortReason) return { kind: 'failure', ...this.abortReason };
        return { kind: 'failure', failure: 'bad_reply', message: `the backend's reply could not be read: ${describe(error)}` };
      }
    });
  }

  private async read(reply: Dispatcher.ResponseData): Promise<CallOutcome> {
    let answer: JsonRpcResponse | undefined;
    await readReplyMessages(reply, this.limits, async (message) => {
      answer ??= await this.consider(message);
    });
    if (answer) return { kind: 'answer', status: reply.statusCode, response: answer };
    return {
      kind: 'failure',
      failure: 'bad_reply',
      message: `the backend answered HTTP ${reply.statusCode} without an answer to the call`,
    };
  }

  /** The response to this call, or undefined after reporting what else the message was. */
  private async consider(message: McpMessage): Promise<JsonRpcResponse | undefined> {
    if (message.kind === 'response') return message.id === this.callId ? message : undefined;
    if (message.kind === 'request') {
      await this.reports.onServerRequest?.(message);
      return undefined;
    }
    if (message.method === 'notifications/progress') {
      const text = progressText(message.params);
      if (text !== undefined) this.reports.onProgress?.(text);
    }
    return undefined;
  }
}

/** "message" if the backend gave one, else "progress/total". */
function progressText(params: unknown): string | undefined {
  if (typeof params !== 'object' || params === null) return undefined;
  const { message, progress, total } = params as { message?: unknown; progress?: unknown; total?: unknown };
  if (typeof message === 'string' && message.length > 0) return message.slice(0, PROGRESS_TEXT_MAX * 2);
  if (typeof progress !== 'number') return undefined;
  return typeof total === 'number' ? `progress ${progress}/${total}` : `progress ${progress}`;
}

/** A network error's code or message, never a body: safe for a status message. */
function describe(error: unknown): string {
  const code = (error as { code?: unknown; cause?: { code?: unknown } })?.code ?? (error as { cause?: { code?: unknown } })?.cause?.code;
  if (typeof code === 'string') return code;
  return error instanceof Error ? error.name : 'unknown error';
}
