/**
 * Policy reload as operators trigger it, on a real `taskgate --config FILE` process whose file
 * is laid out as a Kubernetes ConfigMap volume (a symlink through `..data`): the kubelet's
 * update is picked up without a signal, SIGHUP reloads (and does not end the process), an
 * invalid file is logged exactly as `taskgate check-config` prints it, a key that needs a
 * restart is refused, and the process keeps serving its policy throughout.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { mkdir, mkdtemp, rename, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startExampleServer, type ExampleServer } from '../../examples/mcp-server/server.js';
import { runTaskgate, startGatewayProcess, type GatewayProcess } from './support/gateway-process.js';
import { LEGACY_POST_HEADERS, initializeBody } from './support/harness.js';
import { waitFor } from '../support/wait.js';

/** What the kubelet's AtomicWriter does: a new directory, `..data` renamed onto it, the old one removed. */
class ConfigMapVolume {
  private generation = 0;
  constructor(readonly dir: string) {}

  get file(): string {
    return join(this.dir, 'taskgate.yaml');
  }

  async write(text: string): Promise<void> {
    const previous = this.generation === 0 ? undefined : `..gen_${this.generation}`;
    this.generation += 1;
    const next = `..gen_${this.generation}`;
    await mkdir(join(this.dir, next));
    await writeFile(join(this.dir, next, 'taskgate.yaml'), text);
    await symlink(next, join(this.dir, '..data_tmp'));
    await rename(join(this.dir, '..data_tmp'), join(this.dir, '..data'));
    if (previous) await rm(join(this.dir, previous), { recursive: true });
    else await symlink('..data/taskgate.yaml', this.file);
  }
}

function policyYaml(backend: ExampleServer, options: { routes?: string[]; port?: number; extra?: string } = {}): string {
  return [
    `listen: { host: 127.0.0.1, port: ${options.port ?? 0} }`,
    'admin: { host: 127.0.0.1, port: 0 }',
    'publicUrl: http://127.0.0.1',
    'auth: { mode: none }',
    `upstreams: { tools: { instances: [${new URL(backend.url).origin}] } }`,
    'routes:',
    ...(options.routes ?? ['/mcp']).map((path) => `  - { path: ${path}, upstream: tools, upstreamPath: /mcp }`),
    ...(options.extra ? [options.extra] : []),
    '',
  ].join('\n');
}

async function stderrOf(child: ChildProcess): Promise<string> {
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  await new Promise((resolve) => child.on('exit', resolve));
  return stderr;
}

describe('taskgate --config FILE reloads its policy', () => {
  let backend: ExampleServer;
  let root: string;
  let volume: ConfigMapVolume;
  let gateway: GatewayProcess;
  const reloads = (outcome: string) => gateway.lines.filter((l) => l.event === 'policy_reload' && l.outcome === outcome);
  const status = async (path: string) => {
    const res = await fetch(`${gateway.url.replace('localhost', '127.0.0.1')}${path}`, { method: 'POST', headers: LEGACY_POST_HEADERS, body: initializeBody() });
    await res.arrayBuffer();
    return res.status;
  };

  before(async () => {
    backend = await startExampleServer({ enableJsonResponse: true });
    root = await mkdtemp(join(tmpdir(), 'taskgate-reload-process-'));
    await mkdir(join(root, 'volume'));
    volume = new ConfigMapVolume(join(root, 'volume'));
    await volume.write(policyYaml(backend));
    gateway = await startGatewayProcess(volume.file);
  });
  after(async () => {
    await gateway?.stop();
    await backend?.close();
    await rm(root, { recursive: true, force: true });
  });

  it('picks up a ConfigMap update without a signal', async () => {
    assert.equal(await status('/b'), 404);
    await volume.write(policyYaml(backend, { routes: ['/mcp', '/b'] }));
    await waitFor(() => reloads('applied').length === 1, 'the update to be applied');
    assert.deepEqual(reloads('applied')[0]!.changed, ['routes[1]']);
    assert.equal(reloads('applied')[0]!.source, volume.file);
    assert.equal(await status('/b'), 200);
    assert.equal(await status('/mcp'), 200);
  });

  it('reloads on SIGHUP, which does not stop the process', async () => {
    gateway.child.kill('SIGHUP');
    await waitFor(() => reloads('unchanged').length === 1, 'the SIGHUP reload');
    assert.equal(gateway.child.exitCode, null);
    assert.equal(await status('/mcp'), 200);
  });

  it('logs every problem of an invalid file as check-config prints it, and keeps serving', async () => {
    const invalid = policyYaml(backend, { routes: ['/mcp', '/b', '/c'], extra: 'colour: red' }).replace('path: /c, upstream: tools', 'path: /c, upstream: nowhere');
    await volume.write(invalid);
    await waitFor(() => reloads('invalid').length === 1, 'the invalid file to be refused');
    const printed = (await stderrOf(runTaskgate(['check-config', volume.file]))).trim().split('\n');
    assert.equal(printed.length, 2, printed.join('\n'));
    assert.deepEqual(reloads('invalid')[0]!.problems, printed);
    assert.equal(await status('/b'), 200, 'the policy in force is unchanged');
    assert.equal(await status('/c'), 404);
  });

  it('refuses a change of listen.port with a message that a restart is needed', async () => {
    await volume.write(policyYaml(backend, { routes: ['/mcp', '/b', '/c'], port: 1 }));
    await waitFor(() => reloads('restart_required').length === 1, 'the change to be refused');
    const [refused] = reloads('restart_required');
    assert.deepEqual(refused!.problems, [`${volume.file} listen.port: fixed while taskgate runs; restart it to apply this (nothing in this policy was applied)`]);
    assert.equal(await status('/c'), 404, 'nothing of it applied');
  });

  it('applies the corrected file, and counts every outcome', async () => {
    await volume.write(policyYaml(backend, { routes: ['/mcp', '/c'] }));
    await waitFor(() => reloads('applied').length === 2, 'the corrected file to be applied');
    assert.equal(await status('/c'), 200);
    assert.equal(await status('/b'), 404);
    const metrics = await (await fetch(`${gateway.adminUrl}/metrics`)).text();
    for (const [outcome, count] of [['applied', 2], ['unchanged', 1], ['invalid', 1], ['restart_required', 1]] as const) {
      assert.match(metrics, new RegExp(`^taskgate_config_reloads_total\\{outcome="${outcome}"\\} ${count}$`, 'm'));
    }
    assert.match(metrics, /^taskgate_config_last_reload_successful 1$/m);
  });
});
