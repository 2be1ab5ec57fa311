/**
 * Bad input gets a clear answer from the gateway and never reaches the backend.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'undici';
import { LEGACY_POST_HEADERS, startStack, type Stack } from './support/harness.js';

const MODERN_META = {
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientInfo': { name: 't', version: '0' },
  'io.modelcontextprotocol/clientCapabilities': {},
};
const modernCall = JSON.stringify({
  jsonrpc: '2.0',
  id: 7,
  method: 'tools/call',
  params: { name: 'echo', arguments: { text: 'x' }, _meta: MODERN_META },
});
const MODERN_HEADERS = {
  'content-type': 'application/json',
  accept: 'application/json, text/event-stream',
  'mcp-protocol-version': '2026-07-28',
  'mcp-method': 'tools/call',
  'mcp-name': 'echo',
};

/** A tools/call whose argument text holds `bytes` where a character should be: JSON in every other way. */
function utf8Case(bytes: number[]): Buffer {
  const [head, tail] = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'echo', arguments: { text: 'ab' } } }).split('ab');
  return Buffer.concat([Buffer.from(`${head}a`), Buffer.from(bytes), Buffer.from(`b${tail}`)]);
}

interface BadCase {
  name: string;
  method?: string;
  path?: string;
  headers: Record<string, string>;
  body?: string | Buffer;
  status: number;
  rpcCode: number;
  rpcId?: string | number | null;
  /** The Allow header a 405 must carry. */
  allow?: string;
}

const cases: BadCase[] = [
  { name: 'malformed JSON', headers: { ...LEGACY_POST_HEADERS }, body: '{"jsonrpc":"2.0",', status: 400, rpcCode: -32700 },
  { name: 'empty body', headers: { ...LEGACY_POST_HEADERS }, body: '', status: 400, rpcCode: -32700 },
  // Bodies that are not UTF-8: the gateway and the backend could decode them differently.
  { name: 'invalid UTF-8 byte in a string', headers: { ...LEGACY_POST_HEADERS }, body: utf8Case([0xff]), status: 400, rpcCode: -32700 },
  { name: 'overlong UTF-8 encoding', headers: { ...LEGACY_POST_HEADERS }, body: utf8Case([0xc0, 0xa2]), status: 400, rpcCode: -32700 },
  { name: 'UTF-8-encoded surrogate', headers: { ...LEGACY_POST_HEADERS }, body: utf8Case([0xed, 0xa0, 0x80]), status: 400, rpcCode: -32700 },
  { name: 'cut multi-byte sequence', headers: { ...LEGACY_POST_HEADERS }, body: utf8Case([0xe2, 0x82]), status: 400, rpcCode: -32700 },
  { name: 'invalid UTF-8 in a 2026-07-28 request', headers: { ...MODERN_HEADERS }, body: Buffer.concat(modernCall.split('"x"').flatMap((part, i) => (i === 0 ? [Buffer.from(part)] : [Buffer.from([0x22, 0x78, 0xff, 0x22]), Buffer.from(part)]))), status: 400, rpcCode: -32700, rpcId: null },
  { name: 'JSON that is not JSON-RPC', headers: { ...LEGACY_POST_HEADERS }, body: '{"hello":"world"}', status: 400, rpcCode: -32600 },
  { name: 'wrong jsonrpc version', headers: { ...LEGACY_POST_HEADERS }, body: '{"jsonrpc":"1.0","id":1,"method":"ping"}', status: 400, rpcCode: -32600 },
  { name: 'body over the limit', headers: { ...LEGACY_POST_HEADERS }, body: Buffer.alloc(70 * 1024, 0x20), status: 413, rpcCode: -32600 },
  { name: 'wrong content type', headers: { ...LEGACY_POST_HEADERS, 'content-type': 'text/plain' }, body: '{}', status: 415, rpcCode: -32600 },
  { name: 'Accept without text/event-stream', headers: { ...LEGACY_POST_HEADERS, accept: 'application/json' }, body: '{"jsonrpc":"2.0","id":1,"method":"ping"}', status: 406, rpcCode: -32600 },
  { name: 'Accept wildcard only', headers: { ...LEGACY_POST_HEADERS, accept: '*/*' }, body: '{"jsonrpc":"2.0","id":1,"method":"ping"}', status: 406, rpcCode: -32600 },
  { name: 'GET without text/event-stream', method: 'GET', headers: { accept: 'application/json' }, status: 406, rpcCode: -32600 },
  {
    name: 'modern Mcp-Name mismatch',
    headers: { ...MODERN_HEADERS, 'mcp-name': 'other' },
    body: modernCall,
    status: 400,
    rpcCode: -32020,
    rpcId: 7,
  },
  {
    name: 'modern Mcp-Method missing',
    headers: Object.fromEntries(Object.entries(MODERN_HEADERS).filter(([k]) => k !== 'mcp-method')),
    body: modernCall,
    status: 400,
    rpcCode: -32020,
    rpcId: 7,
  },
  {
    name: 'modern MCP-Protocol-Version mismatch',
    headers: { ...MODERN_HEADERS, 'mcp-protocol-version': '2025-11-25' },
    body: modernCall,
    status: 400,
    rpcCode: -32020,
    rpcId: 7,
  },
  {
    name: 'batch on 2025-11-25',
    headers: { ...LEGACY_POST_HEADERS },
    body: '[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":2,"method":"ping"}]',
    status: 400,
    rpcCode: -32600,
  },
  { name: 'Host not allowed', headers: { ...LEGACY_POST_HEADERS, host: 'evil.example' }, body: '{"jsonrpc":"2.0","id":1,"method":"ping"}', status: 403, rpcCode: -32600 },
  { name: 'Origin not allowed', headers: { ...LEGACY_POST_HEADERS, origin: 'http://evil.example' }, body: '{"jsonrpc":"2.0","id":1,"method":"ping"}', status: 403, rpcCode: -32600 },
  { name: 'path with no route', path: '/other', headers: { ...LEGACY_POST_HEADERS }, body: '{"jsonrpc":"2.0","id":1,"method":"ping"}', status: 404, rpcCode: -32600 },
  { name: 'PUT', method: 'PUT', headers: { ...LEGACY_POST_HEADERS }, body: '{"jsonrpc":"2.0","id":1,"method":"ping"}', status: 405, rpcCode: -32600, allow: 'GET, POST, DELETE' },
  // What the 2026-07-28 era makes certain: no GET stream, no sessions, no server requests.
  { name: 'GET declaring 2026-07-28', method: 'GET', headers: { accept: 'text/event-stream', 'mcp-protocol-version': '2026-07-28' }, status: 405, rpcCode: -32600, allow: 'POST' },
  { name: 'DELETE declaring 2026-07-28', method: 'DELETE', headers: { 'mcp-protocol-version': '2026-07-28', 'mcp-session-id': 'abc' }, status: 405, rpcCode: -32600, allow: 'POST' },
  { name: '2026-07-28 JSON-RPC response', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2026-07-28' }, body: '{"jsonrpc":"2.0","id":1,"result":{}}', status: 400, rpcCode: -32600 },
];

describe('bad input never reaches the backend', () => {
  let stack: Stack;
  before(async () => {
    stack = await startStack({ policy: { limits: { maxBodyBytes: '64KiB' } } });
  });
  after(() => stack.close());

  for (const c of cases) {
    it(`${c.name} → ${c.status} ${c.rpcCode}`, async () => {
      const backend = stack.servers[0]!;
      backend.stats.reset();
      const url = new URL(stack.gw.url);
      if (c.path) url.pathname = c.path;
      const res = await request(url, { method: (c.method ?? 'POST') as 'POST', headers: c.headers, body: c.body });
      assert.equal(res.statusCode, c.status);
      if (c.allow) assert.equal(res.headers.allow, c.allow);
      assert.match(String(res.headers['content-type']), /application\/json/);
      const body = (await res.body.json()) as { jsonrpc: string; id: unknown; error: { code: number; message: string } };
      assert.equal(body.jsonrpc, '2.0');
      assert.equal(body.error.code, c.rpcCode);
      assert.equal(body.id, c.rpcId ?? null);
      assert.equal(typeof body.error.message, 'string');
      assert.equal(backend.stats.requests.length, 0, 'the backend received a request');
    });
  }

  it('counts every refusal above by its catalogue code', async () => {
    const metrics = await (await fetch(`${stack.gw.adminUrl}/metrics`)).text();
    const count = (reason: string) => Number(metrics.match(new RegExp(`^taskgate_rejected_requests_total\\{reason="${reason}"\\} (\\d+)`, 'm'))?.[1] ?? 0);
    assert.equal(count('TG_ERR_PARSE'), 7);
    assert.equal(count('TG_ERR_HEADER_MISMATCH'), 3, 'the invalid 2026 body never reached the header checks');
    assert.equal(count('TG_ERR_NOT_ACCEPTABLE'), 3);
    assert.equal(count('TG_ERR_NO_ROUTE'), 1);
    assert.equal(count('TG_ERR_BODY_TOO_LARGE'), 1);
  });

  it('a well-formed request with the same shapes does reach the backend (the table is not vacuous)', async () => {
    const backend = stack.servers[0]!;
    backend.stats.reset();
    const res = await request(stack.gw.url, {
      method: 'POST',
      headers: { ...LEGACY_POST_HEADERS },
      // Multi-byte UTF-8 (2, 3 and 4 bytes) is of course fine.
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'tést €😀', version: '0' } } }),
    });
    await res.body.text();
    assert.equal(res.statusCode, 200);
    assert.equal(backend.stats.requests.length, 1);
    assert.equal((backend.stats.requests[0]!.body as { params: { clientInfo: { name: string } } }).params.clientInfo.name, 'tést €😀');
  });

  it('what the era does not make certain still reaches the backend: a 2025 response and a 2025 GET', async () => {
    const backend = stack.servers[0]!;
    const init = await request(stack.gw.url, { method: 'POST', headers: { ...LEGACY_POST_HEADERS }, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '0' } } }) });
    await init.body.text();
    const session = { 'mcp-session-id': String(init.headers['mcp-session-id']) };
    backend.stats.reset();
    const answer = await request(stack.gw.url, { method: 'POST', headers: { ...LEGACY_POST_HEADERS, ...session }, body: '{"jsonrpc":"2.0","id":"srv-1","result":{}}' });
    await answer.body.text();
    const stream = await request(stack.gw.url, { method: 'GET', headers: { accept: 'text/event-stream', 'mcp-protocol-version': '2025-11-25', ...session } });
    assert.equal(stream.statusCode, 200);
    await stream.body.destroy();
    assert.deepEqual(backend.stats.requests.map((r) => r.method), ['POST', 'GET']);
  });
});
