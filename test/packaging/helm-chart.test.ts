/**
 * The Helm chart (helm/taskgate), checked without a cluster: every plain YAML file parses,
 * every policy the chart ships is a valid taskgate policy, every value a template reads is
 * defined (and documented) in values.yaml, the memory-store guard is in place, the files
 * the chart reads exist, and the example sidecar pod conforms to the Kubernetes schemas.
 * With a real helm, helm-render.test.ts renders and lints the chart.
 */
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, it } from 'node:test';
import { parseAllDocuments, parseDocument, type Node } from 'yaml';
import { checkManifests, type Manifest } from './kubernetes-schemas.js';
import { ROOT, HELM_DIR, CHART, TEMPLATES, EXAMPLES, POLICY_PATH, filesUnder, rel, readYaml, templateFiles, templateText, defaults, exampleValueFiles, effectiveValues, envReferences, validatePolicy, valueReferences, hasPath, leafPaths, undocumentedKeys, type Json, type Values } from './helm-chart-files.js';

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
