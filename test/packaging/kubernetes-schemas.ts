/**
 * Kubernetes manifests checked against the official API schemas, offline: what kubeconform
 * does with `-strict`, from packages the npm registry serves.
 *
 * The schemas are those of kubernetes-models (core and apps APIs, generated from the
 * Kubernetes OpenAPI document; the pinned 4.5.1 matches Kubernetes v1.33) and of
 * @kubernetes-models/prometheus-operator (generated from the operator's CRDs). Each ships
 * two things made from the same schema, and both are used:
 *
 * - a compiled JSON Schema validator per kind (ajv): types, required fields, enums, formats;
 * - a TypeScript interface per kind. The OpenAPI document does not forbid unknown fields, so
 *   the validator alone would pass `readinesProbe:`, which the API server rejects (kubectl's
 *   default is --validate=strict). The interfaces list every field, so TypeScript's checker
 *   finds each unknown one, as kubeconform -strict does.
 *
 * A kind with no schema is a problem, never a pass (kubeconform's default), and so is an
 * alpha or beta API version: the chart promises only stable APIs.
 */
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

export type Manifest = { apiVersion?: unknown; kind?: unknown; metadata?: { name?: unknown }; [key: string]: unknown };

/** Where the schema of a kind lives; undefined for a group no installed package covers. */
function schemaModule(apiVersion: string, kind: string): string | undefined {
  if (!/^[A-Z][A-Za-z0-9]*$/.test(kind)) return undefined;
  if (apiVersion.startsWith('monitoring.coreos.com/')) return `@kubernetes-models/prometheus-operator/${apiVersion}/${kind}`;
  // Core (v1) and the built-in groups, which have no dot or end in .k8s.io.
  if (/^(v\d+|[a-z]+\/v\d+|[a-z.]+\.k8s\.io\/v\d+)$/.test(apiVersion)) return `kubernetes-models/${apiVersion}/${kind}`;
  return undefined;
}

const require = createRequire(import.meta.url);

/** The module's path if the package has a schema for this kind, else undefined. */
function resolveSchema(specifier: string): string | undefined {
  try {
    return require.resolve(specifier);
  } catch {
    return undefined;
  }
}

const describeManifest = (doc: Manifest, index: number) =>
  `${String(doc.kind ?? '?')}/${String(doc.metadata?.name ?? `#${index}`)}`;

interface Model {
  validate(): void;
}
type ModelClass = new (data: unknown) => Model;

/** Every problem of every manifest, as "Kind/name: path: message"; [] when all conform. */
export async function checkManifests(docs: Manifest[]): Promise<string[]> {
  const problems: string[] = [];
  const typed: Typed[] = [];
  for (const [index, doc] of docs.entries()) {
    const name = describeManifest(doc, index);
    const { apiVersion, kind } = doc;
    if (typeof apiVersion !== 'string' || typeof kind !== 'string') {
      problems.push(`${name}: apiVersion and kind must be strings`);
      continue;
    }
    if (!/(^|\/)v\d+$/.test(apiVersion)) {
      problems.push(`${name}: ${apiVersion} is not a stable API version`);
      continue;
    }
    const specifier = schemaModule(apiVersion, kind);
    if (!specifier || !resolveSchema(specifier)) {
      problems.push(`${name}: no schema for ${apiVersion} ${kind}`);
      continue;
    }
    const exports = (await import(specifier)) as Record<string, unknown>;
    const Kind = exports[kind] as ModelClass | undefined;
    if (typeof Kind !== 'function') {
      problems.push(`${name}: no schema for ${apiVersion} ${kind}`);
      continue;
    }
    try {
      new Kind(doc).validate();
    } catch (err) {
      // ajv's messages read "data/spec/replicas must be integer, data/... must be ...".
      for (const message of (err as Error).message.split(/, (?=data[/ ])/)) problems.push(`${name}: ${message.replace(/^data/, '')}`);
    }
    typed.push({ doc, index, specifier });
  }
  problems.push(...unknownFields(typed));
  return problems;
}

interface Typed {
  doc: Manifest;
  index: number;
  specifier: string;
}

/**
 * Every field no schema knows. Each manifest becomes a literal of its kind's interface in an
 * in-memory TypeScript program; the checker's contextual type of every object literal in it
 * is the schema type expected at that place, so a key that type lacks is an unknown field.
 * (Asking the checker directly, rather than reading its diagnostics, finds them all: its
 * diagnostics report one unknown field per literal and stop at the first failing branch.)
 * Maps (labels, annotations, ConfigMap data) have an index signature and take any key.
 */
function unknownFields(manifests: Typed[]): string[] {
  if (manifests.length === 0) return [];
  // A file beside this one, so that the packages resolve as they do for the tests.
  const fileName = fileURLToPath(new URL('./__rendered_manifests__.ts', import.meta.url));
  const text = [
    ...manifests.map(({ doc, specifier }, i) => `import type { I${String(doc.kind)} as Kind${i} } from ${JSON.stringify(specifier)};`),
    ...manifests.map(({ doc }, i) => `export const manifest${i}: Kind${i} = ${JSON.stringify(doc)};`),
  ].join('\n');

  const options: ts.CompilerOptions = {
    strict: true,
    noEmit: true,
    skipLibCheck: true,
    target: ts.ScriptTarget.ES2023,
    lib: ['lib.es2023.d.ts'],
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    types: [],
  };
  const host = ts.createCompilerHost(options);
  const source = ts.createSourceFile(fileName, text, ts.ScriptTarget.ES2023, true);
  const getSourceFile = host.getSourceFile.bind(host);
  const fileExists = host.fileExists.bind(host);
  host.getSourceFile = (name, ...rest) => (name === fileName ? source : getSourceFile(name, ...rest));
  host.fileExists = (name) => name === fileName || fileExists(name);
  const program = ts.createProgram([fileName], options, host);
  const checker = program.getTypeChecker();

  const literals = source.statements
    .filter(ts.isVariableStatement)
    .map((statement) => statement.declarationList.declarations[0]!.initializer as ts.ObjectLiteralExpression);
  // An import that does not resolve leaves the type `any`, which would accept anything.
  for (const [i, literal] of literals.entries()) {
    const type = checker.getContextualType(literal);
    if (!type || type.flags & (ts.TypeFlags.Any | ts.TypeFlags.Unknown)) {
      throw new Error(`no schema type for ${describeManifest(manifests[i]!.doc, manifests[i]!.index)} (${manifests[i]!.specifier})`);
    }
  }

  const problems: string[] = [];
  literals.forEach((literal, i) => {
    const name = describeManifest(manifests[i]!.doc, manifests[i]!.index);
    const visit = (node: ts.Node, path: string[]) => {
      if (ts.isObjectLiteralExpression(node)) {
        const expected = knownKeys(checker, node);
        for (const property of node.properties) {
          if (!ts.isPropertyAssignment(property) || !ts.isStringLiteral(property.name)) continue;
          const key = property.name.text;
          if (expected && !expected.keys.has(key)) problems.push(`${name}: /${[...path, key].join('/')}: unknown field "${key}" (not in ${expected.type})`);
          else visit(property.initializer, [...path, key]);
        }
      } else if (ts.isArrayLiteralExpression(node)) {
        node.elements.forEach((element, index) => visit(element, [...path, String(index)]));
      }
    };
    visit(literal, []);
  });
  return problems;
}

/** The keys the schema allows in this object literal; undefined when it allows any key. */
function knownKeys(checker: ts.TypeChecker, literal: ts.ObjectLiteralExpression): { keys: Set<string>; type: string } | undefined {
  const contextual = checker.getContextualType(literal);
  if (!contextual) return undefined;
  const candidates = (contextual.isUnion() ? contextual.types : [contextual]).filter((t) => t.flags & ts.TypeFlags.Object);
  if (candidates.length === 0) return undefined; // any, unknown: free-form
  if (candidates.some((t) => checker.getIndexInfosOfType(t).length > 0)) return undefined; // a map
  const keys = new Set(candidates.flatMap((t) => checker.getPropertiesOfType(t).map((p) => p.name)));
  // Named interfaces (IContainer) say where; the CRDs' inline types are too long to print.
  const names = candidates.map((t) => checker.typeToString(t));
  return { keys, type: names.every((n) => /^\w+$/.test(n)) ? names.join(' | ') : 'the schema' };
}
