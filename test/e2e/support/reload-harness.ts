/**
 * What the policy reload tests share: log capture, a readiness watch that
 * runs for the whole of a test, and the policy of a task stack rebuilt with changes.
 */
import { Writable } from 'node:stream';
import type { Config } from '../../../src/config/index.js';
import { testPolicy, type PolicyOverrides } from './harness.js';
import type { TaskStack } from './task-harness.js';

export interface CapturedLines {
  readonly stream: Writable;
  readonly lines: string[];
  /** The parsed lines whose msg starts with `prefix`. */
  find(prefix: string): Array<Record<string, unknown>>;
}

export function captureLines(): CapturedLines {
  const lines: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(...chunk.toString().split('\n').filter(Boolean));
      done();
    },
  });
  return {
    stream,
    lines,
    find: (prefix) => lines.map((l) => JSON.parse(l) as Record<string, unknown>).filter((l) => String(l.msg).startsWith(prefix)),
  };
}

/** Asks /readyz every few milliseconds until stopped; resolves with every status seen. */
export function watchReadiness(adminUrl: string): { stop(): Promise<number[]> } {
  const statuses: number[] = [];
  let running = true;
  const loop = (async () => {
    while (running) {
      const res = await fetch(`${adminUrl}/readyz`);
      await res.text();
      statuses.push(res.status);
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
  })();
  return {
    async stop() {
      running = false;
      await loop;
      return statuses;
    },
  };
}

/** The policy startTaskStack built, with `overrides` (and `urls`, when given, as the instances). */
export function taskStackPolicy(stack: TaskStack, overrides: PolicyOverrides = {}, urls = stack.backends.map((b) => b.url)): Config {
  return testPolicy(urls, { auth: { mode: 'jwt', issuers: [{ issuer: stack.jwks.issuer, jwksUri: stack.jwks.url }] }, ...overrides });
}
