import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { logDestination } from '../../../src/observability/logger.js';

async function withFile(run: (file: string) => Promise<void>): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'taskgate-log-'));
  try {
    await run(join(dir, 'log.jsonl'));
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

const ready = (stream: ReturnType<typeof logDestination>) =>
  new Promise<void>((resolve) => ((stream as unknown as { fd: number }).fd >= 0 ? resolve() : (stream as unknown as NodeJS.EventEmitter).once('ready', () => resolve())));

describe('logDestination', () => {
  it('unbuffered: every line is on disk when write returns', async () => {
    await withFile(async (file) => {
      const stream = logDestination(file, { buffered: false, flushInterval: 250 }, () => assert.fail('nothing is dropped'));
      stream.write('{"msg":"one"}\n');
      assert.equal(await readFile(file, 'utf8'), '{"msg":"one"}\n');
      stream.end();
    });
  });

  it('buffered: a line waits for its batch, then is written within the flush interval', async () => {
    await withFile(async (file) => {
      const stream = logDestination(file, { buffered: true, flushInterval: 50 }, () => assert.fail('nothing is dropped'));
      await ready(stream);
      stream.write('{"msg":"one"}\n');
      assert.equal(await readFile(file, 'utf8'), '', 'a short line is held for the batch');
      let written = '';
      for (let waited = 0; waited < 2000 && written === ''; waited += 25) {
        await sleep(25);
        written = await readFile(file, 'utf8');
      }
      assert.equal(written, '{"msg":"one"}\n');
      stream.end();
    });
  });

  it('buffered: a destination that cannot keep up drops lines past 16 MiB and says so', async () => {
    await withFile(async (file) => {
      let dropped = 0;
      const stream = logDestination(file, { buffered: true, flushInterval: 1000 }, () => dropped++);
      await ready(stream);
      const line = `${JSON.stringify({ msg: 'x'.repeat(1000) })}\n`;
      // Written in one synchronous burst: no batch can reach the file meanwhile.
      const lines = Math.ceil((17 * 1024 * 1024) / line.length);
      for (let i = 0; i < lines; i++) stream.write(line);
      assert.ok(dropped > 0 && dropped < lines, `${dropped} of ${lines} lines dropped`);
      await new Promise<void>((resolve) => {
        (stream as unknown as NodeJS.EventEmitter).once('finish', () => resolve());
        stream.end();
      });
      const kept = (await readFile(file, 'utf8')).split('\n').filter(Boolean);
      assert.equal(kept.length, lines - dropped, 'every line not dropped is written whole');
      for (const entry of kept) assert.equal(entry, line.trimEnd());
    });
  });
});
