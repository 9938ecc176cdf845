/**
 * `check pods` over a cluster of BENCH_PODS pods (10,000 by default) behind a fake API that lists them 500 at a time:
 * 50 namespaces that ask for injection, Deployments of 10 pods, of which one pod in four was made before the proxy's
 * log level changed (drifted), one in twenty slipped through without a proxy, and the rest are current. Each pod is
 * as the API server lists a running one: the service-account volume, defaults, status and about 3 KiB of
 * managedFields. The command runs as a user runs it, `node dist/cli/main.js check pods -o json`, in a process of its
 * own; reported: wall time and peak RSS (GNU time's maximum resident set), median of BENCH_RUNS runs (3).
 *
 *   npm run bench:check-pods
 *   BENCH_PODS=2000 BENCH_DIST=/path/to/other/dist npm run bench:check-pods    another build (its own check pods)
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import jsonPatch from 'fast-json-patch';
import { startFakeCluster } from './fake-cluster.mjs';
import { median } from './serve-process.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const dist = resolve(process.env['BENCH_DIST'] ?? join(root, 'dist'));
const PODS = Number(process.env['BENCH_PODS'] ?? '10000');
const RUNS = Number(process.env['BENCH_RUNS'] ?? '3');
const NAMESPACES = 50;
const PER_DEPLOYMENT = 10;

const { defaultValues, inject, withCheckedTrustAnchors } = await import(join(root, 'dist', 'engine', 'index.js'));
const anchors = readFileSync(join(root, 'examples', 'trust-anchors.pem'), 'utf8');
const configWith = (logLevel) => {
  // As the webhook read them when it made the pods: trimmed.
  const values = withCheckedTrustAnchors(defaultValues(), { pem: anchors, source: 'examples/trust-anchors.pem' }, 'the embedded defaults');
  if (logLevel) values.proxy.logLevel = logLevel;
  return { values, controlPlaneNamespace: 'linkerd' };
};

/** About 3 KiB of server-side apply's record, as every pod the API server lists carries. */
const managedFields = [
  {
    manager: 'kube-controller-manager',
    operation: 'Update',
    apiVersion: 'v1',
    time: '2026-11-01T10:00:00Z',
    fieldsType: 'FieldsV1',
    fieldsV1: Object.fromEntries(Array.from({ length: 60 }, (_, i) => [`f:field-${i}`, { 'f:name': {}, 'f:value': {} }])),
  },
];

/** A Deployment's pod as the webhook made it under `config` (or left it, without), as the API server lists it. */
function template(config) {
  const pod = {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'app-0-5d8f7c9b6d-x', namespace: 'ns-0', labels: { app: 'app-0', 'pod-template-hash': '5d8f7c9b6d' }, managedFields },
    spec: {
      containers: [{ name: 'app', image: 'registry.example:5000/shop/app:1.4.2', ports: [{ containerPort: 8080, protocol: 'TCP' }] }],
      volumes: [{ name: 'kube-api-access-x7k2p', projected: { sources: [{ serviceAccountToken: { expirationSeconds: 3607, path: 'token' } }] } }],
      nodeName: 'node-1',
      restartPolicy: 'Always',
    },
  };
  if (config) {
    const result = inject({ object: pod, kind: 'Pod', namespace: 'ns-0', namespaceAnnotations: { 'linkerd.io/inject': 'enabled' }, owner: { kind: 'deployment', name: 'app-0' }, config });
    jsonPatch.applyPatch(pod, jsonPatch.deepClone(result.patch));
  }
  delete pod.kind;
  delete pod.apiVersion;
  pod.status = { phase: 'Running', podIP: '10.244.0.17', containerStatuses: pod.spec.containers.map((c) => ({ name: c.name, ready: true, restartCount: 0 })) };
  return JSON.stringify(pod);
}

const kinds = { current: template(configWith()), drifted: template(configWith('debug')), unmeshed: template(undefined) };

/** Pod `i`: its namespace, Deployment and name, from the template of its kind. */
function make(i) {
  const kind = i % 20 === 19 ? 'unmeshed' : i % 4 === 3 ? 'drifted' : 'current';
  const pod = JSON.parse(kinds[kind]);
  const deployment = `app-${Math.floor(i / PER_DEPLOYMENT)}`;
  pod.metadata.namespace = `ns-${Math.floor(i / PER_DEPLOYMENT) % NAMESPACES}`;
  pod.metadata.name = `${deployment}-5d8f7c9b6d-${i}`;
  pod.metadata.labels.app = deployment;
  pod.metadata.ownerReferences = [{ apiVersion: 'apps/v1', kind: 'ReplicaSet', name: `${deployment}-5d8f7c9b6d`, uid: `u-${i}`, controller: true }];
  if (kind !== 'unmeshed') {
    pod.metadata.labels['linkerd.io/proxy-deployment'] = deployment;
    pod.metadata.labels['linkerd.io/workload-ns'] = pod.metadata.namespace;
  }
  return pod;
}

const configMap = (name, data) => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: 'linkerd' }, data });
const cluster = await startFakeCluster({
  namespaces: Object.fromEntries(Array.from({ length: NAMESPACES }, (_, i) => [`ns-${i}`, { 'linkerd.io/inject': 'enabled' }])),
  configMaps: { linkerd: [configMap('linkerd-config', { values: '{}\n' }), configMap('linkerd-identity-trust-roots', { 'ca-bundle.crt': anchors })] },
  pods: { count: PODS, make },
});
const dir = mkdtempSync(join(tmpdir(), 'check-pods-bench-'));
try {
  const kubeconfig = cluster.kubeconfig(dir);
  const runs = [];
  let summary = '';
  for (let run = 0; run < RUNS; run++) {
    const started = performance.now();
    // GNU time prints the peak RSS (KiB) on stderr; the command exits 1 while pods are drifted, as they are here.
    let stderr = '';
    let stdout = '';
    // Asynchronously: the fake API answers from this process's event loop.
    try {
      ({ stdout, stderr } = await promisify(execFile)('/usr/bin/time', ['-f', 'maxrss=%M', process.execPath, join(dist, 'cli', 'main.js'), 'check', 'pods', '--kubeconfig', kubeconfig, '-o', 'json'], {
        encoding: 'utf8',
        maxBuffer: 1024 * 1024 * 1024,
      }));
    } catch (err) {
      stdout = err.stdout ?? '';
      stderr = err.stderr ?? '';
      if (err.code !== 1) throw err;
    }
    const seconds = (performance.now() - started) / 1e3;
    const rss = Number(/maxrss=(\d+)/.exec(stderr)?.[1] ?? NaN) / 1024;
    if (!stdout) throw new Error(`check pods printed nothing: ${stderr.trim()}`);
    const report = JSON.parse(stdout);
    const pods = (report.workloads ?? []).reduce((n, w) => n + w.pods.length, 0) || (report.pods ?? []).length;
    if (pods !== PODS) throw new Error(`the report holds ${pods} pods, not ${PODS}`);
    summary = Object.entries(report.counts).filter(([, n]) => n > 0).map(([s, n]) => `${s} ${n}`).join(', ');
    runs.push({ seconds, rss });
  }
  console.log(`check pods over ${PODS} pods (${summary}), ${dist === join(root, 'dist') ? 'this build' : dist}, ${process.version}`);
  console.log(`  time ${median(runs.map((r) => r.seconds)).toFixed(2)} s (${(median(runs.map((r) => r.seconds)) / PODS * 1e6).toFixed(0)} us a pod), peak RSS ${median(runs.map((r) => r.rss)).toFixed(0)} MiB; runs: ${runs.map((r) => `${r.seconds.toFixed(2)} s/${r.rss.toFixed(0)} MiB`).join(', ')}`);
} finally {
  rmSync(dir, { recursive: true, force: true });
  await cluster.close();
}
process.exit(0);
