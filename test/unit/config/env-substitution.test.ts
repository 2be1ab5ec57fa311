import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ConfigError, parseConfig } from '../../../src/config/index.js';
import { findIssue, issuesOf, MINIMAL } from './policies.js';

const SECRET = 'hunter2-very-secret';

describe('${NAME} substitution', () => {
  it('replaces references anywhere in a string value', () => {
    const config = parseConfig(MINIMAL.replace('https://mcp.example.com', '${SCHEME}://${HOST}.example.com'), {
      env: { SCHEME: 'https', HOST: 'gw' },
    });
    assert.equal(config.publicUrl, 'https://gw.example.com');
  });

  it('reads process.env when no env is given', () => {
    process.env.TASKGATE_TEST_PUBLIC_URL = 'https://from-process-env.example.com';
    try {
      const config = parseConfig(MINIMAL.replace('https://mcp.example.com', '${TASKGATE_TEST_PUBLIC_URL}'));
      assert.equal(config.publicUrl, 'https://from-process-env.example.com');
    } finally {
      delete process.env.TASKGATE_TEST_PUBLIC_URL;
    }
  });

  it('turns $${NAME} into a literal ${NAME} without looking it up', () => {
    // A function replacer, because a replacement string would read `$$` as an escaped `$` too.
    const config = parseConfig(MINIMAL.replace('path: /mcp', () => 'path: /mcp/$${NAME}/x$$y'), { env: {} });
    assert.equal(config.routes[0]?.path, '/mcp/${NAME}/x$$y');
  });

  it('reads an unquoted whole reference as a number or boolean, and a quoted one as a string', () => {
    const config = parseConfig(`${MINIMAL}listen:
  port: \${PORT}
  trustProxy: \${TRUST}
logging:
  level: "\${LEVEL}"
`, { env: { PORT: '8443', TRUST: 'true', LEVEL: 'debug' } });
    assert.equal(config.listen.port, 8443);
    assert.equal(config.listen.trustProxy, true);
    assert.equal(config.logging.level, 'debug');

    const issues = issuesOf(`${MINIMAL}listen:\n  port: "\${PORT}"\n`, { PORT: '8443' });
    assert.equal(findIssue(issues, 'listen.port').message, 'Invalid input: expected number, received string');
  });

  it('never lets a value change the YAML structure', () => {
    // Pasted into the text, this value would end the scalar and add a top-level key.
    const issues = issuesOf(`${MINIMAL}logging:\n  level: \${L}\n`, { L: 'info\nextra: 1' });
    assert.deepEqual(
      issues.map((i) => i.path),
      ['logging.level'],
    );
  });

  it('leaves keys alone', () => {
    const issues = issuesOf(MINIMAL.replace('  tools:', '  ${NAME}:').replace('upstream: tools', 'upstream: "${NAME}"'), { NAME: 'tools' });
    assert.match(findIssue(issues, 'upstreams["${NAME}"]').message, /^an upstream name is/);
  });

  it('reports every missing variable with its path and line, and nothing else about that value', () => {
    const issues = issuesOf(`publicUrl: \${PUBLIC_URL}
upstreams:
  tools:
    instances: ["\${UPSTREAM_A}", http://10.0.0.6:3000]
routes:
  - path: /mcp
    upstream: tools
auth: { mode: none }
`);
    assert.deepEqual(issues, [
      { path: 'publicUrl', message: 'environment variable PUBLIC_URL is not set', line: 1, col: 12 },
      { path: 'upstreams.tools.instances[0]', message: 'environment variable UPSTREAM_A is not set', line: 4, col: 17 },
    ]);
  });

  it('reports malformed references', () => {
    const issues = issuesOf(MINIMAL.replace('path: /mcp', 'path: /${lower-case}/${1X}/${OPEN'));
    assert.deepEqual(
      issues.map((i) => i.message),
      [
        'invalid variable reference "${lower-case}": a name is letters, digits and "_", not starting with a digit',
        'invalid variable reference "${1X}": a name is letters, digits and "_", not starting with a digit',
        'unterminated "${" (write "$${" for a literal "${")',
      ],
    );
  });

  it('keeps substituted values out of every message', () => {
    const env = { SECRET, PORT: SECRET, URL: `https://${SECRET}.example.com/?${SECRET}` };
    let error: unknown;
    try {
      parseConfig(
        `${MINIMAL.replace('https://mcp.example.com', '${URL}')}listen:
  port: \${PORT}
  host: "\${SECRET}"
  allowedOrigins: ["\${SECRET}"]
logging:
  level: \${SECRET}
limits:
  maxBodyBytes: \${SECRET}
routes2: \${SECRET}
`,
        { env, source: 'secret.yaml' },
      );
    } catch (err) {
      error = err;
    }
    assert.ok(error instanceof ConfigError);
    assert.ok(error.issues.length >= 6, error.message);
    assert.ok(!error.message.includes(SECRET), error.message);
    assert.ok(!error.message.includes('hunter2'), error.message);
    assert.ok(!JSON.stringify(error.issues).includes('hunter2'));
  });
});
