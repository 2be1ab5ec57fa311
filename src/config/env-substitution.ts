/**
 * `${NAME}` in YAML string values, replaced from the environment on the parsed document.
 *
 * Substituting in the document rather than in the text means a value can never change the
 * YAML structure (a secret containing `: ` or a newline stays one string), and positions
 * still point into the file as written. Keys are left alone: they are names that routes and
 * metrics refer to, and the policy's shape should not depend on the environment.
 *
 * Values are secrets as often as not, so nothing here puts a value into a message.
 */
import { isAlias, isMap, isPair, isScalar, isSeq, parse, Scalar, type Document, type Node } from 'yaml';
import type { PathSegment } from './yaml-positions.js';

export interface SubstitutionIssue {
  path: PathSegment[];
  message: string;
  offset?: number;
}

export interface SubstitutionResult {
  issues: SubstitutionIssue[];
  /** Paths whose value could not be substituted; schema problems there would only be noise. */
  unresolved: PathSegment[][];
}

const NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
const WHOLE_REFERENCE = /^\$\{[A-Za-z_][A-Za-z0-9_]*\}$/;

interface Expansion {
  value: string;
  problems: string[];
}

function expand(text: string, env: NodeJS.ProcessEnv): Expansion {
  let value = '';
  const problems: string[] = [];
  let i = 0;
  while (i < text.length) {
    const dollar = text.indexOf('$', i);
    if (dollar === -1) {
      value += text.slice(i);
      break;
    }
    value += text.slice(i, dollar);
    if (text.startsWith('$${', dollar)) {
      value += '${';
      i = dollar + 3;
    } else if (text.startsWith('${', dollar)) {
      const close = text.indexOf('}', dollar + 2);
      if (close === -1) {
        problems.push('unterminated "${" (write "$${" for a literal "${")');
        value += text.slice(dollar);
        break;
      }
      const name = text.slice(dollar + 2, close);
      if (!NAME.test(name)) {
        problems.push(`invalid variable reference ${JSON.stringify(text.slice(dollar, close + 1))}: a name is letters, digits and "_", not starting with a digit`);
      } else if (env[name] === undefined) {
        problems.push(`environment variable ${name} is not set`);
      } else {
        value += env[name];
      }
      i = close + 1;
    } else {
      value += '$';
      i = dollar + 1;
    }
  }
  return { value, problems };
}

/**
 * An unquoted `port: ${PORT}` should read as the number it would be had it been written out,
 * or no number could ever come from the environment. Quoted references stay strings, which is
 * the way to keep a digits-only secret a string. Only scalars qualify: a value is never
 * allowed to become a list or a map.
 */
function retype(value: string): string | number | boolean {
  try {
    const parsed: unknown = parse(value, { logLevel: 'silent' });
    if (typeof parsed === 'number' || typeof parsed === 'boolean') return parsed;
  } catch {
    // Not a YAML scalar; stays the string it is.
  }
  return value;
}

export function substituteEnv(doc: Document, env: NodeJS.ProcessEnv): SubstitutionResult {
  const result: SubstitutionResult = { issues: [], unresolved: [] };

  const visit = (node: unknown, path: PathSegment[]): void => {
    // An alias shares its anchor's node, which is substituted where it is defined.
    if (isAlias(node)) return;
    if (isMap(node)) {
      for (const pair of node.items) {
        if (!isPair(pair)) continue;
        if (!isScalar(pair.key)) {
          result.issues.push({ path, message: 'a key must be a plain name, not a list or map', offset: (pair.key as Node | null)?.range?.[0] });
          continue;
        }
        visit(pair.value, [...path, String(pair.key.value)]);
      }
    } else if (isSeq(node)) {
      node.items.forEach((item, index) => visit(item, [...path, index]));
    } else if (isScalar(node) && typeof node.value === 'string' && node.value.includes('$')) {
      const original = node.value;
      const { value, problems } = expand(original, env);
      if (problems.length > 0) {
        for (const message of problems) result.issues.push({ path, message, offset: node.range?.[0] });
        result.unresolved.push(path);
        return;
      }
      node.value = node.type === Scalar.PLAIN && WHOLE_REFERENCE.test(original) ? retype(value) : value;
    }
  };

  visit(doc.contents, []);
  return result;
}
