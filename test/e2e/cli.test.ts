/**
 * The `taskgate` command as an operator runs it: a real process, a policy file, SIGTERM.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { startExampleServer, type ExampleServer } from '../../examples/mcp-server/server.js';
import { runTaskgate } from './support/gateway-process.js';
import { LEGACY_POST_HEADERS, initializeBody } from './support/harness.js';


async function exitOf(child: ChildProcess): Promise<{ code: number | null; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
  return { code, stdout, stderr };
}

describe('taskgate check-config', () => {
  let dir: string;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'taskgate-cli-'));
  });
  after(() => rm(dir, { recursive: true, force: true }));

  it('exits 0 for the shipped example policy', async () => {
    const result = await exitOf(runTaskgate(['check-config', 'config/taskgate.example.yaml']));
    assert.equal(result.code, 0, result.stderr);
    assert.match(result.stdout, /OK/);
  });

  it('exits 1 and reports every problem with its path and line', async () => {
    const file = join(dir, 'bad.yaml');
    await writeFile(
      file,
      'publicUrl: not a url\nupstreams:\n  tools: { instances: [http://127.0.0.1:1] }\nroutes:\n' +
        '  - { path: /mcp, upstream: nowhere }\n  - { path: /b, upstream: tools, colour: red }\n',
    );
    const result = await exitOf(runTaskgate(['check-config', file]));
    assert.equal(result.code, 1);
    assert.match(result.stderr, /bad\.yaml:1:\d+ publicUrl/);
    assert.match(result.stderr, /bad\.yaml:5:\d+ routes\[0\]\.upstream/);
    assert.match(result.stderr, /bad\.yaml:6:\d+ routes\[1\]\.colour/);
  });

  it('exits 2 with usage on a bad command line', async () => {
    const unknown = await exitOf(runTaskgate(['--nonsense']));
    assert.equal(unknown.code, 2);
    assert.match(unknown.stderr, /usage:/);
    assert.doesNotMatch(unknown.stderr, /\n\s+at /, 'no stack trace for a usage mistake');
    const missing = await exitOf(runTaskgate([]));
    assert.equal(missing.code, 2);
  });
});

describe('taskgate --config', () => {
  let backend: ExampleServer;
  let dir: string;
  before(async () => {
    backend = await startExampleServer({ enableJsonResponse: true });
    dir = await mkdtemp(join(tmpdir(), 'taskgate-cli-'));
  });
  after(async () => {
    await backend.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('serves, logs one redacted line per request, and drains in-flight work on SIGTERM', async () => {
    const file = join(dir, 'policy.yaml');
    await writeFile(
      file,
      [
        'listen: { host: 127.0.0.1, port: 0 }',
        'admin: { host: 127.0.0.1, port: 0 }',
        'publicUrl: http://127.0.0.1',
        'auth: { mode: none }',
        'upstreams:',
        `  tools: { instances: ["${new URL(backend.url).origin}"] }`,
        'routes:',
        '  - { path: /mcp, upstream: tools }',
        'limits: { drainTimeout: 10s }',
      ].join('\n'),
    );
    const child = runTaskgate(['--config', file]);
    const lines: Array<Record<string, unknown>> = [];
    const raw: string[] = [];
    const listening = new Promise<string>((resolve) => {
      createInterface({ input: child.stdout! }).on('line', (line) => {
        raw.push(line);
        const entry = JSON.parse(line) as Record<string, unknown>;
        lines.push(entry);
        if (entry.msg === 'taskgate listening') resolve(String(entry.url));
      });
    });
    const exited = new Promise<number | null>((resolve) => child.on('exit', resolve));
    const base = await listening;
    const url = `${base}/mcp`;

    const secret = 'Bearer super-secret-token-value';
    const init = await fetch(url, {
      method: 'POST',
      headers: { ...LEGACY_POST_HEADERS, authorization: secret, cookie: 'sid=cookie-secret' },
      body: initializeBody(),
    });
    assert.equal(init.status, 200);
    const sessionId = init.headers.get('mcp-session-id')!;
    await init.text();
    // A request's line reaches stdout while the gateway runs, not only when it exits.
    const sent = Date.now();
    while (!lines.some((l) => l.msg === 'request') && Date.now() - sent < 3000) await new Promise((r) => setTimeout(r, 20));
    assert.ok(lines.some((l) => l.msg === 'request'), 'the request line was not written within 3 s');

    // A slow call in flight when SIGTERM arrives must still complete.
    const slow = fetch(url, {
      method: 'POST',
      headers: { ...LEGACY_POST_HEADERS, 'mcp-session-id': sessionId },
      body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'slow_scan', arguments: { seconds: 1 } } }),
    });
    await new Promise((r) => setTimeout(r, 300));
    child.kill('SIGTERM');
    const slowResponse = await slow;
    assert.equal(slowResponse.status, 200);
    const body = (await slowResponse.json()) as { result?: { content: Array<{ text: string }> } };
    assert.ok(body.result, 'the in-flight request did not complete');
    assert.equal(await exited, 0);
    await assert.rejects(fetch(url, { method: 'POST', headers: LEGACY_POST_HEADERS, body: initializeBody() }));

    const requestLines = lines.filter((l) => l.msg === 'request');
    assert.equal(requestLines.length, 2, 'one log line per request');
    assert.deepEqual(requestLines.map((l) => l.status), [200, 200]);
    assert.ok(lines.some((l) => l.msg === 'stopped'));
    const everything = raw.join('\n');
    assert.ok(!everything.includes('super-secret-token-value'), 'the bearer token reached the log');
    assert.ok(!everything.includes('cookie-secret'), 'the cookie reached the log');
  });
});
