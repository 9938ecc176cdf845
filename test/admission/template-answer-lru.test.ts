/**
 * The answer cache: pods that differ only in identity share one answer, and nothing else does; a configuration change
 * never meets an answer computed for the old configuration.
 */
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { TemplateAnswerLru, type AnswerQuestion } from '../../src/admission/template-answer-lru.js';
import { answerBody, handleAdmission, type AdmissionSources } from '../../src/admission/handler.js';
import { encodeResponseTail, parseReview, reviewHeadOf, serializeReview } from '../../src/admission/review.js';
import { inject, type InjectorConfig } from '../../src/engine/index.js';
import { admissionReview, decodedPatch, reviewResponse } from '../support/admission.js';
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

/** A copy of the object with the label `n`: objects of their own, to fill a cache with. */
function labelled(object: Record<string, unknown>, n: string): Record<string, unknown> {
  const copy = structuredClone(object);
  const metadata = copy['metadata'] as Record<string, unknown>;
  metadata['labels'] = { ...(metadata['labels'] as object), n };
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

describe('the key of a question', () => {
  const base = sample.request.object;
  const cache = new TemplateAnswerLru();
  const config = testConfig();
  const answerKey = (kind: string, namespace: string, object: Record<string, unknown>, namespaceAnnotations: Record<string, string>, owner: AnswerQuestion['owner'], namespaceLabels?: Record<string, string>) =>
    cache.key(config, { kind, namespace, object, namespaceAnnotations, owner, namespaceLabels });
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

  it('differs with anything else: a label, an annotation, the spec, the namespace, its annotations and labels, the owner', () => {
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
      answerKey('Pod', 'emojivoto', base, {}, { kind: 'deployment', name: 'web' }, { 'pod-security.kubernetes.io/enforce': 'baseline' }),
    ]) {
      expect(other).not.toBe(k);
    }
  });

  it('differs with the configuration object, the constraints version and the API server release', () => {
    const k = key(base);
    const question = { kind: 'Pod', namespace: 'emojivoto', object: base, namespaceAnnotations: {}, owner: { kind: 'deployment', name: 'web' } };
    expect(cache.key(testConfig(), question)).not.toBe(k);
    expect(cache.key(config, { ...question, constraintsVersion: '7' })).not.toBe(k);
    expect(cache.key(config, { ...question, kubernetesVersion: { major: 1, minor: 34 } })).not.toBe(k);
    expect(cache.key(config, question)).toBe(k);
  });

  it('leaves very large objects uncached, and keys an object nested deeper than the stack allows without throwing', () => {
    const huge = structuredClone(base);
    (huge['metadata'] as Record<string, unknown>)['annotations'] = { big: 'x'.repeat(600 * 1024) };
    expect(key(huge)).toBeUndefined();
    let deep: unknown = [];
    for (let i = 0; i < 50_000; i++) deep = [deep];
    // Node 20 and 24 run out of stack serialising it (no key); Node 26 serialises it.
    const deepKey = key({ ...structuredClone(base), deep });
    expect(deepKey === undefined || deepKey.includes('[[[[')).toBe(true);
  });
});

describe('TemplateAnswerLru', () => {
  const entry = (name: string, bytes = 0) => ({ result: { name } as never, patch: name, warnings: undefined, responseTail: Buffer.alloc(bytes, name) });
  const base = sample.request.object;
  const question = (object: Record<string, unknown>, over: Partial<AnswerQuestion> = {}): AnswerQuestion => ({
    kind: 'Pod',
    namespace: 'emojivoto',
    object,
    namespaceAnnotations: {},
    owner: { kind: 'deployment', name: 'web' },
    ...over,
  });
  /** Keeps `name` as the answer to a question the cache must not know yet. */
  const keep = (cache: TemplateAnswerLru, config: InjectorConfig, asked: AnswerQuestion, name: string, bytes = 0) => {
    const key = cache.key(config, asked) as string;
    expect(cache.find(key)).toBeUndefined();
    cache.keep(key, entry(name, bytes));
  };
  /** An object of its own for each name: the label `n` tells them apart. */
  const named = (n: string) => question(labelled(base, n));
  const answered = (cache: TemplateAnswerLru, config: InjectorConfig, asked: AnswerQuestion) => {
    const key = cache.key(config, asked);
    return key === undefined ? undefined : cache.find(key)?.patch;
  };

  it('keeps answers per configuration object: a new configuration starts empty', () => {
    const cache = new TemplateAnswerLru();
    const one = testConfig();
    keep(cache, one, named('a'), 'a');
    expect(answered(cache, one, named('a'))).toBe('a');
    expect(answered(cache, testConfig(), named('a'))).toBeUndefined();
    expect(cache.stats).toEqual({ hits: 1, misses: 2 });
  });

  it('is bounded by what its entries hold in bytes, keys included, and forgets the least recently used first', () => {
    // Entries of about 155 KB each (a 150 KB tail and the key): three fit in 512 KiB, four do not.
    const cache = new TemplateAnswerLru(512 * 1024);
    const config = testConfig();
    keep(cache, config, named('a'), 'a', 150_000);
    keep(cache, config, named('b'), 'b', 150_000);
    keep(cache, config, named('c'), 'c', 150_000);
    expect(answered(cache, config, named('a'))).toBe('a');
    keep(cache, config, named('d'), 'd', 150_000);
    expect(answered(cache, config, named('b'))).toBeUndefined();
    for (const kept of ['a', 'c', 'd']) expect(answered(cache, config, named(kept))).toBe(kept);
    expect(cache.bytes).toBeLessThanOrEqual(512 * 1024);
    expect(cache.bytes).toBeGreaterThan(3 * 150_000);
  });

  it('counts the key: pods whose keys are large fill it as their answers would', () => {
    const cache = new TemplateAnswerLru(1024 * 1024);
    const config = testConfig();
    // Each key holds a 100,000-character label, 200,000 bytes as counted: five fit in 1 MiB, not twenty.
    for (let i = 0; i < 20; i++) keep(cache, config, question(labelled(base, `${i}-${'x'.repeat(100_000)}`)), `e${i}`);
    expect(cache.bytes).toBeLessThanOrEqual(1024 * 1024);
    expect(cache.bytes).toBeGreaterThan(4 * 200_000);
    expect(answered(cache, config, question(labelled(base, `19-${'x'.repeat(100_000)}`)))).toBe('e19');
    expect(answered(cache, config, question(labelled(base, `0-${'x'.repeat(100_000)}`)))).toBeUndefined();
  });

  it('answers the pods of two rollouts interleaved, each from its own entry', () => {
    const cache = new TemplateAnswerLru();
    const config = testConfig();
    keep(cache, config, question(labelled(base, 'web')), 'web');
    keep(cache, config, question(labelled(base, 'api')), 'api');
    for (let i = 0; i < 4; i++) {
      expect(answered(cache, config, question(withIdentity(labelled(base, 'web'), `web-${i}`, `w${i}`)))).toBe('web');
      expect(answered(cache, config, question(withIdentity(labelled(base, 'api'), `api-${i}`, `a${i}`)))).toBe('api');
    }
    expect(cache.stats).toEqual({ hits: 8, misses: 2 });
  });

  it('answers an object that differs from the kept one only in its identity, and nothing else', () => {
    const config = testConfig();
    const metadata = (o: Record<string, unknown>) => o['metadata'] as Record<string, unknown>;
    const container = (o: Record<string, unknown>) => (o['spec'] as { containers: Array<Record<string, unknown>> }).containers[0] as Record<string, unknown>;
    const edit = (change: (o: Record<string, unknown>) => void) => {
      const copy = structuredClone(base);
      change(copy);
      return copy;
    };
    const cache = new TemplateAnswerLru();
    keep(cache, config, question(base), 'kept');
    expect(answered(cache, config, question(withIdentity(base, 'web-9', 'uid-9', 'web-', '2026-11-23T10:00:09Z')))).toBe('kept');
    expect(answered(cache, config, question(edit((o) => (container(o)['command'] = undefined))))).toBe('kept');
    for (const other of [
      edit((o) => (metadata(o)['labels'] = { ...(metadata(o)['labels'] as object), extra: 'x' })),
      edit((o) => (container(o)['image'] = 'other:1')),
      edit((o) => ((container(o)['ports'] as Array<Record<string, unknown>>)[0]!['containerPort'] = '8080')),
      edit((o) => (container(o)['ports'] as unknown[]).reverse()),
      edit((o) => (container(o)['env'] = {})),
      edit((o) => delete o['metadata']),
    ]) {
      expect(answered(cache, config, question(other))).toBeUndefined();
    }
    for (const over of [{ namespace: 'other' }, { namespaceAnnotations: { 'linkerd.io/inject': 'enabled' } }, { owner: { kind: 'deployment', name: 'api' } }, { owner: undefined }, { kind: 'Service' }]) {
      expect(answered(cache, config, question(base, over))).toBeUndefined();
    }
  });

  it("notes a controller's first pod, so that its second is keyed, and stays within its bytes however many controllers come", () => {
    const cache = new TemplateAnswerLru(512 * 1024);
    expect(cache.seenBefore('rs-1')).toBe(false);
    expect(cache.seenBefore('rs-1')).toBe(true);
    for (let i = 0; i < 20_000; i++) cache.seenBefore(`${i}`.padEnd(128, 'u'));
    // 1 MiB for the controllers, at about 320 bytes each: the first ones are forgotten, the last remembered.
    expect(cache.bytes).toBeLessThanOrEqual(1024 * 1024);
    expect(cache.seenBefore('rs-1')).toBe(false);
    expect(cache.seenBefore('19999'.padEnd(128, 'u'))).toBe(true);
  });

  it('keys what the object is when asked: the object kept may change afterwards', () => {
    const cache = new TemplateAnswerLru();
    const config = testConfig();
    const object = structuredClone(base);
    keep(cache, config, question(object), 'kept');
    const before = structuredClone(object);
    (object['spec'] as { containers: Array<{ image: string }> }).containers[0]!.image = 'changed:1';
    expect(answered(cache, config, question(object))).toBeUndefined();
    expect(answered(cache, config, question(before))).toBe('kept');
  });
});

describe('handleAdmission with the cache', () => {
  it('answers a pod nested deeper than the stack allows as it would without an owner, not with a failure', async () => {
    let deep: unknown = [];
    for (let i = 0; i < 50_000; i++) deep = [deep];
    const config = testConfig();
    const answers = new TemplateAnswerLru();
    const sources: AdmissionSources = { config: () => config, namespaceAnnotations: () => ({ 'linkerd.io/inject': 'enabled' }), answers };
    for (let i = 0; i < 3; i++) {
      const object = pod({ spec: { containers: [{ name: 'app', image: 'a' }], affinity: { deep } } });
      (object['metadata'] as Record<string, unknown>)['ownerReferences'] = [{ apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'web-7d4b', uid: 'rs-1', controller: true }];
      const handled = await handleAdmission({ uid: `u${i}`, kind: { group: '', version: 'v1', kind: 'Pod' }, operation: 'CREATE', namespace: 'shop', object } as never, sources);
      expect(handled.kind).toBe('evaluated');
      expect(handled.response.allowed).toBe(true);
      expect(handled.response.patchType).toBe('JSONPatch');
    }
  });

  it('answers a rollout from two computations, each pod under its own name, and a configuration change mid-stream is never answered from the old one', async () => {
    let config: InjectorConfig = testConfig();
    const answers = new TemplateAnswerLru();
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
      // The controller's first pod is answered without the cache; from the second on, every pod is kept or answered
      // with the tail kept under its configuration: what is sent must be the bytes a fresh answer would have.
      const tail = got.kind === 'evaluated' ? got.responseTail : undefined;
      expect(tail === undefined, `pod ${i}`).toBe(i === 0);
      const sent = answerBody('admission.k8s.io/v1', `uid-${i}`, got).toString();
      expect(sent).toBe(serializeReview('admission.k8s.io/v1', want.response));
      if (tail) expect(reviewHeadOf('admission.k8s.io/v1', `uid-${i}`) + tail.toString()).toBe(sent);
      expect(got.kind === 'evaluated' && got.result.name).toBe(`web-${i}`);
      const patch = JSON.stringify(decodedPatch({ response: got.response }));
      checked.push(`${patch.includes('"linkerd-network-validator"') ? 'cni' : 'init'}/${patch.includes('"name":"LINKERD2_PROXY_LOG","value":"debug') ? 'debug' : 'default'}`);
    }
    expect(answers.stats).toEqual({ hits: 56, misses: 3 });
    expect(checked.slice(0, 20).every((c) => c === 'init/default')).toBe(true);
    expect(checked.slice(20, 40).every((c) => c === 'cni/default')).toBe(true);
    expect(checked.slice(40).every((c) => c === 'init/debug')).toBe(true);
  });
});

describe('serializeReview, and a head with an encoded tail', () => {
  it('writes the same JSON as JSON.stringify of the review, for every kind of response', () => {
    const responses = [
      { uid: 'u"1', allowed: true },
      { uid: 'ü-4', allowed: true, warnings: ['🚀 wide'], patchType: 'JSONPatch' as const, patch: Buffer.from('[]').toString('base64') },
      { uid: 'u2', allowed: true, warnings: ['a "quoted" warning', 'ünïcode'], patchType: 'JSONPatch' as const, patch: Buffer.from('[{"op":"add"}]').toString('base64') },
      { uid: 'u3', allowed: false, status: { code: 500, message: 'proxy-injector: no\nconfiguration' } },
    ];
    for (const apiVersion of ['admission.k8s.io/v1', 'admission.k8s.io/v1beta1'] as const) {
      for (const response of responses) {
        const plain = JSON.parse(JSON.stringify(reviewResponse(apiVersion, response)));
        expect(JSON.parse(serializeReview(apiVersion, response))).toEqual(plain);
        expect(reviewHeadOf(apiVersion, response.uid) + encodeResponseTail(response).toString()).toBe(serializeReview(apiVersion, response));
      }
    }
  });
});
