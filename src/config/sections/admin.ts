/** `admin`: the listener for /healthz, /readyz and /metrics, kept off the public port. */
import { z } from 'zod';
import { bindHostSchema, portSchema } from './listen.js';

export const adminSchema = z
  .strictObject({
    // Loopback by default: metrics and readiness are for the platform, not for clients.
    host: bindHostSchema.default('127.0.0.1').describe('Address the admin listener binds to.'),
    port: portSchema.default(9090).describe('Port of the admin listener; 0 picks any free port.'),
  })
  .describe('The admin listener serving /healthz, /readyz and /metrics.');
