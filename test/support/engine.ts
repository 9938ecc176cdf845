/** Shared builders for engine tests: configuration, pods, and applying a patch the way the API server does. */
import jsonPatch from 'fast-json-patch';
import { defaultValues, inject, withTrustAnchors, type InjectorConfig, type LinkerdValues } from '../../src/engine/index.js';
import type { Container } from '../../src/engine/k8s.js';
import type { AddOperation } from '../../src/engine/patch.js';

/** A real root certificate (CN root.test.linkerd.cluster.local), as in test/fixtures/cli/trust-anchors.pem: the loaders check trust anchors. */
export const TRUST_ANCHORS = [
  '-----BEGIN CERTIFICATE-----',
  'MIIBuTCCAV+gAwIBAgIUW6KUmlgI8ymyAkNzQylSxPvtekowCgYIKoZIzj0EAwIw',
  'KjEoMCYGA1UEAwwfcm9vdC50ZXN0LmxpbmtlcmQuY2x1c3Rlci5sb2NhbDAeFw0y',
  'NjExMjYxMzIwMjBaFw0zNjExMjMxMzIwMjBaMCoxKDAmBgNVBAMMH3Jvb3QudGVz',
  'dC5saW5rZXJkLmNsdXN0ZXIubG9jYWwwWTATBgcqhkjOPQIBBggqhkjOPQMBBwNC',
  'AATXe6RU74/qc/mVvwCG42q/4nju27k/tO03+BQU6XeWhq78VmDJabJUeKFEB/M2',
  'JdWu0cuhgCHp5leJv5h7gCj7o2MwYTAdBgNVHQ4EFgQUVZkNhim8SWRCsH+g77f4',
  'uF8G5aMwHwYDVR0jBBgwFoAUVZkNhim8SWRCsH+g77f4uF8G5aMwDwYDVR0TAQH/',
  'BAUwAwEB/zAOBgNVHQ8BAf8EBAMCAQYwCgYIKoZIzj0EAwIDSAAwRQIgBR8/OeLx',
  'kPzovcGroPjXZkmE0wGw3FEjQ1HnJDCsuaICIQCbxsRAqy0CZ0XViDusrjcp+iPw',
  'wdiRMwJiAtaWCPHczw==',
  '-----END CERTIFICATE-----',
].join('\n') + '\n';

/** Another real root (CN root.values.linkerd.cluster.local), as in test/fixtures/cli/in/values.yaml. */
export const OTHER_TRUST_ANCHOR = [
  '-----BEGIN CERTIFICATE-----',
  'MIIBvTCCAWOgAwIBAgIUNeFhkxuPv2wDoOGlMI5sLuyEBgMwCgYIKoZIzj0EAwIw',
  'LDEqMCgGA1UEAwwhcm9vdC52YWx1ZXMubGlua2VyZC5jbHVzdGVyLmxvY2FsMB4X',
  'DTI2MTEyNjEzMjAyMVoXDTM2MTEyMzEzMjAyMVowLDEqMCgGA1UEAwwhcm9vdC52',
  'YWx1ZXMubGlua2VyZC5jbHVzdGVyLmxvY2FsMFkwEwYHKoZIzj0CAQYIKoZIzj0D',
  'AQcDQgAEnLdqreSDsX/uF1f1GMoBiOzVnkgfuPe7FhSSv7u8uZV4zgUUxOGN3vsM',
  'h4Egh3hxKg83VQ71PFskveqnBD2e7aNjMGEwHQYDVR0OBBYEFFFiuC/TmyQXfXMv',
  'g6kdj2KgEIZcMB8GA1UdIwQYMBaAFFFiuC/TmyQXfXMvg6kdj2KgEIZcMA8GA1Ud',
  'EwEB/wQFMAMBAf8wDgYDVR0PAQH/BAQDAgEGMAoGCCqGSM49BAMCA0gAMEUCIC7g',
  '90YMJhZBRuKTIR6HJiLUIDtFSCf+7i5ouWKkj9cnAiEA2oDamTXIodeHroA0iZeh',
  '9D16p9wWmnYW4p8bpQ+yIPg=',
  '-----END CERTIFICATE-----',
].join('\n') + '\n';

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

/**
 * Applies the patch to a copy of `doc`, failing on any operation the API server would refuse. The patch is copied too:
 * fast-json-patch inserts its values by reference, and the engine's are frozen and shared between pods, so a test that
 * changed the result would otherwise change (or fail on) the engine's own objects.
 */
export function applied<T>(doc: T, patch: readonly AddOperation[]): T {
  const copy = jsonPatch.deepClone(doc) as T;
  const ops = jsonPatch.deepClone(patch) as jsonPatch.Operation[];
  const error = jsonPatch.validate(ops, copy);
  if (error) throw new Error(`patch does not apply: ${error.name} at ${JSON.stringify(error.operation)}`);
  return jsonPatch.applyPatch(copy, ops, true, false).newDocument;
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
