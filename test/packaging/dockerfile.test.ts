/**
 * The container image, checked without Docker: the Dockerfile read statically (what it
 * copies, who it runs as, what it exposes and probes, where it reads the policy), the
 * .dockerignore, and the image's runtime reproduced by hand: a production-only install from
 * the lockfile plus the compiled gateway, which must validate a policy and serve /healthz
 * with no dev dependency present, probed by the Dockerfile's own HEALTHCHECK command.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { copyFile, cp, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { existsSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { after, before, describe, it } from 'node:test';
import { parseConfig } from '../../src/config/index.js';

const ROOT = new URL('../../', import.meta.url).pathname;
const POLICY_PATH = '/etc/taskgate/taskgate.yaml';

interface Instruction {
  keyword: string;
  args: string;
  /** Index of the build stage (FROM) it belongs to. */
  stage: number;
}

/** The Dockerfile as instructions: comments dropped, `\` continuations joined. */
function parseDockerfile(text: string): Instruction[] {
  const out: Instruction[] = [];
  let pending = '';
  let stage = -1;
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (pending === '' && (line === '' || line.startsWith('#'))) continue;
    if (pending !== '' && line.startsWith('#')) continue; // comments inside a continuation
    if (line.endsWith('\\')) {
      pending += `${line.slice(0, -1)} `;
      continue;
    }
    const full = (pending + line).trim();
    pending = '';
    const match = /^(\S+)\s*(.*)$/s.exec(full);
    if (!match) continue;
    const keyword = match[1]!.toUpperCase();
    if (keyword === 'FROM') stage += 1;
    out.push({ keyword, args: match[2]!, stage });
  }
  return out;
}

const dockerfile = () => parseDockerfile(readFileSync(join(ROOT, 'Dockerfile'), 'utf8'));
const finalStage = () => {
  const all = dockerfile();
  const last = Math.max(...all.map((i) => i.stage));
  return all.filter((i) => i.stage === last);
};
const ofKind = (instructions: Instruction[], keyword: string) => instructions.filter((i) => i.keyword === keyword);

/** Splits an instruction's arguments into flags (--x=y) and words. */
function words(args: string): { flags: string[]; rest: string[] } {
  const parts = args.split(/\s+/).filter(Boolean);
  return { flags: parts.filter((p) => p.startsWith('--')), rest: parts.filter((p) => !p.startsWith('--')) };
}

/** .dockerignore patterns, without comments and blank lines. */
function dockerignore(): string[] {
  return readFileSync(join(ROOT, '.dockerignore'), 'utf8')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith('#'));
}

/** Whether .dockerignore keeps `path` (relative, no leading ./) out of the build context. */
function ignored(path: string, patterns = dockerignore()): boolean {
  let result = false;
  for (const raw of patterns) {
    const negate = raw.startsWith('!');
    const pattern = (negate ? raw.slice(1) : raw).replace(/^\/+|\/+$/g, '');
    const source = pattern
      .split('/')
      .map((part) => (part === '**' ? '.*' : part.replace(/[.+^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '[^/]*').replace(/\?/g, '[^/]')))
      .join('/')
      .replace(/\.\*\//g, '(?:.*/)?');
    // A pattern matching a folder excludes everything inside it.
    if (new RegExp(`^${source}(?:/.*)?$`).test(path)) result = !negate;
  }
  return result;
}

describe('Dockerfile', () => {
  it('is multi-stage: npm ci from the lockfile, npm run build, npm prune --omit=dev; nothing installed in the runtime stage', () => {
    const all = dockerfile();
    const froms = ofKind(all, 'FROM');
    assert.ok(froms.length >= 2, 'expected a build stage and a runtime stage');
    const build = all.filter((i) => i.stage < froms.length - 1);
    const runs = ofKind(build, 'RUN').map((i) => i.args);
    const runText = runs.join('\n');
    assert.match(runText, /\bnpm ci\b/);
    assert.match(runText, /\bnpm run build\b/);
    assert.match(runText, /\bnpm prune --omit=dev\b/);
    assert.ok(
      runText.indexOf('npm ci') < runText.indexOf('npm run build') && runText.indexOf('npm run build') < runText.indexOf('npm prune'),
      'install, then build, then prune',
    );
    const lockfileCopy = ofKind(build, 'COPY').findIndex((c) => c.args.includes('package-lock.json'));
    assert.ok(lockfileCopy >= 0, 'the lockfile must be copied before npm ci');
    for (const run of ofKind(finalStage(), 'RUN')) assert.doesNotMatch(run.args, /\bnpm (ci|install|i)\b/, 'the runtime stage installs nothing');
    // The runtime stage takes node_modules and dist from the build stage.
    const fromBuild = ofKind(finalStage(), 'COPY').filter((c) => c.args.startsWith('--from=')).map((c) => words(c.args).rest[0]);
    assert.ok(fromBuild.includes('/app/node_modules'), 'runtime node_modules come from the pruned build stage');
    assert.ok(fromBuild.includes('/app/dist'), 'runtime dist comes from the build stage');
  });

  it('builds on a current even-numbered (LTS) Node.js that package.json engines allows', () => {
    const arg = ofKind(dockerfile(), 'ARG').find((a) => a.args.startsWith('NODE_IMAGE='));
    assert.ok(arg, 'ARG NODE_IMAGE=... gives the base image');
    const image = arg.args.slice('NODE_IMAGE='.length);
    const match = /^node:(\d+)-[a-z]+-slim(@sha256:[0-9a-f]{64})?$/.exec(image);
    assert.ok(match, `unexpected base image ${image}`);
    const major = Number(match[1]);
    assert.equal(major % 2, 0, 'odd Node.js majors never become LTS');
    assert.ok(major >= 22, 'Node.js 20 reached end of life on 2026-04-30');
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { engines: { node: string } };
    const minimum = /^>=(\d+)/.exec(pkg.engines.node);
    assert.ok(minimum && major >= Number(minimum[1]));
    for (const from of ofKind(dockerfile(), 'FROM')) assert.match(from.args, /^\$\{NODE_IMAGE\} AS \w+$/);
  });

  it('copies only files that exist and that .dockerignore lets through', () => {
    const copies = ofKind(dockerfile(), 'COPY').filter((c) => !c.args.startsWith('--from='));
    assert.ok(copies.length > 0);
    for (const copy of copies) {
      const { rest } = words(copy.args);
      const sources = rest.slice(0, -1);
      assert.ok(sources.length > 0, `COPY ${copy.args}: no source`);
      for (const source of sources) {
        const path = source.replace(/^\.\//, '').replace(/\/$/, '');
        assert.ok(existsSync(join(ROOT, path)), `COPY ${source}: not in the repository`);
        assert.ok(!ignored(path), `COPY ${source}: excluded by .dockerignore`);
      }
    }
    // What `npm run build` reads must be in the image's build stage: tsconfig.build.json extends tsconfig.json.
    const copied = copies.flatMap((c) => words(c.args).rest.slice(0, -1));
    const buildConfig = JSON.parse(readFileSync(join(ROOT, 'tsconfig.build.json'), 'utf8')) as { extends?: string; include: string[] };
    for (const needed of ['package.json', 'package-lock.json', 'tsconfig.build.json', buildConfig.extends?.replace(/^\.\//, ''), ...buildConfig.include]) {
      if (needed) assert.ok(copied.some((c) => c.replace(/^\.\//, '').replace(/\/$/, '') === needed), `the build needs ${needed}`);
    }
  });

  it('runs as a numeric non-root user (Kubernetes can verify runAsNonRoot only for a number)', () => {
    const users = ofKind(finalStage(), 'USER');
    assert.ok(users.length > 0, 'no USER in the runtime stage');
    const user = users.at(-1)!.args.trim();
    const [uid] = user.split(':');
    assert.match(uid!, /^\d+$/);
    assert.notEqual(Number(uid), 0);
    // The chart runs the same user.
    const values = readFileSync(join(ROOT, 'helm/taskgate/values.yaml'), 'utf8');
    assert.match(values, new RegExp(`runAsUser: ${uid}\\n`));
  });

  it('exposes the default proxy and admin ports and sets NODE_ENV=production', () => {
    const defaults = parseConfig(readFileSync(join(ROOT, 'config/minimal.yaml'), 'utf8'), { env: {} });
    const exposed = ofKind(finalStage(), 'EXPOSE').flatMap((e) => words(e.args).rest.map((p) => Number(p.replace(/\/tcp$/, ''))));
    assert.ok(exposed.includes(defaults.listen.port), `EXPOSE ${defaults.listen.port} (listen.port)`);
    assert.ok(exposed.includes(defaults.admin.port), `EXPOSE ${defaults.admin.port} (admin.port)`);
    const env = ofKind(finalStage(), 'ENV').map((e) => e.args).join(' ');
    assert.match(env, /\bNODE_ENV=production\b/);
  });

  it('checks /healthz on the admin port with Node itself (no curl in a slim image)', () => {
    const checks = ofKind(finalStage(), 'HEALTHCHECK');
    assert.equal(checks.length, 1);
    const command = healthcheckCommand();
    assert.equal(command[0], 'node');
    assert.match(command.join(' '), /fetch\(/);
    const env = ofKind(finalStage(), 'ENV').map((e) => e.args).join(' ');
    const url = /TASKGATE_HEALTHCHECK_URL=(\S+)/.exec(env)?.[1];
    assert.equal(url, 'http://127.0.0.1:9090/healthz');
  });

  it('starts the compiled CLI with the documented policy path', () => {
    const entrypoint = ofKind(finalStage(), 'ENTRYPOINT').at(-1);
    const cmd = ofKind(finalStage(), 'CMD').at(-1);
    assert.ok(entrypoint && cmd);
    assert.deepEqual(JSON.parse(entrypoint.args), ['node', 'dist/src/main.js']);
    assert.deepEqual(JSON.parse(cmd.args), ['--config', POLICY_PATH]);
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { bin: Record<string, string> };
    assert.equal(pkg.bin.taskgate, 'dist/src/main.js');
    // The path is documented where operators look for it.
    assert.ok(readFileSync(join(ROOT, 'Dockerfile'), 'utf8').includes(`-v "$PWD/policy.yaml:${POLICY_PATH}:ro"`));
    for (const doc of ['docs/deploy-ingress.md', 'docs/deploy-sidecar.md']) {
      assert.ok(readFileSync(join(ROOT, doc), 'utf8').includes(POLICY_PATH), `${doc} names ${POLICY_PATH}`);
    }
  });
});

function healthcheckCommand(): string[] {
  const check = ofKind(finalStage(), 'HEALTHCHECK')[0]!;
  const at = check.args.indexOf('CMD ');
  assert.ok(at >= 0, 'HEALTHCHECK ... CMD [...]');
  const command: unknown = JSON.parse(check.args.slice(at + 4));
  assert.ok(Array.isArray(command) && command.every((c) => typeof c === 'string'), 'HEALTHCHECK CMD in exec form');
  return command as string[];
}

describe('.dockerignore', () => {
  it('keeps node_modules, dist, tests, benchmark results and .git out of the build context', () => {
    for (const path of ['node_modules', 'node_modules/fastify/package.json', 'examples/node_modules/x', 'dist/src/main.js', 'test/e2e/cli.test.ts', 'bench/results/latest.json', '.git/HEAD', 'coverage/lcov.info']) {
      assert.ok(ignored(path), `${path} reaches the build context`);
    }
    for (const path of ['package.json', 'package-lock.json', 'tsconfig.json', 'tsconfig.build.json', 'src/main.ts', 'config/minimal.yaml']) {
      assert.ok(!ignored(path), `${path} is needed by the build`);
    }
  });
});

// ---- The runtime of the image, without Docker ----

const NETWORK_ERROR = /E(NOTFOUND|AI_AGAIN|CONNREFUSED|CONNRESET|TIMEDOUT|NETUNREACH)|network|socket hang up|request to .* failed/i;

interface Result {
  code: number | null;
  stdout: string;
  stderr: string;
}

function run(command: string, args: string[], options: { cwd: string; env?: NodeJS.ProcessEnv; timeoutMs?: number }): Promise<Result> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd: options.cwd, env: options.env ?? process.env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs ?? 120_000);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

const NPM = process.platform === 'win32' ? 'npm.cmd' : 'npm';

describe('the image runtime: production dependencies only', () => {
  let dir: string;
  let install: Result;
  let build: Result;
  let gateway: ChildProcess | undefined;
  const productionEnv = () => ({ ...process.env, NODE_ENV: 'production', NODE_OPTIONS: '' });

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'taskgate-image-'));
    await copyFile(join(ROOT, 'package.json'), join(dir, 'package.json'));
    await copyFile(join(ROOT, 'package-lock.json'), join(dir, 'package-lock.json'));
    // What the Dockerfile does, in parallel: the build stage's `npm run build` (into dir/dist)
    // and, standing in for the pruned node_modules, a production-only install from the lockfile.
    [install, build] = await Promise.all([
      run(NPM, ['ci', '--omit=dev', '--ignore-scripts', '--no-audit', '--no-fund', '--prefer-offline'], { cwd: dir }),
      run(process.execPath, [join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', join(ROOT, 'tsconfig.build.json'), '--outDir', join(dir, 'dist')], { cwd: ROOT }).then(async (compiled) => {
        // The build's second step: the console page's files, which tsc does not emit.
        if (compiled.code === 0) await cp(join(ROOT, 'src/console/assets'), join(dir, 'dist/src/console/assets'), { recursive: true });
        return compiled;
      }),
    ]);
  });

  after(async () => {
    gateway?.kill('SIGKILL');
    await rm(dir, { recursive: true, force: true });
  });

  /** Skips (outside CI) when the npm registry cannot be reached; fails on anything else. */
  function requireInstall(t: { skip(message: string): void }): boolean {
    if (install.code === 0) return true;
    const output = install.stdout + install.stderr;
    if (process.env.CI !== 'true' && NETWORK_ERROR.test(output)) {
      t.skip(`npm registry unreachable, production install not checked: ${output.split('\n').find((l) => NETWORK_ERROR.test(l))}`);
      return false;
    }
    assert.fail(`npm ci --omit=dev failed:\n${output}`);
  }

  it('installs from the lockfile without a single dev dependency', async (t) => {
    if (!requireInstall(t)) return;
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { devDependencies: Record<string, string> };
    const installed = new Set(await readdir(join(dir, 'node_modules')));
    for (const scope of [...installed].filter((n) => n.startsWith('@'))) {
      for (const name of await readdir(join(dir, 'node_modules', scope))) installed.add(`${scope}/${name}`);
    }
    // A dev dependency that production code needs as well (ajv, through fastify) is installed
    // either way; the lockfile marks the ones nothing in production needs.
    const lock = JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8')) as { packages: Record<string, { dev?: boolean }> };
    const devOnly = Object.keys(pkg.devDependencies).filter((name) => lock.packages[`node_modules/${name}`]?.dev === true);
    assert.ok(devOnly.length > 0);
    const present = devOnly.filter((name) => installed.has(name));
    assert.deepEqual(present, []);
  });

  it('compiles with npm run build (tsconfig.build.json), the console page\'s files copied beside', () => {
    assert.equal(build.code, 0, `tsc -p tsconfig.build.json failed:\n${build.stdout}${build.stderr}`);
    assert.ok(existsSync(join(dir, 'dist/src/main.js')), 'dist/src/main.js (the package bin) was not emitted');
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> };
    assert.match(pkg.scripts.build!, /^tsc -p tsconfig\.build\.json && node -e .*cpSync\('src\/console\/assets', 'dist\/src\/console\/assets'/, 'the build copies what this test copies');
  });

  it('validates the example policy: node dist/src/main.js check-config exits 0', async (t) => {
    if (!requireInstall(t)) return;
    assert.equal(build.code, 0, 'the build failed');
    const result = await run(process.execPath, ['dist/src/main.js', 'check-config', join(ROOT, 'config/taskgate.example.yaml')], {
      cwd: dir,
      env: productionEnv(),
      timeoutMs: 30_000,
    });
    assert.equal(result.code, 0, result.stdout + result.stderr);
    assert.match(result.stdout, /OK/);
  });

  it('serves /healthz, and the Dockerfile HEALTHCHECK command reports it healthy', async (t) => {
    if (!requireInstall(t)) return;
    assert.equal(build.code, 0, 'the build failed');
    const policy = join(dir, 'policy.yaml');
    await writeFile(
      policy,
      'listen: { host: 127.0.0.1, port: 0 }\nadmin: { host: 127.0.0.1, port: 0 }\npublicUrl: http://127.0.0.1\n' +
        'auth: { mode: none }\nupstreams: { tools: { instances: ["http://127.0.0.1:9"] } }\nroutes: [{ path: /mcp, upstream: tools }]\n' +
        'logging: { level: info }\naudit: { stdout: false }\n' +
        `console: { enabled: true, tokens: [{ name: ops, role: viewer, token: "${'c'.repeat(40)}" }] }\n`,
    );
    const child = spawn(process.execPath, ['dist/src/main.js', '--config', policy], { cwd: dir, env: productionEnv(), stdio: ['ignore', 'pipe', 'pipe'] });
    gateway = child;
    let stderr = '';
    child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
    const exited = new Promise<number | null>((resolve) => child.on('exit', resolve));
    const adminUrl = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no "taskgate listening" line within 20s; stderr:\n${stderr}`)), 20_000);
      child.on('exit', (code) => reject(new Error(`taskgate exited with ${code}; stderr:\n${stderr}`)));
      createInterface({ input: child.stdout! }).on('line', (line) => {
        try {
          const entry = JSON.parse(line) as { msg?: string; adminUrl?: string };
          if (entry.msg === 'taskgate listening' && entry.adminUrl) {
            clearTimeout(timer);
            resolve(entry.adminUrl);
          }
        } catch {
          // not a log line
        }
      });
    });
    const response = await fetch(`${adminUrl}/healthz`);
    assert.equal(response.status, 200);
    // The operator console, from the compiled tree: its page (401 until signed in) and its code.
    const page = await fetch(`${adminUrl}/console`);
    assert.equal(page.status, 401);
    assert.match(await page.text(), /<script type="module" src="\/console\/assets\/console\.js">/);
    const script = await fetch(`${adminUrl}/console/assets/console.js`, { headers: { authorization: `Bearer ${'c'.repeat(40)}` } });
    assert.equal(script.status, 200);
    assert.match(script.headers.get('content-type') ?? '', /^text\/javascript/);
    await script.text();

    const [command, ...args] = healthcheckCommand();
    assert.equal(command, 'node');
    const healthy = await run(process.execPath, args, { cwd: dir, env: { ...productionEnv(), TASKGATE_HEALTHCHECK_URL: `${adminUrl}/healthz` }, timeoutMs: 10_000 });
    assert.equal(healthy.code, 0, `HEALTHCHECK failed against a healthy gateway: ${healthy.stderr}`);

    child.kill('SIGTERM');
    assert.equal(await exited, 0, `taskgate did not stop cleanly on SIGTERM; stderr:\n${stderr}`);
    gateway = undefined;

    const unhealthy = await run(process.execPath, args, { cwd: dir, env: { ...productionEnv(), TASKGATE_HEALTHCHECK_URL: `${adminUrl}/healthz` }, timeoutMs: 10_000 });
    assert.equal(unhealthy.code, 1, 'HEALTHCHECK must fail when nothing answers');
  });
});
