import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import pino from 'pino';
import { buildLoggerOptions, createGeneralLogger, writeInfoLine } from '../../../src/observability/logger.js';

const fields = {
  method: 'POST',
  path: '/mcp',
  status: 200,
  ms: 0.4,
  rpcMethod: 'tasks/get',
  era: 'modern',
  upstream: 'tools',
  instance: undefined,
  principal: 'p "quoted" \\ key\u2028',
  task: 'h1',
  aborted: undefined,
};

function capture(): { lines: string[]; stream: pino.DestinationStream } {
  const lines: string[] = [];
  return { lines, stream: { write: (line: string) => void lines.push(line) } };
}

describe('the request log line', () => {
  it('is what pino writes for the same fields, bindings and message: same members, same order', () => {
    const ours = capture();
    const theirs = capture();
    const fast = createGeneralLogger('info', ours.stream).child({ reqId: 'r-1' });
    const reference = pino(buildLoggerOptions('info'), theirs.stream).child({ reqId: 'r-1' });
    writeInfoLine(fast, fields, 'request');
    reference.info(fields, 'request');
    assert.equal(ours.lines.length, 1);
    assert.ok(ours.lines[0]!.endsWith('}\n') && ours.lines[0]!.indexOf('\n') === ours.lines[0]!.length - 1);
    const a = JSON.parse(ours.lines[0]!) as Record<string, unknown>;
    const b = JSON.parse(theirs.lines[0]!) as Record<string, unknown>;
    assert.deepEqual(Object.keys(a), Object.keys(b));
    assert.deepEqual({ ...a, time: 'T' }, { ...b, time: 'T' });
    assert.equal(a.reqId, 'r-1');
    assert.equal(a.service, 'taskgate');
    assert.ok(!('instance' in a), 'undefined fields are left out');
  });

  it('follows the level: nothing below it is written', () => {
    const ours = capture();
    writeInfoLine(createGeneralLogger('warn', ours.stream).child({ reqId: 'r-2' }), fields, 'request');
    assert.equal(ours.lines.length, 0);
  });

  it('goes through pino on a logger built with other options', () => {
    const theirs = capture();
    const other = pino({ messageKey: 'message', base: undefined }, theirs.stream);
    writeInfoLine(other, { status: 200 }, 'request');
    assert.deepEqual(Object.keys(JSON.parse(theirs.lines[0]!) as object), ['level', 'time', 'status', 'message']);
  });
});
