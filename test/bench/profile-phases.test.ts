/**
 * The per-phase table of bench/profile.ts (bench/profile-phases.ts) on a hand-built profile: a
 * sample goes to the phase frame nearest its leaf, library frames only when no phase frame is on
 * the stack, idle is left out, and samples are counted, not weighed by the gap to the next one.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { phaseShares, type PhaseProfile } from '../../bench/profile-phases.js';

const SRC = 'file:///repo/dist/src';
const MODULES = 'file:///repo/node_modules';

/** A profile of one stack per leaf: root → … → leaf, in the order given. */
function profileOf(stacks: { frames: { functionName: string; url: string }[]; samples: number; gapUs?: number }[]): PhaseProfile {
  const nodes: PhaseProfile['nodes'] = [{ id: 1, callFrame: { functionName: '(root)', url: '' }, children: [] }];
  const samples: number[] = [];
  const timeDeltas: number[] = [];
  for (const stack of stacks) {
    let parent = nodes[0]!;
    for (const frame of stack.frames) {
      const node = { id: nodes.length + 1, callFrame: frame, children: [] as number[] };
      parent.children!.push(node.id);
      nodes.push(node);
      parent = node;
    }
    for (let i = 0; i < stack.samples; i++) {
      samples.push(parent.id);
      timeDeltas.push(i === 0 && stack.gapUs !== undefined ? stack.gapUs : 250);
    }
  }
  return { nodes, startTime: 0, samples, timeDeltas };
}

test('a sample goes to the phase frame nearest its leaf, through library and native frames', () => {
  const profile = profileOf([
    // The log line's write: sonic-boom and a native write under writeInfoLine, under the request-log hook.
    {
      frames: [
        { functionName: 'onResponse', url: `${SRC}/observability/request-log.js` },
        { functionName: 'writeInfoLine', url: `${SRC}/observability/logger.js` },
        { functionName: 'write', url: `${MODULES}/sonic-boom/index.js` },
        { functionName: 'writeSync', url: '' },
      ],
      samples: 3,
    },
    // The cached answer's socket write: fastify's reply inside the tasks stage's preHandler.
    {
      frames: [
        { functionName: 'preHandler', url: `${SRC}/pipeline/mcp-routes.js` },
        { functionName: 'send', url: `${MODULES}/fastify/lib/reply.js` },
        { functionName: 'writev', url: '' },
      ],
      samples: 2,
    },
    // No phase frame: fastify's own routing.
    { frames: [{ functionName: 'routeHandler', url: `${MODULES}/fastify/lib/route.js` }], samples: 1 },
    { frames: [{ functionName: '(idle)', url: '' }], samples: 10 },
  ]);
  const shares = Object.fromEntries(phaseShares(profile, -Infinity, Infinity).map((s) => [s.phase, s.share]));
  assert.equal(shares['request log: the log line'], 3 / 6);
  assert.equal(shares['reply: fastify send and the socket write'], 2 / 6);
  assert.equal(shares['fastify: routing, hooks, body read, request objects'], 1 / 6);
  assert.equal(shares['(idle)'], undefined);
});

test('samples are counted, so a long gap after one (a descheduled process) does not weigh it', () => {
  const profile = profileOf([
    { frames: [{ functionName: 'get', url: `${SRC}/observability/store-metrics.js` }], samples: 1, gapUs: 500_000 },
    { frames: [{ functionName: 'authenticate', url: `${SRC}/auth/auth-stage.js` }], samples: 3 },
  ]);
  const shares = Object.fromEntries(phaseShares(profile, -Infinity, Infinity).map((s) => [s.phase, s.share]));
  assert.equal(shares['auth: bearer token, token cache, JWT'], 3 / 4);
});
