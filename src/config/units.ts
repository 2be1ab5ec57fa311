/**
 * Durations and sizes as operators write them (`30s`, `64KiB`) and as the gateway uses them
 * (milliseconds, bytes). The schemas keep the written form on their input side, so the
 * generated JSON Schema and docs show `30s` rather than `30000`.
 */
import { z } from 'zod';

const DURATION_UNITS_MS = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;
const SIZE_UNITS_BYTES = { B: 1, KiB: 1024, MiB: 1024 ** 2, GiB: 1024 ** 3 } as const;

/** Anchored so the JSON Schema `pattern` rejects exactly what the parser rejects. */
export const DURATION_PATTERN = /^(\d+)(ms|s|m|h|d)$/;
export const SIZE_PATTERN = /^(\d+)(B|KiB|MiB|GiB)?$/;

/**
 * Node timers overflow above 2^31-1 ms and then fire after 1 ms, so a huge timeout would
 * silently become an immediate one. Every duration in the policy ends up in a timer.
 */
export const MAX_DURATION_MS = 2 ** 31 - 1;

const DURATION_HINT = 'expected a duration such as 500ms, 30s, 5m or 1h (a whole number and a unit: ms, s, m, h, d)';
const SIZE_HINT = 'expected a size such as 512B, 64KiB or 1MiB (binary units: B, KiB, MiB, GiB), or a whole number of bytes';

/** `500ms` → 500, `5m` → 300000. Throws a RangeError naming the accepted forms. */
export function parseDuration(text: string): number {
  const match = DURATION_PATTERN.exec(text);
  if (!match) throw new RangeError(`${JSON.stringify(text)}: ${DURATION_HINT}`);
  const ms = Number(match[1]) * DURATION_UNITS_MS[match[2] as keyof typeof DURATION_UNITS_MS];
  if (ms > MAX_DURATION_MS) throw new RangeError(`${JSON.stringify(text)}: at most ${MAX_DURATION_MS}ms (about 24 days)`);
  return ms;
}

/** `64KiB` → 65536; a bare integer (number or digits) is already bytes. Throws a RangeError. */
export function parseSize(value: string | number): number {
  const text = String(value);
  const match = SIZE_PATTERN.exec(text);
  if (!match) throw new RangeError(`${JSON.stringify(text)}: ${SIZE_HINT}`);
  const bytes = Number(match[1]) * SIZE_UNITS_BYTES[(match[2] ?? 'B') as keyof typeof SIZE_UNITS_BYTES];
  if (!Number.isSafeInteger(bytes)) throw new RangeError(`${JSON.stringify(text)}: too large`);
  return bytes;
}

/**
 * The parse errors above quote the input, which is right for a CLI argument but not for a
 * policy value that may have come from the environment; so the schemas re-check with the
 * pattern first and report only the hint.
 */
export function durationSchema() {
  return z
    .string({ error: DURATION_HINT })
    .regex(DURATION_PATTERN, { error: DURATION_HINT })
    .transform((text, ctx) => {
      try {
        return parseDuration(text);
      } catch {
        ctx.issues.push({ code: 'custom', input: text, message: `at most ${MAX_DURATION_MS}ms (about 24 days)` });
        return z.NEVER;
      }
    })
    .meta({ title: 'duration' });
}

/** Sizes of zero make no sense for any limit we have, so they are rejected here. */
export function sizeSchema() {
  return z
    .union([z.int().nonnegative(), z.string().regex(SIZE_PATTERN, { error: SIZE_HINT })], { error: SIZE_HINT })
    .transform((value, ctx) => {
      let bytes: number;
      try {
        bytes = parseSize(value);
      } catch {
        ctx.issues.push({ code: 'custom', input: value, message: 'too large' });
        return z.NEVER;
      }
      if (bytes < 1) {
        ctx.issues.push({ code: 'custom', input: value, message: 'must be at least 1 byte' });
        return z.NEVER;
      }
      return bytes;
    })
    .meta({ title: 'size' });
}
