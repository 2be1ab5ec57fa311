/** `admin`: the listener for /healthz, /readyz and /metrics, kept off the public port. */
import { z } from 'zod';
import { bindHostSchema, portSchema } from './listen.js';

export const adminSchema = z
  .strictObject({
    // Loopback by default: metrics and readiness are for the platform, not for clients.
    host: bindHostSchema.default('127.0.0.1').describe('Address the admin listener binds to.'),
    port: portSchema.default(9090).describe('Port of the admin listener; 0 picks any free port.'),
    readiness: z
      .strictObject({
        store: z
          .enum(['required', 'reported'])
          .default('required')
          .describe(
            'Whether /readyz fails while the store cannot serve (required), or only reports it in its body (reported). ' +
              'required: during a Redis outage every replica leaves the Service, and clients get the load balancer\'s error. ' +
              'reported: replicas stay in the Service, plain MCP traffic keeps flowing, and task operations get taskgate\'s own 503 (-31004).',
          ),
      })
      .prefault({})
      .describe('What /readyz requires before a replica takes traffic.'),
  })
  .describe('The admin listener serving /healthz, /readyz and /metrics.');
