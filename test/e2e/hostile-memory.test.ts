/**
 * Memory after hostile traffic is bounded: the same fuzzed traffic, round after round, leaves
 * the heap (after a full collection) on a plateau. Resident memory is reported per round too:
 * it follows the heap's high-water mark and what the allocator keeps, so it rises in the first
 * rounds and then stays, which is no leak (the issue's 122 → 193 MB was that first rise).
 *
 * The gateway runs in this process, where its heap can be collected and read; the backend runs
 * in a process of its own, so that its sessions do not count as the gateway's.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { startGateway, startJwksServer, testPolicy, type GatewayUnderTest, type JwksServer, waitUntilReady } from './support/harness.js';
import { sendHostileTraffic } from './support/hostile-traffic.js';

const ROUNDS = 6;
const REQUESTS_PER_ROUND = 1200;
/** Rounds before the plateau is measured from: JIT code, caches and pools fill in these. */
const WARM_UP_ROUNDS = 2;
/**
 * Allowed heap growth after the warm-up, over all later rounds together. The rounds send
 * 4,800 more requests: a leak of even 1 KiB a request would be 4.7 MiB; the collector's own
 * noise is well under a MiB (14 rounds of 1,500 stayed within 45.1 to 46.3 MiB).
 */
const HEAP_GROWTH_LIMIT = 3 * 1024 * 1024;

function exposeGc(): () => void {
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as () => void;
  // Twice: the first pass can leave weakly held and finalizable objects for the next.
  return () => {
    gc();
    gc();
  };
}

async function startBackendProcess(): Promise<{ url: string; child: ChildProcess }> {
  const main = new URL('../../examples/mcp-server/main.ts', import.meta.url).pathname;
  const child = spawn(process.execPath, ['--import', 'tsx', main, '--json'], { stdio: ['ignore', 'pipe', 'inherit'] });
  const [line] = (await once(createInterface({ input: child.stdout! }), 'line')) as [string];
  return { url: line.trim(), child };
}

describe('memory after hostile traffic', () => {
  let backend: { url: string; child: ChildProcess };
  let jwks: JwksServer;
  let gw: GatewayUnderTest;
  let tokens: string[];
  before(async () => {
    backend = await startBackendProcess();
    jwks = await startJwksServer({ algs: ['ES256'] });
    gw = await startGateway(
      testPolicy([backend.url], {
        auth: { mode: 'jwt', issuers: [{ issuer: jwks.issuer, jwksUri: jwks.url }] },
        limits: { maxBodyBytes: '64KiB' },
        audit: { stdout: false },
      }),
    );
    await waitUntilReady(gw.adminUrl);
    tokens = await Promise.all(Array.from({ length: 20 }, async (_, i) => `Bearer ${await jwks.mint({ sub: `principal-${i}`, aud: 'http://127.0.0.1/mcp' })}`));
  });
  after(async () => {
    await gw?.close();
    await jwks?.close();
    if (backend) {
      backend.child.kill('SIGTERM');
      await once(backend.child, 'exit');
    }
  });

  it(`the same ${REQUESTS_PER_ROUND} hostile requests, ${ROUNDS} rounds: the heap after collection stays on a plateau`, async (t) => {
    const collect = exposeGc();
    const heap: number[] = [];
    const rss: number[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      const { answered, failed } = await sendHostileTraffic({ url: gw.url, tokens }, REQUESTS_PER_ROUND, 20);
      // Connections the gateway is still lingering on or closing settle first.
      await new Promise((resolve) => setTimeout(resolve, 300));
      collect();
      const memory = process.memoryUsage();
      heap.push(memory.heapUsed);
      rss.push(memory.rss);
      t.diagnostic(`round ${round + 1}: ${answered} answered, ${failed} failed; heap after GC ${(memory.heapUsed / 2 ** 20).toFixed(1)} MiB, RSS ${(memory.rss / 2 ** 20).toFixed(1)} MiB`);
      assert.ok(answered >= REQUESTS_PER_ROUND * 0.9, `only ${answered} of ${REQUESTS_PER_ROUND} requests were answered`);
    }
    const plateau = heap[WARM_UP_ROUNDS - 1]!;
    const grown = Math.max(...heap.slice(WARM_UP_ROUNDS)) - plateau;
    assert.ok(grown < HEAP_GROWTH_LIMIT, `the heap grew by ${(grown / 2 ** 20).toFixed(2)} MiB after the warm-up: ${heap.map((h) => (h / 2 ** 20).toFixed(1)).join(', ')} MiB`);
    // Resident memory only reported beside the assertion: it follows the allocator, not live data.
    t.diagnostic(`heap after GC per round (MiB): ${heap.map((h) => (h / 2 ** 20).toFixed(1)).join(', ')}; RSS per round (MiB): ${rss.map((r) => (r / 2 ** 20).toFixed(1)).join(', ')}`);
  });
});
