/**
 * The answer cache: pods that differ only in identity share one answer, and nothing else does; a configuration change
 * never meets an answer computed for the old configuration.
 */
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { AnswerCache, answerKey } from '../../src/admission/answer-cache.js';
import { handleAdmission, type AdmissionSources } from '../../src/admission/handler.js';
import { encodeResponseTail, parseReview, reviewHeadOf, reviewPieces, reviewResponse, serializeReview } from '../../src/admission/review.js';
import { inject, type InjectorConfig } from '../../src/engine/index.js';
import { admissionReview, decodedPatch } from '../support/admission.js';
import { pod, testConfig } from '../support/engine.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const sample = JSON.parse(readFileSync(join(root, 'examples', 'admission-review.json'), 'utf8')) as { request: { object: Record<string, unknown> } };

/**
 * The object as one pod of a rollout: its name, uid, generateName, and the managedFields kube-apiserver writes before
 * admission, stamped with the second of the request.
 */
function withIdentity(object: Record<string, unknown>, name: string, uid: string, generateName?: string, time = '2026-11-23T10:00:00Z'): Record<string, unknown> {
  const copy = structuredClone(object);
  const metadata = (copy['metadata'] ?? {}) as Record<string, unknown>;
  metadata['name'] = name;
  metadata['uid'] = uid;
  if (generateName !== undefined) metadata['generateName'] = generateName;
  metadata['managedFields'] = [{ manager: 'kube-controller-manager', operation: 'Update', apiVersion: 'v1', time, fieldsType: 'FieldsV1', fieldsV1: { 'f:metadata': { 'f:generateName': {} } } }];
  copy['metadata'] = metadata;
  return copy;
}

/** Pods exercising the parts of the patch that read the pod: annotations, ports by name, init containers, volumes. */
const VARIED: Array<Record<string, unknown>> = [
  sample.request.object,
  pod({ annotations: { 'linkerd.io/inject': 'enabled', 'config.linkerd.io/proxy-enable-native-sidecar': 'true' } }),
  pod({ annotations: { 'linkerd.io/inject': 'enabled', 'config.linkerd.io/enable-debug-sidecar': 'true', 'config.linkerd.io/opaque-ports': 'http' } }),
  pod({
    annotations: { 'linkerd.io/inject': 'enabled', 'config.linkerd.io/proxy-await': 'disabled', 'config.linkerd.io/skip-inbound-ports': '9090' },
    spec: {
      initContainers: [{ name: 'migrate', image: 'm' }],
      containers: [{ name: 'app', image: 'a', ports: [{ containerPort: 8080, name: 'http' }], volumeMounts: [{ name: 'sa', mountPath: '/var/run/secrets/kubernetes.io/serviceaccount' }] }],
      volumes: [{ name: 'data', emptyDir: {} }],
    },
  }),
  pod({ annotations: { 'config.linkerd.io/opaque-ports': '5432' } }),
];

describe('identity never reaches the patch', () => {
  it.each(VARIED.map((p, i) => [i, p] as const))('pod %i: another name, generateName, uid and managedFields give the same patch and warnings', (_i, object) => {
    for (const config of [testConfig(), testConfig((v) => (v.cniEnabled = true)), testConfig((v) => (v.proxy.nativeSidecar = true))]) {
      const a = inject({ object: withIdentity(object, 'web-1', 'uid-1'), kind: 'Pod', namespace: 'shop', origin: 'webhook', config, owner: { kind: 'deployment', name: 'web' } });
      const b = inject({ object: withIdentity(object, '', 'uid-2', 'web-7d4b-', '2026-11-23T10:00:07Z'), kind: 'Pod', namespace: 'shop', origin: 'webhook', config, owner: { kind: 'deployment', name: 'web' } });
      expect(JSON.stringify(b.patch)).toBe(JSON.stringify(a.patch));
      expect(b.warnings).toEqual(a.warnings);
      expect(b.risks).toEqual(a.risks);
      expect(b.outcome).toBe(a.outcome);
      expect([a.name, b.name]).toEqual(['web-1', 'web-7d4b-']);
    }
  });
});

describe('answerKey', () => {
  const base = sample.request.object;
  const key = (o: Record<string, unknown>, ns = 'emojivoto', nsAnn: Record<string, string> = {}, owner = { kind: 'deployment', name: 'web' }) => answerKey('Pod', ns, o, nsAnn, owner);

  it('is the same for objects that differ only in name, generateName, uid or the time in managedFields', () => {
    expect(key(withIdentity(base, 'a', '1'))).toBe(key(withIdentity(base, '', '2', 'web-', '2026-11-23T10:00:07Z')));
  });

  it('leaves the object as it was, set-aside fields included', () => {
    const object = withIdentity(base, 'a', '1', 'web-');
    const before = JSON.stringify(object);
    key(object);
    expect(JSON.stringify(object)).toBe(before);
    expect(Object.keys(object['metadata'] as object)).toEqual(Object.keys(JSON.parse(before).metadata));
  });

  it('differs with anything else: a label, an annotation, the spec, the namespace, its annotations, the owner', () => {
    const k = key(base);
    const labelled = structuredClone(base);
    (labelled['metadata'] as Record<string, unknown>)['labels'] = { extra: 'x' };
    const annotated = structuredClone(base);
    (annotated['metadata'] as { annotations?: Record<string, string> }).annotations = { 'config.linkerd.io/proxy-log-level': 'debug' };
    const respec = structuredClone(base);
    (respec['spec'] as { containers: Array<{ image: string }> }).containers[0]!.image = 'other:1';
    for (const other of [
      key(labelled),
      key(annotated),
      key(respec),
      key(base, 'other'),
      key(base, 'emojivoto', { 'linkerd.io/inject': 'enabled' }),
      key(base, 'emojivoto', {}, { kind: 'deployment', name: 'api' }),
      answerKey('Service', 'emojivoto', base, {}, { kind: 'deployment', name: 'web' }),
    ]) {
      expect(other).not.toBe(k);
    }
  });

  it('leaves very large objects uncached', () => {
    const huge = structuredClone(base);
    (huge['metadata'] as Record<string, unknown>)['annotations'] = { big: 'x'.repeat(300 * 1024) };
    expect(key(huge)).toBeUndefined();
  });
});

describe('AnswerCache', () => {
  const entry = (name: string) => ({ result: { name } as never, patch: name, warnings: undefined, responseTail: Buffer.from(name) });

  it('keeps answers per configuration object: a new configuration starts empty', () => {
    const cache = new AnswerCache();
    const one = testConfig();
    cache.set(one, 'k', entry('a'));
    expect(cache.get(one, 'k')?.patch).toBe('a');
    expect(cache.get(testConfig(), 'k')).toBeUndefined();
    expect(cache.stats).toEqual({ hits: 1, misses: 1 });
  });

  it('drops the least recently used entry beyond its bound, each configuration counted apart', () => {
    const cache = new AnswerCache(2);
    const config = testConfig();
    const other = testConfig();
    cache.set(config, 'a', entry('a'));
    cache.set(config, 'b', entry('b'));
    cache.set(other, 'x', entry('x'));
    cache.get(config, 'a');
    cache.set(config, 'c', entry('c'));
    expect(cache.get(config, 'b')).toBeUndefined();
    expect(cache.get(config, 'a')?.patch).toBe('a');
    expect(cache.get(config, 'c')?.patch).toBe('c');
    expect(cache.get(other, 'x')?.patch).toBe('x');
  });

  it('keeps the order of use when the same entry is hit again and again, as the pods of a rollout hit it', () => {
    const cache = new AnswerCache(2);
    const config = testConfig();
    cache.set(config, 'a', entry('a'));
    cache.set(config, 'b', entry('b'));
    for (let i = 0; i < 3; i++) expect(cache.get(config, 'b')?.patch).toBe('b');
    cache.set(config, 'c', entry('c'));
    expect(cache.get(config, 'a')).toBeUndefined();
    expect(cache.get(config, 'b')?.patch).toBe('b');
    expect(cache.stats.hits).toBe(4);
  });
});

describe('handleAdmission with the cache', () => {
  it('answers a rollout from one computation, each pod under its own name, and a configuration change mid-stream is never answered from the old one', async () => {
    let config: InjectorConfig = testConfig();
    const answers = new AnswerCache();
    const cached: AdmissionSources = { config: () => config, namespaceAnnotations: () => ({ 'linkerd.io/inject': 'enabled' }), answers };
    const plain: AdmissionSources = { config: () => config, namespaceAnnotations: () => ({ 'linkerd.io/inject': 'enabled' }) };
    const checked: string[] = [];
    for (let i = 0; i < 60; i++) {
      // Every 20 pods the configuration changes, as a linkerd-config reload swaps in a new object.
      if (i === 20) config = testConfig((v) => (v.cniEnabled = true));
      if (i === 40) config = testConfig((v) => (v.proxy.logLevel = 'debug'));
      // Created over a minute, as a large rollout is: managedFields carry a different second for each pod.
      const object = withIdentity(pod(), `web-${i}`, `uid-${i}`, undefined, `2026-11-23T10:00:${String(i).padStart(2, '0')}Z`);
      (object['metadata'] as Record<string, unknown>)['ownerReferences'] = [{ apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'web-7d4b', uid: 'rs-1', controller: true }];
      const { request } = parseReview(admissionReview(object, { uid: `uid-${i}`, namespace: 'shop' })) as ReturnType<typeof parseReview>;
      const got = await handleAdmission(request, cached);
      const want = await handleAdmission(request, plain);
      // What is sent: the cached tail after this pod's uid must be the bytes a fresh answer would have.
      const tail = got.kind === 'evaluated' ? got.responseTail : undefined;
      expect(tail).toBeDefined();
      expect(reviewHeadOf('admission.k8s.io/v1', `uid-${i}`) + (tail as Buffer).toString()).toBe(serializeReview('admission.k8s.io/v1', want.response));
      expect(got.kind === 'evaluated' && got.result.name).toBe(`web-${i}`);
      const patch = JSON.stringify(decodedPatch({ response: got.response }));
      checked.push(`${patch.includes('"linkerd-network-validator"') ? 'cni' : 'init'}/${patch.includes('"name":"LINKERD2_PROXY_LOG","value":"debug') ? 'debug' : 'default'}`);
    }
    expect(answers.stats).toEqual({ hits: 57, misses: 3 });
    expect(checked.slice(0, 20).every((c) => c === 'init/default')).toBe(true);
    expect(checked.slice(20, 40).every((c) => c === 'cni/default')).toBe(true);
    expect(checked.slice(40).every((c) => c === 'init/debug')).toBe(true);
  });
});

describe('serializeReview, a head with an encoded tail, and the pieces written', () => {
  it('writes the same JSON as JSON.stringify of the review, for every kind of response', () => {
    const responses = [
      { uid: 'u"1', allowed: true },
      { uid: 'u2', allowed: true, warnings: ['a "quoted" warning', 'ünïcode'], patchType: 'JSONPatch' as const, patch: Buffer.from('[{"op":"add"}]').toString('base64') },
      { uid: 'u3', allowed: false, status: { code: 500, message: 'proxy-injector: no\nconfiguration' } },
    ];
    for (const apiVersion of ['admission.k8s.io/v1', 'admission.k8s.io/v1beta1'] as const) {
      for (const response of responses) {
        const plain = JSON.parse(JSON.stringify(reviewResponse(apiVersion, response)));
        expect(JSON.parse(serializeReview(apiVersion, response))).toEqual(plain);
        expect(reviewHeadOf(apiVersion, response.uid) + encodeResponseTail(response).toString()).toBe(serializeReview(apiVersion, response));
        const pieces = reviewPieces(apiVersion, response);
        expect(pieces.join('')).toBe(serializeReview(apiVersion, response));
        // The patch, when there is one, is a piece of its own, the very string of the response.
        if (response.patch !== undefined) expect(pieces).toContain(response.patch);
        else expect(pieces).toHaveLength(1);
      }
    }
  });
});
