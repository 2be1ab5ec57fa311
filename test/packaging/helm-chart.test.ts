/**
 * The Helm chart (helm/taskgate), checked without a cluster: every plain YAML file parses,
 * every policy the chart ships is a valid taskgate policy, every value a template reads is
 * defined (and documented) in values.yaml, the memory-store guard is in place, the files
 * the chart reads exist, and the example sidecar pod conforms to the Kubernetes schemas.
 *
 * With a real helm (tools/helm/bin/helm from `npm run helm:install`, $HELM, or helm on PATH)
 * the chart is also linted (--strict) and rendered in every mode, and what it renders is
 * checked against the Kubernetes schemas. Without helm those checks fail on CI (CI=true) and
 * are skipped, with one message, elsewhere.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, it } from 'node:test';
import { isMap, isScalar, isSeq, parseAllDocuments, parseDocument, type Node } from 'yaml';
import { ConfigError, parseConfig } from '../../src/config/index.js';
import { checkManifests, type Manifest } from './kubernetes-schemas.js';

const ROOT = new URL('../../', import.meta.url).pathname;
const HELM_DIR = join(ROOT, 'helm');
const CHART = join(HELM_DIR, 'taskgate');
const TEMPLATES = join(CHART, 'templates');
const EXAMPLES = join(CHART, 'examples');
const POLICY_PATH = '/etc/taskgate/taskgate.yaml';

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type Values = Record<string, Json>;

function filesUnder(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    const full = join(dir, name);
    if (statSync(full).isDirectory()) out.push(...filesUnder(full));
    else out.push(full);
  }
  return out.sort();
}

const rel = (file: string) => relative(ROOT, file);
const isObject = (value: unknown): value is Record<string, Json> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

function readYaml(file: string): Values {
  const value: unknown = parseDocument(readFileSync(file, 'utf8')).toJS();
  assert.ok(isObject(value), `${rel(file)} is not a YAML mapping`);
  return value;
}

const templateFiles = () => filesUnder(TEMPLATES);
const templateText = () => templateFiles().map((f) => readFileSync(f, 'utf8')).join('\n');
const defaults = () => readYaml(join(CHART, 'values.yaml'));
const exampleValueFiles = () =>
  readdirSync(EXAMPLES)
    .filter((name) => /^values-.*\.ya?ml$/.test(name))
    .map((name) => join(EXAMPLES, name));

/** Helm's coalescing of a values file into the chart's defaults: maps merge, null deletes, the rest replaces. */
function helmMerge(base: Values, override: Values): Values {
  const out: Values = { ...base };
  for (const [key, value] of Object.entries(override)) {
    if (value === null) delete out[key];
    else if (isObject(value) && isObject(out[key])) out[key] = helmMerge(out[key] as Values, value);
    else out[key] = value;
  }
  return out;
}

/** The values a release renders with: values.yaml, then the example file if any. */
function effectiveValues(file?: string): Values {
  return file ? helmMerge(defaults(), readYaml(file)) : defaults();
}

/** Every `${NAME}` in the string values of a policy (`$${` is a literal, not a reference). */
function envReferences(value: Json, out = new Set<string>()): Set<string> {
  if (typeof value === 'string') {
    for (const match of value.matchAll(/(\$?)\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g)) if (match[1] === '') out.add(match[2]!);
  } else if (Array.isArray(value)) value.forEach((item) => envReferences(item, out));
  else if (isObject(value)) Object.values(value).forEach((item) => envReferences(item, out));
  return out;
}

/** 32 random-looking bytes in base64: acceptable for every kind of secret a policy takes (tokens, passwords, snapshot keys, salts). */
const PLACEHOLDER_SECRET = Buffer.alloc(32, 0x5a).toString('base64');

/**
 * Validates a policy as the chart ships it. Values are already parsed (Helm does the same),
 * so the policy is handed to taskgate as JSON text: every string stays a string, as the chart
 * keeps "${NAME}" quoted in the ConfigMap.
 */
function validatePolicy(policy: Json, source: string) {
  const env = Object.fromEntries([...envReferences(policy)].map((name) => [name, PLACEHOLDER_SECRET]));
  try {
    return parseConfig(JSON.stringify(policy, null, 2), { env, source });
  } catch (err) {
    if (err instanceof ConfigError) assert.fail(err.message);
    throw err;
  }
}

/** Every `.Values.a.b.c` a template reads (also `$.Values…`), as paths. */
function valueReferences(text: string): string[] {
  const refs = new Set<string>();
  for (const match of text.matchAll(/\.Values((?:\.[A-Za-z_][A-Za-z0-9_]*)+)/g)) refs.add(match[1]!.slice(1));
  return [...refs].sort();
}

function hasPath(values: Values, path: string): boolean {
  let node: Json = values;
  for (const segment of path.split('.')) {
    if (!isObject(node) || !(segment in node)) return false;
    node = node[segment]!;
  }
  return true;
}

/** Leaf paths of values.yaml, not descending into `policy` (the policy has its own reference) or lists. */
function leafPaths(value: Json, prefix = ''): string[] {
  if (!isObject(value) || Object.keys(value).length === 0 || prefix === 'policy') return [prefix];
  return Object.entries(value).flatMap(([key, child]) => leafPaths(child, prefix ? `${prefix}.${key}` : key));
}

/** Keys of values.yaml that no comment describes (keys inside list items are described by the item's comment). */
function undocumentedKeys(node: Node | null | undefined, prefix = ''): string[] {
  if (!isMap(node)) return [];
  const missing: string[] = [];
  node.items.forEach((pair, index) => {
    const key = isScalar(pair.key) ? String(pair.key.value) : '?';
    const path = prefix ? `${prefix}.${key}` : key;
    const keyNode = pair.key as Node | null;
    const valueNode = pair.value as Node | null;
    const documented =
      Boolean(keyNode?.commentBefore) ||
      Boolean(isScalar(valueNode) && valueNode.comment) ||
      (index === 0 && Boolean(node.commentBefore));
    if (!documented) missing.push(path);
    if (!isSeq(valueNode)) missing.push(...undocumentedKeys(valueNode, path));
  });
  return missing;
}

describe('helm/taskgate: files', () => {
  it('every plain YAML file under helm/ parses (templates excluded), and every JSON file', () => {
    const files = filesUnder(HELM_DIR).filter((f) => !rel(f).split('/').includes('templates'));
    const yamlFiles = files.filter((f) => /\.ya?ml$/.test(f));
    const problems: string[] = [];
    for (const file of yamlFiles) {
      for (const doc of parseAllDocuments(readFileSync(file, 'utf8'))) {
        for (const e of [...doc.errors, ...doc.warnings]) problems.push(`${rel(file)}: ${e.message}`);
      }
    }
    for (const file of files.filter((f) => f.endsWith('.json'))) {
      try {
        JSON.parse(readFileSync(file, 'utf8'));
      } catch (err) {
        problems.push(`${rel(file)}: ${(err as Error).message}`);
      }
    }
    assert.deepEqual(problems, []);
    const names = yamlFiles.map(rel);
    for (const expected of [
      'helm/taskgate/Chart.yaml',
      'helm/taskgate/values.yaml',
      'helm/taskgate/files/prometheus-rules.yaml',
      'helm/taskgate/examples/sidecar-pod.yaml',
      'helm/taskgate/examples/values-ingress-redis.yaml',
      'helm/taskgate/examples/values-sidecar.yaml',
    ]) {
      assert.ok(names.includes(expected), `${expected} is missing`);
    }
  });

  it('Chart.yaml is an apiVersion v2 application chart whose appVersion is the package version', () => {
    const chart = readYaml(join(CHART, 'Chart.yaml'));
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string };
    assert.equal(chart.apiVersion, 'v2');
    assert.equal(chart.name, 'taskgate');
    assert.equal(chart.type, 'application');
    assert.match(String(chart.version), /^\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?$/);
    assert.equal(chart.appVersion, pkg.version);
  });

  it('has the templates of both modes', () => {
    const names = templateFiles().map((f) => relative(TEMPLATES, f));
    for (const expected of [
      '_helpers.tpl',
      'NOTES.txt',
      'policy-configmap.yaml',
      'deployment.yaml',
      'service.yaml',
      'admin-service.yaml',
      'serviceaccount.yaml',
      'hpa.yaml',
      'pdb.yaml',
      'servicemonitor.yaml',
      'podmonitor.yaml',
      'prometheusrule.yaml',
      'grafana-dashboard.yaml',
      'sidecar-configmap.yaml',
    ]) {
      assert.ok(names.includes(expected), `templates/${expected} is missing`);
    }
    // The workload and its companions exist only in ingress mode; the snippet only in sidecar mode.
    for (const name of ['deployment.yaml', 'service.yaml', 'admin-service.yaml', 'serviceaccount.yaml', 'hpa.yaml', 'pdb.yaml', 'servicemonitor.yaml']) {
      const first = readFileSync(join(TEMPLATES, name), 'utf8').split('\n')[0]!;
      assert.match(first, /^\{\{- if (and )?\(?eq \.Values\.mode "ingress"\)?/, `${name} must render only in ingress mode`);
    }
    for (const name of ['sidecar-configmap.yaml', 'podmonitor.yaml']) {
      const first = readFileSync(join(TEMPLATES, name), 'utf8').split('\n')[0]!;
      assert.match(first, /^\{\{- if (and )?\(?eq \.Values\.mode "sidecar"\)?/, `${name} must render only in sidecar mode`);
    }
  });

  it('reads only files that exist (.Files.Get), and ships the dashboard and the alert rules', () => {
    const wanted = [...templateText().matchAll(/\.Files\.Get\s+"([^"]+)"/g)].map((m) => m[1]!);
    assert.ok(wanted.includes('files/grafana-dashboard.json'), 'the Grafana dashboard is not shipped');
    assert.ok(wanted.includes('files/prometheus-rules.yaml'), 'the Prometheus rules are not shipped');
    for (const file of wanted) assert.ok(existsSync(join(CHART, file)), `.Files.Get "${file}": no such file in the chart`);
    const rules = readYaml(join(CHART, 'files/prometheus-rules.yaml'));
    assert.ok(Array.isArray(rules.groups) && rules.groups.length > 0, 'prometheus-rules.yaml has no groups (PrometheusRule spec)');
  });
});

describe('helm/taskgate: values', () => {
  it('define every value a template reads (.Values paths, _helpers.tpl included)', () => {
    const refs = valueReferences(templateText());
    assert.ok(refs.length > 40, `found only ${refs.length} .Values references; is the pattern broken?`);
    const values = defaults();
    assert.deepEqual(
      refs.filter((path) => !hasPath(values, path)),
      [],
      'referenced by a template but not defined in values.yaml',
    );
  });

  it('are each read by some template (no dead values)', () => {
    const refs = valueReferences(templateText());
    const unread = leafPaths(defaults()).filter((leaf) => !refs.some((ref) => leaf === ref || leaf.startsWith(`${ref}.`)));
    assert.deepEqual(unread, [], 'defined in values.yaml but never read by a template');
  });

  it('are each documented by a comment in values.yaml', () => {
    const doc = parseDocument(readFileSync(join(CHART, 'values.yaml'), 'utf8'));
    assert.deepEqual(undocumentedKeys(doc.contents as Node), []);
  });

  it('embed a valid taskgate policy: the default, and the one of every example values file', () => {
    const sources: (string | undefined)[] = [undefined, ...exampleValueFiles()];
    assert.ok(sources.length >= 3, 'expected the ingress-redis and sidecar examples');
    const stores = new Set<string>();
    for (const file of sources) {
      const name = file ? rel(file) : 'helm/taskgate/values.yaml';
      const values = effectiveValues(file);
      assert.equal(values.policyYaml, '', `${name}: the examples use policy, not policyYaml`);
      const config = validatePolicy(values.policy!, `${name} (policy)`);
      stores.add(config.store.type);
      // What the chart's guards demand (taskgate.validate in _helpers.tpl), so every example renders.
      assert.ok(['0.0.0.0', '::'].includes(config.admin.host), `${name}: policy.admin.host must be 0.0.0.0 in a pod`);
      assert.ok(['0.0.0.0', '::'].includes(config.listen.host), `${name}: policy.listen.host must be 0.0.0.0 in a pod`);
      assert.notEqual(config.listen.port, 0, name);
      assert.notEqual(config.admin.port, 0, name);
      const autoscaling = values.autoscaling as Values;
      const replicas = autoscaling.enabled ? Number(autoscaling.maxReplicas) : Number(values.replicaCount);
      if (config.store.type === 'memory' && values.mode === 'ingress') {
        assert.ok(replicas <= 1, `${name}: ${replicas} replicas on the memory store`);
      }
    }
    assert.deepEqual([...stores].sort(), ['memory', 'redis'], 'the examples should cover both stores');
  });

  it('provide every ${NAME} of each policy through env or secretEnv', () => {
    for (const file of [undefined, ...exampleValueFiles()]) {
      const values = effectiveValues(file);
      const provided = new Set(
        [...(values.env as Values[]), ...(values.secretEnv as Values[])].map((entry) => String(entry.name)),
      );
      for (const entry of values.secretEnv as Values[]) {
        assert.ok(entry.name && entry.secretName && entry.key, `${file}: secretEnv entries need name, secretName and key`);
      }
      if ((values.envFrom as Json[]).length > 0) continue; // names inside whole Secrets cannot be known here
      const missing = [...envReferences(values.policy!)].filter((name) => !provided.has(name));
      assert.deepEqual(missing, [], `${file ? rel(file) : 'values.yaml'}: \${NAME}s with no env or secretEnv entry`);
    }
  });

  it('scale past one replica only on Redis in the ingress example', () => {
    const values = effectiveValues(join(EXAMPLES, 'values-ingress-redis.yaml'));
    const policy = values.policy as Values;
    assert.equal((policy.store as Values).type, 'redis');
    assert.equal((values.autoscaling as Values).enabled, true);
    assert.ok(Number((values.autoscaling as Values).maxReplicas) > 1);
    assert.ok(Number((values.autoscaling as Values).minReplicas) > 1);
  });
});

describe('helm/taskgate: guards', () => {
  const helpers = () => readFileSync(join(TEMPLATES, '_helpers.tpl'), 'utf8');
  const define = (name: string) => {
    const text = helpers();
    const start = text.indexOf(`{{- define "${name}" -}}`);
    assert.ok(start >= 0, `no define "${name}" in _helpers.tpl`);
    const next = text.indexOf('{{- define ', start + 1);
    return text.slice(start, next === -1 ? undefined : next);
  };

  it('refuse more than one replica, or an HPA above one, on the memory store', () => {
    const validate = define('taskgate.validate');
    assert.match(validate, /eq \(include "taskgate\.storeType" \.\) "memory"/);
    assert.match(validate, /gt \(int \.Values\.replicaCount\) 1/);
    assert.match(validate, /gt \(int \.Values\.autoscaling\.maxReplicas\) 1/);
    const fails = [...validate.matchAll(/fail \(printf "([^"\\]*(?:\\.[^"\\]*)*)"/g)].map((m) => m[1]!);
    assert.ok(fails.some((m) => m.includes('replicaCount') && m.includes('memory') && m.includes('redis')), 'no clear replicaCount/memory message');
    assert.ok(fails.some((m) => m.includes('maxReplicas') && m.includes('memory') && m.includes('redis')), 'no clear autoscaling/memory message');
    // taskgate's own default store is memory: an unset store.type must count as memory.
    assert.match(define('taskgate.storeType'), /dig "store" "type" "memory"/);
  });

  it('run in every mode: the policy ConfigMap, rendered unconditionally, includes them first', () => {
    const configMap = readFileSync(join(TEMPLATES, 'policy-configmap.yaml'), 'utf8');
    assert.equal(configMap.split('\n')[0], '{{- include "taskgate.validate" . }}');
    assert.doesNotMatch(configMap, /\{\{-? if /, 'the policy ConfigMap must not be conditional');
  });

  it('mount the policy where the image looks for it', () => {
    const container = define('taskgate.container');
    assert.match(container, new RegExp(`- --config\\s+- ${POLICY_PATH.replace(/\./g, '\\.')}`));
    assert.match(container, /mountPath: \/etc\/taskgate\n/);
    assert.match(define('taskgate.volumes'), /key: taskgate\.yaml\s+path: taskgate\.yaml/);
    assert.match(readFileSync(join(ROOT, 'Dockerfile'), 'utf8'), new RegExp(`CMD \\["--config", "${POLICY_PATH}"\\]`));
  });
});

describe('helm/taskgate: sidecar example pod', () => {
  const docs = () => parseAllDocuments(readFileSync(join(EXAMPLES, 'sidecar-pod.yaml'), 'utf8')).map((d) => d.toJS() as Values);

  it('runs the MCP server on loopback and taskgate beside it, upstream http://127.0.0.1:3000', () => {
    const pod = docs().find((d) => d.kind === 'Pod');
    assert.ok(pod, 'no Pod in sidecar-pod.yaml');
    const spec = pod.spec as Values;
    const containers = spec.containers as Values[];
    const taskgate = containers.find((c) => c.name === 'taskgate');
    const server = containers.find((c) => c.name !== 'taskgate');
    assert.ok(taskgate && server, 'expected the MCP server and taskgate containers');
    const serverEnv = Object.fromEntries((server.env as Values[]).map((e) => [e.name, e.value]));
    assert.equal(serverEnv.HOST, '127.0.0.1');
    assert.equal(serverEnv.PORT, '3000');
    assert.equal(server.ports, undefined, 'the MCP server must not publish a port');

    const values = effectiveValues(join(EXAMPLES, 'values-sidecar.yaml'));
    assert.equal(values.mode, 'sidecar');
    const config = validatePolicy(values.policy!, 'values-sidecar.yaml (policy)');
    assert.deepEqual(Object.values(config.upstreams).map((u) => u.instances), [['http://127.0.0.1:3000']]);

    const ports = Object.fromEntries((taskgate.ports as Values[]).map((p) => [p.name, p.containerPort]));
    assert.deepEqual(ports, { 'tg-proxy': config.listen.port, 'tg-admin': config.admin.port });
    assert.deepEqual(taskgate.args, ['--config', POLICY_PATH]);
    const security = taskgate.securityContext as Values;
    assert.equal(security.runAsNonRoot, true);
    assert.equal(security.readOnlyRootFilesystem, true);
    assert.equal(security.allowPrivilegeEscalation, false);
    assert.deepEqual((security.capabilities as Values).drop, ['ALL']);
    assert.equal(((taskgate.readinessProbe as Values).httpGet as Values).path, '/readyz');
    assert.equal(((taskgate.livenessProbe as Values).httpGet as Values).path, '/healthz');

    // The policy volume is the ConfigMap `helm install taskgate … -f values-sidecar.yaml` creates.
    const volumes = spec.volumes as Values[];
    const policyVolume = volumes.find((v) => v.name === 'taskgate-policy');
    assert.equal(((policyVolume?.configMap as Values | undefined)?.name), 'taskgate-policy');

    const service = docs().find((d) => d.kind === 'Service');
    assert.ok(service, 'no Service in sidecar-pod.yaml');
    for (const port of (service.spec as Values).ports as Values[]) assert.equal(port.targetPort, 'tg-proxy');
  });

  it('conforms to the Kubernetes schemas (strict: no unknown fields)', async () => {
    assert.deepEqual(await checkManifests(docs() as Manifest[]), []);
  });
});

// ---- With a real helm binary: render, lint, and check what comes out. ----

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

  it('refuses a loopback admin listener, which no probe reaches', () => {
    const result = run('template', 'taskgate', CHART, '--set', 'policy.admin.host=127.0.0.1');
    assert.notEqual(result.status, 0);
    assert.match(result.stderr, /policy\.admin\.host/);
  });
});
