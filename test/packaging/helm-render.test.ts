/**
 * The Helm chart rendered and linted by a real helm (tools/helm/bin/helm from
 * `npm run helm:install`, $HELM, or helm on PATH), in every mode, and what it renders checked
 * against the Kubernetes schemas. Without helm these fail on CI (CI=true) and are skipped,
 * with one message, elsewhere.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, it } from 'node:test';
import { parseAllDocuments, parseDocument } from 'yaml';
import { parseConfig } from '../../src/config/index.js';
import { checkManifests, type Manifest } from './kubernetes-schemas.js';
import { ROOT, CHART, TEMPLATES, EXAMPLES, rel, isObject, templateFiles, exampleValueFiles, envReferences, PLACEHOLDER_SECRET, type Json, type Values } from './helm-chart-files.js';

const HELM_HINT = 'run `npm run helm:install` (or set HELM=/path/to/helm)';

/** $HELM, then the pinned helm of `npm run helm:install`, then helm on PATH. */
function findHelm(): string | undefined {
  const candidates = [process.env.HELM, join(ROOT, 'tools/helm/bin/helm'), 'helm'];
  for (const candidate of candidates.filter((c): c is string => Boolean(c))) {
    const probe = spawnSync(candidate, ['version', '--short'], { encoding: 'utf8' });
    if (probe.status === 0) return candidate;
  }
  return undefined;
}

const HELM = findHelm();
// On CI a missing helm is a failure of every test below, never a skip.
const SKIP_WITHOUT_HELM = HELM || process.env.CI === 'true' ? false : `no helm binary found: ${HELM_HINT}`;

/** Values files layered over the chart's defaults: every mode, and every optional template branch. */
const RENDER_CASES: Record<string, string[]> = {
  'ingress, defaults': [],
  'ingress, Redis with HPA, ServiceMonitor and PrometheusRule': [join(EXAMPLES, 'values-ingress-redis.yaml')],
  'ingress, every option': [join(EXAMPLES, 'values-ingress-redis.yaml'), join(ROOT, 'test/fixtures/helm/values-ingress-every-option.yaml')],
  sidecar: [join(EXAMPLES, 'values-sidecar.yaml')],
  'sidecar, every option': [join(EXAMPLES, 'values-sidecar.yaml'), join(ROOT, 'test/fixtures/helm/values-sidecar-every-option.yaml')],
};

describe('helm/taskgate: rendered by helm', { skip: SKIP_WITHOUT_HELM }, () => {
  const run = (...args: string[]) => {
    assert.ok(HELM, `no helm binary found (CI must have one): ${HELM_HINT}`);
    return spawnSync(HELM, args, { encoding: 'utf8', cwd: ROOT });
  };
  const template = (...args: string[]) => {
    const result = run('template', 'taskgate', CHART, '--namespace', 'mcp', ...args);
    assert.equal(result.status, 0, result.stderr);
    return result.stdout;
  };
  const render = (...args: string[]) =>
    parseAllDocuments(template(...args))
      .map((d) => d.toJS() as Values | null)
      .filter((d): d is Values => d !== null);
  const kinds = (docs: Values[]) => docs.map((d) => d.kind).sort();
  const policyOf = (docs: Values[]) => {
    const configMap = docs.find((d) => d.kind === 'ConfigMap' && isObject(d.data) && 'taskgate.yaml' in d.data);
    assert.ok(configMap, 'no policy ConfigMap');
    return String((configMap.data as Values)['taskgate.yaml']);
  };

  it('renders every mode to manifests that conform to the Kubernetes schemas, every template at least once', async () => {
    const rendered = new Set<string>();
    for (const [name, files] of Object.entries(RENDER_CASES)) {
      const text = template(...files.flatMap((f) => ['-f', f]));
      for (const match of text.matchAll(/^# Source: taskgate\/templates\/(\S+)$/gm)) rendered.add(match[1]!);
      const docs = parseAllDocuments(text)
        .map((d) => d.toJS() as Manifest | null)
        .filter((d): d is Manifest => d !== null);
      const manifests: Manifest[] = [...docs];
      // Sidecar mode renders the container as text for the user's own pod: check it inside one.
      for (const snippet of docs.filter((d) => d.kind === 'ConfigMap' && isObject(d.data) && 'container.yaml' in d.data)) {
        const data = snippet.data as Values;
        manifests.push({
          apiVersion: 'v1',
          kind: 'Pod',
          metadata: { name: `${name} (container.yaml in a pod)` },
          spec: {
            containers: [parseDocument(String(data['container.yaml'])).toJS() as Json],
            volumes: parseDocument(String(data['volumes.yaml'])).toJS() as Json,
          },
        });
      }
      assert.deepEqual(await checkManifests(manifests), [], `${name}: manifests that the API server would refuse`);
    }
    const templates = templateFiles().map((f) => relative(TEMPLATES, f)).filter((f) => f.endsWith('.yaml'));
    assert.deepEqual(templates.filter((t) => !rendered.has(t)), [], 'templates no case renders, so never schema-checked');
  });

  it('lints clean (--strict) in every case', () => {
    const layered = Object.values(RENDER_CASES).flat();
    for (const file of exampleValueFiles()) assert.ok(layered.includes(file), `${rel(file)} is in no render case`);
    for (const [name, files] of Object.entries(RENDER_CASES)) {
      const result = run('lint', '--strict', CHART, ...files.flatMap((f) => ['-f', f]));
      assert.equal(result.status, 0, `${name}:\n${result.stdout}${result.stderr}`);
    }
  });

  it('renders ingress mode: the workload, its Services, PDB, ConfigMaps; a valid policy', () => {
    const docs = render();
    assert.deepEqual(kinds(docs), ['ConfigMap', 'ConfigMap', 'Deployment', 'PodDisruptionBudget', 'Service', 'Service', 'ServiceAccount']);
    parseConfig(policyOf(docs), { env: {}, source: 'rendered default policy' });
  });

  it('renders the Redis example with an HPA, monitors and rules, and keeps digits-only secrets strings', () => {
    const docs = render('-f', join(EXAMPLES, 'values-ingress-redis.yaml'));
    for (const kind of ['HorizontalPodAutoscaler', 'ServiceMonitor', 'PrometheusRule']) assert.ok(kinds(docs).includes(kind), kind);
    const names = envReferences(parseDocument(policyOf(docs)).toJS() as Json);
    const env = Object.fromEntries([...names].map((n) => [n, '1234567890123456789012345678901234567890']));
    env.TASKGATE_SNAPSHOT_KEY = PLACEHOLDER_SECRET;
    const config = parseConfig(policyOf(docs), { env, source: 'rendered redis policy' });
    assert.equal(config.store.type, 'redis');
    assert.equal(config.store.type === 'redis' && typeof config.store.password, 'string');
    const deployment = docs.find((d) => d.kind === 'Deployment')!;
    assert.equal((deployment.spec as Values).replicas, undefined, 'the HPA owns the replica count');
  });

  it('renders sidecar mode: the policy and the container snippet, no workload', () => {
    const docs = render('-f', join(EXAMPLES, 'values-sidecar.yaml'));
    for (const kind of ['Deployment', 'Service', 'HorizontalPodAutoscaler', 'PodDisruptionBudget', 'ServiceAccount']) {
      assert.ok(!kinds(docs).includes(kind), `${kind} rendered in sidecar mode`);
    }
    const snippet = docs.find((d) => d.kind === 'ConfigMap' && isObject(d.data) && 'container.yaml' in d.data)!;
    assert.ok(snippet, 'no sidecar ConfigMap');
    const container = parseDocument(String((snippet.data as Values)['container.yaml'])).toJS() as Values;
    const volumes = parseDocument(String((snippet.data as Values)['volumes.yaml'])).toJS() as Values[];
    const pod = parseAllDocuments(readFileSync(join(EXAMPLES, 'sidecar-pod.yaml'), 'utf8'))
      .map((d) => d.toJS() as Values)
      .find((d) => d.kind === 'Pod')!;
    const podSpec = pod.spec as Values;
    assert.deepEqual((podSpec.containers as Values[]).find((c) => c.name === 'taskgate'), container, 'examples/sidecar-pod.yaml drifted from container.yaml');
    assert.deepEqual((podSpec.volumes as Values[]).filter((v) => String(v.name).startsWith('taskgate-')), volumes);
    parseConfig(policyOf(docs), { env: {}, source: 'rendered sidecar policy' });
  });

  it('refuses the memory store behind several replicas or an HPA, with a clear message', () => {
    for (const args of [
      ['--set', 'replicaCount=3'],
      ['--set', 'autoscaling.enabled=true'],
      ['-f', join(EXAMPLES, 'values-ingress-redis.yaml'), '--set', 'policy.store=null', '--set', 'autoscaling.enabled=false', '--set', 'replicaCount=2'],
    ]) {
      const result = run('template', 'taskgate', CHART, ...args);
      assert.notEqual(result.status, 0, `rendered with ${args.join(' ')}`);
      assert.match(result.stderr, /store\.type is memory/);
    }
    assert.equal(run('template', 'taskgate', CHART, '--set', 'autoscaling.enabled=true', '--set', 'autoscaling.minReplicas=1', '--set', 'autoscaling.maxReplicas=1').status, 0);
  });

  it('turns the operator console on from values: the policy\'s console section, each token from its Secret, the admin port on the ClusterIP admin Service only', () => {
    const docs = render(
      '--set', 'console.enabled=true',
      '--set', 'console.tokens[0].name=oncall', '--set', 'console.tokens[0].role=operator', '--set', 'console.tokens[0].secretName=taskgate-console', '--set', 'console.tokens[0].key=oncall',
      '--set', 'console.tokens[1].name=dashboards', '--set', 'console.tokens[1].role=viewer', '--set', 'console.tokens[1].secretName=taskgate-console', '--set', 'console.tokens[1].key=dashboards',
      '--set', 'policy.console.principals=shown',
    );
    const env = { TASKGATE_CONSOLE_TOKEN_0: PLACEHOLDER_SECRET, TASKGATE_CONSOLE_TOKEN_1: Buffer.alloc(32, 0x33).toString('base64') };
    const config = parseConfig(policyOf(docs), { env, source: 'rendered console policy' });
    assert.equal(config.console.enabled, true);
    assert.equal(config.console.principals, 'shown');
    assert.deepEqual(config.console.tokens.map((t) => [t.name, t.role, t.token]), [
      ['oncall', 'operator', env.TASKGATE_CONSOLE_TOKEN_0],
      ['dashboards', 'viewer', env.TASKGATE_CONSOLE_TOKEN_1],
    ]);
    const container = (((docs.find((d) => d.kind === 'Deployment')!.spec as Values).template as Values).spec as Values).containers as Values[];
    const tokenEnv = (container[0]!.env as Values[]).filter((e) => String(e.name).startsWith('TASKGATE_CONSOLE_TOKEN_'));
    assert.deepEqual(tokenEnv, [
      { name: 'TASKGATE_CONSOLE_TOKEN_0', valueFrom: { secretKeyRef: { name: 'taskgate-console', key: 'oncall' } } },
      { name: 'TASKGATE_CONSOLE_TOKEN_1', valueFrom: { secretKeyRef: { name: 'taskgate-console', key: 'dashboards' } } },
    ]);
    const services = docs.filter((d) => d.kind === 'Service');
    const client = services.find((d) => !String((d.metadata as Values).name).endsWith('-admin'))!;
    assert.deepEqual(((client.spec as Values).ports as Values[]).map((p) => p.targetPort), ['tg-proxy'], 'the client Service carries the proxy port only');
    const admin = services.find((d) => String((d.metadata as Values).name).endsWith('-admin'))!;
    assert.equal((admin.spec as Values).type, 'ClusterIP');
    // Off by default: no console section beyond taskgate's own default.
    assert.equal(parseConfig(policyOf(render()), { env: {}, source: 'default' }).console.enabled, false);
  });

  it('refuses a console without credentials, or with a token entry it cannot use', () => {
    const bare = run('template', 'taskgate', CHART, '--set', 'console.enabled=true');
    assert.notEqual(bare.status, 0);
    assert.match(bare.stderr, /console\.enabled needs operator credentials/);
    const partial = run('template', 'taskgate', CHART, '--set', 'console.enabled=true', '--set', 'console.tokens[0].name=x', '--set', 'console.tokens[0].role=admin', '--set', 'console.tokens[0].secretName=s', '--set', 'console.tokens[0].key=k');
    assert.notEqual(partial.status, 0);
    assert.match(partial.stderr, /expected viewer or operator/);
  });

  it('refuses a loopback admin listener, which no probe reaches', () => {
    const result = run('template', 'taskgate', CHART, '--set', 'policy.admin.host=127.0.0.1');
    assert.notEqual(result.status, 0);
    assert.match(result.stderr, /policy\.admin\.host/);
  });
});
