/**
 * The container image, built from the Dockerfile and run, wherever a container engine answers:
 * it builds, runs as uid 1000, stays under its size budget, validates a mounted policy with
 * `check-config` (and refuses a broken one), starts on the documented policy path, answers
 * /healthz on the published admin port, passes its own HEALTHCHECK command, and exits 0 on
 * SIGTERM.
 *
 * The engine is $CONTAINER_ENGINE, else docker, else podman, whichever answers `info`. Where
 * none does (a docker CLI without a daemon, as on the project's CI machines), every test is
 * skipped, counted as skipped by the runner (`# skipped`), with a warning that says why;
 * TASKGATE_REQUIRE_CONTAINER_ENGINE=true (or 1) turns those skips into failures, for a CI that
 * has an engine. test/packaging/image-skip.test.ts holds this file to that. The build needs the base image
 * (node:24-bookworm-slim, or TASKGATE_NODE_IMAGE, passed as --build-arg NODE_IMAGE) and the
 * npm registry. test/packaging/dockerfile.test.ts checks the same image's contents without an
 * engine.
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { after, before, describe, it } from 'node:test';

const ROOT = new URL('../../', import.meta.url).pathname;
const POLICY_PATH = '/etc/taskgate/taskgate.yaml';
/** Decimal megabytes, as `docker images` prints them; docs/operations.md gives the measured size. */
const SIZE_BUDGET_MB = 400;
const MINUTE = 60_000;

interface Result {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** The first engine that answers `info`, or why none did. */
function findEngine(): { engine: string } | { reason: string } {
  const named = process.env.CONTAINER_ENGINE;
  const reasons: string[] = [];
  for (const candidate of named ? [named] : ['docker', 'podman']) {
    const probe = spawnSync(candidate, ['info'], { encoding: 'utf8', timeout: 20_000 });
    if (probe.status === 0) return { engine: candidate };
    const said = probe.error ? probe.error.message : (probe.stderr || probe.stdout).trim().split('\n').find((l) => l.trim()) ?? `exit ${probe.status}`;
    reasons.push(`${candidate} info: ${said}`);
  }
  return { reason: reasons.join('; ') };
}

const found = findEngine();
const ENGINE = 'engine' in found ? found.engine : undefined;
const REQUIRED = ['true', '1'].includes(process.env.TASKGATE_REQUIRE_CONTAINER_ENGINE ?? '');
// A skipped suite counts no test at all (`# tests 0`, `# skipped 0`): each test is skipped
// instead, so the run's totals show what did not run.
const SKIP =
  ENGINE || REQUIRED ? false : `no container engine answers (${'reason' in found ? found.reason : ''}): the image is not built or run here`;
if (SKIP) {
  console.warn(`\n*** SKIPPED: ${SKIP}.\n*** Start an engine (or name one with CONTAINER_ENGINE); TASKGATE_REQUIRE_CONTAINER_ENGINE=true makes this a failure.\n`);
}

function engine(args: string[], timeoutMs = 2 * MINUTE): Promise<Result> {
  assert.ok(ENGINE, `no container engine answers, and TASKGATE_REQUIRE_CONTAINER_ENGINE is set: ${'reason' in found ? found.reason : ''}`);
  return new Promise((resolve, reject) => {
    const child = spawn(ENGINE, args, { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

const output = (r: Result) => `${r.stdout}${r.stderr}`.trim().split('\n').slice(-40).join('\n');

/** A policy for a container: both listeners on all interfaces, the upstream never called. */
const POLICY = `publicUrl: http://127.0.0.1:8080
listen: { host: 0.0.0.0, port: 8080 }
admin: { host: 0.0.0.0, port: 9090 }
auth: { mode: none }
upstreams: { tools: { instances: ["http://127.0.0.1:9"] } }
routes: [{ path: /mcp, upstream: tools }]
`;
const BROKEN_POLICY = `${POLICY}limits: { drainTimeout: soon }\n`;

describe('the container image, built and run', () => {
  const tag = `localhost/taskgate-test:${randomBytes(4).toString('hex')}`;
  const container = `taskgate-test-${randomBytes(4).toString('hex')}`;
  let dir: string | undefined;
  let build: Result | undefined;

  before(
    async () => {
      if (SKIP) return;
      dir = await mkdtemp(join(tmpdir(), 'taskgate-image-run-'));
      // The container's uid 1000 reads these through read-only bind mounts.
      await chmod(dir, 0o755);
      for (const [name, text] of [['policy.yaml', POLICY], ['broken.yaml', BROKEN_POLICY]] as const) {
        await writeFile(join(dir, name), text);
        await chmod(join(dir, name), 0o644);
      }
      if (!ENGINE) return; // the tests fail with the reason
      const baseImage = process.env.TASKGATE_NODE_IMAGE ? ['--build-arg', `NODE_IMAGE=${process.env.TASKGATE_NODE_IMAGE}`] : [];
      // Podman writes OCI images by default, and the OCI format has no HEALTHCHECK.
      const format = basename(ENGINE).startsWith('podman') ? ['--format', 'docker'] : [];
      build = await engine(['build', '--tag', tag, ...format, ...baseImage, '.'], 15 * MINUTE);
    },
    { timeout: 16 * MINUTE },
  );

  after(async () => {
    if (ENGINE) {
      await engine(['rm', '--force', container]);
      await engine(['rmi', '--force', tag]);
    }
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  const requireImage = () => {
    assert.ok(ENGINE, `no container engine answers, and TASKGATE_REQUIRE_CONTAINER_ENGINE is set: ${'reason' in found ? found.reason : ''}`);
    assert.ok(build, 'the image was not built');
    assert.equal(build.code, 0, `${ENGINE} build failed (the base image comes from Docker Hub unless TASKGATE_NODE_IMAGE names another):\n${output(build)}`);
  };
  const mount = (file: string, at = POLICY_PATH) => ['--volume', `${join(dir!, file)}:${at}:ro`];

  it('builds from the Dockerfile, runs as uid 1000, and stays within its size budget', { skip: SKIP }, async (t) => {
    requireImage();
    const inspect = await engine(['image', 'inspect', '--format', '{{.Size}} {{.Config.User}}', tag]);
    assert.equal(inspect.code, 0, output(inspect));
    const [size, user] = inspect.stdout.trim().split(' ');
    const megabytes = Number(size) / 1e6;
    t.diagnostic(`image size: ${megabytes.toFixed(1)} MB (${ENGINE} image inspect)`);
    assert.ok(megabytes > 0 && megabytes <= SIZE_BUDGET_MB, `the image is ${megabytes.toFixed(1)} MB; the budget is ${SIZE_BUDGET_MB} MB`);
    assert.equal(user, '1000:1000');
    const id = await engine(['run', '--rm', '--entrypoint', 'id', tag, '-u']);
    assert.equal(id.stdout.trim(), '1000', output(id));
  });

  it('check-config accepts the policy mounted at the documented path, and refuses a broken one with its path', { skip: SKIP }, async () => {
    requireImage();
    const ok = await engine(['run', '--rm', ...mount('policy.yaml'), tag, 'check-config', POLICY_PATH]);
    assert.equal(ok.code, 0, output(ok));
    assert.match(ok.stdout, new RegExp(`${POLICY_PATH}: OK`));
    const shipped = await engine(['run', '--rm', tag, 'check-config', 'config/minimal.yaml']);
    assert.equal(shipped.code, 0, output(shipped));
    const broken = await engine(['run', '--rm', ...mount('broken.yaml'), tag, 'check-config', POLICY_PATH]);
    assert.equal(broken.code, 1, output(broken));
    assert.match(broken.stderr, /limits\.drainTimeout/);
  });

  it('serves with the mounted policy: /healthz on the published admin port, its HEALTHCHECK passes, SIGTERM exits 0', { skip: SKIP, timeout: 3 * MINUTE }, async () => {
    requireImage();
    const started = await engine(['run', '--detach', '--name', container, '--publish', '127.0.0.1::9090', '--publish', '127.0.0.1::8080', ...mount('policy.yaml'), tag]);
    assert.equal(started.code, 0, output(started));
    const port = await engine(['port', container, '9090/tcp']);
    const hostPort = /127\.0\.0\.1:(\d+)/.exec(port.stdout)?.[1];
    assert.ok(hostPort, `no published admin port: ${output(port)}`);

    let status = 0;
    const deadline = Date.now() + 30_000;
    while (Date.now() < deadline) {
      status = await fetch(`http://127.0.0.1:${hostPort}/healthz`, { signal: AbortSignal.timeout(2000) }).then(
        (r) => r.status,
        () => 0,
      );
      if (status === 200) break;
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
    if (status !== 200) {
      const logs = await engine(['logs', container]);
      assert.fail(`/healthz never answered 200 (last: ${status}); container output:\n${output(logs)}`);
    }

    // The image's own HEALTHCHECK command, run inside the container as the engine would.
    const check = await engine(['image', 'inspect', '--format', '{{json .Config.Healthcheck}}', tag]);
    const test = (JSON.parse(check.stdout) as { Test: string[] }).Test;
    assert.equal(test[0], 'CMD', `HEALTHCHECK in exec form: ${check.stdout}`);
    const healthy = await engine(['exec', container, ...test.slice(1)]);
    assert.equal(healthy.code, 0, `the HEALTHCHECK failed in the container: ${output(healthy)}`);

    const stopped = await engine(['stop', '--time', '30', container], MINUTE);
    assert.equal(stopped.code, 0, output(stopped));
    const exit = await engine(['inspect', '--format', '{{.State.ExitCode}}', container]);
    assert.equal(exit.stdout.trim(), '0', `taskgate did not exit 0 on SIGTERM; output:\n${output(await engine(['logs', container]))}`);
  });
});
