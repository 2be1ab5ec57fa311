/**
 * Writes the generated references: config/taskgate.schema.json and docs/policy.md from the
 * config schema, docs/errors.md from the error catalogue, docs/metrics.md and the Grafana
 * dashboard from the metrics registry.
 * Usage: npx tsx scripts/gen-config-schema.ts [--check]
 * With --check nothing is written; the exit code is 1 if a committed file is stale.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { configJsonSchema } from '../src/config/json-schema.js';
import { renderPolicyDoc } from '../src/config/policy-doc.js';
import { isRestartOnly } from '../src/reload/policy-diff.js';
import { renderErrorsDoc } from './render-errors-doc.js';
import { renderDashboard, renderMetricsDoc } from './render-observability.js';

const repoRoot = fileURLToPath(new URL('..', import.meta.url));

export interface GeneratedFile {
  /** Relative to the repository root. */
  path: string;
  content: string;
}

export function generatedFiles(): GeneratedFile[] {
  const schema = configJsonSchema();
  return [
    { path: 'config/taskgate.schema.json', content: `${JSON.stringify(schema, null, 2)}\n` },
    { path: 'docs/policy.md', content: renderPolicyDoc(schema, isRestartOnly) },
    { path: 'docs/errors.md', content: renderErrorsDoc() },
    { path: 'docs/metrics.md', content: renderMetricsDoc() },
    { path: 'helm/taskgate/files/grafana-dashboard.json', content: renderDashboard() },
  ];
}

/** The generated files whose committed copy differs from what would be written (or is missing). */
export async function findStaleFiles(root = repoRoot): Promise<string[]> {
  const stale: string[] = [];
  for (const file of generatedFiles()) {
    const committed = await readFile(join(root, file.path), 'utf8').catch(() => undefined);
    if (committed !== file.content) stale.push(file.path);
  }
  return stale;
}

async function main(args: string[]): Promise<number> {
  if (args.includes('--check')) {
    const stale = await findStaleFiles();
    for (const path of stale) console.error(`${path} is stale; run: npx tsx scripts/gen-config-schema.ts`);
    return stale.length === 0 ? 0 : 1;
  }
  for (const file of generatedFiles()) {
    await writeFile(join(repoRoot, file.path), file.content);
    console.log(`wrote ${file.path}`);
  }
  return 0;
}

// Imported by the staleness test, run as a script by people and CI.
if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  process.exitCode = await main(process.argv.slice(2));
}
