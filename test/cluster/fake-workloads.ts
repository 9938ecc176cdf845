/**
 * A fake API for healing: namespaces, workloads and their pods, whose "controllers" make a restarted workload's pods
 * again as the webhook would mesh them now, or fail as the workload's scenario says; Events and evictions are kept.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { HEAL_ANNOTATION } from '../../src/cluster/index.js';
import { CONFIG, CONFIG_MAPS, configWith, meshed, ns, pod } from '../support/running-pods.js';
import { fakeApi, type FakeApi } from './fake-api.js';

type Obj = Record<string, unknown>;
export type Scenario = 'ok' | 'crashloop' | 'init-fails' | 'stalled' | 'stalled-before';

export const INJECT = { 'linkerd.io/inject': 'enabled' };
export const DEBUG = configWith((v) => (v.proxy.logLevel = 'debug'));

export interface Workload {
  kind: 'Deployment' | 'StatefulSet' | 'DaemonSet';
  namespace: string;
  name: string;
  replicas: number;
  annotations?: Record<string, string>;
  template: Record<string, string>;
  generation: number;
  status: Obj;
  scenario: Scenario;
}

const COLLECTION = { Deployment: 'deployments', StatefulSet: 'statefulsets', DaemonSet: 'daemonsets' } as const;

/** The pods a workload's controller made, meshed under `made` (drifted when that is not CONFIG), with these annotations. */
function podsOf(w: Workload, made: typeof CONFIG | undefined, annotations: Record<string, string> = {}, generation = w.generation): Obj[] {
  return Array.from({ length: w.replicas }, (_, i) => {
    const hash = `h${generation}`;
    const owner: [string, string] = w.kind === 'Deployment' ? ['ReplicaSet', `${w.name}-${hash}`] : [w.kind, w.name];
    const labels = { app: w.name, ...(w.kind === 'Deployment' && { 'pod-template-hash': hash }) };
    const object = pod(w.namespace, `${w.name}-${hash}-${i}`, { owner, labels, annotations });
    return made ? meshed(object, made) : object;
  });
}

const statusDone = (w: Workload): Obj => ({
  observedGeneration: w.generation,
  replicas: w.replicas,
  updatedReplicas: w.replicas,
  availableReplicas: w.replicas,
  readyReplicas: w.replicas,
  currentRevision: `r${w.generation}`,
  updateRevision: `r${w.generation}`,
  desiredNumberScheduled: w.replicas,
  updatedNumberScheduled: w.replicas,
  numberAvailable: w.replicas,
});

/** A cluster of namespaces, workloads and their pods; restarting a workload makes its pods again as its scenario says. */
export class FakeCluster {
  readonly pods: Obj[] = [];
  readonly patches: string[] = [];
  readonly evictions: string[] = [];
  readonly events: Obj[] = [];
  /** For each restart, the restarts already finished when it was asked for. */
  readonly overlaps: number[] = [];
  evictionRefusals = 0;
  /** Whether Linkerd's ConfigMaps can be read. */
  configMaps = true;
  private finished = 0;
  api!: FakeApi;

  constructor(
    readonly namespaces: Obj[],
    readonly workloads: Workload[],
  ) {}

  async start(): Promise<this> {
    const byNamespace = (name: string) => this.pods.filter((p) => (p['metadata'] as Obj)['namespace'] === name);
    // An injector's webhook that every namespace reaches, so that only the heal's own rules keep one out.
    const webhooks = [{ metadata: { name: 'i' }, webhooks: [{ name: 'mesh.proxy-injector.io', rules: [{ operations: ['CREATE'], resources: ['pods'] }] }] }];
    const lists: Record<string, unknown[]> = { '/api/v1/namespaces': this.namespaces, '/api/v1/pods': this.pods, '/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations': webhooks };
    this.api = await fakeApi({ lists, read: (path, res, req) => this.answer(path, res, req) });
    // Each namespace's pods, listed as they are at the time of the request.
    for (const n of this.namespaces) {
      const name = (n.metadata as { name: string }).name;
      Object.defineProperty(lists, `/api/v1/namespaces/${name}/pods`, { enumerable: true, get: () => byNamespace(name) });
    }
    return this;
  }

  cluster() {
    return { client: this.api.client, server: 'fake', source: 'test' };
  }

  private answer(path: string, res: ServerResponse, req: IncomingMessage): void {
    const send = (status: number, body: unknown): void => void res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    const namespace = this.namespaces.find((n) => path === `/api/v1/namespaces/${(n.metadata as { name: string }).name}`);
    if (namespace) return send(200, namespace);
    if (this.configMaps && CONFIG_MAPS[path]) return send(200, CONFIG_MAPS[path]);
    if (/^\/api\/v1\/namespaces\/[^/]+\/events$/.test(path) && req.method === 'POST') {
      let text = '';
      req.on('data', (c: Buffer) => (text += c.toString()));
      req.on('end', () => {
        this.events.push(JSON.parse(text) as Obj);
        send(201, {});
      });
      return;
    }
    const eviction = /^\/api\/v1\/namespaces\/([^/]+)\/pods\/([^/]+)\/eviction$/.exec(path);
    if (eviction && req.method === 'POST') {
      if (this.evictionRefusals > 0) {
        this.evictionRefusals--;
        return send(429, { kind: 'Status', code: 429, message: 'Cannot evict pod as it would violate the pod\'s disruption budget.' });
      }
      this.evictions.push(`${eviction[1]}/${eviction[2]}`);
      this.pods.splice(this.pods.findIndex((p) => (p['metadata'] as Obj)['name'] === eviction[2]), 1);
      return send(201, {});
    }
    const w = this.workloads.find((x) => path === `/apis/apps/v1/namespaces/${x.namespace}/${COLLECTION[x.kind]}/${x.name}`);
    if (!w) return send(404, { kind: 'Status', code: 404, message: 'not found' });
    if (req.method === 'PATCH') {
      let text = '';
      req.on('data', (c: Buffer) => (text += c.toString()));
      req.on('end', () => {
        const patch = JSON.parse(text) as { spec: { template: { metadata: { annotations: Record<string, string> } } } };
        this.patches.push(`${w.kind}/${w.namespace}/${w.name}`);
        this.overlaps.push(this.patches.length - 1 - this.finished);
        Object.assign(w.template, patch.spec.template.metadata.annotations);
        w.generation++;
        this.rollOut(w);
        send(200, this.object(w));
      });
      return;
    }
    send(200, this.object(w));
  }

  /** What the workload's controller does with a new template, as its scenario says, a few polls later. */
  private rollOut(w: Workload): void {
    const old = this.pods.filter((p) => ((p['metadata'] as Obj)['labels'] as Record<string, string>)['app'] === w.name && (p['metadata'] as Obj)['namespace'] === w.namespace);
    const fresh = podsOf(w, CONFIG, { ...w.template });
    if (w.scenario === 'stalled-before') {
      // The controller has not seen the new template yet, and its status still says the last rollout stalled.
      w.status = { ...w.status, observedGeneration: w.generation - 1 };
    } else {
      w.status = { observedGeneration: w.generation, replicas: w.replicas, updatedReplicas: 1, desiredNumberScheduled: w.replicas, updatedNumberScheduled: 1 };
    }
    setTimeout(() => {
      if (w.scenario === 'stalled') {
        w.status['conditions'] = [{ type: 'Progressing', status: 'False', reason: 'ProgressDeadlineExceeded', message: `ReplicaSet "${w.name}" has timed out progressing.` }];
        return;
      }
      if (w.scenario === 'crashloop' || w.scenario === 'init-fails') {
        const bad = fresh[0] as Obj;
        const status = bad['status'] as Obj;
        if (w.scenario === 'crashloop') status['containerStatuses'] = [{ name: 'app', state: { waiting: { reason: 'CrashLoopBackOff' } } }];
        else status['initContainerStatuses'] = [{ name: 'linkerd-init', state: { terminated: { exitCode: 1 } } }];
        this.pods.push(bad);
        return;
      }
      for (const p of old) this.pods.splice(this.pods.indexOf(p), 1);
      this.pods.push(...fresh);
      w.status = statusDone(w);
      this.finished++;
    }, 30);
  }

  private object(w: Workload): Obj {
    return {
      metadata: { name: w.name, namespace: w.namespace, generation: w.generation, annotations: w.annotations ?? {} },
      spec: { replicas: w.replicas, selector: { matchLabels: { app: w.name } }, template: { metadata: { annotations: { ...w.template } } } },
      status: w.status,
    };
  }
}

/** The clusters started, for the caller to close after each test. */
export const clusters: FakeCluster[] = [];

export function workload(kind: Workload['kind'], namespace: string, name: string, scenario: Scenario = 'ok', more: Partial<Workload> = {}): Workload {
  const w: Workload = { kind, namespace, name, replicas: 2, template: {}, generation: 1, status: {}, scenario, ...more };
  w.status = statusDone(w);
  return w;
}

/** A cluster where each workload's pods were made under `made[name]` (DEBUG by default: drifted). */
export async function start(workloads: Workload[], made: Record<string, typeof CONFIG | undefined> = {}, extraPods: Obj[] = []): Promise<FakeCluster> {
  const namespaces = [
    ns('shop', INJECT),
    ns('pay', INJECT),
    ns('kube-system', INJECT),
    ns('proxy-injector', INJECT),
    ns('linkerd-viz', INJECT, { 'linkerd.io/extension': 'viz' }),
    ns('frozen', { ...INJECT, [HEAL_ANNOTATION]: 'disabled' }),
  ];
  const fake = new FakeCluster(namespaces, workloads);
  for (const w of workloads) fake.pods.push(...podsOf(w, w.name in made ? made[w.name] : DEBUG));
  fake.pods.push(...extraPods);
  clusters.push(fake);
  return fake.start();
}

