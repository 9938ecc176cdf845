/**
 * Running pods as the API server lists them, for tests of check pods and the pod scan: pods without a proxy, and pods
 * the webhook meshed under a given configuration (injected by the engine, then stored as the API server stores them).
 */
import { expect } from 'vitest';
import { inject, loadValues, withCheckedTrustAnchors, type InjectorConfig, type LinkerdValues } from '../../src/engine/index.js';
import { TRUST_ANCHORS, applied } from './engine.js';
import { stored, withServiceAccount } from './stored-pod.js';

type Obj = Record<string, unknown>;

export const ns = (name: string, annotations: Record<string, string> = {}, labels: Record<string, string> = {}) => ({ metadata: { name, annotations, labels } });
const container = (name: string) => ({ name, image: `${name}:1` });

export interface PodOptions {
  proxy?: boolean;
  annotations?: Record<string, string>;
  labels?: Record<string, string>;
  owner?: [string, string];
  phase?: string;
  spec?: Record<string, unknown>;
}

export function pod(namespace: string, name: string, opts: PodOptions = {}): Obj {
  return {
    metadata: {
      namespace,
      name,
      annotations: opts.annotations ?? {},
      labels: opts.labels ?? {},
      ...(opts.owner && { ownerReferences: [{ apiVersion: 'apps/v1', kind: opts.owner[0], name: opts.owner[1], uid: 'u', controller: true }] }),
    },
    spec: { containers: opts.proxy ? [container('linkerd-proxy'), container('app')] : [container('app')], ...opts.spec },
    status: { phase: opts.phase ?? 'Running' },
  };
}

/**
 * The values the fake cluster's ConfigMap linkerd-config holds, and the configuration they make with its trust roots,
 * as the webhook reads them (the anchors trimmed).
 */
export const VALUES = 'proxy:\n  logLevel: warn,linkerd=info\n';
export const configWith = (change: (v: LinkerdValues) => void = () => {}, anchors = TRUST_ANCHORS): InjectorConfig => {
  const values = withCheckedTrustAnchors(loadValues(VALUES), { pem: anchors, source: 'test' }, 'test');
  change(values);
  return { values, controlPlaneNamespace: 'linkerd' };
};
export const CONFIG = configWith();

/**
 * The pod the webhook made of `object` when `config` was in force, as the API server returns it once it runs: the
 * owner is the workload its ownerReferences name (a Deployment for a ReplicaSet with a template hash).
 */
export function meshed(object: Obj, config: InjectorConfig = CONFIG, namespaceAnnotations: Record<string, string> = { 'linkerd.io/inject': 'enabled' }): Obj {
  const meta = object['metadata'] as { namespace: string; labels: Record<string, string>; ownerReferences?: Array<{ kind: string; name: string }> };
  const ref = meta.ownerReferences?.[0];
  const hash = meta.labels['pod-template-hash'];
  const owner = ref && (hash ? { kind: 'deployment', name: ref.name.slice(0, -hash.length - 1) } : { kind: ref.kind.toLowerCase(), name: ref.name });
  const admitted = withServiceAccount({ apiVersion: 'v1', kind: 'Pod', ...object });
  const result = inject({ object: admitted, kind: 'Pod', namespace: meta.namespace, namespaceAnnotations, config, ...(owner && { owner }) });
  expect(result.outcome).toBe('injected');
  const running = stored(applied(admitted, result.patch)) as Obj;
  (running['status'] as Obj)['phase'] = (object['status'] as Obj)['phase'];
  return running;
}

export const CONFIG_MAPS: Record<string, Obj> = {
  '/api/v1/namespaces/linkerd/configmaps/linkerd-config': { metadata: { name: 'linkerd-config' }, data: { values: VALUES } },
  '/api/v1/namespaces/linkerd/configmaps/linkerd-identity-trust-roots': { metadata: { name: 'linkerd-identity-trust-roots' }, data: { 'ca-bundle.crt': TRUST_ANCHORS } },
};
