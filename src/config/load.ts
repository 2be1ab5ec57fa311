/** Reading a policy file: YAML, `${NAME}` substitution, validation, one report of everything. */
import { readFile } from 'node:fs/promises';
import { LineCounter, parseDocument } from 'yaml';
import { ConfigError, formatPath, type ConfigIssue } from './config-error.js';
import { substituteEnv } from './env-substitution.js';
import type { Config } from './schema.js';
import { checkConfig } from './validate.js';
import { offsetOfPath, pathAtOffset, type PathSegment } from './yaml-positions.js';

export interface ParseConfigOptions {
  /** Where `${NAME}` values come from; defaults to process.env. */
  env?: NodeJS.ProcessEnv;
  /** Names the file in messages; defaults to "policy". */
  source?: string;
}

function isUnder(path: readonly PathSegment[], prefix: readonly PathSegment[]): boolean {
  return prefix.length <= path.length && prefix.every((segment, i) => segment === path[i]);
}

function byPosition(a: ConfigIssue, b: ConfigIssue): number {
  return (a.line ?? Infinity) - (b.line ?? Infinity) || (a.col ?? 0) - (b.col ?? 0);
}

/**
 * Everything wrong with the file is collected before throwing: YAML errors do not stop the
 * schema check, because the yaml parser recovers well and a second run to find the next
 * problem is what this is meant to spare.
 */
export function parseConfig(text: string, opts: ParseConfigOptions = {}): Config {
  const source = opts.source ?? 'policy';
  const lineCounter = new LineCounter();
  // logLevel 'error': yaml would otherwise print its warnings to stderr; they are collected below.
  const doc = parseDocument(text, { lineCounter, prettyErrors: false, logLevel: 'error' });
  const issues: ConfigIssue[] = [];
  const add = (path: readonly PathSegment[], message: string, offset: number | undefined) => {
    issues.push({ path: formatPath(path), message, ...(offset === undefined ? {} : lineCounter.linePos(offset)) });
  };

  for (const problem of [...doc.errors, ...doc.warnings]) {
    add(pathAtOffset(doc, problem.pos[0]), problem.message, problem.pos[0]);
  }

  const substitution = substituteEnv(doc, opts.env ?? process.env);
  for (const issue of substitution.issues) add(issue.path, issue.message, issue.offset);

  let input: unknown;
  try {
    input = doc.toJS();
  } catch (err) {
    // Too many aliases (a "billion laughs" document) or an alias to nothing.
    add([], `cannot read the YAML document: ${(err as Error).message}`, undefined);
    throw new ConfigError(source, issues.sort(byPosition), { cause: err });
  }

  if (input === null || input === undefined) {
    add([], 'the policy is empty; it needs at least publicUrl, upstreams and routes', undefined);
  } else {
    const result = checkConfig(input);
    if (result.ok && issues.length === 0) return result.config;
    if (!result.ok) {
      for (const issue of result.issues) {
        if (substitution.unresolved.some((prefix) => isUnder(issue.path, prefix))) continue;
        add(issue.path, issue.message, offsetOfPath(doc, issue.path, issue.atKey));
      }
    }
  }
  throw new ConfigError(source, issues.sort(byPosition));
}

export async function loadConfig(path: string, env: NodeJS.ProcessEnv = process.env): Promise<Config> {
  return parseConfig(await readPolicyText(path), { env, source: path });
}

/** The policy file's text (a reload hashes it before parsing); ConfigError if it cannot be read. */
export async function readPolicyText(path: string): Promise<string> {
  try {
    return await readFile(path, 'utf8');
  } catch (err) {
    const reason = (err as NodeJS.ErrnoException).code ?? (err as Error).message;
    throw new ConfigError(path, [{ path: '', message: `cannot read the policy file (${reason})` }], { cause: err });
  }
}
