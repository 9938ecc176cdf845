/** The admission handler on its own, without a listener: what each kind of request becomes, and how failures are decided. */
import { describe, expect, it } from 'vitest';
import {
  TemplateAnswerLru,
  SourceUnavailableError,
  boundedWarnings,
  handleAdmission,
  injectionDenial,
  parseReview,
  ReviewError,
  type AdmissionRequest,
  type AdmissionSources,
  type HandledAdmission,
} from '../../src/admission/index.js';
import { admissionReview, decodedPatch } from '../support/admission.js';
import { applied, names, pod, testConfig } from '../support/engine.js';

const config = testConfig();
const sources = (more: Partial<AdmissionSources> = {}): AdmissionSources => ({
  config: () => config,
  namespaceAnnotations: () => ({}),
  ...more,
});

const request = (object: unknown, opts: Parameters<typeof admissionReview>[1] = {}): AdmissionRequest =>
  parseReview(admissionReview(object, opts)).request;

const enabled = (): Record<string, unknown> => pod({ annotations: { 'linkerd.io/inject': 'enabled' } });
const plain = (): Record<string, unknown> => pod();
const optedOut = (): Record<string, unknown> => pod({ annotations: { 'linkerd.io/inject': 'disabled' } });
/** What a kubelet creates for a static pod: the mirror annotation, and the node as the pod's controller. */
const mirror = (): Record<string, unknown> => {
  const p = pod({ annotations: { 'kubernetes.io/config.mirror': '5a1e2f3c', 'kubernetes.io/config.source': 'file' } });
  const metadata = p['metadata'] as Record<string, unknown>;
  metadata['ownerReferences'] = [{ apiVersion: 'v1', kind: 'Node', name: 'node-1', uid: 'node-uid-1', controller: true }];
  (p['spec'] as Record<string, unknown>)['nodeName'] = 'node-1';
  return p;
};

function failed(handled: HandledAdmission): Extract<HandledAdmission, { kind: 'failed' }> {
  if (handled.kind !== 'failed') throw new Error(`expected a failure, got ${handled.kind}`);
  return handled;
}

describe('handleAdmission', () => {
  it.each(['UPDATE', 'DELETE', 'CONNECT'])('a %s is admitted unchanged without asking the engine', async (operation) => {
    const handled = await handleAdmission(request(enabled(), { operation }), sources({ config: () => { throw new Error('not asked'); } }));
    expect(handled.kind).toBe('ignored');
    expect(handled.response).toEqual({ uid: expect.any(String), allowed: true });
  });

  it('a pod that asks for injection is patched, and the patch adds the proxy first', async () => {
    const handled = await handleAdmission(request(enabled()), sources());
    expect(handled.kind).toBe('evaluated');
    expect(handled.kind === 'evaluated' && handled.result.outcome).toBe('injected');
    expect(handled.response.patchType).toBe('JSONPatch');
    const after = applied(enabled(), decodedPatch({ response: handled.response }));
    expect(names((after as { spec: { containers: unknown } }).spec.containers)[0]).toBe('linkerd-proxy');
  });

  it('keeps the app kubectl`s default container when the sources ask for it, and only then', async () => {
    const defaultContainer = async (more: Partial<AdmissionSources>) => {
      const handled = await handleAdmission(request(enabled()), sources(more));
      const after = applied(enabled(), decodedPatch({ response: handled.response })) as { metadata: { annotations: Record<string, string> } };
      return after.metadata.annotations['kubectl.kubernetes.io/default-container'];
    };
    expect(await defaultContainer({ kubectlDefaultContainer: true })).toBe('app');
    expect(await defaultContainer({})).toBeUndefined();
  });

  it('answers the same whether its sources answer at once or with a promise, and a source that throws fails as one that rejects', async () => {
    const owner = { kind: 'deployment', name: 'web' };
    const now = await handleAdmission(request(enabled(), { uid: 'u-1' }), sources({ owner: () => owner }));
    expect(now.response.patchType).toBe('JSONPatch');
    for (const later of [
      sources({ namespaceAnnotations: () => Promise.resolve({}), owner: () => owner }),
      sources({ owner: () => Promise.resolve(owner) }),
    ]) {
      expect(await handleAdmission(request(enabled(), { uid: 'u-1' }), later)).toEqual(now);
    }
    const throwing = sources({
      namespaceAnnotations: () => {
        throw new Error('informer not started');
      },
    });
    const rejecting = sources({ namespaceAnnotations: () => Promise.reject(new Error('informer not started')) });
    const thrown = failed(await handleAdmission(request(enabled(), { uid: 'u-2' }), throwing));
    expect(thrown.response.allowed).toBe(false);
    expect(await handleAdmission(request(enabled(), { uid: 'u-2' }), rejecting)).toEqual(thrown);
  });

  it('a pod nobody asked to mesh is evaluated and admitted without a patch', async () => {
    const handled = await handleAdmission(request(plain()), sources());
    expect(handled.kind === 'evaluated' && handled.result.outcome).toBe('skipped');
    expect(handled.response.patch).toBeUndefined();
    expect(handled.response.allowed).toBe(true);
  });

  it('a pod that already has a proxy carries the inputs of its answer for the shadow verdict; other pods do not', async () => {
    const owner = { kind: 'deployment', name: 'web' };
    const nsAnnotations = { 'linkerd.io/inject': 'enabled' };
    const more = { namespaceAnnotations: () => nsAnnotations, owner: () => owner };
    const first = await handleAdmission(request(enabled()), sources(more));
    expect(first.kind).toBe('evaluated');
    expect(first.kind === 'evaluated' && 'shadow' in first).toBe(false);
    const injected = applied(enabled(), decodedPatch({ response: first.response }));
    const again = await handleAdmission(request(injected), sources(more));
    expect(again.kind === 'evaluated' && again.result.reasons.map((r) => r.code)).toContain('sidecar_already_exists');
    expect(again.kind === 'evaluated' && again.shadow).toEqual({ config, namespace: 'shop', namespaceAnnotations: nsAnnotations, origin: 'webhook', owner });
    const unowned = await handleAdmission(request(injected), sources());
    expect(unowned.kind === 'evaluated' && unowned.shadow && unowned.shadow.owner).toBeNull();
  });

  it('the namespace annotation enables a pod that says nothing itself', async () => {
    const handled = await handleAdmission(request(plain()), sources({ namespaceAnnotations: () => ({ 'linkerd.io/inject': 'enabled' }) }));
    expect(handled.kind === 'evaluated' && handled.result.outcome).toBe('injected');
  });

  it('a static pod`s mirror in a namespace that enables and configures injection is admitted unchanged, with its reason', async () => {
    const ns = { 'linkerd.io/inject': 'enabled', 'config.linkerd.io/opaque-ports': '5432' };
    const answers = new TemplateAnswerLru();
    for (let i = 0; i < 3; i++) {
      const handled = await handleAdmission(request(mirror()), sources({ namespaceAnnotations: () => ns, answers }));
      expect(handled.kind === 'evaluated' && handled.result.outcome).toBe('skipped');
      expect(handled.kind === 'evaluated' && handled.result.reasons.map((r) => r.code)).toEqual(['mirror_pod']);
      expect(handled.response).toEqual({ uid: expect.any(String), allowed: true });
    }
    // The same pod without the mirror annotation is injected, from the cache after the second.
    const ordinary = mirror();
    delete ((ordinary['metadata'] as Record<string, unknown>)['annotations'] as Record<string, string>)['kubernetes.io/config.mirror'];
    const handled = await handleAdmission(request(ordinary), sources({ namespaceAnnotations: () => ns, answers }));
    expect(handled.kind === 'evaluated' && handled.result.outcome).toBe('injected');
  });

  it('a Windows pod in a namespace that enables injection is admitted without the proxy, with its reason', async () => {
    const windows = pod({ annotations: { 'linkerd.io/inject': 'enabled' } });
    (windows['spec'] as Record<string, unknown>)['os'] = { name: 'windows' };
    const handled = await handleAdmission(request(windows), sources());
    expect(handled.kind === 'evaluated' && handled.result.reasons.map((r) => r.code)).toEqual(['windows_pod']);
    expect(handled.response).toEqual({ uid: expect.any(String), allowed: true });
  });

  describe('without a configuration (CONFIG_NOT_LOADED)', () => {
    const notLoaded = sources({
      config: () => {
        throw new SourceUnavailableError('CONFIG_NOT_LOADED', 'the Linkerd configuration is not loaded: values.yaml: not YAML');
      },
    });

    it('a pod that asks for injection is denied with the reason', async () => {
      const handled = failed(await handleAdmission(request(enabled()), notLoaded));
      expect(handled.failure.code).toBe('CONFIG_NOT_LOADED');
      expect(handled.response).toMatchObject({ allowed: false, status: { code: 500, message: expect.stringContaining('values.yaml: not YAML') } });
    });

    it('a pod that does not ask is admitted unchanged, with a warning saying why it was not evaluated', async () => {
      const handled = failed(await handleAdmission(request(plain()), notLoaded));
      expect(handled.failure.code).toBe('CONFIG_NOT_LOADED');
      expect(handled.response.allowed).toBe(true);
      expect(handled.response.patch).toBeUndefined();
      expect(handled.response.warnings?.[0]).toMatch(/could not evaluate this object \(the Linkerd configuration is not loaded/);
    });

    it('a static pod`s mirror is admitted unchanged even in a namespace that enables injection: it is never injected', async () => {
      const handled = failed(await handleAdmission(request(mirror()), { ...notLoaded, namespaceAnnotations: () => ({ 'linkerd.io/inject': 'enabled' }) }));
      expect(handled.response.allowed).toBe(true);
      expect(handled.response.patch).toBeUndefined();
    });
  });

  describe('when the namespace cannot be known (NAMESPACE_UNKNOWN)', () => {
    const unknown = sources({
      namespaceAnnotations: () => Promise.reject(new SourceUnavailableError('NAMESPACE_UNKNOWN', 'namespace shop: timed out')),
    });

    it('only a pod that opts out itself is admitted: the namespace might enable any other', async () => {
      expect(failed(await handleAdmission(request(optedOut()), unknown)).response.allowed).toBe(true);
      expect(failed(await handleAdmission(request(plain()), unknown)).response.allowed).toBe(false);
      expect(failed(await handleAdmission(request(enabled()), unknown)).response.allowed).toBe(false);
    });

    it('a static pod`s mirror or a Windows pod is admitted: whatever the namespace says, it is not injected', async () => {
      expect(failed(await handleAdmission(request(mirror()), unknown)).response.allowed).toBe(true);
      const windows = plain();
      (windows['spec'] as Record<string, unknown>)['nodeSelector'] = { 'kubernetes.io/os': 'windows' };
      expect(failed(await handleAdmission(request(windows), unknown)).response.allowed).toBe(true);
    });

    it('a Service is admitted: it can only lose its opaque-ports annotation', async () => {
      const service = { apiVersion: 'v1', kind: 'Service', metadata: { name: 'web', namespace: 'shop' }, spec: { ports: [{ port: 80 }] } };
      const handled = failed(await handleAdmission(request(service, { kind: 'Service' }), unknown));
      expect(handled.failure.code).toBe('NAMESPACE_UNKNOWN');
      expect(handled.response.allowed).toBe(true);
    });
  });

  it('an unexpected error from a source is a HANDLER_ERROR, decided like any other failure', async () => {
    const broken = sources({ owner: () => Promise.reject(new TypeError('cannot read properties of undefined')) });
    const asked = failed(await handleAdmission(request(enabled()), broken));
    expect(asked.failure).toEqual({ code: 'HANDLER_ERROR', message: 'an internal error (HANDLER_ERROR); the injector logged what it was', detail: 'cannot read properties of undefined' });
    expect(JSON.stringify(asked.response)).not.toContain('cannot read properties');
    expect(asked.response.allowed).toBe(false);
    expect(failed(await handleAdmission(request(plain()), broken)).response.allowed).toBe(true);
  });

  /** An enabled pod with its own name, made by a ReplicaSet when `controlled`. */
  const withName = (name: string, controlled: boolean): Record<string, unknown> => {
    const p = enabled();
    const metadata = p['metadata'] as Record<string, unknown>;
    metadata['name'] = name;
    if (controlled) metadata['ownerReferences'] = [{ apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'web-7d4b', uid: 'rs-1', controller: true }];
    return p;
  };

  /** Three pods, `<prefix>-1` to `<prefix>-3`, admitted in turn with one cache (and the sources given). */
  const threeThroughOneCache = async (prefix: string, controlled: boolean, more: Partial<AdmissionSources> = {}) => {
    const answers = new TemplateAnswerLru();
    const admitted: HandledAdmission[] = [];
    const through = sources({ ...more, answers });
    for (const n of [1, 2, 3]) admitted.push(await handleAdmission(request(withName(`${prefix}-${n}`, controlled)), through));
    return { answers, admitted, next: (name: string) => handleAdmission(request(withName(name, controlled)), through) };
  };

  it('the pods of one rollout share the answer kept for the second, each reported under its own name', async () => {
    const { answers, admitted } = await threeThroughOneCache('web', true);
    const [first, second, third] = admitted as [HandledAdmission, HandledAdmission, HandledAdmission];
    // The first is answered without a key (most controllers make no second), the second kept, the third answered.
    expect(answers.stats).toEqual({ hits: 1, misses: 1 });
    expect(first.kind === 'evaluated' && first.responseTail).toBeUndefined();
    expect(second.kind === 'evaluated' && second.responseTail).toBeInstanceOf(Buffer);
    expect(third.kind === 'evaluated' && third.responseTail).toBe(second.kind === 'evaluated' && second.responseTail);
    expect(third.response.patch).toBe(first.response.patch);
    expect(third.kind === 'evaluated' && third.result.name).toBe('web-3');
  });

  it("the namespace's Pod Security level is a start-up risk in the answer's warnings, and the cache keeps answers apart by it", async () => {
    let level: string | undefined = 'baseline';
    const namespaceLabels = () => (level === undefined ? undefined : { 'pod-security.kubernetes.io/enforce': level });
    const risky = (handled: HandledAdmission) => (handled.response.warnings ?? []).filter((w) => w.includes('pod_security_refuses_init'));
    // A controller's first, second (kept) and third (answered from the cache) pods under baseline.
    const { answers, admitted, next } = await threeThroughOneCache('web', true, { namespaceLabels });
    expect(answers.stats).toEqual({ hits: 1, misses: 1 });
    for (const handled of admitted) {
      expect(risky(handled)).toEqual([
        'start-up risk (pod_security_refuses_init): the namespace enforces Pod Security "baseline", which forbids linkerd-init\'s NET_ADMIN and NET_RAW capabilities: the API server refuses the pod',
      ]);
    }
    // The label removed (the namespace back to privileged): the same pod is answered again, without the risk.
    level = undefined;
    const unlabelled = await next('web-4');
    expect(answers.stats.hits).toBe(1);
    expect(risky(unlabelled)).toEqual([]);
    expect(unlabelled.kind === 'evaluated' && unlabelled.result.risks).toEqual([]);
    level = 'privileged';
    expect(risky(await next('web-5'))).toEqual([]);
  });

  it("the namespace's ResourceQuotas and LimitRanges are start-up risks, and the cache keeps answers apart by their version", async () => {
    const quota = { metadata: { name: 'compute', namespace: 'shop' }, spec: { hard: { 'requests.cpu': '2' } } };
    const defaults = { metadata: { name: 'defaults', namespace: 'shop' }, spec: { limits: [{ type: 'Container', default: { cpu: '100m' } }] } };
    let constraints: { resourceQuotas: unknown[]; limitRanges: unknown[]; version: string } | undefined = { resourceQuotas: [quota], limitRanges: [], version: '1' };
    const risky = (handled: HandledAdmission) => (handled.response.warnings ?? []).filter((w) => w.includes('resource_quota_needs_resources'));
    const { answers, admitted, next } = await threeThroughOneCache('web', true, { namespaceConstraints: () => constraints });
    expect(answers.stats).toEqual({ hits: 1, misses: 1 });
    for (const handled of admitted) {
      expect(risky(handled)).toEqual([
        'start-up risk (resource_quota_needs_resources): ResourceQuota "compute" obliges every container to state requests.cpu, and the injected ones do not (requests.cpu for linkerd-init, linkerd-proxy): the API server refuses the pod',
      ]);
    }
    // A LimitRange with defaults answers the quota: a new version, a new answer without the risk.
    constraints = { resourceQuotas: [quota], limitRanges: [defaults], version: '2' };
    expect(risky(await next('web-4'))).toEqual([]);
    expect(answers.stats.hits).toBe(1);
    constraints = undefined;
    expect(risky(await next('web-5'))).toEqual([]);
  });

  it("the API server's release is a start-up risk for a native sidecar, and the cache keeps answers apart by it", async () => {
    const native = testConfig((v) => {
      v.proxy.nativeSidecar = true;
    });
    let version: { major: number; minor: number } | undefined = { major: 1, minor: 28 };
    const risky = (handled: HandledAdmission) => (handled.response.warnings ?? []).filter((w) => w.includes('native_sidecar_unsupported'));
    const { answers, admitted, next } = await threeThroughOneCache('web', true, { config: () => native, kubernetesVersion: () => version });
    expect(answers.stats).toEqual({ hits: 1, misses: 1 });
    // Whole, not clipped to the 240 characters a warning may have: kubectl prints it above the API server's refusal.
    for (const handled of admitted) {
      expect(risky(handled)).toEqual([
        "start-up risk (native_sidecar_unsupported): the API server, Kubernetes 1.28, drops the native sidecar proxy's restartPolicy: Always unless its SidecarContainers gate is on, and refuses the pod for the proxy's probes",
      ]);
    }
    // The control plane upgraded: the same pod is answered again, without the risk; and with the release unknown too.
    version = { major: 1, minor: 29 };
    expect(risky(await next('web-4'))).toEqual([]);
    expect(answers.stats.hits).toBe(1);
    version = undefined;
    expect(risky(await next('web-5'))).toEqual([]);
    version = { major: 1, minor: 27 };
    expect(risky(await next('web-6'))).toHaveLength(1);
  });

  it('pods that no controller made are answered without the cache: they never come twice', async () => {
    const { answers, admitted } = await threeThroughOneCache('job', false);
    expect(answers.stats).toEqual({ hits: 0, misses: 0 });
    expect(admitted[2]?.response.patch).toBe(admitted[0]?.response.patch);
  });
});

describe('parseReview', () => {
  it('returns the apiVersion and the request of a well-formed review', () => {
    const review = admissionReview(plain(), { apiVersion: 'admission.k8s.io/v1beta1', uid: 'u-1' });
    const parsed = parseReview(review);
    expect(parsed.apiVersion).toBe('admission.k8s.io/v1beta1');
    expect(parsed.request.uid).toBe('u-1');
  });

  it.each([
    ['a list', [], /not a JSON object/],
    ['another apiVersion', { ...admissionReview(plain()), apiVersion: 'admission.k8s.io/v2' }, /unsupported apiVersion "admission.k8s.io\/v2"/],
    ['another kind', { ...admissionReview(plain()), kind: 'Pod' }, /unsupported kind "Pod"/],
    ['no request', { apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview' }, /has no request/],
    ['an empty uid', admissionReview(plain(), { uid: '' }), /has no uid/],
    ['an object that is a string', admissionReview('pod'), /object cannot be decoded/],
    ['a huge apiVersion, named but not echoed', { ...admissionReview(plain()), apiVersion: 'v'.repeat(1e6) }, /^unsupported apiVersion "v{64}"\.\.\.: expected/],
    ['an apiVersion that is not a string', { ...admissionReview(plain()), apiVersion: { a: 1 } }, /^unsupported apiVersion of type object: expected/],
    ['a huge kind', { ...admissionReview(plain()), kind: 'K'.repeat(1e6) }, /^unsupported kind "K{64}"\.\.\.: expected AdmissionReview$/],
    ['a namespace of 8 MB', admissionReview(plain(), { namespace: 'n'.repeat(8e6) }), /request namespace is longer than 63 characters$/],
    ['a namespace that is not a name', admissionReview(plain(), { namespace: 'Shop_1' }), /request namespace "Shop_1" is not a namespace name$/],
    ['a name that is an object', { ...admissionReview(plain()), request: { ...admissionReview(plain())['request'], name: { toString: 1 } } }, /request name is not a string$/],
    ['a long uid', admissionReview(plain(), { uid: 'u'.repeat(257) }), /request uid is longer than 256 characters$/],
    ['an operation that is a number', { ...admissionReview(plain()), request: { ...admissionReview(plain())['request'], operation: 1 } }, /request operation is not a string$/],
  ])('refuses %s with a 400 saying what is wrong', (_what, body, message) => {
    let error: unknown;
    try {
      parseReview(body);
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(ReviewError);
    expect((error as ReviewError).statusCode).toBe(400);
    expect((error as ReviewError).message).toMatch(message);
  });
});

describe('boundedWarnings', () => {
  it('has nothing to say about no warnings', () => {
    expect(boundedWarnings([])).toBeUndefined();
  });

  it('keeps ten, clips each to 240 characters, and says how many more there were', () => {
    const warnings = Array.from({ length: 12 }, (_, i) => `${i}:${'x'.repeat(300)}`);
    const bounded = boundedWarnings(warnings) ?? [];
    expect(bounded).toHaveLength(11);
    expect(bounded.slice(0, 10).every((w) => w.length === 240 && w.endsWith('...'))).toBe(true);
    expect(bounded[10]).toBe('and 2 more');
  });
});

describe('injectionDenial', () => {
  const withoutAnchors = testConfig((v) => (v.identityTrustAnchorsPEM = ''));
  /** What an admission of a pod that asks for injection gets under `source`: the failure it is denied with, if any. */
  const deniedWith = async (source: AdmissionSources) => {
    const handled = await handleAdmission(request(enabled()), source);
    return handled.kind === 'failed' && !handled.response.allowed ? handled.failure : undefined;
  };

  it('is nothing while pods that ask for injection are injected', async () => {
    expect(await deniedWith(sources())).toBeUndefined();
    expect(injectionDenial(sources())).toBeUndefined();
  });

  it('is the failure such a pod is denied with: no trust anchors, or no configuration loaded', async () => {
    const anchorless = sources({ config: () => withoutAnchors });
    expect(injectionDenial(anchorless)).toMatchObject({ code: 'MISSING_TRUST_ANCHORS' });
    expect(injectionDenial(anchorless)).toEqual(await deniedWith(anchorless));
    const unloaded = sources({
      config: () => {
        throw new SourceUnavailableError('CONFIG_NOT_LOADED', 'the Linkerd configuration is not loaded: nothing has been read yet');
      },
    });
    expect(injectionDenial(unloaded)).toEqual({ code: 'CONFIG_NOT_LOADED', message: 'the Linkerd configuration is not loaded: nothing has been read yet' });
    expect(injectionDenial(unloaded)).toEqual(await deniedWith(unloaded));
  });

  it('follows the configuration in force: denying under one, injecting again under the next', () => {
    let current = withoutAnchors;
    const changing = sources({ config: () => current });
    expect(injectionDenial(changing)?.code).toBe('MISSING_TRUST_ANCHORS');
    current = testConfig();
    expect(injectionDenial(changing)).toBeUndefined();
  });
});
