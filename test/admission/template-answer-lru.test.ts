/**
 * The answer cache: pods that differ only in identity share one answer, and nothing else does; a configuration change
 * never meets an answer computed for the old configuration.
 */
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { TemplateAnswerLru, answerKey, type AnswerQuestion, type KeyedQuestion } from '../../src/admission/template-answer-lru.js';
import { answerBody, handleAdmission, type AdmissionSources } from '../../src/admission/handler.js';
import { encodeResponseTail, parseReview, reviewHeadOf, reviewResponse, serializeReview } from '../../src/admission/review.js';
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

  it('leaves very large objects uncached', () => {
    const huge = structuredClone(base);
    (huge['metadata'] as Record<string, unknown>)['annotations'] = { big: 'x'.repeat(300 * 1024) };
    expect(key(huge)).toBeUndefined();
  });
});

describe('TemplateAnswerLru', () => {
  const entry = (name: string) => ({ result: { name } as never, patch: name, warnings: undefined, responseTail: Buffer.from(name) });
  const base = sample.request.object;
  /** A question for `object`, made by the ReplicaSet rs-1 unless `over` says otherwise. */
  const question = (object: Record<string, unknown>, over: Partial<AnswerQuestion> = {}): AnswerQuestion => ({
    kind: 'Pod',
    namespace: 'emojivoto',
    object,
    namespaceAnnotations: {},
    owner: { kind: 'deployment', name: 'web' },
    controller: 'rs-1',
    ...over,
  });
  /**
   * Asks the cache, which must not know the question yet, and keeps `name` as its answer. A controller the cache has
   * not seen under this configuration is asked twice: its first pod is answered without a key.
   */
  const keep = (cache: TemplateAnswerLru, config: InjectorConfig, asked: AnswerQuestion, name: string) => {
    let found = cache.find(config, asked);
    expect(found.answer).toBeUndefined();
    if (!introduced(cache, config, asked.controller)) {
      expect(found.keyed).toBeUndefined();
      found = cache.find(config, asked);
      expect(found.answer).toBeUndefined();
    }
    expect(found.keyed).toBeDefined();
    cache.keep(config, found.keyed as KeyedQuestion, asked.controller, entry(name));
  };
  /** Whether `controller` was seen by `cache` under `config` before this call; from now on it has been. */
  const seen = new WeakMap<TemplateAnswerLru, WeakMap<InjectorConfig, Set<string>>>();
  const introduced = (cache: TemplateAnswerLru, config: InjectorConfig, controller: string): boolean => {
    const byConfig = seen.get(cache) ?? new WeakMap<InjectorConfig, Set<string>>();
    seen.set(cache, byConfig);
    const controllers = byConfig.get(config) ?? new Set<string>();
    byConfig.set(config, controllers);
    const before = controllers.has(controller);
    controllers.add(controller);
    return before;
  };
  /** An object of its own for each name: the label `n` tells them apart. */
  const named = (n: string) => question(labelled(base, n));
  const answered = (cache: TemplateAnswerLru, config: InjectorConfig, asked: AnswerQuestion) => cache.find(config, asked).answer?.patch;

  it('keeps answers per configuration object: a new configuration starts empty', () => {
    const cache = new TemplateAnswerLru();
    const one = testConfig();
    keep(cache, one, named('a'), 'a');
    expect(answered(cache, one, named('a'))).toBe('a');
    expect(answered(cache, testConfig(), named('a'))).toBeUndefined();
    expect(cache.stats).toEqual({ hits: 1, misses: 3 });
  });

  it('drops the least recently used entry beyond its bound, each configuration counted apart', () => {
    const cache = new TemplateAnswerLru(2);
    const config = testConfig();
    const other = testConfig();
    keep(cache, config, named('a'), 'a');
    keep(cache, config, named('b'), 'b');
    keep(cache, other, named('x'), 'x');
    answered(cache, config, named('a'));
    keep(cache, config, named('c'), 'c');
    expect(answered(cache, config, named('b'))).toBeUndefined();
    expect(answered(cache, config, named('a'))).toBe('a');
    expect(answered(cache, config, named('c'))).toBe('c');
    expect(answered(cache, other, named('x'))).toBe('x');
  });

  it('keeps the order of use when the same entry is hit again and again, as the pods of a rollout hit it', () => {
    const cache = new TemplateAnswerLru(2);
    const config = testConfig();
    keep(cache, config, named('a'), 'a');
    keep(cache, config, named('b'), 'b');
    for (let i = 0; i < 3; i++) expect(answered(cache, config, named('b'))).toBe('b');
    keep(cache, config, named('c'), 'c');
    expect(answered(cache, config, named('a'))).toBeUndefined();
    expect(answered(cache, config, named('b'))).toBe('b');
    expect(cache.stats.hits).toBe(4);
  });

  it('answers the pods of two rollouts interleaved, each from its own entry', () => {
    const cache = new TemplateAnswerLru();
    const config = testConfig();
    keep(cache, config, question(labelled(base, 'web'), { controller: 'rs-web' }), 'web');
    keep(cache, config, question(labelled(base, 'api'), { controller: 'rs-api' }), 'api');
    for (let i = 0; i < 4; i++) {
      expect(answered(cache, config, question(withIdentity(labelled(base, 'web'), `web-${i}`, `w${i}`), { controller: 'rs-web' }))).toBe('web');
      expect(answered(cache, config, question(withIdentity(labelled(base, 'api'), `api-${i}`, `a${i}`), { controller: 'rs-api' }))).toBe('api');
    }
    expect(cache.stats).toEqual({ hits: 8, misses: 4 });
  });

  /**
   * Objects that differ from the kept one in every way a pod's JSON can: in identity alone (the same answer), and in
   * a value, a type, an order of keys or items, a key set to undefined or to a function, a number that JSON cannot
   * write, an inherited key, deep in the spec or at the top.
   */
  const variants = (): Array<[string, Record<string, unknown>]> => {
    const edit = (what: string, change: (o: Record<string, unknown>) => void): [string, Record<string, unknown>] => {
      const copy = structuredClone(base);
      change(copy);
      return [what, copy];
    };
    const metadata = (o: Record<string, unknown>) => o['metadata'] as Record<string, unknown>;
    const container = (o: Record<string, unknown>) => (o['spec'] as { containers: Array<Record<string, unknown>> }).containers[0] as Record<string, unknown>;
    return [
      ['the same object', structuredClone(base)],
      ['another identity', withIdentity(base, 'web-9', 'uid-9', 'web-', '2026-11-23T10:00:09Z')],
      edit('identity fields in another order', (o) => {
        const { name, ...rest } = metadata(o);
        o['metadata'] = { uid: 'u', ...rest, generateName: 'web-', name };
      }),
      edit('a label more', (o) => (metadata(o)['labels'] = { ...(metadata(o)['labels'] as object), extra: 'x' })),
      edit('an annotation value', (o) => (metadata(o)['annotations'] = { 'linkerd.io/inject': 'disabled' })),
      edit('the image', (o) => (container(o)['image'] = 'other:1')),
      edit('a container of another name', (o) => (container(o)['name'] = 'web-9')),
      edit('a port as a string', (o) => ((container(o)['ports'] as Array<Record<string, unknown>>)[0]!['containerPort'] = '8080')),
      edit('ports in another order', (o) => (container(o)['ports'] as unknown[]).reverse()),
      edit('a port fewer', (o) => (container(o)['ports'] as unknown[]).pop()),
      edit('keys of the spec in another order', (o) => {
        const spec = o['spec'] as Record<string, unknown>;
        o['spec'] = Object.fromEntries(Object.entries(spec).reverse());
      }),
      edit('the top keys in another order', (o) => {
        const entries = Object.entries(o).reverse();
        for (const key of Object.keys(o)) delete o[key];
        Object.assign(o, Object.fromEntries(entries));
      }),
      edit('a key added as undefined', (o) => (container(o)['command'] = undefined)),
      edit('a value set to undefined', (o) => (container(o)['resources'] = undefined)),
      edit('a key set to a function', (o) => (container(o)['command'] = () => 'x')),
      edit('an infinite number', (o) => (container(o)['terminationGracePeriodSeconds'] = Infinity)),
      edit('null for a value', (o) => (container(o)['resources'] = null)),
      edit('an empty object for an empty array', (o) => (container(o)['env'] = {})),
      edit('an inherited key', (o) => (o['spec'] = Object.assign(Object.create({ hostNetwork: true }) as object, o['spec']))),
      edit('a metadata that is not an object', (o) => (o['metadata'] = ['emoji'])),
      edit('no metadata', (o) => delete o['metadata']),
    ];
  };

  it('answers from the entry compared part by part exactly when the key is the same', () => {
    const config = testConfig();
    const kinds: Array<[string, Partial<AnswerQuestion>]> = [
      ['as kept', {}],
      ['another namespace', { namespace: 'other' }],
      ['another namespace annotation', { namespaceAnnotations: { 'linkerd.io/inject': 'enabled' } }],
      ['another owner', { owner: { kind: 'deployment', name: 'api' } }],
      ['no owner', { owner: undefined }],
      ['a Service', { kind: 'Service' }],
    ];
    const all = variants();
    for (const [keptWhat, keptObject] of all) {
      const cache = new TemplateAnswerLru();
      keep(cache, config, question(keptObject), 'kept');
      // rs-2 seen once already, so that its questions are looked up.
      expect(cache.find(config, question(keptObject, { controller: 'rs-2' })).keyed).toBeUndefined();
      const keptKey = answerKey('Pod', 'emojivoto', keptObject, {}, { kind: 'deployment', name: 'web' });
      for (const [what, object] of all) {
        for (const [how, over] of kinds) {
          const asked = question(object, over);
          const same = answerKey(asked.kind, asked.namespace, object, asked.namespaceAnnotations, asked.owner) === keptKey;
          // The same controller is compared part by part; another goes through the key. Both must agree with it.
          for (const controller of ['rs-1', 'rs-2']) {
            expect(answered(cache, config, { ...asked, controller }), `kept ${keptWhat}, asked ${what}, ${how}, controller ${controller}`).toBe(
              same ? 'kept' : undefined,
            );
          }
        }
      }
    }
  });

  it("answers a controller's first pod without a key, keys its second, and forgets the controllers least recently seen", () => {
    const config = testConfig();
    const jobs = new TemplateAnswerLru();
    // One pod per Job, as most controllers make: none is keyed, none kept.
    for (let i = 0; i < 300; i++) expect(jobs.find(config, question(labelled(base, `job-${i}`), { controller: `job-${i}` }))).toEqual({ keyed: undefined });
    expect(jobs.stats).toEqual({ hits: 0, misses: 300 });
    // A cache of 2 entries remembers 8 controllers: rs-a stays seen through 7 others, not through 8.
    for (const others of [7, 8]) {
      const cache = new TemplateAnswerLru(2);
      expect(cache.find(config, question(base, { controller: 'rs-a' })).keyed).toBeUndefined();
      for (let i = 0; i < others; i++) cache.find(config, question(base, { controller: `rs-${i}` }));
      const again = cache.find(config, question(base, { controller: 'rs-a' }));
      expect(again.keyed === undefined, `after ${others} others`).toBe(others === 8);
    }
  });

  it('compares with a copy of what it kept: the object kept may change afterwards', () => {
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
      // The first pod under each configuration is answered without the cache, every later one from the tail kept for the
      // second: what is sent must be the bytes a fresh answer would have.
      const tail = got.kind === 'evaluated' ? got.responseTail : undefined;
      expect(tail === undefined, `pod ${i}`).toBe(i % 20 === 0);
      const sent = answerBody('admission.k8s.io/v1', `uid-${i}`, got).toString();
      expect(sent).toBe(serializeReview('admission.k8s.io/v1', want.response));
      if (tail) expect(reviewHeadOf('admission.k8s.io/v1', `uid-${i}`) + tail.toString()).toBe(sent);
      expect(got.kind === 'evaluated' && got.result.name).toBe(`web-${i}`);
      const patch = JSON.stringify(decodedPatch({ response: got.response }));
      checked.push(`${patch.includes('"linkerd-network-validator"') ? 'cni' : 'init'}/${patch.includes('"name":"LINKERD2_PROXY_LOG","value":"debug') ? 'debug' : 'default'}`);
    }
    expect(answers.stats).toEqual({ hits: 54, misses: 6 });
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
