/**
 * The call a gateway-run task makes, as captured from the client's tools/call
 * (src/provided/call-start.ts's captureCall): the backend gets a plain call it cannot make a
 * task of, and a retry carries the protocol's headers, never the client's credentials.
 * startCall's body is tested with the runner, against a real backend (call-runner.test.ts).
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { IncomingHttpHeaders } from 'node:http';
import { captureCall } from '../../../src/provided/call-start.js';

const EXTENSION = 'io.modelcontextprotocol/tasks';
const CAPABILITIES = 'io.modelcontextprotocol/clientCapabilities';

const withHeaders = (headers: IncomingHttpHeaders) => headers;
const NO_HEADERS = withHeaders({});

describe('captureCall', () => {
  it('drops the client\'s task request: the backend gets the plain call', () => {
    const call = captureCall(NO_HEADERS, { name: 'slow_scan', arguments: { depth: 2 }, task: { ttl: 60_000 } });
    assert.deepEqual(call.params, { name: 'slow_scan', arguments: { depth: 2 } });
  });

  it('2026: takes the tasks extension out of the client\'s declared capabilities, keeping the rest of _meta', () => {
    const params = {
      name: 'slow_scan',
      _meta: { progressToken: 'p1', [CAPABILITIES]: { sampling: {}, extensions: { [EXTENSION]: {}, 'example.com/other': { v: 1 } } } },
    };
    const call = captureCall(NO_HEADERS, params);
    assert.deepEqual(call.params._meta, { progressToken: 'p1', [CAPABILITIES]: { sampling: {}, extensions: { 'example.com/other': { v: 1 } } } });
    assert.deepEqual(params._meta[CAPABILITIES].extensions, { [EXTENSION]: {}, 'example.com/other': { v: 1 } }, 'the client\'s message is left as it came');
  });

  it('leaves a _meta without declared capabilities, or with malformed ones, as it is', () => {
    for (const meta of [{ progressToken: 1 }, { [CAPABILITIES]: 'all' }, { [CAPABILITIES]: { extensions: 'tasks' } }, { [CAPABILITIES]: { extensions: [EXTENSION] } }]) {
      assert.deepEqual(captureCall(NO_HEADERS, { name: 't', _meta: meta }).params._meta, meta, JSON.stringify(meta));
    }
    assert.equal('_meta' in captureCall(NO_HEADERS, { name: 't' }).params, false, 'no _meta made up');
    assert.deepEqual(captureCall(NO_HEADERS, { name: 't', _meta: 'odd' }).params._meta, 'odd', 'a _meta that is no object is the backend\'s to refuse');
  });

  it('keeps the protocol\'s headers for a retry, and never the session, cookies or credentials', () => {
    const call = captureCall(
      withHeaders({
        'mcp-protocol-version': '2026-07-28',
        'mcp-method': 'tools/call',
        'mcp-name': 'slow_scan',
        'mcp-param-region': 'eu',
        'mcp-session-id': 'session-of-the-client',
        authorization: 'Bearer client-token',
        cookie: 'sid=1',
        'x-api-key': 'k',
        'content-type': 'application/json',
        traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',
      }),
      { name: 'slow_scan' },
    );
    assert.deepEqual(call.headers, { 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call', 'mcp-name': 'slow_scan', 'mcp-param-region': 'eu' });
  });

  it('keeps no header that came more than once (not a single value it could send again)', () => {
    const call = captureCall(withHeaders({ 'mcp-param-x': ['a', 'b'], 'mcp-protocol-version': '2025-11-25' }), { name: 't' });
    assert.deepEqual(call.headers, { 'mcp-protocol-version': '2025-11-25' });
  });
});
