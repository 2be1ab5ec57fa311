import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import pino from 'pino';
import { auditLine, createAuditLog, type AuditEvent } from '../../../src/observability/audit.js';

const event: AuditEvent = {
  principal: { issuer: 'https://issuer.example', subject: 'alice "the" \\ admin', tenant: undefined, clientId: 'cli' },
  tool: 'slow_scan',
  upstream: 'tools',
  instance: undefined,
  source: '127.0.0.1',
  requestId: 'req-1',
  event: 'get',
  allowed: true,
  reason: undefined,
  handle: 'tg_abc\u2028\ud800',
  handleHash: 'h1',
  status: 'working',
};

describe('audit lines', () => {
  it('are what pino wrote for the same event: same fields, same order, undefined ones left out', () => {
    const written: string[] = [];
    const reference = pino(
      { base: { log: 'audit' }, timestamp: () => ',"time":"T"', messageKey: 'msg' },
      { write: (line: string) => void written.push(line) },
    );
    reference.info(event, event.event);
    const ours = JSON.parse(auditLine(event)) as Record<string, unknown>;
    const theirs = JSON.parse(written[0]!) as Record<string, unknown>;
    assert.deepEqual(Object.keys(ours), Object.keys(theirs));
    assert.deepEqual({ ...ours, time: 'T' }, theirs);
    assert.equal(ours.level, 30);
    assert.equal(ours.msg, 'get');
    assert.ok(!('instance' in ours) && !('reason' in ours), 'undefined fields are left out');
  });

  it('is one line of well-formed JSON whatever the strings hold', () => {
    const line = auditLine(event);
    assert.ok(line.endsWith('}\n') && line.indexOf('\n') === line.length - 1, 'exactly one newline, at the end');
    assert.ok(line.includes('\\ud800'), 'a lone surrogate is escaped (well-formed JSON.stringify)');
    assert.equal((JSON.parse(line) as { handle: string }).handle, event.handle);
  });

  it('goes to every destination, one write per event', () => {
    const lines: string[] = [];
    const sink = new Writable({
      write(chunk: Buffer, _encoding, done) {
        lines.push(chunk.toString('utf8'));
        done();
      },
    });
    const audit = createAuditLog({ stdout: false } as never, { buffered: false, flushInterval: 250 }, () => undefined, sink as never);
    audit.record({ event: 'denied', allowed: false, reason: 'not_found', handle: 'x' });
    assert.equal(lines.length, 1);
    const { time, ...rest } = JSON.parse(lines[0]!) as Record<string, unknown>;
    assert.match(String(time), /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    assert.deepEqual(rest, { level: 30, log: 'audit', event: 'denied', allowed: false, reason: 'not_found', handle: 'x', msg: 'denied' });
  });
});
