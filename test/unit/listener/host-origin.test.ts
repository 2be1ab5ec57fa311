import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { GatewayError } from '../../../src/errors.js';
import { buildHostOriginPolicy, checkHostAndOrigin, hostnameOf } from '../../../src/listener/host-origin.js';

function verdict(policy: ReturnType<typeof buildHostOriginPolicy>, host: string | undefined, origin?: string): string {
  try {
    checkHostAndOrigin(policy, host, origin);
    return 'ok';
  } catch (error) {
    assert.ok(error instanceof GatewayError);
    return error.code;
  }
}

describe('Host and Origin checks', () => {
  it('parses Host values, IPv6 literals and ports included, and refuses junk', () => {
    assert.equal(hostnameOf('Example.COM:8443'), 'example.com');
    assert.equal(hostnameOf('[::1]:9000'), '::1');
    assert.equal(hostnameOf('a.example/path'), undefined);
    assert.equal(hostnameOf('user@a.example'), undefined);
    assert.equal(hostnameOf(''), undefined);
  });

  it('answers the same for a Host seen before, refused ones included, and past its memo cap', () => {
    const values = ['Example.COM:8443', '[::1]:9000', 'a.example/path', 'user@a.example', ''];
    const first = values.map(hostnameOf);
    // Far more distinct values than the memo holds: the early ones fall out and are parsed again.
    for (let i = 0; i < 1000; i++) assert.equal(hostnameOf(`h${i}.example:${i}`), `h${i}.example`);
    assert.deepEqual(values.map(hostnameOf), first);
    assert.deepEqual(values.map(hostnameOf), ['example.com', '::1', undefined, undefined, undefined]);
    // Too long to be remembered, still answered.
    const long = `${'a'.repeat(60)}.${'b'.repeat(60)}.${'c'.repeat(60)}.${'d'.repeat(60)}.${'e'.repeat(60)}.example:8443`;
    assert.equal(hostnameOf(long), long.slice(0, -5));
    assert.equal(hostnameOf(long), long.slice(0, -5));
  });

  it('accepts only the publicUrl host by default, with any port', () => {
    const policy = buildHostOriginPolicy('https://mcp.example.com', [], []);
    assert.equal(verdict(policy, 'mcp.example.com'), 'ok');
    assert.equal(verdict(policy, 'MCP.example.com:443'), 'ok');
    assert.equal(verdict(policy, 'localhost:8080'), 'TG_ERR_HOST_NOT_ALLOWED');
    assert.equal(verdict(policy, 'evil.example'), 'TG_ERR_HOST_NOT_ALLOWED');
    assert.equal(verdict(policy, undefined), 'TG_ERR_HOST_NOT_ALLOWED');
  });

  it('checks Origin only when sent: the publicUrl origin and the configured ones', () => {
    const policy = buildHostOriginPolicy('https://mcp.example.com', [], ['https://app.example.com/']);
    assert.equal(verdict(policy, 'mcp.example.com'), 'ok');
    assert.equal(verdict(policy, 'mcp.example.com', 'https://mcp.example.com'), 'ok');
    assert.equal(verdict(policy, 'mcp.example.com', 'https://app.example.com'), 'ok');
    assert.equal(verdict(policy, 'mcp.example.com', 'https://evil.example'), 'TG_ERR_ORIGIN_NOT_ALLOWED');
    assert.equal(verdict(policy, 'mcp.example.com', 'http://localhost:3000'), 'TG_ERR_ORIGIN_NOT_ALLOWED');
  });

  it('accepts every loopback name and origin when published on loopback, but no other name', () => {
    const policy = buildHostOriginPolicy('http://127.0.0.1:8080', [], []);
    for (const host of ['127.0.0.1:1', 'localhost:8080', '[::1]:3']) assert.equal(verdict(policy, host), 'ok');
    assert.equal(verdict(policy, 'localhost:8080', 'http://localhost:5173'), 'ok');
    assert.equal(verdict(policy, 'evil.example'), 'TG_ERR_HOST_NOT_ALLOWED');
    assert.equal(verdict(policy, 'localhost', 'http://evil.example'), 'TG_ERR_ORIGIN_NOT_ALLOWED');
  });

  it('lets an explicit allow-list replace the defaults', () => {
    const policy = buildHostOriginPolicy('http://127.0.0.1', ['gw.internal'], ['https://ui.internal']);
    assert.equal(verdict(policy, 'gw.internal'), 'ok');
    assert.equal(verdict(policy, 'localhost'), 'TG_ERR_HOST_NOT_ALLOWED');
    assert.equal(verdict(policy, 'gw.internal', 'http://localhost:1'), 'TG_ERR_ORIGIN_NOT_ALLOWED');
  });
});
