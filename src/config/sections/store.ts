/**
 * `store`: where the gateway keeps sessions, task records, poll state and counters
 * (DESIGN.md §4). `memory` serves one replica; `redis` lets many replicas share one truth.
 */
import { z } from 'zod';
import { durationSchema } from '../units.js';
import { isObject } from '../../mcp/json.js';

/** `host:port`, with IPv6 hosts in brackets as in URLs. */
const ENDPOINT = /^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._-]+):(\d{1,5})$/;
const KEY_ID = /^[A-Za-z0-9_-]{1,32}$/;
// `{` and `}` would turn the prefix into a Cluster hash tag and put every key in one slot.
const KEY_PREFIX = /^[^{}\s]{0,64}$/;
const AES_256_KEY_BYTES = 32;

const endpointSchema = z
  .string()
  .regex(ENDPOINT, { error: 'expected host:port, such as 10.0.0.7:6379 or [::1]:6379' })
  .transform((text, ctx) => {
    const [, host, port] = ENDPOINT.exec(text)!;
    const number = Number(port);
    if (number < 1 || number > 65_535) {
      ctx.issues.push({ code: 'custom', input: text, message: 'port must be 1–65535' });
      return z.NEVER;
    }
    return { host: host!.replace(/^\[|\]$/g, ''), port: number };
  });

/** Why a URL is not a Redis URL the store accepts, or undefined if it is one. */
function redisUrlProblem(value: string): string | undefined {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return 'expected a redis:// or rediss:// URL such as redis://10.0.0.7:6379/0';
  }
  if (url.protocol !== 'redis:' && url.protocol !== 'rediss:') return 'expected a redis:// or rediss:// URL';
  // Credentials in a URL end up in logs and process listings; username and password are
  // separate keys, normally filled from the environment.
  if (url.username || url.password) return 'must not contain credentials; use store.username and store.password';
  if (url.search || url.hash) return 'must not have a query or fragment';
  if (!/^\/?\d*$/.test(url.pathname)) return 'the path, if any, is a database number such as /0';
  return undefined;
}

const redisUrlSchema = z.string().superRefine((value, ctx) => {
  const problem = redisUrlProblem(value);
  if (problem) ctx.addIssue({ code: 'custom', message: problem });
});

const snapshotKeySchema = z
  .strictObject({
    id: z
      .string()
      .regex(KEY_ID, { error: 'expected 1–32 letters, digits, "-" or "_"' })
      .describe('Names the key inside every snapshot it encrypts, so that keys can be rotated.'),
    key: z
      .string()
      .refine((text) => /^[A-Za-z0-9+/]+={0,2}$/.test(text) && Buffer.from(text, 'base64').length === AES_256_KEY_BYTES, {
        error: 'expected 32 random bytes in base64 (openssl rand -base64 32)',
      })
      .describe('The AES-256-GCM key: 32 random bytes in base64, normally "${NAME}" from the environment; never logged.'),
  })
  .describe('A key that encrypts poll snapshots.');

const tlsSchema = z
  .union([
    z.boolean().describe('true: TLS with the system trust store; false: plain TCP.'),
    z
      .strictObject({
        ca: z.string().min(1).optional().describe('Path of a PEM file with the CA certificates to trust instead of the system store; read once at start.'),
        servername: z.string().min(1).optional().describe('Server name to send (SNI) and verify, when it differs from the host connected to.'),
      })
      .describe('TLS with these settings.'),
  ])
  .describe(
    'TLS to Redis (and to Sentinels in sentinel mode): true, false, or { ca, servername } where ca is the path of a ' +
      'PEM CA bundle and servername the name to verify on the Redis servers (Sentinels are verified by the address they ' +
      'are reached at). A rediss:// url turns it on as well.',
  );

/** The keys that say where Redis is, by mode. */
const CONNECTION_KEYS: Partial<Record<string, readonly ('url' | 'nodes' | 'sentinels' | 'name')[]>> = {
  standalone: ['url'],
  sentinel: ['sentinels', 'name'],
  cluster: ['nodes'],
};

const memoryStoreSchema = z
  .strictObject({
    type: z.literal('memory').describe('Everything in this process, bounded by tasks.maxRecords.'),
  })
  .describe(
    'The embedded store: one replica only. Behind two or more replicas, tasks created on one are unknown to the ' +
      'others and per-principal limits count per replica (docs/operations.md).',
  );

export const redisStoreSchema = z
  .strictObject({
    type: z.literal('redis').describe('Shared state on Redis (ioredis); every replica of the gateway uses the same keys.'),
    mode: z
      .enum(['standalone', 'sentinel', 'cluster'])
      .default('standalone')
      .describe('standalone: one server at url; sentinel: the master that sentinels name; cluster: a Redis Cluster reached through nodes.'),
    url: redisUrlSchema
      .optional()
      .describe('standalone: redis:// or rediss:// URL of the server, optionally with a database number (redis://10.0.0.7:6379/0).'),
    nodes: z.array(endpointSchema).min(1).optional().describe('cluster: some of the cluster\'s nodes (host:port); the rest are discovered.'),
    sentinels: z.array(endpointSchema).min(1).optional().describe('sentinel: the sentinels to ask for the master (host:port).'),
    name: z.string().min(1).optional().describe('sentinel: the master name the sentinels monitor.'),
    username: z.string().min(1).optional().describe('ACL user name; unset means the default user.'),
    password: z.string().min(1).optional().describe('Password (AUTH), normally "${NAME}" from the environment; never logged.'),
    tls: tlsSchema.optional(),
    keyPrefix: z
      .string()
      .regex(KEY_PREFIX, { error: 'at most 64 characters, without "{", "}" or spaces' })
      .default('taskgate:')
      .describe('Prefix of every key, so that several gateways (or other programs) can share one Redis.'),
    commandTimeout: durationSchema()
      .prefault('500ms')
      .refine((ms) => ms > 0, { error: 'must be more than 0ms' })
      .describe(
        'Longest wait for Redis to answer; past it the request fails with 503 (fail closed) and the connection is ' +
          'dropped and reopened. While Redis is unreachable, store calls fail at once instead of queueing.',
      ),
    connectTimeout: durationSchema()
      .prefault('2s')
      .refine((ms) => ms > 0, { error: 'must be more than 0ms' })
      .describe('Time allowed to open a connection; reconnection is retried in the background, forever.'),
    waitReplicas: z
      .strictObject({
        replicas: z
          .int()
          .min(0)
          .default(0)
          .describe('Replicas that must acknowledge a new task record before its handle is given out (WAIT); 0 skips the wait.'),
        timeout: durationSchema()
          .prefault('100ms')
          .refine((ms) => ms > 0, { error: 'must be more than 0ms (WAIT 0 would block forever)' })
          .describe('Longest wait for those acknowledgements; on a shortfall the task is still created and a warning logged.'),
      })
      .prefault({})
      .describe('Durability of task creation across a Redis failover.'),
    pollCacheTasks: z
      .int()
      .min(0)
      .max(10_000_000)
      .default(50_000)
      .describe(
        'Tasks whose fixed fields (owner, backend id, instance, tool, ...) each replica keeps after polling them, so ' +
          'that a poll reads only the fields that change; past it the oldest are dropped and their next poll reads the ' +
          'whole record (+20–40 µs of CPU). About 0.5–1 KB each: size it to the distinct tasks one replica polls within ' +
          'their poll intervals. 0 turns the cache off.',
      ),
    snapshotKeys: z
      .array(snapshotKeySchema)
      .min(1, { error: 'needs at least one key: poll snapshots can hold tool results and are stored encrypted' })
      .describe(
        'Keys that encrypt poll snapshots (AES-256-GCM). The first encrypts; all of them decrypt, so rotate by ' +
          'putting a new key first and removing the old one after tasks.ttl.max.',
      ),
  })
  // `when` lets these checks run even where a field failed, so one run reports everything.
  .superRefine(
    (store, ctx) => {
      // An invalid mode is reported by itself; which keys it needs is then unknowable.
      const mode = store.mode ?? 'standalone';
      const wanted = CONNECTION_KEYS[mode];
      if (wanted) {
        for (const key of wanted) {
          if (store[key] === undefined) ctx.addIssue({ code: 'custom', path: [key], message: `required in ${mode} mode` });
        }
        for (const key of ['url', 'nodes', 'sentinels', 'name'] as const) {
          if (store[key] !== undefined && !wanted.includes(key)) ctx.addIssue({ code: 'custom', path: [key], message: `not used in ${mode} mode` });
        }
      }
      if (typeof store.url === 'string' && store.url.startsWith('rediss:') && store.tls === false) {
        ctx.addIssue({ code: 'custom', path: ['tls'], message: 'a rediss:// url needs TLS; remove tls: false' });
      }
      const ids = new Map<unknown, number>();
      (Array.isArray(store.snapshotKeys) ? store.snapshotKeys : []).forEach((key: unknown, index) => {
        const id = isObject(key) ? key.id : undefined;
        if (typeof id !== 'string') return;
        const first = ids.get(id);
        if (first === undefined) ids.set(id, index);
        else ctx.addIssue({ code: 'custom', path: ['snapshotKeys', index, 'id'], message: `duplicate of snapshotKeys[${first}].id` });
      });
      const wait = isObject(store.waitReplicas) ? store.waitReplicas : undefined;
      const commandTimeout = store.commandTimeout;
      if (wait && typeof wait.timeout === 'number' && typeof commandTimeout === 'number' && wait.replicas !== 0 && wait.timeout >= commandTimeout) {
        ctx.addIssue({ code: 'custom', path: ['waitReplicas', 'timeout'], message: 'must be shorter than commandTimeout, or every creation would time out' });
      }
    },
    { when: ({ value }) => isObject(value) },
  )
  .describe('Shared state on Redis: many gateway replicas, one truth. If Redis is unreachable, task operations fail closed (503).');

export const storeSchema = z
  .discriminatedUnion('type', [memoryStoreSchema, redisStoreSchema])
  .describe('Where sessions, task records and poll state live.');

export type StoreConfig = z.output<typeof storeSchema>;
export type RedisStoreConfig = z.output<typeof redisStoreSchema>;
