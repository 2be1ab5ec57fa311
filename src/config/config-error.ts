/** The one error a bad policy file produces: every problem found, each with where it is. */

export interface ConfigIssue {
  /** Dotted YAML path such as `upstreams.tools.instances[1]`; empty for the document itself. */
  path: string;
  message: string;
  /** 1-based, when the YAML source can tell. */
  line?: number;
  col?: number;
}

/** `file:line:col path: message`, the form editors and CI annotations understand. */
export function formatIssue(source: string, issue: ConfigIssue): string {
  const where = issue.line === undefined ? source : `${source}:${issue.line}:${issue.col ?? 1}`;
  return issue.path === '' ? `${where}: ${issue.message}` : `${where} ${issue.path}: ${issue.message}`;
}

/**
 * A local error, never sent to a client. Its message lists every issue so that a plain
 * `console.error(err.message)` at startup is already a complete report.
 */
export class ConfigError extends Error {
  override readonly name = 'ConfigError';
  readonly source: string;
  readonly issues: readonly ConfigIssue[];

  constructor(source: string, issues: readonly ConfigIssue[], options?: { cause?: unknown }) {
    const count = issues.length === 1 ? '1 problem' : `${issues.length} problems`;
    super(`${source}: invalid policy, ${count}:\n${issues.map((i) => `  ${formatIssue(source, i)}`).join('\n')}`, options);
    this.source = source;
    this.issues = issues;
  }
}

/** Segments as zod and the YAML walker produce them, printed as a reader would write them. */
export function formatPath(segments: readonly PropertyKey[]): string {
  let out = '';
  for (const segment of segments) {
    if (typeof segment === 'number') out += `[${segment}]`;
    else if (typeof segment === 'string' && /^[A-Za-z0-9_$][\w$-]*$/.test(segment)) out += out === '' ? segment : `.${segment}`;
    else out += `[${JSON.stringify(String(segment))}]`;
  }
  return out;
}
