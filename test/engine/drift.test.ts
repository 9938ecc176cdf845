/**
 * The comparison of a running pod with a fresh injection: every annotation and values variant injected, stored as the
 * API server stores it, is current; one changed input makes it drifted with that input's kind and path; Linkerd's own
 * goldens are current or name the documented difference; hostile pods are unreadable, never current, never a throw.
 */
import jsonPatch from 'fast-json-patch';
import { describe, expect, it } from 'vitest';
import {
  OVERRIDE_RULES,
  inject,
  podDrift,
  withTrustAnchors,
  type DriftKind,
  type DriftVerdict,
  type InjectorConfig,
  type LinkerdValues,
} from '../../src/engine/index.js';
import { ANNOTATIONS } from '../../src/engine/names.js';
import { inheritedNamespaceAnnotations } from '../../src/engine/overrides.js';
import { OTHER_TRUST_ANCHOR, TRUST_ANCHORS, applied, testConfig } from '../support/engine.js';
import { fixtureValues, loadObject, present, read, type Cases } from '../support/linkerd-fixtures.js';
import { seededRandom } from '../support/random.js';
import { stored, withServiceAccount } from '../support/stored-pod.js';

type Obj = Record<string, unknown>;
type Labels = Record<string, string>;
type Change = (v: LinkerdValues) => void;

/** An app pod with what changes the rendering: ports (one of them a default opaque port), probes, an init container. */
function appPod(annotations: Record<string, string> = {}): Obj {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: 'web-7d9f8-abcde',
      namespace: 'shop',
      annotations: { 'linkerd.io/inject': 'enabled', ...annotations },
      labels: { app: 'web' },
    },
    spec: {
      initContainers: [{ name: 'migrate', image: 'app:1', command: ['/migrate'] }],
      containers: [
        {
          name: 'app',
          image: 'app:1',
          ports: [{ containerPort: 8080, name: 'http' }, { containerPort: 3306, name: 'mysql' }],
          readinessProbe: { httpGet: { path: '/ready', port: 8080 } },
        },
        { name: 'sidecar', image: 'logger:2' },
      ],
    },
  };
}

const OWNER = { kind: 'deployment', name: 'web' };

/** The pod the webhook makes of `object` with this configuration, as the API server then returns it. */
function running(config: InjectorConfig, object: Obj = appPod(), namespaceAnnotations: Labels = {}): Obj {
  const admitted = withServiceAccount(object);
  const request = { object: admitted, kind: 'Pod', namespace: 'shop', namespaceAnnotations, owner: OWNER, config };
  const result = inject(request);
  expect(result.outcome).toBe('injected');
  return stored(applied(admitted, result.patch));
}

const verdict = (pod: unknown, config: InjectorConfig, namespaceAnnotations: Labels = {}): DriftVerdict =>
  podDrift({ pod, config, namespace: 'shop', namespaceAnnotations, owner: OWNER });

function differences(v: DriftVerdict): Array<{ kind: DriftKind; path: string }> {
  return v.verdict === 'drifted' ? v.differences.map((d) => ({ kind: d.kind, path: d.path })) : [];
}

/** A valid value, other than the default, for every annotation an override rule reads. */
const ANNOTATION_SAMPLES: Readonly<Record<string, string>> = {
  [ANNOTATIONS.proxyImage]: 'registry.example:5000/linkerd/proxy',
  [ANNOTATIONS.proxyVersion]: 'stable-2.14.10',
  [ANNOTATIONS.imagePullPolicy]: 'Always',
  [ANNOTATIONS.controlPort]: '5190',
  [ANNOTATIONS.inboundPort]: '5143',
  [ANNOTATIONS.adminPort]: '5191',
  [ANNOTATIONS.outboundPort]: '5140',
  [ANNOTATIONS.proxyAdminShutdown]: 'enabled',
  [ANNOTATIONS.proxyLogLevel]: 'debug',
  [ANNOTATIONS.proxyLogHttpHeaders]: 'insecure',
  [ANNOTATIONS.proxyLogFormat]: 'json',
  [ANNOTATIONS.proxyRequireIdentityInboundPorts]: '8080',
  [ANNOTATIONS.proxyMetricsHostnameLabels]: 'true',
  [ANNOTATIONS.proxyOutboundConnectTimeout]: '2s',
  [ANNOTATIONS.proxyInboundConnectTimeout]: '200ms',
  [ANNOTATIONS.proxyOutboundDiscoveryCacheUnusedTimeout]: '10s',
  [ANNOTATIONS.proxyInboundDiscoveryCacheUnusedTimeout]: '100s',
  [ANNOTATIONS.proxyDisableOutboundProtocolDetectTimeout]: 'true',
  [ANNOTATIONS.proxyDisableInboundProtocolDetectTimeout]: 'true',
  [ANNOTATIONS.shutdownGracePeriod]: '30s',
  [ANNOTATIONS.enableExternalProfiles]: 'true',
  [ANNOTATIONS.defaultInboundPolicy]: 'deny',
  [ANNOTATIONS.accessLog]: 'apache',
  [ANNOTATIONS.opaquePorts]: '8080,mysql',
  [ANNOTATIONS.skipInboundPorts]: '9090,9100-9200',
  [ANNOTATIONS.skipOutboundPorts]: '443',
  [ANNOTATIONS.skipSubnets]: '10.1.0.0/16',
  [ANNOTATIONS.proxyUid]: '1000700000',
  [ANNOTATIONS.proxyGid]: '3000',
  [ANNOTATIONS.proxyCpuRequest]: '0.1',
  [ANNOTATIONS.proxyCpuLimit]: '1000m',
  [ANNOTATIONS.proxyMemoryRequest]: '1024Mi',
  [ANNOTATIONS.proxyMemoryLimit]: '2Gi',
  [ANNOTATIONS.proxyEphemeralStorageRequest]: '0.5Gi',
  [ANNOTATIONS.proxyEphemeralStorageLimit]: '2Gi',
  [ANNOTATIONS.proxyCpuRatioLimit]: '0.5',
  [ANNOTATIONS.proxyAwait]: 'disabled',
  [ANNOTATIONS.proxyEnableNativeSidecar]: 'true',
  [ANNOTATIONS.betaProxyEnableNativeSidecar]: 'true',
  [ANNOTATIONS.alphaProxyEnableNativeSidecar]: 'true',
  [ANNOTATIONS.alphaProxyWaitBeforeExitSeconds]: '10',
  [ANNOTATIONS.proxyAdditionalEnv]: '[{"name":"EXTRA","value":"1"},{"name":"EMPTY","value":""}]',
  [ANNOTATIONS.enableGateway]: 'true',
  [ANNOTATIONS.enableDebugSidecar]: 'true',
  [ANNOTATIONS.debugImage]: 'example/debug',
  [ANNOTATIONS.debugImageVersion]: 'v1',
  [ANNOTATIONS.debugImagePullPolicy]: 'Always',
  [ANNOTATIONS.closeWaitTimeout]: '60s',
};

/** Values other than the embedded defaults, one variant each. */
const VALUES_VARIANTS: Array<[string, Change]> = [
  ['the embedded defaults', () => {}],
  ['the CNI plugin', (v) => (v.cniEnabled = true)],
  ['the CNI plugin with IPv6', (v) => Object.assign(v, { cniEnabled: true, disableIPv6: false })],
  ['native sidecars', (v) => (v.proxy.nativeSidecar = true)],
  ['native sidecars without await', (v) => Object.assign(v.proxy, { nativeSidecar: true, await: false })],
  ['no await', (v) => (v.proxy.await = false)],
  ['IPv6', (v) => (v.disableIPv6 = false)],
  ['nft', (v) => (v.proxyInit.iptablesMode = 'nft')],
  [
    'tracing',
    (v) => {
      const meshIdentity = { serviceAccountName: 'collector', namespace: 'tracing' };
      const collector = { endpoint: 'collector.tracing:4317', meshIdentity };
      if (v.proxy.tracing) Object.assign(v.proxy.tracing, { enabled: true, collector });
    },
  ],
  ['no token projection', (v) => (v.identity.serviceAccountTokenProjection = false)],
  [
    'proxy resources',
    (v) =>
      Object.assign(v.proxy.resources, {
        cpu: { request: '0.1', limit: '1000m' },
        memory: { request: '1024Mi', limit: '2Gi' },
      }),
  ],
  ['cores', (v) => (v.proxy.cores = 2)],
  ['worker limits', (v) => (v.proxy.runtime.workers = { minimum: 1, maximum: 4, maximumCPURatio: 0.5 })],
  ['wait before exit', (v) => (v.proxy.waitBeforeExitSeconds = 5)],
  ['proxy capabilities', (v) => (v.proxy.capabilities = { add: ['NET_BIND_SERVICE'], drop: ['ALL'] })],
  ['a proxy security context', (v) => (v.proxy.securityContext = { runAsUser: 2102, readOnlyRootFilesystem: true })],
  ['a proxy group', (v) => (v.proxy.gid = 2102)],
  ['no pull policy', (v) => (v.imagePullPolicy = '')],
  ['linkerd-init as root', (v) => Object.assign(v.proxyInit, { runAsRoot: true, closeWaitTimeoutSecs: 60 })],
  ['a renamed xtables lock', (v) => (v.proxyInit.xtMountPath = { mountPath: '/run/xtables-lock', name: 'xt-lock' })],
  ['a proxy version', (v) => (v.proxy.image.version = 'edge-26.9.1')],
  ['additional env', (v) => (v.proxy.additionalEnv = [{ name: 'EXTRA', value: 'yes' }])],
  ['no opaque ports', (v) => (v.proxy.opaquePorts = '')],
  [
    'a validator config',
    (v) =>
      Object.assign(v, {
        cniEnabled: true,
        networkValidator: { ...v.networkValidator, logLevel: 'debug', timeout: '9s' },
      }),
  ],
];

describe('a pod injected with the configuration in force is current', () => {
  it('covers every annotation an override rule reads', () => {
    expect(OVERRIDE_RULES.map((r) => r.annotation).filter((a) => !(a in ANNOTATION_SAMPLES))).toEqual([]);
  });

  it.each(Object.entries(ANNOTATION_SAMPLES))('with %s: %s', (key, value) => {
    const config = testConfig();
    const pod = running(config, appPod({ [key]: value }));
    expect(verdict(pod, config)).toMatchObject({ verdict: 'current' });
  });

  it.each(VALUES_VARIANTS)('with %s', (_, change) => {
    const config = testConfig(change);
    expect(verdict(running(config), config)).toMatchObject({ verdict: 'current' });
  });

  it('with namespace annotations the pod inherited', () => {
    const config = testConfig();
    const ns = {
      'linkerd.io/inject': 'enabled',
      [ANNOTATIONS.proxyLogLevel]: 'debug',
      [ANNOTATIONS.skipSubnets]: '10.9.0.0/16',
    };
    const object = appPod();
    delete (object['metadata'] as { annotations: Obj }).annotations['linkerd.io/inject'];
    expect(verdict(running(config, object, ns), config, ns)).toMatchObject({ verdict: 'current' });
  });

  it('with random annotations over random values, whatever the order of keyed lists', () => {
    const random = seededRandom(51);
    const keys = Object.keys(ANNOTATION_SAMPLES);
    for (let i = 0; i < 150; i++) {
      const annotations: Record<string, string> = {};
      for (const key of keys) if (random() < 0.15) annotations[key] = ANNOTATION_SAMPLES[key] as string;
      const [, change] = VALUES_VARIANTS[Math.floor(random() * VALUES_VARIANTS.length)] as [string, Change];
      const config = testConfig(change);
      const pod = running(config, appPod(annotations));
      const spec = pod['spec'] as { initContainers: Obj[]; containers: Obj[]; volumes: Obj[] };
      for (const c of [...spec.initContainers, ...spec.containers]) {
        if (Array.isArray(c['env'])) c['env'].reverse();
        if (Array.isArray(c['ports'])) c['ports'].reverse();
      }
      spec.volumes.reverse();
      const v = verdict(pod, config);
      expect(v, JSON.stringify(annotations)).toMatchObject({ verdict: 'current' });
    }
  });

  it('gives the same verdict every time, differences in path order', () => {
    const before = testConfig();
    const after = testConfig((v) => {
      Object.assign(v.proxy, { logLevel: 'debug', await: false, image: { ...v.proxy.image, version: 'edge-26.9.1' } });
    });
    const pod = running(before);
    const first = verdict(pod, after);
    expect(verdict(jsonPatch.deepClone(pod), after)).toEqual(first);
    const paths = differences(first).map((d) => d.path);
    expect(paths).toEqual([...paths].sort());
    expect(paths.length).toBeGreaterThan(3);
  });
});

/**
 * One input changed after the pod started, and what the comparison must then say: the kind of every difference, and
 * paths among them; `masked` are the annotations that would keep the pod from seeing the change.
 */
const NATIVE_SIDECAR_ANNOTATIONS = [
  ANNOTATIONS.proxyEnableNativeSidecar,
  ANNOTATIONS.betaProxyEnableNativeSidecar,
  ANNOTATIONS.alphaProxyEnableNativeSidecar,
];

const CHANGES: Array<{ name: string; change: Change; kind: DriftKind; paths: string[]; masked?: string[] }> = [
  {
    name: 'a new proxy version',
    change: (v) => (v.proxy.image.version = 'edge-26.9.1'),
    kind: 'proxy_image',
    paths: ['containers[linkerd-proxy].image', 'metadata.annotations[linkerd.io/proxy-version]'],
    masked: [ANNOTATIONS.proxyVersion],
  },
  {
    name: 'a new trust-anchor bundle',
    change: (v) => (v.identityTrustAnchorsPEM = TRUST_ANCHORS + OTHER_TRUST_ANCHOR),
    kind: 'trust_anchors',
    paths: [
      'containers[linkerd-proxy].env[LINKERD2_PROXY_IDENTITY_TRUST_ANCHORS]',
      'metadata.annotations[linkerd.io/trust-root-sha256]',
    ],
  },
  {
    name: 'the CNI plugin',
    change: (v) => (v.cniEnabled = true),
    kind: 'startup_mode',
    paths: [
      'initContainers[linkerd-init]',
      'initContainers[linkerd-network-validator]',
      'volumes[linkerd-proxy-init-xtables-lock]',
    ],
  },
  {
    name: 'native sidecars',
    change: (v) => (v.proxy.nativeSidecar = true),
    kind: 'startup_mode',
    paths: ['containers[linkerd-proxy]', 'containers[linkerd-proxy].restartPolicy'],
    masked: NATIVE_SIDECAR_ANNOTATIONS,
  },
  {
    name: 'await off',
    change: (v) => (v.proxy.await = false),
    kind: 'startup_mode',
    paths: ['containers', 'containers[linkerd-proxy].lifecycle'],
    masked: [ANNOTATIONS.proxyAwait, ...NATIVE_SIDECAR_ANNOTATIONS],
  },
  {
    name: 'proxy resources',
    change: (v) => (v.proxy.resources.memory = { request: '64Mi', limit: '256Mi' }),
    kind: 'proxy_resources',
    paths: ['containers[linkerd-proxy].resources.limits', 'initContainers[linkerd-init].resources.requests'],
    masked: [ANNOTATIONS.proxyMemoryRequest, ANNOTATIONS.proxyMemoryLimit],
  },
  {
    name: 'a proxy CPU limit',
    change: (v) => (v.proxy.resources.cpu = { request: '', limit: '2' }),
    kind: 'proxy_resources',
    paths: ['containers[linkerd-proxy].resources.limits'],
    masked: [ANNOTATIONS.proxyCpuLimit, ANNOTATIONS.proxyCpuRequest, ANNOTATIONS.proxyCpuRatioLimit],
  },
  {
    name: 'a log level',
    change: (v) => (v.proxy.logLevel = 'debug'),
    kind: 'proxy_config',
    paths: ['containers[linkerd-proxy].env[LINKERD2_PROXY_LOG]'],
    masked: [ANNOTATIONS.proxyLogLevel],
  },
  {
    name: 'skipped outbound ports',
    change: (v) => (v.proxyInit.ignoreOutboundPorts = '25'),
    kind: 'proxy_config',
    paths: ['initContainers[linkerd-init].args'],
    masked: [ANNOTATIONS.skipOutboundPorts],
  },
];

describe('a pod whose inputs changed after it started is drifted, with the kind and path', () => {
  it.each(CHANGES)('$name', ({ change, kind, paths }) => {
    const pod = running(testConfig());
    const found = differences(verdict(pod, testConfig(change)));
    expect(found.map((d) => d.path)).toEqual(expect.arrayContaining(paths));
    expect(new Set(found.map((d) => d.kind))).toEqual(new Set([kind]));
  });

  it('each change, over random annotations and values, gives only its own kind', () => {
    const random = seededRandom(5151);
    const keys = Object.keys(ANNOTATION_SAMPLES);
    let drifted = 0;
    for (let i = 0; i < 150; i++) {
      const { change, kind, masked = [] } = CHANGES[i % CHANGES.length] as (typeof CHANGES)[number];
      const annotations: Record<string, string> = {};
      for (const key of keys) {
        if (!masked.includes(key) && random() < 0.1) annotations[key] = ANNOTATION_SAMPLES[key] as string;
      }
      const [, variant] = VALUES_VARIANTS[Math.floor(random() * VALUES_VARIANTS.length)] as [string, Change];
      const pod = running(testConfig(variant), appPod(annotations));
      const v = verdict(pod, testConfig((values) => (variant(values), change(values))));
      // A change the variant already made (native sidecars over native sidecars) leaves the pod current.
      if (v.verdict === 'current') continue;
      drifted++;
      const kinds = new Set(differences(v).map((d) => d.kind));
      expect(kinds, JSON.stringify({ kind, annotations })).toEqual(new Set([kind]));
    }
    expect(drifted).toBeGreaterThan(120);
  });

  it('a namespace annotation added after the pod started', () => {
    const config = testConfig();
    const pod = running(config);
    const found = differences(verdict(pod, config, { [ANNOTATIONS.proxyLogLevel]: 'debug' }));
    expect(found).toContainEqual({ kind: 'proxy_config', path: 'containers[linkerd-proxy].env[LINKERD2_PROXY_LOG]' });
    expect(found).toContainEqual({ kind: 'pod_metadata', path: `metadata.annotations[${ANNOTATIONS.proxyLogLevel}]` });
  });

  it('an owner the pod names but the admission compared with had none (owner: null)', () => {
    const config = testConfig();
    const pod = running(config);
    expect(differences(podDrift({ pod, config, namespace: 'shop', owner: null }))).toEqual([
      { kind: 'pod_metadata', path: 'metadata.labels[linkerd.io/proxy-deployment]' },
    ]);
    expect(podDrift({ pod, config, namespace: 'shop' })).toMatchObject({ verdict: 'current' });
  });

  it('a proxy a fresh admission would not inject at all', () => {
    const config = testConfig();
    const pod = running(config);
    (pod['spec'] as Obj)['hostNetwork'] = true;
    const v = verdict(pod, config);
    const only = { kind: 'not_injected', path: 'containers[linkerd-proxy]', reasons: ['host_network_enabled'] };
    expect(v).toMatchObject({ verdict: 'drifted', differences: [only] });
  });

  it('a field the injector sets that the API server also defaults, set otherwise', () => {
    const config = testConfig();
    const pod = running(config);
    const proxy = ((pod['spec'] as Obj)['containers'] as Obj[]).find((c) => c['name'] === 'linkerd-proxy') as Obj;
    proxy['terminationMessagePolicy'] = 'File';
    (proxy['resources'] as Obj)['limits'] = { memory: '1Gi' };
    expect(differences(verdict(pod, config))).toEqual([
      { kind: 'proxy_resources', path: 'containers[linkerd-proxy].resources' },
      { kind: 'proxy_config', path: 'containers[linkerd-proxy].terminationMessagePolicy' },
    ]);
  });

  it('a container another program changed, and one it added to the proxy', () => {
    const config = testConfig();
    const pod = running(config);
    const proxy = ((pod['spec'] as Obj)['containers'] as Obj[]).find((c) => c['name'] === 'linkerd-proxy') as Obj;
    (proxy['env'] as Obj[]).push({ name: 'INJECTED_BY_SOMEONE', value: 'x' });
    (proxy['securityContext'] as Obj)['privileged'] = true;
    expect(differences(verdict(pod, config))).toEqual([
      { kind: 'proxy_config', path: 'containers[linkerd-proxy].env[INJECTED_BY_SOMEONE]' },
      { kind: 'proxy_config', path: 'containers[linkerd-proxy].securityContext.privileged' },
    ]);
  });

  it('an image pinned to a digest only when it is not the same tag', () => {
    const config = testConfig();
    const pod = running(config);
    const proxy = ((pod['spec'] as Obj)['containers'] as Obj[]).find((c) => c['name'] === 'linkerd-proxy') as Obj;
    const image = proxy['image'] as string;
    const digest = `@sha256:${'0f'.repeat(32)}`;
    // What an admission policy that verifies images writes: the same tag, pinned.
    proxy['image'] = `${image}${digest}`;
    expect(verdict(pod, config).verdict).toBe('current');
    proxy['image'] = `${image.replace(/:[^:]+$/, ':edge-26.7.1')}${digest}`;
    expect(differences(verdict(pod, config))).toEqual([{ kind: 'proxy_image', path: 'containers[linkerd-proxy].image' }]);
    proxy['image'] = `${image}@sha256:short`;
    expect(differences(verdict(pod, config))).toEqual([{ kind: 'proxy_image', path: 'containers[linkerd-proxy].image' }]);
  });
});

describe('a pod injected by Linkerd', () => {
  it('differing only in how Go prints a number names that documented difference', () => {
    const config = testConfig();
    const pod = running(config, appPod({ [ANNOTATIONS.proxyUid]: '1000700000' }));
    const inits = (pod['spec'] as { initContainers: Array<{ name: string; args: string[] }> }).initContainers;
    const init = inits.find((c) => c.name === 'linkerd-init') as { args: string[] };
    init.args = init.args.map((a) => (a === '1000700000' ? '1.0007e+09' : a));
    const v = verdict(pod, config);
    const only = { kind: 'proxy_config', path: 'initContainers[linkerd-init].args', documented: 'number_format' };
    expect(v).toMatchObject({ verdict: 'drifted', differences: [only] });
  });
});

describe('a pod the comparison cannot read', () => {
  const config = testConfig();
  const good = (): Obj => running(config);
  const cases: Array<[string, () => unknown]> = [
    ['not an object', () => 'pod'],
    ['null', () => null],
    ['no spec', () => ({ metadata: {} })],
    ['containers not a list', () => ({ ...good(), spec: { containers: { name: 'x' } } })],
    ['a container without a name', () => ({ ...good(), spec: { containers: [{ image: 'x' }] } })],
    ['no proxy', () => ({ ...good(), spec: { containers: [{ name: 'app', image: 'app:1' }] } })],
    ['annotations that are not strings', () => ({ ...good(), metadata: { annotations: { a: 1 } } })],
    ['two proxies', () => {
      const pod = good();
      const spec = pod['spec'] as { containers: Obj[]; initContainers: Obj[] };
      spec.initContainers.push({ ...(spec.containers[0] as Obj) });
      return pod;
    }],
    ['no trust anchors configured', () => good()],
    ['annotations larger than the API server accepts', () => {
      const pod = good();
      ((pod['metadata'] as Obj)['annotations'] as Obj)['big'] = 'x'.repeat(300 * 1024);
      return pod;
    }],
  ];

  it.each(cases)('%s is unreadable, with a reason', (name, make) => {
    const unconfigured = { ...config, values: withTrustAnchors(config.values, '') };
    const v = podDrift({ pod: make(), config: name === 'no trust anchors configured' ? unconfigured : config });
    expect(v.verdict).toBe('unreadable');
    expect(v.verdict === 'unreadable' && v.reason.length).toBeGreaterThan(5);
  });

  it('a proxy nesting deeper than any stack, or under a __proto__ key, gets a verdict and no throw', () => {
    const pod = good();
    const proxy = ((pod['spec'] as Obj)['containers'] as Obj[]).find((c) => c['name'] === 'linkerd-proxy') as Obj;
    let deep: Obj = {};
    for (let i = 0; i < 100_000; i++) deep = { d: deep };
    proxy['extra'] = deep;
    const hostile = JSON.parse('{"__proto__": {"polluted": true}}') as Obj;
    (pod['metadata'] as Obj)['labels'] = { ...((pod['metadata'] as Obj)['labels'] as Obj), ...hostile };
    const v = podDrift({ pod, config, owner: OWNER });
    expect(['drifted', 'unreadable']).toContain(v.verdict);
    expect(({} as Obj)['polluted']).toBeUndefined();
  });

  it('a pod with many thousand env entries in its proxy is compared in linear time', () => {
    const pod = good();
    const proxy = ((pod['spec'] as Obj)['containers'] as Obj[]).find((c) => c['name'] === 'linkerd-proxy') as Obj;
    for (let i = 0; i < 50_000; i++) (proxy['env'] as Obj[]).push({ name: `X${i}`, value: '1'.repeat(20) });
    const started = performance.now();
    const v = podDrift({ pod, config, owner: OWNER });
    expect(differences(v)).toHaveLength(50_000);
    expect(performance.now() - started).toBeLessThan(5000);
  });
});

describe.skipIf(!present)("pods made from Linkerd's own goldens", () => {
  const cases = present ? (JSON.parse(read('cases.json')) as Cases) : undefined;

  const podCases = (cases?.podPatchCases.cases ?? []).map((c, i) => [i + 1, c] as const);
  it.each(podCases)('golden %i is current: %o', (_n, c) => {
    if (!cases) throw new Error('fixtures not loaded');
    const config = { values: fixtureValues(cases), controlPlaneNamespace: cases.values.controlPlaneNamespace };
    const ns = cases.namespaceAnnotations[c.ns] ?? {};
    const golden = JSON.parse(read(c.golden)) as jsonPatch.Operation[];
    const linkerdPod = jsonPatch.applyPatch(loadObject(c.input), golden).newDocument;
    const metadata = linkerdPod['metadata'] as { annotations?: Record<string, unknown> };
    // The API server holds annotations as text: a fixture's unquoted `true` is stored as "true".
    const own = Object.fromEntries(Object.entries(metadata.annotations ?? {}).map(([k, v]) => [k, String(v)]));
    // Linkerd's webhook, unlike the unit test that made the golden, also copies the namespace's annotations.
    metadata.annotations = c.inheritNamespaceAnnotations ? own : { ...inheritedNamespaceAnnotations(own, ns), ...own };
    const v = podDrift({ pod: stored(withServiceAccount(linkerdPod)), config, namespaceAnnotations: ns });
    expect(v, JSON.stringify(v)).toMatchObject({ verdict: 'current' });
  });
});
