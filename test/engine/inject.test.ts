import { describe, expect, it } from 'vitest';
import {
  EngineError,
  inject,
  podPatch,
  prepareConfig,
  mapValue,
  stringMap,
  trustRootSha256,
  uninject,
  type InjectorConfig,
  type LinkerdValues,
} from '../../src/engine/index.js';
import { templateAnnotations } from '../../src/engine/inject.js';
import { PROXY_ALPHA_ANNOTATIONS, PROXY_ANNOTATIONS } from '../../src/engine/names.js';
import { seededRandom } from '../support/random.js';
import { applyToValue } from '../../src/manifests/yaml-patch.js';
import { applied, names, pod, testConfig, testValues, TRUST_ANCHORS } from '../support/engine.js';

type Obj = Record<string, any>;

function injectPod(p: Obj, change?: Parameters<typeof testConfig>[0], nsAnnotations: Record<string, string> = {}) {
  return inject({ object: p, kind: 'Pod', namespace: 'shop', namespaceAnnotations: nsAnnotations, config: testConfig(change) });
}

const enabledPod = (annotations: Record<string, string> = {}, spec?: Obj): Obj =>
  pod({ annotations: { 'linkerd.io/inject': 'enabled', ...annotations }, ...(spec && { spec }) });

describe('placement of the proxy and the init container', () => {
  it('classic sidecar (embedded default): proxy first in containers with the linkerd-await postStart hook', () => {
    const result = injectPod(enabledPod());
    const after = applied(enabledPod(), result.patch) as Obj;
    expect(names(after.spec.containers)).toEqual(['linkerd-proxy', 'app']);
    expect(names(after.spec.initContainers)).toEqual(['linkerd-init']);
    const proxy = after.spec.containers[0];
    expect(proxy.lifecycle).toEqual({
      postStart: { exec: { command: ['/usr/lib/linkerd/linkerd-await', '--timeout=2m', '--port=4191'] } },
    });
    expect(proxy.startupProbe).toBeUndefined();
    expect(proxy.restartPolicy).toBeUndefined();
    expect(result.proxy).toEqual({ nativeSidecar: false, await: true, cni: false, placement: 'containers[0]' });
  });

  it('await disabled: no hook, and the proxy goes last', () => {
    const p = enabledPod({ 'config.linkerd.io/proxy-await': 'disabled' });
    const after = applied(p, injectPod(p).patch) as Obj;
    expect(names(after.spec.containers)).toEqual(['app', 'linkerd-proxy']);
    expect(after.spec.containers[1].lifecycle).toBeUndefined();
  });

  it('await disabled by the namespace applies to pods that do not say otherwise', () => {
    const p = enabledPod();
    const result = injectPod(p, undefined, { 'config.linkerd.io/proxy-await': 'disabled' });
    const after = applied(p, result.patch) as Obj;
    expect(names(after.spec.containers)).toEqual(['app', 'linkerd-proxy']);
    expect(after.metadata.annotations['config.linkerd.io/proxy-await']).toBe('disabled');
  });

  it('user init containers run before linkerd-init in classic mode (appended)', () => {
    const spec = { initContainers: [{ name: 'migrate', image: 'm' }], containers: [{ name: 'app', image: 'a' }] };
    const p = enabledPod({}, spec);
    const after = applied(p, injectPod(p).patch) as Obj;
    expect(names(after.spec.initContainers)).toEqual(['migrate', 'linkerd-init']);
  });

  it('native sidecar from the values: linkerd-init then the proxy ahead of user init containers', () => {
    const spec = { initContainers: [{ name: 'migrate', image: 'm' }], containers: [{ name: 'app', image: 'a' }] };
    const p = enabledPod({}, spec);
    const result = injectPod(p, (v) => (v.proxy.nativeSidecar = true));
    const after = applied(p, result.patch) as Obj;
    expect(names(after.spec.initContainers)).toEqual(['linkerd-init', 'linkerd-proxy', 'migrate']);
    expect(names(after.spec.containers)).toEqual(['app']);
    const proxy = after.spec.initContainers[1];
    expect(proxy.restartPolicy).toBe('Always');
    expect(proxy.lifecycle).toBeUndefined();
    expect(proxy.startupProbe).toEqual({
      httpGet: { path: '/ready', port: 4191 },
      initialDelaySeconds: 0,
      periodSeconds: 1,
      failureThreshold: 120,
    });
    expect(result.proxy?.placement).toBe('initContainers[1]');
  });

  it('native sidecar asked for by the pod annotation alone', () => {
    const p = enabledPod({ 'config.linkerd.io/proxy-enable-native-sidecar': 'true' });
    const after = applied(p, injectPod(p).patch) as Obj;
    expect(names(after.spec.initContainers)).toEqual(['linkerd-init', 'linkerd-proxy']);
  });

  it('native without await: no startupProbe; waitBeforeExitSeconds is ignored', () => {
    const p = enabledPod({
      'config.linkerd.io/proxy-enable-native-sidecar': 'true',
      'config.linkerd.io/proxy-await': 'disabled',
      'config.alpha.linkerd.io/proxy-wait-before-exit-seconds': '30',
    });
    const proxy = (applied(p, injectPod(p).patch) as Obj).spec.initContainers[1];
    expect(proxy.startupProbe).toBeUndefined();
    expect(proxy.lifecycle).toBeUndefined();
  });

  it('classic mode with wait-before-exit adds a preStop sleep next to the await hook', () => {
    const p = enabledPod({ 'config.alpha.linkerd.io/proxy-wait-before-exit-seconds': '30' });
    const proxy = (applied(p, injectPod(p).patch) as Obj).spec.containers[0];
    expect(proxy.lifecycle.preStop).toEqual({ exec: { command: ['/bin/sleep', '30'] } });
    expect(proxy.lifecycle.postStart.exec.command[0]).toBe('/usr/lib/linkerd/linkerd-await');
  });
});

describe("the pod's own volumes of the injector's names", () => {
  it('one that says what the injector would write (defaults aside) is not added again; any other is, as Linkerd adds it', () => {
    const stored = { name: 'linkerd-identity-end-entity', emptyDir: { medium: 'Memory', sizeLimit: '2Mi' } };
    const p = enabledPod({}, { containers: [{ name: 'app', image: 'app' }], volumes: [stored] });
    const result = injectPod(p);
    expect(result.added.volumes).not.toContain('linkerd-identity-end-entity');
    const spec = applied(p, result.patch)['spec'];
    expect(names(spec.volumes).filter((n) => n === 'linkerd-identity-end-entity')).toHaveLength(1);
    // The proxy still mounts it, by name.
    const proxy = spec.containers.find((c: Obj) => c.name === 'linkerd-proxy');
    expect(names(proxy.volumeMounts)).toContain('linkerd-identity-end-entity');

    const unlike = enabledPod({}, { containers: [{ name: 'app', image: 'app' }], volumes: [{ name: 'linkerd-identity-end-entity', emptyDir: {} }] });
    const twice = applied(unlike, injectPod(unlike).patch)['spec'];
    expect(names(twice.volumes).filter((n) => n === 'linkerd-identity-end-entity')).toHaveLength(2);
  });
});

describe('linkerd-init versus the network validator', () => {
  it('cniEnabled false: linkerd-init with legacy iptables by default, and the xtables lock volume', () => {
    const result = injectPod(enabledPod());
    const after = applied(enabledPod(), result.patch) as Obj;
    const init = after.spec.initContainers[0];
    expect(init.name).toBe('linkerd-init');
    expect(init.args).toEqual([
      '--ipv6=false',
      '--incoming-proxy-port',
      '4143',
      '--outgoing-proxy-port',
      '4140',
      '--proxy-uid',
      '2102',
      '--inbound-ports-to-ignore',
      '4190,4191,4567,4568',
      '--outbound-ports-to-ignore',
      '4567,4568',
    ]);
    expect(init.securityContext.capabilities).toEqual({ add: ['NET_ADMIN', 'NET_RAW'] });
    expect(names(after.spec.volumes)).toEqual([
      'linkerd-proxy-init-xtables-lock',
      'linkerd-identity-end-entity',
      'linkerd-identity-token',
    ]);
  });

  it('iptablesMode nft adds the nft binaries', () => {
    const result = injectPod(enabledPod(), (v) => (v.proxyInit.iptablesMode = 'nft'));
    const init = (applied(enabledPod(), result.patch) as Obj).spec.initContainers[0];
    expect(init.args.slice(0, 4)).toEqual([
      '--firewall-bin-path',
      'iptables-nft',
      '--firewall-save-bin-path',
      'iptables-nft-save',
    ]);
  });

  it('cniEnabled true: linkerd-network-validator instead, no xtables volume, proxy still first', () => {
    const result = injectPod(enabledPod(), (v) => (v.cniEnabled = true));
    const after = applied(enabledPod(), result.patch) as Obj;
    expect(names(after.spec.initContainers)).toEqual(['linkerd-network-validator']);
    expect(names(after.spec.containers)).toEqual(['linkerd-proxy', 'app']);
    const validator = after.spec.initContainers[0];
    expect(validator.command).toEqual(['/usr/lib/linkerd/linkerd2-network-validator']);
    expect(validator.args).toEqual([
      '--log-format', 'plain', '--log-level', 'debug',
      '--connect-addr', '1.1.1.1:20001', '--listen-addr', '0.0.0.0:4140', '--timeout', '10s',
    ]);
    expect(validator.securityContext.capabilities).toEqual({ drop: ['ALL'] });
    expect(names(after.spec.volumes)).not.toContain('linkerd-proxy-init-xtables-lock');
    expect(result.added.initContainers).toEqual(['linkerd-network-validator']);
  });

  it('with IPv6 enabled the validator and the proxy listen on both families', () => {
    const result = injectPod(enabledPod(), (v) => {
      v.cniEnabled = true;
      v.disableIPv6 = false;
    });
    const after = applied(enabledPod(), result.patch) as Obj;
    expect(after.spec.initContainers[0].args).toContain('[fd00::1]:20001');
    const env = Object.fromEntries(after.spec.containers[0].env.map((e: Obj) => [e.name, e.value]));
    expect(env['LINKERD2_PROXY_OUTBOUND_LISTEN_ADDRS']).toBe('127.0.0.1:4140,[::1]:4140');
    expect(env['LINKERD2_PROXY_INBOUND_LISTEN_ADDR']).toBe('[::]:4143');
  });
});

describe('operation order and paths', () => {
  it('follows Linkerd: metadata, annotations sorted, labels sorted, roots, init, volumes, proxy', () => {
    const result = inject({
      object: enabledPod({}, { containers: [{ name: 'app', image: 'a', ports: [{ containerPort: 3306 }] }] }),
      kind: 'Pod',
      namespace: 'shop',
      owner: { kind: 'deployment', name: 'web' },
      namespaceAnnotations: { 'config.linkerd.io/skip-outbound-ports': '5432' },
      config: testConfig(),
    });
    expect(result.patch.map((op) => op.path)).toEqual([
      '/metadata/annotations/config.linkerd.io~1opaque-ports',
      '/metadata/annotations/config.linkerd.io~1skip-outbound-ports',
      '/metadata/annotations/linkerd.io~1created-by',
      '/metadata/annotations/linkerd.io~1proxy-version',
      '/metadata/annotations/linkerd.io~1trust-root-sha256',
      '/metadata/labels',
      '/metadata/labels/linkerd.io~1control-plane-ns',
      '/metadata/labels/linkerd.io~1proxy-deployment',
      '/metadata/labels/linkerd.io~1workload-ns',
      '/spec/volumes',
      '/spec/initContainers',
      '/spec/volumes/-',
      '/spec/initContainers/-',
      '/spec/volumes/-',
      '/spec/volumes/-',
      '/spec/containers/0',
    ]);
    expect(result.patch.every((op) => op.op === 'add')).toBe(true);
    expect(result.added.annotations['config.linkerd.io/opaque-ports']).toBe('3306');
    expect(result.added.labels).toEqual({
      'linkerd.io/control-plane-ns': 'linkerd',
      'linkerd.io/proxy-deployment': 'web',
      'linkerd.io/workload-ns': 'shop',
    });
  });

  it('the debug sidecar is appended before the proxy op, so it ends up last', () => {
    const p = enabledPod({ 'config.linkerd.io/enable-debug-sidecar': 'true' });
    const after = applied(p, injectPod(p).patch) as Obj;
    expect(names(after.spec.containers)).toEqual(['linkerd-proxy', 'app', 'linkerd-debug']);
    expect(after.spec.containers[2].image).toBe('cr.l5d.io/linkerd/debug:edge-26.8.3');
  });

  it('existing maps and arrays are never replaced', () => {
    const p = pod({
      annotations: { 'linkerd.io/inject': 'enabled', team: 'payments' },
      labels: { app: 'web' },
      spec: {
        initContainers: [{ name: 'setup', image: 's' }],
        volumes: [{ name: 'data', emptyDir: {} }],
        containers: [{ name: 'app', image: 'a' }],
      },
    });
    const result = injectPod(p);
    const roots = result.patch.filter((op) => !/\/(\d+|-)$/.test(op.path) && op.path.split('/').length <= 3);
    expect(roots).toEqual([]);
    const after = applied(p, result.patch) as Obj;
    expect(after.metadata.annotations.team).toBe('payments');
    expect(after.metadata.labels.app).toBe('web');
    expect(names(after.spec.volumes)[0]).toBe('data');
    expect(names(after.spec.initContainers)[0]).toBe('setup');
  });

  it('adds missing parents: no metadata maps, no spec lists, even no spec', () => {
    const bare = { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'x' } };
    const result = inject({
      object: bare,
      kind: 'Pod',
      namespace: 'shop',
      namespaceAnnotations: { 'linkerd.io/inject': 'enabled' },
      config: testConfig(),
    });
    expect(result.outcome).toBe('injected');
    const after = applied(bare, result.patch) as Obj;
    expect(names(after.spec.containers)).toEqual(['linkerd-proxy']);
    expect(after.metadata.annotations['linkerd.io/inject']).toBe('enabled');
  });

  it('escapes "~" and "/" in keys and keeps any annotation value as valid JSON', () => {
    const nasty = 'a "quoted" \\ value\nwith newline and </script>';
    const result = inject({
      object: enabledPod(),
      kind: 'Pod',
      namespace: 'shop',
      namespaceAnnotations: { 'config.linkerd.io/access-log': nasty },
      config: testConfig(),
    });
    const json = JSON.stringify(result.patch);
    expect(JSON.parse(json)).toEqual(result.patch);
    const op = result.patch.find((o) => o.path.endsWith('access-log'));
    expect(op?.value).toBe(nasty);
    const after = applied(enabledPod(), result.patch) as Obj;
    expect(after.metadata.annotations['config.linkerd.io/access-log']).toBe(nasty);
  });

  it('owner labels only for the kinds Linkerd labels', () => {
    for (const [kind, labelled] of [
      ['deployment', true], ['replicaset', true], ['statefulset', true], ['daemonset', true], ['job', true],
      ['replicationcontroller', true], ['cronjob', false], ['pod', false], ['rollout', false],
    ] as const) {
      const result = inject({ object: enabledPod(), kind: 'Pod', namespace: 'shop', owner: { kind, name: 'o' }, config: testConfig() });
      expect(`linkerd.io/proxy-${kind}` in result.added.labels, kind).toBe(labelled);
    }
  });
});

describe('annotations the proxy does not read', () => {
  it('change nothing in the answer, however many there are', () => {
    const configured = {
      'config.linkerd.io/proxy-log-level': 'debug',
      'config.linkerd.io/opaque-ports': '3306',
      'config.alpha.linkerd.io/proxy-wait-before-exit-seconds': '5',
      'config.linkerd.io/no-such-setting': 'x',
    };
    // Parsed from JSON, as the webhook reads them: past a few hundred keys V8 keeps such a map as a dictionary.
    const withNotes = (count: number): Obj => {
      const annotations: Record<string, string> = {};
      for (let i = 0; i < count; i++) annotations[`example.com/note-${i}`] = `value ${i}`;
      return JSON.parse(JSON.stringify(enabledPod({ ...annotations, ...configured })));
    };
    const expected = injectPod(enabledPod(configured), undefined, { 'config.linkerd.io/proxy-cpu-request': '200m' });
    for (const count of [1, 300, 2000]) {
      const result = injectPod(withNotes(count), undefined, { 'config.linkerd.io/proxy-cpu-request': '200m' });
      expect(result.patch).toEqual(expected.patch);
      expect(result.workloadConfiguration).toEqual(expected.workloadConfiguration);
      expect(result.warnings).toEqual(expected.warnings);
    }
    expect(Object.keys(expected.workloadConfiguration)).toEqual(['config.linkerd.io/proxy-log-level', 'config.linkerd.io/opaque-ports']);
  });

  it('are read in one pass that sets the inject and config.* ones apart, with every value a string', () => {
    const r = seededRandom(21);
    const KEYS = ['linkerd.io/inject', 'config.linkerd.io/proxy-uid', 'config.alpha.linkerd.io/x', 'config.', 'configx', 'app', 'linkerd.io/created-by', 'a/config.b'];
    const VALUES: unknown[] = ['enabled', '', '1', 2, true, null, { a: 1 }, ['x']];
    for (let i = 0; i < 300; i++) {
      const map: Record<string, unknown> = {};
      for (let k = Math.floor(r() * 8); k > 0; k--) map[KEYS[Math.floor(r() * KEYS.length)]!] = VALUES[Math.floor(r() * VALUES.length)];
      const read = templateAnnotations(map);
      const strings = stringMap(map);
      expect(read.all).toEqual(strings);
      const proxy = Object.fromEntries(Object.entries(strings).filter(([k]) => k === 'linkerd.io/inject' || k.startsWith('config.')));
      expect(read.proxy).toEqual(proxy);
    }
    expect(templateAnnotations(undefined)).toEqual({ all: {}, proxy: {} });
    expect(templateAnnotations(['config.x'])).toEqual({ all: {}, proxy: {} });
  });

  it('are read one at a time, where one is all that is needed, as the whole map is read', () => {
    const r = seededRandom(22);
    const KEYS = ['linkerd.io/inject', 'config.linkerd.io/proxy-uid', 'app', 'constructor', 'toString'];
    const VALUES: unknown[] = ['enabled', '', 2, false, null, undefined, { a: 1 }, ['x']];
    for (let i = 0; i < 300; i++) {
      const map: Record<string, unknown> = {};
      for (let k = Math.floor(r() * 6); k > 0; k--) map[KEYS[Math.floor(r() * KEYS.length)]!] = VALUES[Math.floor(r() * VALUES.length)];
      const whole = stringMap(map);
      for (const key of KEYS) expect(mapValue(map, key)).toBe(Object.hasOwn(whole, key) ? whole[key] : undefined);
    }
    expect(mapValue(undefined, 'app')).toBeUndefined();
    expect(mapValue(['x'], '0')).toBeUndefined();
  });

  it('include every proxy annotation among the config.* ones, where the engine looks for them', () => {
    expect([...PROXY_ANNOTATIONS, ...PROXY_ALPHA_ANNOTATIONS].filter((key) => !key.startsWith('config.'))).toEqual([]);
  });
});

describe('annotations and identity', () => {
  it('annotates created-by, proxy version and the SHA-256 of the exact trust anchors', () => {
    const result = injectPod(enabledPod());
    expect(result.added.annotations).toEqual({
      'linkerd.io/created-by': 'linkerd/proxy-injector edge-26.8.3',
      'linkerd.io/proxy-version': 'edge-26.8.3',
      'linkerd.io/trust-root-sha256': trustRootSha256(TRUST_ANCHORS),
    });
    expect(trustRootSha256('IdentityTrustAnchorsPEM')).toBe('5090806bcf2daff5d54739ba02a8e7b919f7e62b2a46757e11089c916ec97fc2');
  });

  it('the proxy-version override changes the image tag and the annotation together', () => {
    const p = enabledPod({ 'config.linkerd.io/proxy-version': 'stable-2.14.10' });
    const result = injectPod(p);
    const after = applied(p, result.patch) as Obj;
    expect(after.spec.containers[0].image).toBe('cr.l5d.io/linkerd/proxy:stable-2.14.10');
    expect(after.spec.initContainers[0].image).toBe('cr.l5d.io/linkerd/proxy:stable-2.14.10');
    expect(after.metadata.annotations['linkerd.io/proxy-version']).toBe('stable-2.14.10');
  });

  it('copies the service-account token mount and capabilities of the first container', () => {
    const spec = {
      containers: [
        {
          name: 'app',
          image: 'a',
          securityContext: { capabilities: { add: ['SYS_TIME'], drop: ['ALL', 'NET_RAW'] } },
          volumeMounts: [{ name: 'kube-api-access-x', mountPath: '/var/run/secrets/kubernetes.io/serviceaccount', readOnly: true }],
        },
      ],
    };
    const p = enabledPod({}, spec);
    const after = applied(p, injectPod(p).patch) as Obj;
    const [proxy] = after.spec.containers;
    const [init] = after.spec.initContainers;
    const saMount = { mountPath: '/var/run/secrets/kubernetes.io/serviceaccount', name: 'kube-api-access-x', readOnly: true };
    expect(proxy.volumeMounts.at(-1)).toEqual(saMount);
    expect(init.volumeMounts.at(-1)).toEqual(saMount);
    expect(proxy.securityContext.capabilities).toEqual({ add: ['SYS_TIME'], drop: ['ALL', 'NET_RAW'] });
    expect(init.securityContext.capabilities).toEqual({ add: ['NET_ADMIN', 'NET_RAW', 'SYS_TIME'], drop: ['ALL'] });
  });

  it('additional env that does not decode as an EnvVar is left out of the pod whole, with a warning', () => {
    const p = enabledPod({ 'config.linkerd.io/proxy-additional-env': '[{"name":"A","value":"x"},{"name":"B","value":1}]' });
    const result = injectPod(p);
    const after = applied(p, result.patch) as Obj;
    const env = after.spec.containers[0].env as Array<{ name: string }>;
    expect(env.map((e) => e.name)).not.toContain('A');
    expect(env.map((e) => e.name)).not.toContain('B');
    expect(result.warnings).toEqual([expect.stringMatching(/proxy-additional-env.*entry\[1\]\.value must be a string, got 1/)]);
  });

  it('refuses to build a patch without trust anchors, naming what is missing', () => {
    expect(() =>
      inject({ object: enabledPod(), kind: 'Pod', config: testConfig((v) => (v.identityTrustAnchorsPEM = '  \n')) }),
    ).toThrowError(expect.objectContaining({ code: 'MISSING_TRUST_ANCHORS' }) as EngineError);
  });

  it('proxy resources from annotations apply to linkerd-init too, with worker cores', () => {
    const p = enabledPod({ 'config.linkerd.io/proxy-cpu-request': '1500m', 'config.linkerd.io/proxy-memory-limit': '256Mi' });
    const after = applied(p, injectPod(p).patch) as Obj;
    const expected = { limits: { memory: '256Mi' }, requests: { cpu: '1500m' } };
    expect(after.spec.containers[0].resources).toEqual(expected);
    expect(after.spec.initContainers[0].resources).toEqual(expected);
    const env = Object.fromEntries(after.spec.containers[0].env.map((e: Obj) => [e.name, e.value]));
    expect([env['LINKERD2_PROXY_CORES'], env['LINKERD2_PROXY_CORES_MIN']]).toEqual(['2', '2']);
  });

  it('a proxy uid above a million is written in plain decimal (OpenShift ranges)', () => {
    const p = enabledPod({ 'config.linkerd.io/proxy-uid': '1000700000' });
    const after = applied(p, injectPod(p).patch) as Obj;
    expect(after.spec.initContainers[0].args).toContain('1000700000');
    expect(after.spec.containers[0].securityContext.runAsUser).toBe(1000700000);
  });

  it('reports ignored annotation values as warnings and keeps the defaults', () => {
    const p = enabledPod({ 'config.linkerd.io/admin-port': '99999', 'config.linkerd.io/proxy-log-http-headers': 'loud' });
    const result = injectPod(p);
    expect(result.warnings).toHaveLength(2);
    expect(result.warnings[0]).toContain('config.linkerd.io/admin-port');
    const after = applied(p, result.patch) as Obj;
    expect(after.spec.containers[0].ports[1]).toEqual({ containerPort: 4191, name: 'linkerd-admin' });
  });
});

describe('decisions from the webhook', () => {
  it('skips a pod without the annotation, with the reason, and adds nothing but opaque ports', () => {
    const p = pod({ spec: { containers: [{ name: 'db', image: 'pg', ports: [{ containerPort: 5432 }] }] } });
    const result = injectPod(p);
    expect(result.outcome).toBe('annotated');
    expect(result.reasons.map((r) => r.code)).toEqual(['injection_enable_annotation_absent']);
    expect(result.patch).toEqual([
      { op: 'add', path: '/metadata/annotations', value: {} },
      { op: 'add', path: '/metadata/annotations/config.linkerd.io~1opaque-ports', value: '5432' },
    ]);
  });

  it('skips with no patch at all when there is nothing to annotate', () => {
    const result = injectPod(pod({ annotations: { 'linkerd.io/inject': 'disabled' } }), undefined, { 'linkerd.io/inject': 'enabled' });
    expect(result.outcome).toBe('skipped');
    expect(result.patch).toEqual([]);
    expect(result.reasons.map((r) => r.code)).toEqual(['injection_disable_annotation_present']);
    expect(result.annotationAt).toBe('workload');
  });

  it('hostNetwork pods are never injected', () => {
    const p = enabledPod({}, { hostNetwork: true, containers: [{ name: 'a', image: 'a' }] });
    expect(injectPod(p).reasons.map((r) => r.code)).toEqual(['host_network_enabled']);
  });

  it('a pod that already has a proxy is not injected twice', () => {
    const p = enabledPod();
    const once = applied(p, injectPod(p).patch);
    const again = injectPod(once as Obj);
    expect(again.outcome).not.toBe('injected');
    expect(again.reasons.map((r) => r.code)).toContain('sidecar_already_exists');
  });

  it('the same in native mode, where the proxy is an init container', () => {
    const p = enabledPod();
    const once = applied(p, injectPod(p, (v) => (v.proxy.nativeSidecar = true)).patch);
    expect(injectPod(once as Obj).reasons.map((r) => r.code)).toContain('sidecar_already_exists');
  });

  it('namespace inheritance copies linkerd.io/inject and proxy annotations into the pod', () => {
    const result = injectPod(pod(), undefined, { 'linkerd.io/inject': 'enabled', 'config.linkerd.io/proxy-log-level': 'debug' });
    expect(result.annotationAt).toBe('namespace');
    expect(result.added.annotations['linkerd.io/inject']).toBe('enabled');
    const after = applied(pod(), result.patch) as Obj;
    const env = Object.fromEntries(after.spec.containers[0].env.map((e: Obj) => [e.name, e.value]));
    expect(env['LINKERD2_PROXY_LOG']).toBe('debug,[{headers}]=off,[{request}]=off');
  });

  it('ingress mode from the namespace value', () => {
    const result = injectPod(pod(), undefined, { 'linkerd.io/inject': 'ingress' });
    const env = Object.fromEntries((applied(pod(), result.patch) as Obj).spec.containers[0].env.map((e: Obj) => [e.name, e.value]));
    expect(env['LINKERD2_PROXY_INGRESS_MODE']).toBe('true');
  });

  it('records the workload’s own configuration annotations for metrics', () => {
    const p = enabledPod({ 'config.linkerd.io/proxy-cpu-request': '100m', unrelated: 'x' });
    expect(injectPod(p).workloadConfiguration).toEqual({ 'config.linkerd.io/proxy-cpu-request': '100m' });
  });

  describe('tracing attributes, as Linkerd adds them to a pod it injects', () => {
    const tracing = (v: LinkerdValues) => {
      v.proxy.tracing = { ...v.proxy.tracing!, enabled: true, collector: { endpoint: 'c:4317', meshIdentity: { serviceAccountName: 'c', namespace: 'o' } } };
    };
    const attributes = (p: Obj): string | undefined => {
      const after = applied(p, injectPod(p, tracing).patch) as Obj;
      return after.spec.containers[0].env.find((e: Obj) => e.name === 'LINKERD2_PROXY_TRACE_EXTRA_ATTRIBUTES')?.value;
    };
    const fixed = 'k8s.container.name=$(_pod_containerName)\nk8s.pod.ip=$(_pod_ip)\nk8s.pod.uid=$(_pod_uid)\n';

    it('from the pod’s resource.opentelemetry.io/* annotations, whatever else it carries, and its name label', () => {
      const p = enabledPod({ 'resource.opentelemetry.io/team': 'payments', 'resource.opentelemetry.io/env': 'prod', 'example.com/other': 'x' });
      p['metadata'].labels = { 'app.kubernetes.io/name': 'web' };
      expect(attributes(p)).toBe(`env=prod\n${fixed}service.name=web\nteam=payments\n`);
    });

    it('an instance label wins even when empty, and the bare prefix names an empty attribute', () => {
      const p = enabledPod({ 'resource.opentelemetry.io/': 'bare' });
      p['metadata'].labels = { 'app.kubernetes.io/instance': '', 'app.kubernetes.io/name': 'web' };
      expect(attributes(p)).toBe(`=bare\n${fixed}service.name=\n`);
    });
  });

  it('Services get the opaque-ports annotation from the namespace or the defaults, never a proxy', () => {
    const svc = { apiVersion: 'v1', kind: 'Service', metadata: { name: 's', annotations: {} }, spec: { ports: [{ port: 5432 }] } };
    const result = inject({ object: svc, kind: 'Service', config: testConfig() });
    expect(result.outcome).toBe('annotated');
    expect(result.reasons.map((r) => r.code)).toEqual(['unsupported_resource']);
    // An empty annotations map is added again first, as Linkerd decides by its length.
    expect(result.patch).toEqual([
      { op: 'add', path: '/metadata/annotations', value: {} },
      { op: 'add', path: '/metadata/annotations/config.linkerd.io~1opaque-ports', value: '5432' },
    ]);
    const annotated = { ...svc, metadata: { name: 's', annotations: { other: 'x' } } };
    expect(inject({ object: annotated, kind: 'Service', config: testConfig() }).patch.map((op) => op.path)).toEqual(['/metadata/annotations/config.linkerd.io~1opaque-ports']);
  });

  it('adds maps and lists that are present but empty first, as Linkerd does, which leaves the same pod', () => {
    const nsEnabled = (p: Obj) => injectPod(p, undefined, { 'linkerd.io/inject': 'enabled' });
    const roots = (p: Obj) => nsEnabled(p).patch.map((op) => op.path).filter((path) => !/\/(-|\d+|[^/]*~1[^/]*)$/.test(path));
    const bare: Obj = { metadata: { name: 'web', namespace: 'shop' }, spec: { containers: [{ name: 'app', image: 'a' }] } };
    const empty: Obj = {
      metadata: { ...bare['metadata'], annotations: {}, labels: {} },
      spec: { ...bare['spec'], volumes: [], initContainers: [] },
    };
    for (const p of [bare, empty]) {
      expect(roots(p)).toEqual(['/metadata/annotations', '/metadata/labels', '/spec/volumes', '/spec/initContainers']);
    }
    expect(applied(empty, nsEnabled(empty).patch)).toEqual(applied(bare, nsEnabled(bare).patch));
    // Metadata that Linkerd reads as empty (nulls, empty strings, an empty annotations map) is replaced whole.
    for (const metadata of [undefined, {}, { annotations: {} }, { name: '', creationTimestamp: null }]) {
      const p = { spec: { containers: [{ name: 'app', image: 'a' }] }, ...(metadata && { metadata }) };
      expect(roots(p)[0], JSON.stringify(metadata)).toBe('/metadata');
    }
    expect(roots({ metadata: { labels: {} }, spec: { containers: [] } })).not.toContain('/metadata');
  });
});

describe('workload kinds (manual injection)', () => {
  const template = { metadata: { labels: { app: 'w' } }, spec: { containers: [{ name: 'app', image: 'a' }] } };
  it.each([
    ['Deployment', { spec: { template } }, '/spec/template'],
    ['StatefulSet', { spec: { template } }, '/spec/template'],
    ['DaemonSet', { spec: { template } }, '/spec/template'],
    ['ReplicaSet', { spec: { template } }, '/spec/template'],
    ['ReplicationController', { spec: { template } }, '/spec/template'],
    ['Job', { spec: { template } }, '/spec/template'],
    ['CronJob', { spec: { jobTemplate: { spec: { template } } } }, '/spec/jobTemplate/spec/template'],
  ])('%s: patch under %s, owner label from the workload', (kind, body, prefix) => {
    const object = { apiVersion: 'apps/v1', kind, metadata: { name: 'w', namespace: 'shop' }, ...body };
    const result = inject({ object, origin: 'cli', config: testConfig() });
    expect(result.outcome).toBe('injected');
    expect(result.patch.every((op) => op.path.startsWith(`${prefix}/`))).toBe(true);
    expect(result.added.annotations['linkerd.io/created-by']).toBe('linkerd/cli edge-26.8.3');
    // From the command line every workload names itself, a CronJob too (the webhook never labels CronJob owners).
    expect(result.added.labels[`linkerd.io/proxy-${kind.toLowerCase()}`]).toBe('w');
    applied(object, result.patch);
  });

  it('a CronJob template without metadata gets it added', () => {
    const object = { kind: 'CronJob', metadata: { name: 'c' }, spec: { jobTemplate: { spec: { template: { spec: { containers: [] } } } } } };
    const result = inject({ object, origin: 'cli', config: testConfig() });
    expect(result.patch[0]).toEqual({ op: 'add', path: '/spec/jobTemplate/spec/template/metadata', value: {} });
    applied(object, result.patch);
  });

  it('a workload without a pod template is an invalid object, not a crash', () => {
    expect(() => inject({ object: { kind: 'Deployment', metadata: { name: 'd' } }, config: testConfig() })).toThrowError(
      /Deployment d has no pod template at spec.template/,
    );
  });

  it('the podPatch builder is independent of the decision', () => {
    const built = podPatch({
      template: pod() as Obj,
      prefix: '',
      values: testValues(),
      controlPlaneNamespace: 'linkerd',
      origin: 'webhook',
      workloadNamespace: 'shop',
      pendingAnnotations: {},
    });
    expect(built.added.containers).toEqual(['linkerd-proxy']);
  });
});

describe('capabilities from the Linkerd values (proxy.capabilities, proxyInit.capabilities)', () => {
  const values = { add: ['NET_ADMIN'], drop: ['ALL'] };
  const modes = [
    { mode: 'classic', native: false, cni: false, init: 'linkerd-init' },
    { mode: 'native sidecar', native: true, cni: false, init: 'linkerd-init' },
    { mode: 'classic with CNI', native: false, cni: true, init: 'linkerd-network-validator' },
    { mode: 'native sidecar with CNI', native: true, cni: true, init: 'linkerd-network-validator' },
  ];
  const containersOf = (after: Obj, native: boolean) => {
    const proxy = native ? after.spec.initContainers[1] : after.spec.containers[0];
    expect(proxy.name).toBe('linkerd-proxy');
    return { proxy, init: after.spec.initContainers[0] };
  };

  it.each(modes)('$mode: the proxy gets them and linkerd-init its own plus the adds and the drops', ({ native, cni, init: initName }) => {
    const p = enabledPod();
    const result = injectPod(p, (v) => {
      v.proxy.capabilities = structuredClone(values);
      v.proxy.nativeSidecar = native;
      v.cniEnabled = cni;
    });
    const { proxy, init } = containersOf(applied(p, result.patch) as Obj, native);
    expect(init.name).toBe(initName);
    expect(proxy.securityContext.capabilities).toEqual({ add: ['NET_ADMIN'], drop: ['ALL'] });
    if (cni) {
      // Linkerd's network validator has its own securityContext and never takes the proxy's capabilities.
      expect(init.securityContext.capabilities).toEqual({ drop: ['ALL'] });
    } else {
      expect(init.securityContext.capabilities).toEqual({ add: ['NET_ADMIN', 'NET_RAW', 'NET_ADMIN'], drop: ['ALL'] });
    }
  });

  it.each(modes)('$mode: the first app container’s capabilities replace them', ({ native, cni }) => {
    const spec = { containers: [{ name: 'app', image: 'a', securityContext: { capabilities: { add: ['SYS_TIME'], drop: ['NET_RAW'] } } }] };
    const p = enabledPod({}, spec);
    const result = injectPod(p, (v) => {
      v.proxy.capabilities = structuredClone(values);
      v.proxy.nativeSidecar = native;
      v.cniEnabled = cni;
    });
    const { proxy, init } = containersOf(applied(p, result.patch) as Obj, native);
    expect(proxy.securityContext.capabilities).toEqual({ add: ['SYS_TIME'], drop: ['NET_RAW'] });
    if (!cni) expect(init.securityContext.capabilities).toEqual({ add: ['NET_ADMIN', 'NET_RAW', 'SYS_TIME'] });
  });

  it('an app container with empty capabilities replaces them with none', () => {
    const spec = { containers: [{ name: 'app', image: 'a', securityContext: { capabilities: {} } }] };
    const p = enabledPod({}, spec);
    const after = applied(p, injectPod(p, (v) => (v.proxy.capabilities = structuredClone(values))).patch) as Obj;
    expect(after.spec.containers[0].securityContext.capabilities).toBeUndefined();
    expect(after.spec.initContainers[0].securityContext.capabilities).toEqual({ add: ['NET_ADMIN', 'NET_RAW'] });
  });

  it('an empty networkValidator.securityContext in the values means Linkerd’s default one', () => {
    const p = enabledPod();
    const after = applied(p, injectPod(p, (v) => ((v.cniEnabled = true), (v.networkValidator.securityContext = {}))).patch) as Obj;
    expect(after.spec.initContainers[0].securityContext).toEqual(testValues().networkValidator.securityContext);
    expect(after.spec.initContainers[0].securityContext.runAsNonRoot).toBe(true);
  });

  it('proxyInit.capabilities apply to linkerd-init as given when the proxy has none', () => {
    const p = enabledPod();
    const after = applied(p, injectPod(p, (v) => (v.proxyInit.capabilities = { add: ['SYS_TIME'], drop: ['NET_RAW'] })).patch) as Obj;
    expect(after.spec.initContainers[0].securityContext.capabilities).toEqual({ add: ['NET_ADMIN', 'NET_RAW', 'SYS_TIME'], drop: ['NET_RAW'] });
    expect(after.spec.containers[0].securityContext.capabilities).toBeUndefined();
  });

  it('proxyInit.capabilities give way to the proxy’s', () => {
    const p = enabledPod();
    const result = injectPod(p, (v) => {
      v.proxy.capabilities = { drop: ['ALL', 'NET_ADMIN'] };
      v.proxyInit.capabilities = { add: ['SYS_TIME'] };
    });
    const after = applied(p, result.patch) as Obj;
    expect(after.spec.initContainers[0].securityContext.capabilities).toEqual({ add: ['NET_ADMIN', 'NET_RAW'], drop: ['ALL'] });
    expect(after.spec.containers[0].securityContext.capabilities).toEqual({ drop: ['ALL', 'NET_ADMIN'] });
  });

  it('a proxy.securityContext from the values wins over them, as in Linkerd', () => {
    const p = enabledPod();
    const result = injectPod(p, (v) => {
      v.proxy.capabilities = structuredClone(values);
      v.proxy.securityContext = { runAsUser: 1234 };
    });
    const after = applied(p, result.patch) as Obj;
    expect(after.spec.containers[0].securityContext).toEqual({ runAsUser: 1234 });
    expect(after.spec.initContainers[0].securityContext.capabilities).toEqual({ add: ['NET_ADMIN', 'NET_RAW', 'NET_ADMIN'], drop: ['ALL'] });
  });

  it.each(modes)('$mode: uninject gives the pod back', ({ native, cni }) => {
    const p = enabledPod();
    const result = injectPod(p, (v) => {
      v.proxy.capabilities = structuredClone(values);
      v.proxy.nativeSidecar = native;
      v.cniEnabled = cni;
    });
    const after = applied(p, result.patch) as Obj;
    const back = applyToValue(structuredClone(after), uninject(after).patch) as Obj;
    expect(back.spec).toEqual(p['spec']);
  });
});

describe('a configuration prepared once for many pods', () => {
  const KEYS = [...PROXY_ANNOTATIONS, ...PROXY_ALPHA_ANNOTATIONS];
  const TEXTS = ['', '0', '1', '-1', '4191', '65536', 'true', 'false', 'enabled', 'disabled', '100m', '1.5', '64Mi', '1e400',
    '500ms', '-1s', '4567,4568', '80,http,8080-8090', '9000-8000', '10.0.0.0/8', 'bogus', '0.5', 'deny', 'Always',
    '[{"name":"X","value":"1"}]', '[{"name":"X"},{"name":"X","value":"2"}]', '{"a":1}', 'null', 'insecure', '+80'];

  function randomPod(r: () => number, i: number): Obj {
    const annotations: Record<string, string> = { 'linkerd.io/inject': 'enabled' };
    for (let k = Math.floor(r() * 8); k > 0; k--) annotations[KEYS[Math.floor(r() * KEYS.length)]!] = TEXTS[Math.floor(r() * TEXTS.length)]!;
    const ports = [80, 4567, 8080, 4191, 3306, 70000];
    const containers = Array.from({ length: 1 + Math.floor(r() * 3) }, (_, c) => ({
      name: `c${c}`,
      image: 'app',
      ports: Array.from({ length: Math.floor(r() * 3) }, (_, p) => ({ containerPort: ports[Math.floor(r() * ports.length)]!, name: `p${c}${p}` })),
    }));
    return pod({ annotations, labels: { 'app.kubernetes.io/name': `w${i}` }, spec: { containers } });
  }

  const configurations: Array<[string, (v: LinkerdValues) => void]> = [
    ['the defaults', () => {}],
    ['CNI and native sidecars', (v) => {
      v.cniEnabled = true;
      v.proxy.nativeSidecar = true;
    }],
    ['tracing, a root init container and repeated additional env', (v) => {
      v.proxy.tracing = { ...v.proxy.tracing!, enabled: true, collector: { endpoint: 'c:4317', meshIdentity: { serviceAccountName: 'c', namespace: 'o' } } };
      v.proxyInit.runAsRoot = true;
      v.proxy.additionalEnv = [{ name: 'A', value: '1' }, { name: 'A', value: '2' }];
    }],
  ];

  it.each(configurations)('injects exactly what the same values unprepared do, for valid and invalid annotations (%s)', (_, change) => {
    const r = seededRandom(14);
    const prepared = prepareConfig(testConfig(change));
    const unprepared = testConfig(change);
    const nsAnnotations = { 'config.linkerd.io/proxy-additional-env': '[{"name":"NS","value":"1"}]' };
    for (let i = 0; i < 300; i++) {
      const p = randomPod(r, i);
      const request = (config: InjectorConfig) =>
        inject({ object: structuredClone(p), kind: 'Pod', namespace: 'shop', namespaceAnnotations: i % 3 === 0 ? nsAnnotations : {}, config });
      const expected = JSON.stringify(request(unprepared));
      // Twice with the prepared configuration: what the first pod left behind must not change the second answer.
      expect(JSON.stringify(request(prepared))).toBe(expected);
      expect(JSON.stringify(request(prepared))).toBe(expected);
    }
  });

  it.each(configurations)('puts no frozen array in a patch, only frozen objects (%s)', (_, change) => {
    const r = seededRandom(15);
    const config = prepareConfig(testConfig(change));
    const frozenArrays = (value: unknown, path: string, found: string[]): string[] => {
      if (typeof value !== 'object' || value === null) return found;
      if (Array.isArray(value) && Object.isFrozen(value)) found.push(path);
      for (const [key, child] of Object.entries(value)) frozenArrays(child, `${path}/${key}`, found);
      return found;
    };
    let frozenObjects = 0;
    for (let i = 0; i < 300; i++) {
      const result = inject({ object: randomPod(r, i), kind: 'Pod', namespace: 'shop', config });
      expect(frozenArrays(result.patch, '', [])).toEqual([]);
      for (const op of result.patch) if (typeof op.value === 'object' && op.value !== null && Object.isFrozen(op.value)) frozenObjects++;
    }
    // The shared parts are still there: the end-entity volume at least, in every injected pod.
    expect(frozenObjects).toBeGreaterThan(100);
  });

  it('shares the parts of the proxy environment that no annotation changes, frozen, so no reader can change another pod', () => {
    const config = prepareConfig(testConfig());
    const envOf = (p: Obj): Array<Record<string, unknown>> => {
      const result = inject({ object: p, kind: 'Pod', namespace: 'shop', config });
      const proxy = result.patch.find((op) => isProxy(op.value))?.value as Obj;
      return proxy['env'];
    };
    const first = envOf(enabledPod());
    const second = envOf(enabledPod({ 'config.linkerd.io/proxy-log-level': 'debug' }));
    const anchors = (env: Array<Record<string, unknown>>) => env.find((e) => e['name'] === 'LINKERD2_PROXY_IDENTITY_TRUST_ANCHORS');
    expect(anchors(second)).toBe(anchors(first));
    expect(Object.isFrozen(anchors(first))).toBe(true);
    expect(() => {
      (anchors(first) as Record<string, unknown>)['value'] = 'changed';
    }).toThrow(TypeError);
    // The entry an annotation changed is the pod's own.
    const log = (env: Array<Record<string, unknown>>) => env.find((e) => e['name'] === 'LINKERD2_PROXY_LOG');
    expect(log(second)?.['value']).toBe('debug,[{headers}]=off,[{request}]=off');
    expect(Object.isFrozen(log(second))).toBe(false);
  });
});

function isProxy(value: unknown): boolean {
  return typeof value === 'object' && value !== null && (value as Obj)['name'] === 'linkerd-proxy';
}
