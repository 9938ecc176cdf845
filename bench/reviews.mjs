/**
 * The AdmissionReviews the webhook benchmark sends, by mix, generated from a fixed seed so that every run (and the
 * floor and the injector within a run) sees the same requests:
 * - rollout:  pods of one Deployment's ReplicaSet, identical but for their uid (as kube-apiserver sends them: the
 *             name is generated after admission) and, to be harder than reality, a name of their own;
 * - distinct: every pod different: container counts, ports, and annotations from the whole config.linkerd.io/* set;
 * - owned:    the distinct pods, each made by a Job of its own, as most pods of a cluster come (a Job, a CronJob's run,
 *             a Deployment of one replica: one pod per controller and template), so that none is answered from the
 *             cache of rollout answers and each goes through it;
 * - skip:     pods nobody asked to mesh (the common case in a cluster where few namespaces are meshed);
 * - large:    a pod with 40 containers, 200 ports and 100 annotations.
 */
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const sample = JSON.parse(readFileSync(join(root, 'examples', 'admission-review.json'), 'utf8'));

/** mulberry32: a small seeded generator, so the mixes are the same in every run. */
export function random(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const uid = (mix, i) => `${mix}-${String(i).padStart(8, '0')}-0000-4000-8000-000000000000`;

function review(mix, i, pod) {
  const object = structuredClone(pod);
  object.metadata.uid = '';
  return JSON.stringify({ ...sample, request: { ...sample.request, uid: uid(mix, i), name: object.metadata.name ?? '', object } });
}

const template = () => structuredClone(sample.request.object);

/** Values that parse, for every proxy configuration annotation the distinct mix may set. */
const ANNOTATION_VALUES = {
  'config.linkerd.io/admin-port': () => '4191',
  'config.linkerd.io/control-port': () => '4190',
  'config.linkerd.io/enable-debug-sidecar': (r) => (r() < 0.5 ? 'true' : 'false'),
  'config.linkerd.io/enable-external-profiles': (r) => (r() < 0.5 ? 'true' : 'false'),
  'config.linkerd.io/image-pull-policy': (r) => (r() < 0.5 ? 'Always' : 'IfNotPresent'),
  'config.linkerd.io/inbound-port': () => '4143',
  'config.linkerd.io/outbound-port': () => '4140',
  'config.linkerd.io/proxy-cpu-limit': (r) => `${1 + Math.floor(r() * 4)}`,
  'config.linkerd.io/proxy-cpu-request': (r) => `${100 + Math.floor(r() * 400)}m`,
  'config.linkerd.io/proxy-log-format': (r) => (r() < 0.5 ? 'plain' : 'json'),
  'config.linkerd.io/proxy-log-level': (r) => ['warn,linkerd=info', 'info', 'debug', 'warn'][Math.floor(r() * 4)],
  'config.linkerd.io/proxy-memory-limit': (r) => `${256 + Math.floor(r() * 256)}Mi`,
  'config.linkerd.io/proxy-memory-request': (r) => `${20 + Math.floor(r() * 100)}Mi`,
  'config.linkerd.io/proxy-uid': (r) => `${2102 + Math.floor(r() * 1000)}`,
  'config.linkerd.io/skip-inbound-ports': (r) => `${3000 + Math.floor(r() * 1000)},${5000 + Math.floor(r() * 1000)}-${6000 + Math.floor(r() * 1000)}`,
  'config.linkerd.io/skip-outbound-ports': (r) => `${4000 + Math.floor(r() * 1000)}`,
  'config.linkerd.io/opaque-ports': (r) => `${5432 + Math.floor(r() * 10)},3306`,
  'config.linkerd.io/proxy-outbound-connect-timeout': (r) => `${100 + Math.floor(r() * 900)}ms`,
  'config.linkerd.io/proxy-inbound-connect-timeout': (r) => `${100 + Math.floor(r() * 900)}ms`,
  'config.linkerd.io/proxy-await': (r) => (r() < 0.8 ? 'enabled' : 'disabled'),
  'config.linkerd.io/default-inbound-policy': (r) => ['all-unauthenticated', 'cluster-authenticated', 'deny'][Math.floor(r() * 3)],
  'config.linkerd.io/skip-subnets': (r) => `10.${Math.floor(r() * 255)}.0.0/16`,
  'config.linkerd.io/access-log': (r) => (r() < 0.5 ? 'apache' : 'json'),
  'config.linkerd.io/shutdown-grace-period': (r) => `${10 + Math.floor(r() * 60)}s`,
  'config.linkerd.io/proxy-enable-native-sidecar': (r) => (r() < 0.3 ? 'true' : 'false'),
  'config.linkerd.io/proxy-additional-env': (r) => JSON.stringify([{ name: 'EXTRA', value: `${Math.floor(r() * 100)}` }]),
  'config.alpha.linkerd.io/proxy-wait-before-exit-seconds': (r) => `${Math.floor(r() * 30)}`,
};
const ANNOTATION_NAMES = Object.keys(ANNOTATION_VALUES);

function rollout(count) {
  const pod = template();
  pod.metadata.generateName = 'web-7d4b77557b-';
  pod.metadata.labels = { app: 'web', 'pod-template-hash': '7d4b77557b' };
  pod.metadata.ownerReferences = [{ apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'web-7d4b77557b', uid: 'b0b0b0b0-0000-4000-8000-000000000001', controller: true }];
  return Array.from({ length: count }, (_, i) => {
    pod.metadata.name = `web-7d4b77557b-${i.toString(36).padStart(5, '0')}`;
    return review('rollout', i, pod);
  });
}

function distinct(count, seed = 1) {
  const r = random(seed);
  return Array.from({ length: count }, (_, i) => {
    const pod = template();
    pod.metadata.name = `distinct-${i}`;
    const annotations = { 'linkerd.io/inject': 'enabled' };
    const wanted = 1 + Math.floor(r() * 8);
    for (let k = 0; k < wanted; k++) {
      const name = ANNOTATION_NAMES[Math.floor(r() * ANNOTATION_NAMES.length)];
      annotations[name] = ANNOTATION_VALUES[name](r);
    }
    pod.metadata.annotations = annotations;
    const containers = 1 + Math.floor(r() * 4);
    pod.spec.containers = Array.from({ length: containers }, (_, c) => ({
      name: `c${c}`,
      image: `registry.example/app-${Math.floor(r() * 50)}:v${c}`,
      ports: Array.from({ length: Math.floor(r() * 4) }, (_, p) => ({ containerPort: 8000 + c * 10 + p, name: `p${c}-${p}` })),
    }));
    return review('distinct', i, pod);
  });
}

function owned(count) {
  return distinct(count).map((text, i) => {
    const review = JSON.parse(text);
    const metadata = review.request.object.metadata;
    const controllerUid = `c0c0c0c0-${String(i).padStart(4, '0')}-4000-8000-000000000000`;
    metadata.name = review.request.name = `job-${i}-x7k2q`;
    metadata.labels = { ...metadata.labels, 'batch.kubernetes.io/controller-uid': controllerUid, 'batch.kubernetes.io/job-name': `job-${i}` };
    metadata.ownerReferences = [{ apiVersion: 'batch/v1', kind: 'Job', name: `job-${i}`, uid: controllerUid, controller: true, blockOwnerDeletion: true }];
    review.request.uid = uid('owned', i);
    return JSON.stringify(review);
  });
}

function skip(count) {
  const pod = template();
  delete pod.metadata.annotations;
  return Array.from({ length: count }, (_, i) => {
    pod.metadata.name = `plain-${i}`;
    return review('skip', i, pod);
  });
}

/** A pod of `containers` containers with `ports` ports in all and `annotations` annotations besides the inject one. */
export function sizedPod(containers, ports, annotations) {
  const pod = template();
  pod.metadata.annotations = { 'linkerd.io/inject': 'enabled' };
  for (let a = 0; a < annotations; a++) pod.metadata.annotations[`example.com/note-${a}`] = `value ${a}`;
  pod.spec.containers = Array.from({ length: containers }, (_, c) => ({
    name: `c${c}`,
    image: `registry.example/app:${c}`,
    ports: Array.from({ length: Math.floor(ports / containers) + (c < ports % containers ? 1 : 0) }, (_, p) => ({ containerPort: 10000 + c * 100 + p })),
  }));
  return pod;
}

function large(count) {
  const pod = sizedPod(40, 200, 100);
  return Array.from({ length: count }, (_, i) => {
    pod.metadata.name = `large-${i}`;
    return review('large', i, pod);
  });
}

export const MIXES = { rollout, distinct, owned, skip, large };

/**
 * The cluster these reviews come from, as bench/fake-cluster.mjs takes it, for mixes of `count` requests: their
 * namespace (no annotations: pods ask to be meshed themselves), the rollout's ReplicaSet made by Deployment `web`, the
 * owned mix's Jobs (none made by a CronJob), and Linkerd's configuration in its ConfigMaps: the embedded defaults with
 * the example trust anchors, as `serve --no-cluster --trust-anchors` has them.
 */
export function clusterOf(count) {
  const namespace = sample.request.namespace;
  const owners = {
    [`replicasets/${namespace}/web-7d4b77557b`]: { ownerReferences: [{ apiVersion: 'apps/v1', kind: 'Deployment', name: 'web', uid: 'd0d0d0d0-0000-4000-8000-000000000001', controller: true }] },
  };
  for (let i = 0; i < count; i++) owners[`jobs/${namespace}/job-${i}`] = { ownerReferences: [] };
  const configMap = (name, data) => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: 'linkerd', resourceVersion: '1' }, data });
  const anchors = readFileSync(join(root, 'examples', 'trust-anchors.pem'), 'utf8');
  return {
    namespaces: { [namespace]: {} },
    owners,
    configMaps: { linkerd: [configMap('linkerd-config', { values: '{}\n' }), configMap('linkerd-identity-trust-roots', { 'ca-bundle.crt': anchors })] },
  };
}
