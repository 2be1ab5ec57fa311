/**
 * The schema check the chart tests rely on (kubernetes-schemas.ts) refuses what the API
 * server would refuse, and only that: each broken manifest below is a copy of the example
 * sidecar pod (or a ServiceMonitor) with one kind of mistake.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { parseAllDocuments } from 'yaml';
import { checkManifests, type Manifest } from './kubernetes-schemas.js';

const ROOT = new URL('../../', import.meta.url).pathname;

type Json = Record<string, unknown>;

function examplePod(): Json {
  const docs = parseAllDocuments(readFileSync(join(ROOT, 'helm/taskgate/examples/sidecar-pod.yaml'), 'utf8')).map((d) => d.toJS() as Json);
  const pod = docs.find((d) => d.kind === 'Pod');
  assert.ok(pod);
  return pod;
}

const containers = (pod: Json) => (pod.spec as Json).containers as Json[];

function serviceMonitor(): Json {
  return {
    apiVersion: 'monitoring.coreos.com/v1',
    kind: 'ServiceMonitor',
    metadata: { name: 'taskgate', labels: { release: 'prometheus' } },
    spec: {
      selector: { matchLabels: { 'app.kubernetes.io/name': 'taskgate' } },
      endpoints: [{ port: 'tg-admin', path: '/metrics', interval: '30s' }],
    },
  };
}

describe('the Kubernetes schema check', () => {
  it('passes a conforming pod, a ConfigMap and a ServiceMonitor, with any keys in labels, annotations and data', async () => {
    const pod = examplePod();
    (pod.metadata as Json).annotations = { 'example.com/anything': 'goes', 'checksum/policy': 'abc' };
    const configMap = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'm' }, data: { 'taskgate.yaml': 'x: 1', 'any.key': '' } };
    assert.deepEqual(await checkManifests([pod, configMap, serviceMonitor()] as Manifest[]), []);
  });

  it('reports every unknown field, however deep and however many, with its path', async () => {
    const pod = examplePod();
    containers(pod)[1]!.readinesProbe = { httpGet: { path: '/readyz', port: 'tg-admin' } };
    containers(pod)[1]!.livenesProbe = {};
    (pod.spec as Json).securityContex = {};
    (pod.metadata as Json).label = { a: 'b' };
    const monitor = serviceMonitor();
    ((monitor.spec as Json).endpoints as Json[])[0]!.intervl = '1m';
    const problems = await checkManifests([pod, monitor] as Manifest[]);
    for (const path of ['/spec/containers/1/readinesProbe', '/spec/containers/1/livenesProbe', '/spec/securityContex', '/metadata/label', '/spec/endpoints/0/intervl']) {
      assert.ok(problems.some((p) => p.includes(`${path}: unknown field`)), `${path} not reported in:\n${problems.join('\n')}`);
    }
    assert.equal(problems.length, 5, problems.join('\n'));
  });

  it('reports wrong types, missing required fields and values outside an enum', async () => {
    const pod = examplePod();
    ((containers(pod)[1]!.ports as Json[])[0] as Json).containerPort = '8080';
    delete containers(pod)[0]!.name;
    containers(pod)[1]!.imagePullPolicy = 'Sometimes';
    const problems = await checkManifests([pod] as Manifest[]);
    assert.ok(problems.some((p) => /\/spec\/containers\/1\/ports\/0\/containerPort must be integer/.test(p)), problems.join('\n'));
    assert.ok(problems.some((p) => /\/spec\/containers\/0 must have required property '?name'?/.test(p)), problems.join('\n'));
    assert.ok(problems.some((p) => /\/spec\/containers\/1\/imagePullPolicy must be equal to one of the allowed values/.test(p)), problems.join('\n'));
  });

  it('refuses a kind it has no schema for, and alpha or beta API versions, rather than passing them', async () => {
    const problems = await checkManifests([
      { apiVersion: 'example.com/v1', kind: 'Widget', metadata: { name: 'w' } },
      { apiVersion: 'v1', kind: 'Servce', metadata: { name: 's' } },
      { apiVersion: 'policy/v1beta1', kind: 'PodDisruptionBudget', metadata: { name: 'p' } },
      { kind: 'ConfigMap', metadata: { name: 'c' } },
    ]);
    assert.deepEqual(problems, [
      'Widget/w: no schema for example.com/v1 Widget',
      'Servce/s: no schema for v1 Servce',
      'PodDisruptionBudget/p: policy/v1beta1 is not a stable API version',
      'ConfigMap/c: apiVersion and kind must be strings',
    ]);
  });
});
