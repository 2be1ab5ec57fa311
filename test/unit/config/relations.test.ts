import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseConfig } from '../../../src/config/index.js';
import { issuesOf, MINIMAL } from './policies.js';

const TWO_UPSTREAMS = `publicUrl: https://mcp.example.com
auth: { mode: none }
upstreams:
  tools: { instances: [http://10.0.0.5:3000] }
  search: { instances: [http://10.0.0.7:3000] }
`;

describe('cross-field checks', () => {
  it('requires each route to name a defined upstream', () => {
    const issues = issuesOf(`${TWO_UPSTREAMS}routes:
  - { path: /a, upstream: tools }
  - { path: /b, upstream: serach }
  - { path: /c, upstream: Tools }
`);
    assert.deepEqual(issues, [
      { path: 'routes[1].upstream', message: 'names no defined upstream; defined upstreams: tools, search', line: 8, col: 27 },
      { path: 'routes[2].upstream', message: 'names no defined upstream; defined upstreams: tools, search', line: 9, col: 27 },
    ]);
  });

  it('still checks the other routes and upstreams when one of them is invalid', () => {
    const issues = issuesOf(`publicUrl: https://mcp.example.com
upstreams:
  tools: { instances: [http://10.0.0.5:3000], connections: -1 }
routes:
  - { path: no-slash, upstream: tools }
  - { path: /b, upstream: missing }
auth: { mode: none }
`);
    assert.deepEqual(
      issues.map((i) => i.path),
      ['upstreams.tools.connections', 'routes[0].path', 'routes[1].upstream'],
    );
  });

  it('requires route paths to be unique and to start with /', () => {
    const issues = issuesOf(`${TWO_UPSTREAMS}routes:
  - { path: /mcp, upstream: tools }
  - { path: /mcp, upstream: search }
  - { path: mcp, upstream: search }
`);
    assert.deepEqual(
      issues.map((i) => `${i.path}: ${i.message}`),
      [
        'routes[1].path: duplicate of routes[0].path',
        'routes[2].path: expected an absolute path starting with "/", without query, fragment or spaces',
      ],
    );
  });

  it('allows two routes to one upstream and to the same upstream path', () => {
    const config = parseConfig(`${TWO_UPSTREAMS}routes:
  - { path: /a, upstream: tools, upstreamPath: /mcp }
  - { path: /b, upstream: tools, upstreamPath: /mcp }
`, { env: {} });
    assert.equal(config.routes.length, 2);
  });

  it('requires at least one upstream and one route', () => {
    const issues = issuesOf('publicUrl: https://mcp.example.com\nauth: { mode: none }\nupstreams: {}\nroutes: []\n');
    assert.deepEqual(
      issues.map((i) => `${i.path}: ${i.message}`),
      ['upstreams: at least one upstream is required', 'routes: Too small: expected array to have >=1 items'],
    );
  });

  it('requires listen.port and admin.port to differ unless one is 0', () => {
    const ports = (listen: number, admin: number) => `${MINIMAL}listen: { port: ${listen} }\nadmin: { port: ${admin} }\n`;
    assert.deepEqual(issuesOf(ports(9000, 9000)), [
      { path: 'admin.port', message: 'must differ from listen.port (unless one of them is 0)', line: 10, col: 16 },
    ]);
    assert.equal(parseConfig(ports(0, 0), { env: {} }).listen.port, 0);
    assert.equal(parseConfig(ports(0, 9090), { env: {} }).admin.port, 9090);
    assert.equal(parseConfig(ports(9091, 9090), { env: {} }).listen.port, 9091);
  });

  it('points at listen.port when the clash is with the default admin port', () => {
    assert.deepEqual(issuesOf(`${MINIMAL}listen: { port: 9090 }\n`), [
      { path: 'listen.port', message: 'must differ from admin.port (9090 by default) unless one of them is 0', line: 9, col: 17 },
    ]);
  });
});
