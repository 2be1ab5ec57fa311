/** `check-config <file>`: validate a policy without starting the gateway, for CI and editors. */
import { ConfigError, formatIssue } from './config-error.js';
import { loadConfig } from './load.js';

export interface CheckConfigOutput {
  log(line: string): void;
  error(line: string): void;
}

/** 0 when the policy is valid, 1 when it is not; one `file:line:col path: message` per problem. */
export async function checkConfigCommand(path: string, out: CheckConfigOutput): Promise<number> {
  try {
    await loadConfig(path);
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    for (const issue of err.issues) out.error(formatIssue(path, issue));
    return 1;
  }
  out.log(`${path}: OK`);
  return 0;
}
