/** Shared builders for engine tests: configuration, pods, and applying a patch the way the API server does. */
import jsonPatch from 'fast-json-patch';
import { defaultValues, inject, withTrustAnchors, type InjectorConfig, type LinkerdValues } from '../../src/engine/index.js';
import type { Container } from '../../src/engine/k8s.js';
import type { AddOperation } from '../../src/engine/patch.js';

export const TRUST_ANCHORS = '-----BEGIN CERTIFICATE-----\nTESTROOT\n-----END CERTIFICATE-----\n';

/** Embedded defaults plus test trust anchors, with `change` applied to a fresh copy. */
export function testValues(change: (v: LinkerdValues) => void = () => {}): LinkerdValues {
  const values = withTrustAnchors(defaultValues(), TRUST_ANCHORS);
  change(values);
  return values;
}

export function testConfig(change?: (v: LinkerdValues) => void): InjectorConfig {
  return { values: testValues(change), controlPlaneNamespace: 'linkerd' };
}

export interface PodOptions {
  annotations?: Record<string, string>;
  labels?: Record<string, string>;
  spec?: Record<string, unknown>;
}

export function pod(opts: PodOptions = {}): Record<string, unknown> {
  const metadata: Record<string, unknown> = { name: 'web', namespace: 'shop' };
  if (opts.annotations) metadata['annotations'] = opts.annotations;
  if (opts.labels) metadata['labels'] = opts.labels;
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata,
    spec: opts.spec ?? { containers: [{ name: 'app', image: 'app:1', ports: [{ containerPort: 8080 }] }] },
  };
}

/** Applies the patch to a copy of `doc`, failing on any operation the API server would refuse. */
export function applied<T>(doc: T, patch: readonly AddOperation[]): T {
  const copy = jsonPatch.deepClone(doc) as T;
  const error = jsonPatch.validate(patch as jsonPatch.Operation[], copy);
  if (error) throw new Error(`patch does not apply: ${error.name} at ${JSON.stringify(error.operation)}`);
  return jsonPatch.applyPatch(copy, patch as jsonPatch.Operation[], true, false).newDocument;
}

export const names = (list: unknown): string[] =>
  Array.isArray(list) ? list.map((c) => String((c as { name?: unknown }).name)) : [];

/** The linkerd-init container the engine renders for a pod with these annotations (and configuration change). */
export function renderedInit(annotations: Record<string, string> = {}, change?: (v: LinkerdValues) => void): Container {
  const p = pod({ annotations: { 'linkerd.io/inject': 'enabled', ...annotations } });
  const result = inject({ object: p, kind: 'Pod', namespace: 'shop', namespaceAnnotations: {}, config: testConfig(change) });
  const after = applied(p, result.patch) as { spec: { initContainers: Container[] } };
  const init = after.spec.initContainers.find((c) => c.name === 'linkerd-init');
  if (!init) throw new Error('the engine rendered no linkerd-init container');
  return init;
}
