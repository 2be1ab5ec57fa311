/**
 * The plan's floors (../shared/STYLE.md, docs/architecture.md "The plan and its import rules"),
 * checked by dependency-cruiser in `npm test` (scripts/check-layers.mjs): a file imports from
 * its own room and from lower floors only, type imports included; capabilities never import
 * each other; nothing imports in a circle.
 *
 * Floors, lowest first. A room is a folder under src/ (or a top-level file).
 */
const FLOORS = [
  // The ground: the error catalogue, lifecycle primitives, the policy schema, the protocol.
  ['errors', 'lifecycle', 'config', 'mcp'],
  // The task record, its wire forms per era, one builder, the TTL policy.
  ['task-model'],
  // Role interfaces, memory and Redis.
  ['store'],
  // Facts in, logs/metrics/spans out.
  ['observability', 'tracing'],
  // The stages; upstream/ is the one door to the backends.
  ['listener', 'auth', 'limits', 'routing', 'upstream'],
  // The takeover core and its extension points.
  ['tasks'],
  // Capabilities: each a room, implementing the extension points of tasks/.
  ['provided', 'push', 'background', 'bridge', 'console'],
  // The only room that knows the fastify request.
  ['pipeline'],
  // The composition root and the policy in force.
  ['gateway', 'reload'],
  ['main'],
];
const CAPABILITIES = FLOORS[6];

const room = (name) => `^src/${name}(/|\\.ts$)`;
const rules = [];
FLOORS.forEach((floor, level) => {
  const above = FLOORS.slice(level + 1).flat();
  if (above.length === 0) return;
  rules.push({
    name: `floor-${level}-imports-up`,
    comment: `${floor.join(', ')} may import only from its own floor and the floors below`,
    severity: 'error',
    from: { path: floor.map(room).join('|') },
    to: { path: above.map(room).join('|') },
  });
});
for (const capability of CAPABILITIES) {
  rules.push({
    name: `capability-${capability}-imports-another`,
    comment: 'capabilities implement the extension points of tasks/ and never import each other',
    severity: 'error',
    from: { path: room(capability) },
    to: { path: CAPABILITIES.filter((c) => c !== capability).map(room).join('|') },
  });
}
rules.push({
  name: 'no-circular',
  comment: 'no import cycles, type-only imports included',
  severity: 'error',
  from: { path: '^src/' },
  to: { circular: true },
});

module.exports = {
  forbidden: rules,
  options: {
    doNotFollow: { path: 'node_modules' },
    includeOnly: '^src/',
    // Type-only imports count: they close circles as surely as value imports.
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { extensions: ['.ts', '.js'] },
  },
};
