/**
 * Maps between paths (as zod reports them) and offsets in the YAML source, so every problem
 * can be reported at the line and column an editor should jump to.
 */
import { isAlias, isMap, isPair, isScalar, isSeq, type Document, type Node } from 'yaml';

export type PathSegment = string | number;

function resolveAlias(doc: Document, node: unknown): unknown {
  return isAlias(node) ? node.resolve(doc) : node;
}

function startOf(node: unknown): number | undefined {
  return (node as Node | null)?.range?.[0] ?? undefined;
}

/**
 * Where the problem at `path` should be shown: the key itself for problems with a key (an
 * unknown or badly named key), otherwise the value. A missing key is shown at its parent's
 * key; at the top level there is no better place than none.
 */
export function offsetOfPath(doc: Document, path: readonly PathSegment[], atKey: boolean): number | undefined {
  let node: unknown = doc.contents;
  let keyNode: unknown;
  for (const segment of path) {
    node = resolveAlias(doc, node);
    if (isMap(node)) {
      const pair = node.items.find((p) => isScalar(p.key) && String(p.key.value) === String(segment));
      if (!pair) return startOf(keyNode);
      keyNode = pair.key;
      node = pair.value;
    } else if (isSeq(node) && typeof segment === 'number' && segment < node.items.length) {
      keyNode = node.items[segment];
      node = node.items[segment];
    } else {
      return startOf(keyNode);
    }
  }
  if (atKey) return startOf(keyNode) ?? startOf(node);
  return startOf(node) ?? startOf(keyNode);
}

function contains(node: unknown, offset: number): boolean {
  const range = (node as Node | null)?.range;
  return !!range && range[0] <= offset && offset <= range[2];
}

/** The deepest path whose key or value spans `offset`; used to place YAML syntax errors. */
export function pathAtOffset(doc: Document, offset: number): PathSegment[] {
  const path: PathSegment[] = [];
  let node: unknown = doc.contents;
  while (true) {
    if (isMap(node)) {
      const pair = node.items.find((p) => isPair(p) && (contains(p.key, offset) || contains(p.value, offset)));
      if (!pair || !isScalar(pair.key)) return path;
      path.push(String(pair.key.value));
      if (!contains(pair.value, offset)) return path;
      node = pair.value;
    } else if (isSeq(node)) {
      const index = node.items.findIndex((item) => contains(item, offset));
      if (index === -1) return path;
      path.push(index);
      node = node.items[index];
    } else {
      return path;
    }
  }
}
