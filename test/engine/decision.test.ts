/**
 * Table-driven tests for the injection decision, written from the spec (linkerd-injector-spec.md 2.2-2.5), not from
 * the implementation's output.
 */
import { describe, expect, it } from 'vitest';
import {
  SKIP_REASON_TEXT,
  hasExistingSidecar,
  injectAnnotationDecision,
  report,
  type AnnotationAt,
  type Origin,
  type SkipReasonCode,
} from '../../src/engine/decision.js';
import type { Container, PodSpec } from '../../src/engine/k8s.js';

const INJECT = 'linkerd.io/inject';
const SA_PATH = '/var/run/secrets/kubernetes.io/serviceaccount';

/** `undefined` means the annotation is absent. */
function ann(value: string | undefined): Record<string, string> {
  return value === undefined ? {} : { [INJECT]: value };
}

/** An app container that mounts the service-account token, so the automount check stays quiet. */
const appWithToken = (extra: Partial<Container> = {}): Container => ({
  name: 'app',
  image: 'nginx:1.27',
  volumeMounts: [{ name: 'kube-api-access', mountPath: SA_PATH, readOnly: true }],
  ...extra,
});

// ---------------------------------------------------------------------------------------------------------------
// 2.3 webhook truth table

type Row = {
  ns: string | undefined;
  pod: string | undefined;
  disabled: boolean;
  reason: SkipReasonCode | undefined;
  at: AnnotationAt;
};

const NS_VALUES: Array<string | undefined> = [undefined, 'enabled', 'ingress', 'disabled', 'foo'];
const POD_VALUES: Array<string | undefined> = [undefined, 'enabled', 'ingress', 'disabled', 'true'];

/** The expected outcome of every (namespace, pod) pair, spelled out row by row from spec 2.3 and trap 8. */
const WEBHOOK_TABLE: Row[] = [
  // namespace unset
  { ns: undefined, pod: undefined, disabled: true, reason: 'injection_enable_annotation_absent', at: '' },
  { ns: undefined, pod: 'enabled', disabled: false, reason: undefined, at: 'workload' },
  { ns: undefined, pod: 'ingress', disabled: false, reason: undefined, at: 'workload' },
  // trap 8: pod `disabled` with the namespace unset is "enable annotation absent", not "disable annotation present"
  { ns: undefined, pod: 'disabled', disabled: true, reason: 'injection_enable_annotation_absent', at: '' },
  { ns: undefined, pod: 'true', disabled: true, reason: 'invalid_inject_annotation_at_workload', at: '' },
  // namespace enabled: the namespace decides (at "namespace") unless the pod opts out
  { ns: 'enabled', pod: undefined, disabled: false, reason: undefined, at: 'namespace' },
  { ns: 'enabled', pod: 'enabled', disabled: false, reason: undefined, at: 'namespace' },
  { ns: 'enabled', pod: 'ingress', disabled: false, reason: undefined, at: 'namespace' },
  { ns: 'enabled', pod: 'disabled', disabled: true, reason: 'injection_disable_annotation_present', at: 'workload' },
  { ns: 'enabled', pod: 'true', disabled: true, reason: 'invalid_inject_annotation_at_workload', at: '' },
  // namespace ingress behaves like enabled
  { ns: 'ingress', pod: undefined, disabled: false, reason: undefined, at: 'namespace' },
  { ns: 'ingress', pod: 'enabled', disabled: false, reason: undefined, at: 'namespace' },
  { ns: 'ingress', pod: 'ingress', disabled: false, reason: undefined, at: 'namespace' },
  { ns: 'ingress', pod: 'disabled', disabled: true, reason: 'injection_disable_annotation_present', at: 'workload' },
  { ns: 'ingress', pod: 'true', disabled: true, reason: 'invalid_inject_annotation_at_workload', at: '' },
  // namespace disabled behaves like unset
  { ns: 'disabled', pod: undefined, disabled: true, reason: 'injection_enable_annotation_absent', at: '' },
  { ns: 'disabled', pod: 'enabled', disabled: false, reason: undefined, at: 'workload' },
  { ns: 'disabled', pod: 'ingress', disabled: false, reason: undefined, at: 'workload' },
  { ns: 'disabled', pod: 'disabled', disabled: true, reason: 'injection_enable_annotation_absent', at: '' },
  { ns: 'disabled', pod: 'true', disabled: true, reason: 'invalid_inject_annotation_at_workload', at: '' },
  // an invalid namespace value is checked first, whatever the pod says
  { ns: 'foo', pod: undefined, disabled: true, reason: 'invalid_inject_annotation_at_ns', at: '' },
  { ns: 'foo', pod: 'enabled', disabled: true, reason: 'invalid_inject_annotation_at_ns', at: '' },
  { ns: 'foo', pod: 'ingress', disabled: true, reason: 'invalid_inject_annotation_at_ns', at: '' },
  { ns: 'foo', pod: 'disabled', disabled: true, reason: 'invalid_inject_annotation_at_ns', at: '' },
  { ns: 'foo', pod: 'true', disabled: true, reason: 'invalid_inject_annotation_at_ns', at: '' },
];

describe('injectAnnotationDecision (webhook)', () => {
  it('the table covers every namespace x pod combination exactly once', () => {
    const seen = new Set(WEBHOOK_TABLE.map((r) => `${String(r.ns)}|${String(r.pod)}`));
    expect(seen.size).toBe(NS_VALUES.length * POD_VALUES.length);
    for (const ns of NS_VALUES) for (const pod of POD_VALUES) expect(seen.has(`${String(ns)}|${String(pod)}`)).toBe(true);
  });

  it.each(WEBHOOK_TABLE)('ns=$ns pod=$pod -> disabled=$disabled reason=$reason at="$at"', (row) => {
    const d = injectAnnotationDecision('webhook', ann(row.pod), ann(row.ns));
    expect(d.disabled).toBe(row.disabled);
    expect(d.at).toBe(row.at);
    if (row.reason === undefined) expect(d.reason).toBeUndefined();
    else expect(d.reason).toBe(row.reason);
  });

  // The value reported with an enabling decision is the deciding annotation's value (spec 2.3 step 3 and 4).
  it.each([
    { ns: 'enabled', pod: undefined, value: 'enabled' },
    { ns: 'enabled', pod: 'ingress', value: 'enabled' },
    { ns: 'ingress', pod: 'enabled', value: 'ingress' },
    { ns: 'ingress', pod: undefined, value: 'ingress' },
    { ns: undefined, pod: 'ingress', value: 'ingress' },
    { ns: 'disabled', pod: 'enabled', value: 'enabled' },
  ])('enabled decision for ns=$ns pod=$pod reports value "$value"', ({ ns, pod, value }) => {
    const d = injectAnnotationDecision('webhook', ann(pod), ann(ns));
    expect(d.disabled).toBe(false);
    expect(d.value).toBe(value);
  });

  it.each([
    { label: 'an empty pod value', pod: '', ns: 'enabled', disabled: false, at: 'namespace' },
    { label: 'an empty namespace value', pod: 'enabled', ns: '', disabled: false, at: 'workload' },
    { label: 'both empty', pod: '', ns: '', disabled: true, at: '' },
  ] as const)('$label counts as unset', ({ pod, ns, disabled, at }) => {
    const d = injectAnnotationDecision('webhook', ann(pod), ann(ns));
    expect(d.disabled).toBe(disabled);
    expect(d.at).toBe(at);
  });

  it.each([
    { label: 'upper-case Enabled at workload', pod: 'Enabled', ns: undefined, reason: 'invalid_inject_annotation_at_workload' },
    { label: 'upper-case ENABLED at namespace', pod: 'enabled', ns: 'ENABLED', reason: 'invalid_inject_annotation_at_ns' },
    { label: 'padded value at workload', pod: ' enabled', ns: 'enabled', reason: 'invalid_inject_annotation_at_workload' },
  ] as const)('values are compared exactly: $label', ({ pod, ns, reason }) => {
    const d = injectAnnotationDecision('webhook', ann(pod), ann(ns));
    expect(d.disabled).toBe(true);
    expect(d.reason).toBe(reason);
    expect(d.at).toBe('');
  });

  it('ignores other annotations', () => {
    const d = injectAnnotationDecision(
      'webhook',
      { 'config.linkerd.io/proxy-await': 'disabled', 'linkerd.io/inject-x': 'enabled' },
      { 'linkerd.io/inject-x': 'enabled' },
    );
    expect(d.disabled).toBe(true);
    expect(d.reason).toBe('injection_enable_annotation_absent');
  });
});

describe('injectAnnotationDecision (cli)', () => {
  // CLI origin: disabled only when the pod value is exactly `disabled`; the namespace is not consulted (2.3, 6.4).
  const rows: Array<{ pod: string | undefined; disabled: boolean }> = [
    { pod: 'enabled', disabled: false },
    { pod: undefined, disabled: false },
    { pod: 'ingress', disabled: false },
    { pod: 'disabled', disabled: true },
    { pod: 'true', disabled: false },
  ];
  const table = rows.flatMap((r) => NS_VALUES.map((ns) => ({ ...r, ns })));

  it.each(table)('pod=$pod ns=$ns -> disabled=$disabled', ({ pod, ns, disabled }) => {
    expect(injectAnnotationDecision('cli', ann(pod), ann(ns)).disabled).toBe(disabled);
  });

  it('a disabled cli decision carries a reason (the namespace cannot be the cause)', () => {
    const d = injectAnnotationDecision('cli', ann('disabled'), ann('enabled'));
    expect(d.disabled).toBe(true);
    expect(d.reason).toBeDefined();
    expect(d.reason).not.toBe('injection_enable_annotation_absent');
    expect(d.reason).not.toBe('invalid_inject_annotation_at_ns');
  });
});

// ---------------------------------------------------------------------------------------------------------------
// 2.3 reason order, 2.2 report flags, 2.5 automount

interface ReportCase {
  name: string;
  origin?: Origin;
  hasTemplate?: boolean;
  spec: PodSpec;
  pod?: string;
  ns?: string;
  projection?: boolean;
  /** The pod carries the kubelet's mirror annotation. */
  mirror?: boolean;
  reasons: SkipReasonCode[];
}

const istioProxy: Container = { name: 'istio-proxy', image: 'gcr.io/istio-release/proxyv2:1.22.0' };

const REPORT_CASES: ReportCase[] = [
  {
    name: 'nothing wrong, namespace enabled',
    spec: { containers: [appWithToken()] },
    ns: 'enabled',
    reasons: [],
  },
  {
    name: 'nothing wrong, pod enabled',
    spec: { containers: [appWithToken()] },
    pod: 'enabled',
    reasons: [],
  },
  {
    name: 'no annotation anywhere',
    spec: { containers: [appWithToken()] },
    reasons: ['injection_enable_annotation_absent'],
  },
  {
    name: 'hostNetwork + existing sidecar + disabled annotation',
    spec: { hostNetwork: true, containers: [appWithToken(), istioProxy] },
    pod: 'disabled',
    ns: 'enabled',
    reasons: ['host_network_enabled', 'sidecar_already_exists', 'injection_disable_annotation_present'],
  },
  {
    name: 'hostNetwork + existing sidecar, no annotation',
    spec: { hostNetwork: true, containers: [appWithToken({ name: 'linkerd-proxy', image: 'cr.l5d.io/linkerd/proxy:' })] },
    reasons: ['host_network_enabled', 'sidecar_already_exists', 'injection_enable_annotation_absent'],
  },
  {
    name: 'hostNetwork false is no reason',
    spec: { hostNetwork: false, containers: [appWithToken()] },
    pod: 'enabled',
    reasons: [],
  },
  {
    name: 'no pod template (e.g. a Service)',
    hasTemplate: false,
    spec: {},
    reasons: ['unsupported_resource'],
  },
  {
    name: 'no pod template, even with a namespace that enables injection',
    hasTemplate: false,
    spec: {},
    ns: 'enabled',
    reasons: ['unsupported_resource'],
  },
  {
    name: 'invalid namespace value',
    spec: { containers: [appWithToken()] },
    ns: 'foo',
    pod: 'enabled',
    reasons: ['invalid_inject_annotation_at_ns'],
  },
  {
    name: 'invalid workload value after hostNetwork',
    spec: { hostNetwork: true, containers: [appWithToken()] },
    pod: 'true',
    reasons: ['host_network_enabled', 'invalid_inject_annotation_at_workload'],
  },
  // 2.5 automount, projection off
  {
    name: 'projection off, automountServiceAccountToken false',
    spec: { automountServiceAccountToken: false, containers: [appWithToken()] },
    pod: 'enabled',
    projection: false,
    reasons: ['disabled_automount_service_account_token_account'],
  },
  {
    name: 'projection off, automount unset and token mounted',
    spec: { containers: [appWithToken()] },
    pod: 'enabled',
    projection: false,
    reasons: [],
  },
  {
    name: 'projection off, automount true and token mounted',
    spec: { automountServiceAccountToken: true, containers: [appWithToken()] },
    pod: 'enabled',
    projection: false,
    reasons: [],
  },
  {
    name: 'projection off (webhook), first container without the token mount',
    spec: { containers: [{ name: 'app', image: 'nginx', volumeMounts: [{ name: 'data', mountPath: '/data' }] }] },
    pod: 'enabled',
    projection: false,
    reasons: ['disabled_automount_service_account_token_account'],
  },
  {
    name: 'projection off (webhook), first container has no volumeMounts at all',
    spec: { containers: [{ name: 'app', image: 'nginx' }] },
    pod: 'enabled',
    projection: false,
    reasons: ['disabled_automount_service_account_token_account'],
  },
  {
    name: 'projection off (webhook), only the second container mounts the token',
    spec: { containers: [{ name: 'app', image: 'nginx' }, appWithToken({ name: 'second' })] },
    pod: 'enabled',
    projection: false,
    reasons: ['disabled_automount_service_account_token_account'],
  },
  {
    name: 'projection off (cli), no token mount but automount unset',
    origin: 'cli',
    spec: { containers: [{ name: 'app', image: 'nginx' }] },
    projection: false,
    reasons: [],
  },
  {
    name: 'projection off (cli), automountServiceAccountToken false',
    origin: 'cli',
    spec: { automountServiceAccountToken: false, containers: [appWithToken()] },
    projection: false,
    reasons: ['disabled_automount_service_account_token_account'],
  },
  {
    name: 'projection off: automount comes last',
    spec: { hostNetwork: true, automountServiceAccountToken: false, containers: [appWithToken(), istioProxy] },
    ns: 'enabled',
    pod: 'disabled',
    projection: false,
    reasons: [
      'host_network_enabled',
      'sidecar_already_exists',
      'injection_disable_annotation_present',
      'disabled_automount_service_account_token_account',
    ],
  },
  // projection on: never an automount reason
  {
    name: 'projection on, automountServiceAccountToken false',
    spec: { automountServiceAccountToken: false, containers: [appWithToken()] },
    pod: 'enabled',
    projection: true,
    reasons: [],
  },
  {
    name: 'projection on, no token mount',
    spec: { automountServiceAccountToken: false, containers: [{ name: 'app', image: 'nginx' }] },
    pod: 'enabled',
    projection: true,
    reasons: [],
  },
  // the cli only skips on the workload's own `disabled`
  {
    name: 'cli, no annotation anywhere',
    origin: 'cli',
    spec: { containers: [appWithToken()] },
    reasons: [],
  },
  {
    name: 'cli, an invalid namespace value is ignored',
    origin: 'cli',
    spec: { containers: [appWithToken()] },
    ns: 'foo',
    reasons: [],
  },
  {
    name: 'cli: UDP ports are not an Injectable() reason',
    origin: 'cli',
    spec: { containers: [appWithToken({ ports: [{ containerPort: 53, protocol: 'UDP' }] })] },
    reasons: [],
  },
  {
    name: 'webhook: UDP ports are never a skip reason',
    spec: { containers: [appWithToken({ ports: [{ containerPort: 53, protocol: 'UDP' }] })] },
    pod: 'enabled',
    reasons: [],
  },
  // Mirror and Windows pods: this injector's own reasons, when Linkerd has none; one Linkerd skips is reported as
  // Linkerd reports it.
  {
    name: 'a mirror pod in an enabled namespace',
    spec: { containers: [appWithToken()] },
    ns: 'enabled',
    mirror: true,
    reasons: ['mirror_pod'],
  },
  {
    name: 'a mirror pod on the host network reports hostNetwork alone, as Linkerd does',
    spec: { hostNetwork: true, containers: [appWithToken()] },
    ns: 'enabled',
    mirror: true,
    reasons: ['host_network_enabled'],
  },
  {
    name: 'a mirror pod nobody asked to mesh',
    spec: { containers: [appWithToken()] },
    mirror: true,
    reasons: ['injection_enable_annotation_absent'],
  },
  {
    name: 'cli: a mirror pod',
    origin: 'cli',
    spec: { containers: [appWithToken()] },
    mirror: true,
    reasons: ['mirror_pod'],
  },
  {
    name: 'a Windows pod (spec.os.name) in an enabled namespace',
    spec: { os: { name: 'windows' }, containers: [appWithToken()] },
    ns: 'enabled',
    reasons: ['windows_pod'],
  },
  {
    name: 'a pod selecting Windows nodes',
    spec: { nodeSelector: { 'kubernetes.io/os': 'windows' }, containers: [appWithToken()] },
    pod: 'enabled',
    reasons: ['windows_pod'],
  },
  {
    name: 'Linux, said either way, is no reason',
    spec: { os: { name: 'linux' }, nodeSelector: { 'kubernetes.io/os': 'linux' }, containers: [appWithToken()] },
    pod: 'enabled',
    reasons: [],
  },
  {
    name: 'a Windows pod on the host network reports hostNetwork alone, as Linkerd does',
    spec: { hostNetwork: true, os: { name: 'windows' }, containers: [appWithToken()] },
    pod: 'enabled',
    reasons: ['host_network_enabled'],
  },
  {
    name: 'a Windows pod opted out reports the opt-out alone',
    spec: { os: { name: 'windows' }, containers: [appWithToken()] },
    ns: 'enabled',
    pod: 'disabled',
    reasons: ['injection_disable_annotation_present'],
  },
  {
    name: 'a static Windows pod`s mirror: the mirror is reason enough',
    spec: { os: { name: 'windows' }, containers: [appWithToken()] },
    ns: 'enabled',
    mirror: true,
    reasons: ['mirror_pod'],
  },
  {
    name: 'cli: a Windows pod',
    origin: 'cli',
    spec: { os: { name: 'windows' }, containers: [appWithToken()] },
    reasons: ['windows_pod'],
  },
  {
    name: 'no pod template: the annotation is not read',
    hasTemplate: false,
    spec: {},
    mirror: true,
    reasons: ['unsupported_resource'],
  },
];

describe('report', () => {
  it.each(REPORT_CASES)('$name -> $reasons', (c) => {
    const r = report({
      origin: c.origin ?? 'webhook',
      hasTemplate: c.hasTemplate ?? true,
      spec: c.spec,
      workloadAnnotations: { ...ann(c.pod), ...(c.mirror && { 'kubernetes.io/config.mirror': 'f1e2d3c4' }) },
      namespaceAnnotations: ann(c.ns),
      serviceAccountTokenProjection: c.projection ?? true,
    });
    expect(r.reasons.map((x) => x.code)).toEqual(c.reasons);
    expect(r.mirror).toBe((c.mirror ?? false) && (c.hasTemplate ?? true));
    expect(r.reasons.map((x) => x.text)).toEqual(c.reasons.map((code) => SKIP_REASON_TEXT[code]));
  });

  it('cli: the workload`s own disabled annotation is a reason', () => {
    const r = report({
      origin: 'cli',
      hasTemplate: true,
      spec: { containers: [appWithToken()] },
      workloadAnnotations: ann('disabled'),
      namespaceAnnotations: ann('enabled'),
      serviceAccountTokenProjection: true,
    });
    expect(r.reasons).toHaveLength(1);
  });

  it.each([
    {
      name: 'UDP on an app container',
      spec: { containers: [appWithToken({ ports: [{ containerPort: 53, protocol: 'UDP' }] })] },
      udp: true,
      hostNetwork: false,
      sidecar: false,
    },
    {
      name: 'UDP only on an init container',
      spec: {
        initContainers: [{ name: 'dns', image: 'x', ports: [{ containerPort: 53, protocol: 'UDP' }] }],
        containers: [appWithToken()],
      },
      udp: false,
      hostNetwork: false,
      sidecar: false,
    },
    {
      name: 'TCP and unspecified protocols',
      spec: { containers: [appWithToken({ ports: [{ containerPort: 80 }, { containerPort: 81, protocol: 'TCP' }] })] },
      udp: false,
      hostNetwork: false,
      sidecar: false,
    },
    {
      name: 'hostNetwork and a Linkerd proxy init container',
      spec: { hostNetwork: true, initContainers: [{ name: 'linkerd-init' }], containers: [appWithToken()] },
      udp: false,
      hostNetwork: true,
      sidecar: true,
    },
  ] satisfies Array<{ name: string; spec: PodSpec; udp: boolean; hostNetwork: boolean; sidecar: boolean }>)(
    'flags: $name',
    ({ spec, udp, hostNetwork, sidecar }) => {
      const r = report({
        origin: 'webhook',
        hasTemplate: true,
        spec,
        workloadAnnotations: ann('enabled'),
        namespaceAnnotations: {},
        serviceAccountTokenProjection: true,
      });
      expect(r.udp).toBe(udp);
      expect(r.hostNetwork).toBe(hostNetwork);
      expect(r.sidecar).toBe(sidecar);
    },
  );

  it('exposes the annotation decision (namespace-enabled injection is at "namespace")', () => {
    const r = report({
      origin: 'webhook',
      hasTemplate: true,
      spec: { containers: [appWithToken()] },
      workloadAnnotations: ann('enabled'),
      namespaceAnnotations: ann('ingress'),
      serviceAccountTokenProjection: true,
    });
    expect(r.reasons).toEqual([]);
    expect(r.annotation.disabled).toBe(false);
    expect(r.annotation.at).toBe('namespace');
    expect(r.annotation.value).toBe('ingress');
  });
});

// ---------------------------------------------------------------------------------------------------------------
// 2.3 human texts

describe('SKIP_REASON_TEXT', () => {
  const TEXTS: Array<[SkipReasonCode, string]> = [
    ['host_network_enabled', 'hostNetwork is enabled'],
    ['sidecar_already_exists', 'pod has a sidecar injected already'],
    ['unsupported_resource', 'this resource kind is unsupported'],
    [
      'injection_enable_annotation_absent',
      'neither the namespace nor the pod have the annotation "linkerd.io/inject:enabled"',
    ],
    ['injection_disable_annotation_present', 'pod has the annotation "linkerd.io/inject:disabled"'],
    ['invalid_inject_annotation_at_workload', 'invalid value for annotation "linkerd.io/inject" at workload'],
    ['invalid_inject_annotation_at_ns', 'invalid value for annotation "linkerd.io/inject" at namespace'],
    [
      'disabled_automount_service_account_token_account',
      'automountServiceAccountToken set to "false", with Values.identity.serviceAccountTokenProjection set to "false"',
    ],
    ['udp_ports_enabled', 'UDP port(s) configured on pod spec'],
    // This injector's own: Linkerd injects mirror and Windows pods.
    ['mirror_pod', 'pod is the mirror of a static pod, which the kubelet runs from its manifest file'],
    ['windows_pod', 'pod runs on Windows, where the Linux proxy cannot run'],
  ];

  it.each(TEXTS)('%s', (code, text) => {
    expect(SKIP_REASON_TEXT[code]).toBe(text);
  });

  it('has exactly the nine codes of the spec table, and the mirror and Windows pods`', () => {
    expect(Object.keys(SKIP_REASON_TEXT).sort()).toEqual(TEXTS.map(([code]) => code).sort());
  });
});

// ---------------------------------------------------------------------------------------------------------------
// 2.4 existing sidecar

describe('hasExistingSidecar', () => {
  type Where = 'containers' | 'initContainers';
  const cases: Array<{ name: string; where: Where; container: Container; expected: boolean }> = [
    // proxy image prefixes, in either list
    { name: 'linkerd proxy image', where: 'containers', container: { name: 'x', image: 'cr.l5d.io/linkerd/proxy:edge-24.1.1' }, expected: true },
    { name: 'linkerd proxy image', where: 'initContainers', container: { name: 'x', image: 'cr.l5d.io/linkerd/proxy:stable-2.14.0' }, expected: true },
    { name: 'linkerd proxy image with an empty tag', where: 'containers', container: { name: 'x', image: 'cr.l5d.io/linkerd/proxy:' }, expected: true },
    { name: 'istio proxyv2 image', where: 'containers', container: { name: 'x', image: 'gcr.io/istio-release/proxyv2:1.22.0' }, expected: true },
    { name: 'istio proxyv2 image', where: 'initContainers', container: { name: 'x', image: 'gcr.io/istio-release/proxyv2:1.22.0' }, expected: true },
    // proxy container names, in either list
    { name: 'name linkerd-proxy', where: 'containers', container: { name: 'linkerd-proxy', image: 'example/any:1' }, expected: true },
    { name: 'name linkerd-proxy', where: 'initContainers', container: { name: 'linkerd-proxy', image: 'example/any:1' }, expected: true },
    { name: 'name istio-proxy', where: 'containers', container: { name: 'istio-proxy', image: 'example/any:1' }, expected: true },
    { name: 'name istio-proxy', where: 'initContainers', container: { name: 'istio-proxy', image: 'example/any:1' }, expected: true },
    // proxy-init image prefixes and names: init containers only
    { name: 'linkerd proxy-init image', where: 'initContainers', container: { name: 'x', image: 'cr.l5d.io/linkerd/proxy-init:v2.4.0' }, expected: true },
    { name: 'linkerd proxy-init image', where: 'containers', container: { name: 'x', image: 'cr.l5d.io/linkerd/proxy-init:v2.4.0' }, expected: false },
    { name: 'istio proxy_init image', where: 'initContainers', container: { name: 'x', image: 'gcr.io/istio-release/proxy_init:1.0.2' }, expected: true },
    { name: 'istio proxy_init image', where: 'containers', container: { name: 'x', image: 'gcr.io/istio-release/proxy_init:1.0.2' }, expected: false },
    { name: 'name linkerd-init', where: 'initContainers', container: { name: 'linkerd-init', image: 'example/any:1' }, expected: true },
    { name: 'name linkerd-init', where: 'containers', container: { name: 'linkerd-init', image: 'example/any:1' }, expected: false },
    { name: 'name istio-init', where: 'initContainers', container: { name: 'istio-init', image: 'example/any:1' }, expected: true },
    { name: 'name istio-init', where: 'containers', container: { name: 'istio-init', image: 'example/any:1' }, expected: false },
    // not sidecars
    { name: 'linkerd-network-validator', where: 'initContainers', container: { name: 'linkerd-network-validator', image: 'example/validator:1' }, expected: false },
    { name: 'linkerd-network-validator', where: 'containers', container: { name: 'linkerd-network-validator', image: 'example/validator:1' }, expected: false },
    { name: 'envoy', where: 'containers', container: { name: 'envoy', image: 'docker.io/envoyproxy/envoy:v1.30.1' }, expected: false },
    { name: 'contour', where: 'containers', container: { name: 'contour', image: 'ghcr.io/projectcontour/contour:v1.28.0' }, expected: false },
    { name: 'linkerd-debug', where: 'containers', container: { name: 'linkerd-debug', image: 'cr.l5d.io/linkerd/debug:edge-24.1.1' }, expected: false },
    { name: 'plain app', where: 'containers', container: { name: 'app', image: 'nginx:1.27' }, expected: false },
    // prefixes include the colon
    { name: 'proxy image without a tag separator', where: 'containers', container: { name: 'x', image: 'cr.l5d.io/linkerd/proxyfoo:1' }, expected: false },
    { name: 'proxy image by digest', where: 'containers', container: { name: 'x', image: 'cr.l5d.io/linkerd/proxy@sha256:abc' }, expected: false },
    { name: 'another registry', where: 'containers', container: { name: 'x', image: 'docker.io/linkerd/proxy:1' }, expected: false },
    // names are exact
    { name: 'name linkerd-proxy-2', where: 'containers', container: { name: 'linkerd-proxy-2', image: 'x:1' }, expected: false },
    { name: 'name Linkerd-Proxy', where: 'containers', container: { name: 'Linkerd-Proxy', image: 'x:1' }, expected: false },
  ];

  it.each(cases)('$name in $where -> $expected', ({ where, container, expected }) => {
    const app: Container = { name: 'app', image: 'nginx:1.27' };
    const spec: PodSpec =
      where === 'containers' ? { containers: [app, container] } : { initContainers: [container], containers: [app] };
    expect(hasExistingSidecar(spec)).toBe(expected);
  });

  it.each([
    { name: 'an empty spec', spec: {} satisfies PodSpec },
    { name: 'empty lists', spec: { containers: [], initContainers: [] } satisfies PodSpec },
    {
      name: 'only ordinary containers',
      spec: {
        initContainers: [{ name: 'migrate', image: 'flyway/flyway:10' }],
        containers: [{ name: 'web', image: 'nginx:1.27' }, { name: 'cache', image: 'memcached:1.6' }],
      } satisfies PodSpec,
    },
  ])('false for $name', ({ spec }) => {
    expect(hasExistingSidecar(spec)).toBe(false);
  });

  it('a previously injected Linkerd pod (linkerd-init + linkerd-proxy) is detected', () => {
    expect(
      hasExistingSidecar({
        initContainers: [{ name: 'linkerd-init', image: 'cr.l5d.io/linkerd/proxy:edge-24.1.1' }],
        containers: [{ name: 'linkerd-proxy', image: 'cr.l5d.io/linkerd/proxy:edge-24.1.1' }, { name: 'app' }],
      }),
    ).toBe(true);
  });
});
