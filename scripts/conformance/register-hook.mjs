// Entry for `node --import ./scripts/conformance/register-hook.mjs …/conformance/dist/index.js`.
// The conformance CLIs import `globSync` from `fs`, which Node 20 does not export, so the ESM
// linker rejects the whole bundle before any code runs. A `--require` patch cannot help because
// named ESM imports of builtins are bound from the builtin's export list, not from the mutable
// CommonJS object; only a resolve/load hook can hand the bundle a different `fs` module.
import * as fs from 'node:fs';
import { register } from 'node:module';

// On Node 22+ the real fs has globSync: register nothing, so the suite runs on the genuine module.
if (typeof fs.globSync !== 'function') {
  register('./node20-fs-hook.mjs', import.meta.url);
}
