/**
 * The pods the scenarios run and what the suite reads from the node about them: pod objects from the API, the
 * Prometheus text of proxies and injectors (read at the pod's IP from the node), a container's process (by containerd's
 * task list) with its start time from /proc, a pod's nat table read inside its network namespace, and the moment a
 * proxy first answers ready, seen from the node.
 */
import { readFileSync } from 'node:fs';
import { kubeRequest } from '../../e2e/support/control-plane.js';
import { httpGet } from '../../support/https.js';
import { eventually } from '../../e2e/support/kube.js';
import type { Cluster } from './cluster.js';
import { run, sleep } from './host.js';
import { APP_IMAGE } from './images.js';

export interface ContainerStatus {
  name: string;
  containerID?: string;
  ready: boolean;
  started?: boolean;
  restartCount: number;
  state: {
    running?: { startedAt: string };
    terminated?: { exitCode: number; reason?: string; startedAt: string; finishedAt: string };
    waiting?: { reason?: string; message?: string };
  };
  lastState?: ContainerStatus['state'];
}

export interface Container {
  name: string;
  image?: string;
  restartPolicy?: string;
  startupProbe?: unknown;
  lifecycle?: { postStart?: { exec?: { command?: string[] } } };
  [key: string]: unknown;
}

export interface Pod {
  metadata: { name: string; namespace: string; uid: string; annotations?: Record<string, string>; labels?: Record<string, string>; deletionTimestamp?: string; creationTimestamp: string };
  spec: { initContainers?: Container[]; containers: Container[]; serviceAccountName?: string };
  status: {
    phase: string;
    podIP?: string;
    conditions?: Array<{ type: string; status: string; reason?: string; lastTransitionTime?: string }>;
    initContainerStatuses?: ContainerStatus[];
    containerStatuses?: ContainerStatus[];
  };
}

const apiOf = (cluster: Cluster) => ({ apiServerUrl: cluster.apiServerUrl, caPem: cluster.ca.certPem, clientCertPem: cluster.admin.certPem, clientKeyPem: cluster.admin.keyPem });

/** One API call as the admin; throws on a status other than 2xx. */
export async function api<T = unknown>(cluster: Cluster, method: string, path: string, body?: unknown): Promise<T> {
  const r = await kubeRequest(apiOf(cluster), method, path, body, { timeoutMs: 15_000 });
  if (r.status < 200 || r.status > 299) throw new ApiError(method, path, r.status, r.body);
  return r.json as T;
}

export class ApiError extends Error {
  constructor(
    readonly method: string,
    readonly path: string,
    readonly status: number,
    readonly body: string,
  ) {
    super(`${method} ${path}: ${status} ${body.slice(0, 2000)}`);
  }
}

export async function getJson<T>(cluster: Cluster, args: string[]): Promise<T> {
  return JSON.parse(await cluster.kubectl([...args, '-o', 'json'])) as T;
}

export const getPod = (cluster: Cluster, namespace: string, name: string): Promise<Pod> => api<Pod>(cluster, 'GET', `/api/v1/namespaces/${namespace}/pods/${name}`);

export async function podsOf(cluster: Cluster, namespace: string, selector: string): Promise<Pod[]> {
  const where = namespace ? `/api/v1/namespaces/${namespace}/pods` : '/api/v1/pods';
  const list = await api<{ items: Pod[] }>(cluster, 'GET', `${where}?labelSelector=${encodeURIComponent(selector)}`);
  return list.items;
}

export const isReady = (pod: Pod): boolean => pod.status.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;

/** Waits until `count` live pods match and all are Ready; returns them. */
export function readyPods(cluster: Cluster, namespace: string, selector: string, count: number, timeoutMs = 120_000): Promise<Pod[]> {
  return eventually(
    `${count} ready pods ${selector} in ${namespace}`,
    async () => {
      const pods = (await podsOf(cluster, namespace, selector)).filter((p) => !p.metadata.deletionTimestamp);
      return pods.length === count && pods.every(isReady) ? pods : undefined;
    },
    { timeoutMs, context: () => `(kubectl -n ${namespace} get pods -l ${selector} shows what is wrong)` },
  );
}

export async function createNamespace(cluster: Cluster, name: string, annotations: Record<string, string> = {}): Promise<void> {
  await api(cluster, 'POST', '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name, annotations } });
  await eventually(`ServiceAccount default in ${name}`, () => api(cluster, 'GET', `/api/v1/namespaces/${name}/serviceaccounts/default`));
}

export async function apply(cluster: Cluster, objects: unknown[]): Promise<void> {
  await cluster.kubectl(['apply', '-f', '-'], { input: JSON.stringify({ apiVersion: 'v1', kind: 'List', items: objects }) });
}

/** Every container named linkerd-proxy, wherever it is (a native sidecar is an init container). */
export const proxies = (pod: Pod): Container[] => [...(pod.spec.initContainers ?? []), ...pod.spec.containers].filter((c) => c.name === 'linkerd-proxy');
export const statusOf = (pod: Pod, name: string): ContainerStatus | undefined =>
  [...(pod.status.initContainerStatuses ?? []), ...(pod.status.containerStatuses ?? [])].find((s) => s.name === name);

// ---------------------------------------------------------------------------------------------------------------
// the workloads

export interface AppOptions {
  name: string;
  namespace: string;
  serviceAccount: string;
  annotations?: Record<string, string>;
  /** URLs the client container calls every second, besides the peers */
  targets?: string[];
  /** a headless Service's name whose pods (other than its own) the client calls by IP */
  peers?: string;
  /** leave out the client container */
  serverOnly?: boolean;
}

const image = (tag: string) => `${APP_IMAGE}:${tag}`;

/**
 * The app's containers: busybox httpd on 8080 and, unless serverOnly, a client that calls its targets and its peers
 * every second and says so in its log.
 */
export function appContainers(tag: string, options: AppOptions): Container[] {
  const containers: Container[] = [
    {
      name: 'app',
      image: image(tag),
      imagePullPolicy: 'Never',
      command: ['httpd', '-f', '-p', '8080', '-h', '/www'],
      ports: [{ name: 'http', containerPort: 8080 }],
    },
  ];
  if (!options.serverOnly) {
    containers.push({
      name: 'client',
      image: image(tag),
      imagePullPolicy: 'Never',
      env: [
        { name: 'TARGETS', value: (options.targets ?? []).join(' ') },
        { name: 'PEERS', value: options.peers ? `${options.peers}.${options.namespace}.svc.cluster.local` : '' },
        { name: 'POD_IP', valueFrom: { fieldRef: { fieldPath: 'status.podIP' } } },
      ],
      command: [
        'sh',
        '-c',
        [
          'while true; do',
          '  for url in $TARGETS; do if timeout 5 wget -q -O /dev/null "$url"; then echo "ok $url"; else echo "failed $url"; fi; done',
          '  if [ -n "$PEERS" ]; then for ip in $(nslookup "$PEERS" 2>/dev/null | awk \'/^Address: / {print $2}\'); do',
          '    [ "$ip" = "$POD_IP" ] && continue',
          '    if timeout 5 wget -q -O /dev/null "http://$ip:8080/"; then echo "ok peer $ip"; else echo "failed peer $ip"; fi',
          '  done; fi',
          '  sleep 1',
          'done',
        ].join('\n'),
      ],
    });
  }
  return containers;
}

export function appPod(tag: string, options: AppOptions): unknown {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: options.name, namespace: options.namespace, labels: { app: options.name }, annotations: options.annotations ?? {} },
    spec: { serviceAccountName: options.serviceAccount, terminationGracePeriodSeconds: 2, containers: appContainers(tag, options) },
  };
}

export function appDeployment(tag: string, options: AppOptions & { replicas: number }): unknown {
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: options.name, namespace: options.namespace },
    spec: {
      replicas: options.replicas,
      selector: { matchLabels: { app: options.name } },
      template: {
        metadata: { labels: { app: options.name }, annotations: options.annotations ?? {} },
        spec: { serviceAccountName: options.serviceAccount, terminationGracePeriodSeconds: 2, containers: appContainers(tag, options) },
      },
    },
  };
}

export const serviceAccount = (name: string, namespace: string): unknown => ({ apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name, namespace } });

export const service = (name: string, namespace: string, options: { headless?: boolean } = {}): unknown => ({
  apiVersion: 'v1',
  kind: 'Service',
  metadata: { name, namespace },
  spec: { selector: { app: name }, ports: [{ name: 'http', port: 8080, targetPort: 8080 }], ...(options.headless && { clusterIP: 'None' }) },
});

// ---------------------------------------------------------------------------------------------------------------
// reading from the node

export async function promText(url: string): Promise<string> {
  const r = await httpGet(url, 5_000);
  if (r.status !== 200) throw new Error(`GET ${url}: ${r.status}`);
  return r.body;
}

/** The host PID of a container's first process, from containerd's task list. */
export async function containerPid(cluster: Cluster, status: ContainerStatus | undefined): Promise<number> {
  const id = status?.containerID?.replace(/^containerd:\/\//, '');
  if (!id) throw new Error(`container ${status?.name} has no containerID yet`);
  const out = await cluster.ctr(['tasks', 'ls']);
  const line = out.split('\n').find((l) => l.startsWith(`${id} `));
  const pid = Number(line?.trim().split(/\s+/)[1]);
  if (!pid) throw new Error(`no running task ${id} in:\n${out}`);
  return pid;
}

const CLOCK_TICKS = Number((await run('getconf', ['CLK_TCK'])).trim()) || 100;

/** Seconds since boot, the clock /proc's process start times count in (10 ms resolution). */
export const uptime = (): number => Number(readFileSync('/proc/uptime', 'utf8').split(' ')[0]);

/** When a process started, in seconds since boot. */
export function processStart(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
  return Number(fields[19]) / CLOCK_TICKS;
}

/** Seconds since boot as wall-clock time, for showing. */
export const wallClock = (sinceBoot: number): string => new Date(Date.now() - (uptime() - sinceBoot) * 1000).toISOString();

/** The nat table inside a process's network namespace, as iptables-nft-save prints it, without comments and counters. */
export async function natTable(pid: number, backend: 'nft' | 'legacy' = 'nft'): Promise<string[]> {
  const out = await run('nsenter', ['-t', String(pid), '-n', `iptables-${backend}-save`, '-t', 'nat']);
  return out
    .split('\n')
    .filter((l) => l && !l.startsWith('#'))
    .map((l) => l.replace(/\s*\[\d+:\d+\]$/, ''));
}

/**
 * Watches a pod from its creation: its IP from the API, then its proxy's /ready from the node every 10 ms. Resolves
 * with the first moment /ready answered 200, in seconds since boot and as wall-clock seconds.
 */
export async function proxyFirstReady(cluster: Cluster, namespace: string, name: string, timeoutMs = 90_000): Promise<{ sinceBoot: number; wall: number }> {
  const deadline = Date.now() + timeoutMs;
  let ip: string | undefined;
  while (!ip) {
    if (Date.now() > deadline) throw new Error(`${namespace}/${name} got no IP in ${timeoutMs} ms`);
    try {
      ip = (await getPod(cluster, namespace, name)).status.podIP;
    } catch {
      // not created yet
    }
    if (!ip) await sleep(20);
  }
  while (Date.now() < deadline) {
    try {
      const r = await httpGet(`http://${ip}:4191/ready`, 200);
      if (r.status === 200) return { sinceBoot: uptime(), wall: Date.now() / 1000 };
    } catch {
      // not listening yet
    }
    await sleep(10);
  }
  throw new Error(`${namespace}/${name}'s proxy never answered ready at ${ip}:4191`);
}

/** A container's log as the kubelet wrote it on the node (all of its runs). */
export async function containerLog(cluster: Cluster, namespace: string, pod: string, container: string, previous = false): Promise<string> {
  return cluster.kubectl(['-n', namespace, 'logs', pod, '-c', container, ...(previous ? ['--previous'] : [])]);
}
