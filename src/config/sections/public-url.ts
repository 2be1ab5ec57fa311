/** `publicUrl`: the URL clients use, which the gateway needs for metadata and Host/Origin checks. */
import { z } from 'zod';

function publicUrlProblem(value: string): string | undefined {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return 'expected an absolute http(s) URL such as https://mcp.example.com';
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return 'expected an http or https URL';
  if (url.username || url.password) return 'must not contain credentials';
  // `new URL` drops an empty `?` or `#`, so the raw text is checked as well.
  if (url.search || url.hash || /[?#]/.test(value)) return 'must not have a query or fragment';
  return undefined;
}

export const publicUrlSchema = z
  .string()
  .superRefine((value, ctx) => {
    const problem = publicUrlProblem(value);
    if (problem) ctx.addIssue({ code: 'custom', message: problem });
  })
  .describe(
    'Canonical external URL of the gateway (absolute http(s), no query or fragment). ' +
      'Its hostname is the default allowed Host and its origin is always an allowed Origin.',
  );
