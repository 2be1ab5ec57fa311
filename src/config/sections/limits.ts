/** `limits`: bounds on what clients and upstreams may make the gateway hold or wait for. */
import { z } from 'zod';
import { durationSchema, sizeSchema } from '../units.js';

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
    maxConnections: z.int().min(0).default(0).describe('Most concurrent client connections; 0 means unlimited.'),
  })
  .describe('Request, response and connection limits.');
