/**
 * A hostile client's traffic, the same every time for a given seed: malformed and oversized
 * bodies, invalid UTF-8, deep nesting, prototype-pollution keys, wrong media types, bad and
 * missing tokens, random session ids, headers and methods, unknown task handles and cursors,
 * 2026 responses, plain and well-formed calls in between. What a fuzzer throws at the gateway,
 * made repeatable so that rounds of it can be compared.
 */
import { Agent, request } from 'undici';

export interface HostileTarget {
  /** The gateway's MCP endpoint. */
  url: string;
  /** Authorization values of real principals (a bounded set, as real traffic has). */
  tokens: string[];
}

/** A small deterministic generator (a linear congruential one): the same seed, the same traffic. */
function seeded(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    return state / 2 ** 32;
  };
}

const MODERN_META = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientInfo': { name: 'fuzz', version: '0' } };

/** Sends `count` hostile requests, `concurrency` at a time, on a pool of its own that is closed after. */
export async function sendHostileTraffic(target: HostileTarget, count: number, seed: number, concurrency = 16): Promise<{ answered: number; failed: number }> {
  const random = seeded(seed);
  const pick = <T>(options: readonly T[]): T => options[Math.floor(random() * options.length)]!;
  const text = (max: number): string => random().toString(36).slice(2).repeat(Math.ceil((random() * max) / 10) + 1).slice(0, max);
  const agent = new Agent({ connections: concurrency, headersTimeout: 10_000, bodyTimeout: 10_000 });
  let answered = 0;
  let failed = 0;
  const one = async (i: number): Promise<void> => {
    const headers: Record<string, string> = {
      'content-type': pick(['application/json', 'application/json', 'text/plain', 'application/json; charset=latin1', 'multipart/form-data']),
      accept: pick(['application/json, text/event-stream', 'application/json, text/event-stream', '*/*', 'text/event-stream', 'application/json']),
      'mcp-protocol-version': pick(['2025-11-25', '2025-11-25', '2026-07-28', text(40), '1999-01-01']),
      authorization: pick([...target.tokens, ...target.tokens, `Bearer ${text(2000)}`, 'Basic Zm9vOmJhcg==', 'Bearer']),
      'x-request-id': pick([text(20), text(300), '../../etc/passwd']),
    };
    if (random() < 0.4) headers['mcp-session-id'] = pick([text(36), text(300), '']);
    if (random() < 0.3) headers['mcp-method'] = pick(['tools/call', 'tasks/get', text(30)]);
    if (random() < 0.3) headers['mcp-name'] = pick([text(30), `=?base64?${text(20)}?=`]);
    if (random() < 0.05) headers.origin = `http://${text(12)}.example`;
    const method = random() < 0.1 ? pick(['GET', 'DELETE', 'PUT', 'OPTIONS', 'PATCH']) : 'POST';
    const path = pick(['', '', '', `?q=${text(50)}`, `/${text(20)}`]);
    let body: string | Buffer | undefined;
    switch (Math.floor(random() * 12)) {
      case 0:
        body = `{"jsonrpc":"2.0",${text(500)}`;
        break;
      case 1:
        body = Buffer.concat([Buffer.from('{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"'), Buffer.from([0xff, 0xc0, 0xaf, 0xed, 0xa0, 0x80]), Buffer.from('"}}')]);
        break;
      case 2:
        body = JSON.stringify({ jsonrpc: '2.0', id: i, method: 'tasks/get', params: { taskId: text(32) } });
        break;
      case 3:
        body = JSON.stringify({ jsonrpc: '2.0', id: i, method: 'tasks/get', params: { taskId: text(32), _meta: { ...MODERN_META, 'io.modelcontextprotocol/clientCapabilities': { extensions: { 'io.modelcontextprotocol/tasks': {} } } } } });
        break;
      case 4:
        body = JSON.stringify({ jsonrpc: '2.0', id: text(40), method: `${text(10)}/${text(10)}`, params: { [text(8)]: text(100) } });
        break;
      case 5:
        body = `${'['.repeat(2000)}${']'.repeat(2000)}`;
        break;
      case 6:
        body = JSON.stringify({ jsonrpc: '2.0', id: `tg-${text(20)}`, result: { content: [] } });
        break;
      case 7:
        body = JSON.stringify({ jsonrpc: '2.0', id: i, method: 'tasks/list', params: { cursor: text(60) } });
        break;
      case 8:
        body = JSON.stringify({ jsonrpc: '2.0', id: i, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: text(20), version: '0' } } });
        break;
      case 9:
        body = Buffer.alloc(70 * 1024 + Math.floor(random() * 4096), 0x20);
        break;
      case 10:
        body = `{"jsonrpc":"2.0","id":1,"method":"ping","__proto__":{"polluted":true},"params":{"constructor":{"prototype":{"x":1}}}}`;
        break;
      default:
        body = JSON.stringify({ jsonrpc: '2.0', id: i, method: 'tools/call', params: { name: pick(['echo', text(10)]), arguments: { text: text(3000) }, task: random() < 0.1 ? { ttl: -1 } : undefined } });
    }
    try {
      const res = await request(`${target.url}${path}`, { method: method as 'POST', headers, body: method === 'GET' || method === 'OPTIONS' ? undefined : body, dispatcher: agent });
      await res.body.dump();
      answered++;
    } catch {
      failed++;
    }
  };
  try {
    for (let next = 0; next < count; next += concurrency) {
      await Promise.all(Array.from({ length: Math.min(concurrency, count - next) }, (_, k) => one(next + k)));
    }
  } finally {
    await agent.close();
  }
  return { answered, failed };
}
