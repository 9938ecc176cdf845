/**
 * A pod as kube-apiserver stores and returns it, for tests that compare a running pod with a fresh injection: the
 * ServiceAccount plugin's token volume (added before the webhooks), then the defaults, the dropped empty values, the
 * rewritten quantities, the identity fields and a status, as a real API server adds them.
 */
import jsonPatch from 'fast-json-patch';

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);
const listOf = (v: unknown): Obj[] => (Array.isArray(v) ? (v.filter(isObj) as Obj[]) : []);

const TOKEN_VOLUME = 'kube-api-access-x7k2p';
const TOKEN_PATH = '/var/run/secrets/kubernetes.io/serviceaccount';

/** The ServiceAccount admission plugin's work, before the webhooks: a token volume mounted in every container. */
export function withServiceAccount<T>(pod: T): T {
  const copy = jsonPatch.deepClone(pod) as Obj;
  const spec = copy['spec'] as Obj;
  spec['volumes'] = [
    ...listOf(spec['volumes']),
    {
      name: TOKEN_VOLUME,
      projected: {
        sources: [
          { serviceAccountToken: { expirationSeconds: 3607, path: 'token' } },
          { configMap: { name: 'kube-root-ca.crt', items: [{ key: 'ca.crt', path: 'ca.crt' }] } },
        ],
      },
    },
  ];
  for (const c of [...listOf(spec['initContainers']), ...listOf(spec['containers'])]) {
    c['volumeMounts'] = [...listOf(c['volumeMounts']), { name: TOKEN_VOLUME, mountPath: TOKEN_PATH, readOnly: true }];
  }
  return copy as T;
}

/** The canonical form kube-apiserver gives the quantities the tests use. */
const CANONICAL_QUANTITIES: Readonly<Record<string, string>> = {
  '0.1': '100m',
  '1000m': '1',
  '1024Mi': '1Gi',
  '0.5Gi': '512Mi',
};

const PROBE_DEFAULTS = { periodSeconds: 10, successThreshold: 1, failureThreshold: 3, timeoutSeconds: 1 };

/** Go's `omitempty`: null, empty texts and lists, zeros and false of the non-pointer fields go; an empty map stays. */
function dropEmpty(value: unknown): unknown {
  if (Array.isArray(value)) return value.map((v) => dropEmpty(v));
  if (!isObj(value)) return value;
  const out: Obj = {};
  for (const [k, v] of Object.entries(value)) {
    if (v === null || v === '' || (Array.isArray(v) && v.length === 0)) continue;
    if ((k === 'initialDelaySeconds' && v === 0) || (k === 'readOnly' && v === false)) continue;
    out[k] = dropEmpty(v);
  }
  return out;
}

function defaultProbe(probe: unknown): void {
  if (!isObj(probe)) return;
  for (const [k, v] of Object.entries(PROBE_DEFAULTS)) if (!(k in probe) || probe[k] === 0) probe[k] = v;
  if (isObj(probe['httpGet'])) probe['httpGet']['scheme'] ??= 'HTTP';
}

function defaultContainer(c: Obj): Obj {
  c['terminationMessagePath'] ??= '/dev/termination-log';
  c['terminationMessagePolicy'] ??= 'File';
  if (!c['imagePullPolicy']) c['imagePullPolicy'] = String(c['image']).endsWith(':latest') ? 'Always' : 'IfNotPresent';
  const resources = isObj(c['resources']) ? c['resources'] : {};
  for (const side of ['limits', 'requests']) {
    const map = resources[side];
    if (isObj(map)) for (const [k, v] of Object.entries(map)) map[k] = CANONICAL_QUANTITIES[String(v)] ?? v;
  }
  c['resources'] = resources;
  for (const p of listOf(c['ports'])) p['protocol'] ??= 'TCP';
  for (const probe of ['livenessProbe', 'readinessProbe', 'startupProbe']) defaultProbe(c[probe]);
  for (const e of listOf(c['env'])) {
    const from = isObj(e['valueFrom']) ? e['valueFrom'] : undefined;
    if (isObj(from?.['fieldRef'])) from['fieldRef']['apiVersion'] ??= 'v1';
    if (isObj(from?.['resourceFieldRef'])) from['resourceFieldRef']['divisor'] ??= '0';
  }
  return dropEmpty(c) as Obj;
}

function defaultVolume(v: Obj): Obj {
  for (const source of ['downwardAPI', 'projected', 'configMap', 'secret']) {
    const s = v[source];
    if (isObj(s)) s['defaultMode'] ??= 420;
  }
  const down = v['downwardAPI'];
  for (const item of listOf(isObj(down) ? down['items'] : undefined)) {
    if (isObj(item['fieldRef'])) item['fieldRef']['apiVersion'] ??= 'v1';
  }
  return v;
}

/** What the API server returns for a pod the webhooks have finished with, once it runs. */
export function stored<T>(admitted: T): T {
  const pod = jsonPatch.deepClone(admitted) as Obj;
  delete pod['kind'];
  delete pod['apiVersion'];
  const metadata = isObj(pod['metadata']) ? pod['metadata'] : (pod['metadata'] = {});
  Object.assign(metadata, {
    uid: '1f0c5a8e-2b9d-4e0a-9d64-5f8b1c7a3e21',
    resourceVersion: '48213',
    creationTimestamp: '2026-01-05T10:00:00Z',
  });
  const spec = pod['spec'] as Obj;
  for (const list of ['initContainers', 'containers']) {
    if (Array.isArray(spec[list])) spec[list] = listOf(spec[list]).map(defaultContainer);
  }
  if (Array.isArray(spec['initContainers']) && spec['initContainers'].length === 0) delete spec['initContainers'];
  spec['volumes'] = listOf(spec['volumes']).map(defaultVolume);
  Object.assign(spec, {
    dnsPolicy: 'ClusterFirst',
    enableServiceLinks: true,
    nodeName: 'node-1',
    preemptionPolicy: 'PreemptLowerPriority',
    priority: 0,
    restartPolicy: 'Always',
    schedulerName: 'default-scheduler',
    securityContext: {},
    serviceAccount: 'default',
    serviceAccountName: 'default',
    terminationGracePeriodSeconds: 30,
    tolerations: [
      { effect: 'NoExecute', key: 'node.kubernetes.io/not-ready', operator: 'Exists', tolerationSeconds: 300 },
    ],
  });
  const statusOf = (c: Obj): Obj => ({
    name: c['name'],
    image: c['image'],
    ready: true,
    restartCount: 0,
    started: true,
    state: { running: { startedAt: '2026-01-05T10:00:05Z' } },
  });
  pod['status'] = {
    phase: 'Running',
    podIP: '10.244.0.17',
    podIPs: [{ ip: '10.244.0.17' }],
    qosClass: 'BestEffort',
    containerStatuses: listOf(spec['containers']).map(statusOf),
    initContainerStatuses: listOf(spec['initContainers']).map(statusOf),
  };
  return pod as T;
}
