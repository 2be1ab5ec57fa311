/**
 * The Helm chart's files as the chart tests read them: paths, values (with Helm's own
 * coalescing), the policies it embeds, and the keys values.yaml documents.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { isMap, isScalar, isSeq, parseDocument, type Node } from 'yaml';
import { ConfigError, parseConfig } from '../../src/config/index.js';

export const ROOT = new URL('../../', import.meta.url).pathname;
export const HELM_DIR = join(ROOT, 'helm');
export const CHART = join(HELM_DIR, 'taskgate');
export const TEMPLATES = join(CHART, 'templates');
export const EXAMPLES = join(CHART, 'examples');
export const POLICY_PATH = '/etc/taskgate/taskgate.yaml';

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
export type Values = Record<string, Json>;

export function filesUnder(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    const full = join(dir, name);
    if (statSync(full).isDirectory()) out.push(...filesUnder(full));
    else out.push(full);
  }
  return out.sort();
}

export const rel = (file: string) => relative(ROOT, file);
export const isObject = (value: unknown): value is Record<string, Json> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

export function readYaml(file: string): Values {
  const value: unknown = parseDocument(readFileSync(file, 'utf8')).toJS();
  assert.ok(isObject(value), `${rel(file)} is not a YAML mapping`);
  return value;
}

export const templateFiles = () => filesUnder(TEMPLATES);
export const templateText = () => templateFiles().map((f) => readFileSync(f, 'utf8')).join('\n');
export const defaults = () => readYaml(join(CHART, 'values.yaml'));
export const exampleValueFiles = () =>
  readdirSync(EXAMPLES)
    .filter((name) => /^values-.*\.ya?ml$/.test(name))
    .map((name) => join(EXAMPLES, name));

/** Helm's coalescing of a values file into the chart's defaults: maps merge, null deletes, the rest replaces. */
export function helmMerge(base: Values, override: Values): Values {
  const out: Values = { ...base };
  for (const [key, value] of Object.entries(override)) {
    if (value === null) delete out[key];
    else if (isObject(value) && isObject(out[key])) out[key] = helmMerge(out[key] as Values, value);
    else out[key] = value;
  }
  return out;
}

/** The values a release renders with: values.yaml, then the example file if any. */
export function effectiveValues(file?: string): Values {
  return file ? helmMerge(defaults(), readYaml(file)) : defaults();
}

/** Every `${NAME}` in the string values of a policy (`$${` is a literal, not a reference). */
export function envReferences(value: Json, out = new Set<string>()): Set<string> {
  if (typeof value === 'string') {
    for (const match of value.matchAll(/(\$?)\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g)) if (match[1] === '') out.add(match[2]!);
  } else if (Array.isArray(value)) value.forEach((item) => envReferences(item, out));
  else if (isObject(value)) Object.values(value).forEach((item) => envReferences(item, out));
  return out;
}

/** 32 random-looking bytes in base64: acceptable for every kind of secret a policy takes (tokens, passwords, snapshot keys, salts). */
export const PLACEHOLDER_SECRET = Buffer.alloc(32, 0x5a).toString('base64');

/**
 * Validates a policy as the chart ships it. Values are already parsed (Helm does the same),
 * so the policy is handed to taskgate as JSON text: every string stays a string, as the chart
 * keeps "${NAME}" quoted in the ConfigMap.
 */
export function validatePolicy(policy: Json, source: string) {
  const env = Object.fromEntries([...envReferences(policy)].map((name) => [name, PLACEHOLDER_SECRET]));
  try {
    return parseConfig(JSON.stringify(policy, null, 2), { env, source });
  } catch (err) {
    if (err instanceof ConfigError) assert.fail(err.message);
    throw err;
  }
}

/** Every `.Values.a.b.c` a template reads (also `$.Values…`), as paths. */
export function valueReferences(text: string): string[] {
  const refs = new Set<string>();
  for (const match of text.matchAll(/\.Values((?:\.[A-Za-z_][A-Za-z0-9_]*)+)/g)) refs.add(match[1]!.slice(1));
  return [...refs].sort();
}

export function hasPath(values: Values, path: string): boolean {
  let node: Json = values;
  for (const segment of path.split('.')) {
    if (!isObject(node) || !(segment in node)) return false;
    node = node[segment]!;
  }
  return true;
}

/** Leaf paths of values.yaml, not descending into `policy` (the policy has its own reference) or lists. */
export function leafPaths(value: Json, prefix = ''): string[] {
  if (!isObject(value) || Object.keys(value).length === 0 || prefix === 'policy') return [prefix];
  return Object.entries(value).flatMap(([key, child]) => leafPaths(child, prefix ? `${prefix}.${key}` : key));
}

/** Keys of values.yaml that no comment describes (keys inside list items are described by the item's comment). */
export function undocumentedKeys(node: Node | null | undefined, prefix = ''): string[] {
  if (!isMap(node)) return [];
  const missing: string[] = [];
  node.items.forEach((pair, index) => {
    const key = isScalar(pair.key) ? String(pair.key.value) : '?';
    const path = prefix ? `${prefix}.${key}` : key;
    const keyNode = pair.key as Node | null;
    const valueNode = pair.value as Node | null;
    const documented =
      Boolean(keyNode?.commentBefore) ||
      Boolean(isScalar(valueNode) && valueNode.comment) ||
      (index === 0 && Boolean(node.commentBefore));
    if (!documented) missing.push(path);
    if (!isSeq(valueNode)) missing.push(...undocumentedKeys(valueNode, path));
  });
  return missing;
}
