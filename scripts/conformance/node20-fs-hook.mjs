// Module hooks that give ESM importers of `fs` / `node:fs` a module with a small `globSync`
// when the running Node lacks one (Node 20). Registered by register-hook.mjs.
//
// globSync is hand-written rather than taken from a package because Node 20 ships no
// fs.globSync (added in 22.0) and the conformance suites call it as `globSync('**/checks.json',
// { cwd })` when reading result folders. Only what that call needs is supported: `*`, `**`, `?`,
// `{a,b}`, string or array patterns, `cwd`, and results relative to `cwd` like Node 22's.
import * as realFs from 'node:fs';

const SHIM_URL = 'taskgate-node20-fs:fs';
const needsShim = typeof realFs.globSync !== 'function';

export async function resolve(specifier, context, nextResolve) {
  if (needsShim && (specifier === 'fs' || specifier === 'node:fs') && context.parentURL !== SHIM_URL) {
    return { url: SHIM_URL, shortCircuit: true };
  }
  return nextResolve(specifier, context);
}

export async function load(url, context, nextLoad) {
  if (url !== SHIM_URL) return nextLoad(url, context);
  return { format: 'module', shortCircuit: true, source: SHIM_SOURCE };
}

// The shim re-exports the real builtin (the import below is not redirected, because its parent
// is the shim itself) and adds globSync. It runs inside the loader's importing thread, so it is
// shipped as source text rather than as a function reference.
const SHIM_SOURCE = `
import fs from 'node:fs';
import { join, relative, sep } from 'node:path';
export * from 'node:fs';
export default fs;

${globToRegExp.toString()}

export function globSync(patterns, options = {}) {
  const cwd = options.cwd === undefined ? process.cwd() : String(options.cwd);
  const matchers = (Array.isArray(patterns) ? patterns : [patterns]).map(globToRegExp);
  const found = [];
  const walk = (dir) => {
    let entries;
    try {
      entries = fs.readdirSync(dir, { withFileTypes: true });
    } catch {
      return;
    }
    for (const entry of entries) {
      const full = join(dir, entry.name);
      const rel = relative(cwd, full);
      if (matchers.some((re) => re.test(rel.split(sep).join('/')))) found.push(rel);
      if (entry.isDirectory()) walk(full);
    }
  };
  walk(cwd);
  return found;
}
`;

function globToRegExp(pattern) {
  let out = '';
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i];
    if (c === '*' && pattern[i + 1] === '*') {
      // `**/` matches zero or more whole directories; a bare `**` matches anything.
      if (pattern[i + 2] === '/') {
        out += '(?:.*/)?';
        i += 2;
      } else {
        out += '.*';
        i += 1;
      }
    } else if (c === '*') out += '[^/]*';
    else if (c === '?') out += '[^/]';
    else if (c === '{') {
      const end = pattern.indexOf('}', i);
      if (end === -1) out += '\\{';
      else {
        out += '(?:' + pattern.slice(i + 1, end).split(',').map((s) => s.replace(/[.+^$()|[\]\\]/g, '\\$&').replace(/\*/g, '[^/]*')).join('|') + ')';
        i = end;
      }
    } else out += c.replace(/[.+^$()|[\]\\{}]/g, '\\$&');
  }
  return new RegExp('^' + out + '$');
}
