/** `limits`: bounds on what clients and upstreams may make the gateway hold or wait for. */
import { z } from 'zod';
import { durationSchema, sizeSchema } from '../units.js';

/** Node's own limit on receiving a whole request (server.requestTimeout), which headersTimeout may not exceed. */
const NODE_REQUEST_TIMEOUT_MS = 300_000;

export const limitsSchema = z
  .strictObject({
    maxBodyBytes: sizeSchema().prefault('1MiB').describe('Largest client request body; larger requests get 413.'),
    maxHeaderBytes: sizeSchema().prefault('16KiB').describe('Largest total size of the client request headers.'),
    maxResponseBytes: sizeSchema()
      .prefault('8MiB')
      .describe('Largest JSON (non-SSE) upstream response the gateway buffers in order to inspect it.'),
    maxSseEventBytes: sizeSchema().prefault('8MiB').describe('Largest single SSE event the gateway accepts from an upstream.'),
    requestTimeout: durationSchema()
      .prefault('0s')
      .describe('Total time a request may take, streaming included; 0s means no limit.'),
    drainTimeout: durationSchema()
      .prefault('10s')
      .describe('On SIGTERM, how long in-flight requests may continue before they are cut off.'),
    headersTimeout: durationSchema()
      .prefault('10s')
      .refine((ms) => ms > 0 && ms <= NODE_REQUEST_TIMEOUT_MS, { error: 'must be more than 0s and at most 5m' })
      .describe(
        'Longest a client may take to send its request headers, counted from the start of the request; past it the ' +
          'connection is answered 408 and closed, so a client sending headers a byte at a time (slowloris) holds a ' +
          'connection this long at most. Checked about every second.',
      ),
    keepAliveTimeout: durationSchema()
      .prefault('5s')
      .refine((ms) => ms > 0, { error: 'must be more than 0s' })
      .describe(
        'How long an idle keep-alive client connection stays open between two requests. Behind a load balancer, set it ' +
          'above the balancer\'s own idle timeout, so the gateway never closes a connection the balancer is about to reuse.',
      ),
    maxConnections: z
      .int()
      .min(0)
      .default(4096)
      .describe(
        'Most concurrent client connections (idle keep-alive ones included); connections beyond it are closed at once. ' +
          'Keep it below the process\'s file-descriptor limit, which upstream connections share. 0 means unlimited (not recommended).',
      ),
  })
  .describe('Request, response and connection limits.');
