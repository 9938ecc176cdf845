import { describe, expect, it } from 'vitest';
import { handleAdmission } from '../../src/admission/handler.js';
import type { AdmissionRequest } from '../../src/admission/types.js';
import { eventFor, misplacedEventFor, ownerToRead, riskEventFor, type EventPolicy } from '../../src/cluster/context.js';
import type { ResolvedOwner } from '../../src/cluster/owners.js';
import { admissionReview } from '../support/admission.js';
import { pod, testConfig } from '../support/engine.js';

const deployment: ResolvedOwner = { kind: 'deployment', name: 'web', apiKind: 'Deployment', apiVersion: 'apps/v1', namespace: 'shop', uid: 'u', exists: true };
const bare = (name: string): ResolvedOwner => ({ kind: 'pod', name, apiKind: 'Pod', apiVersion: 'v1', namespace: 'shop', exists: false });

type EventOptions = { owner?: ResolvedOwner; dryRun?: boolean; ns?: Record<string, string>; labels?: Record<string, string>; policy?: EventPolicy };

async function admitted(object: Record<string, unknown>, opts: EventOptions) {
  const request = admissionReview(object, { dryRun: opts.dryRun ?? false })['request'] as AdmissionRequest;
  const handled = await handleAdmission(request, {
    config: () => testConfig(),
    namespaceAnnotations: () => opts.ns,
    namespaceLabels: () => opts.labels,
    owner: () => opts.owner ?? deployment,
  });
  return { handled, request };
}

async function event(object: Record<string, unknown>, opts: EventOptions = {}) {
  const { handled, request } = await admitted(object, opts);
  return eventFor(handled, opts.owner ?? deployment, request, opts.policy ?? 'relevant');
}

async function misplacedEvent(object: Record<string, unknown>, opts: EventOptions = {}) {
  const { handled, request } = await admitted(object, opts);
  return misplacedEventFor(handled, opts.owner ?? deployment, request, opts.policy ?? 'relevant');
}

async function riskEvent(object: Record<string, unknown>, opts: EventOptions = {}) {
  const { handled, request } = await admitted(object, opts);
  return riskEventFor(handled, opts.owner ?? deployment, request, opts.policy ?? 'relevant');
}

const enabled = () => pod({ annotations: { 'linkerd.io/inject': 'enabled' } });

describe('eventFor', () => {
  it('Injected on the workload for an injected pod', async () => {
    expect(await event(enabled())).toEqual({ target: deployment, type: 'Normal', reason: 'Injected', message: 'Linkerd sidecar proxy injected' });
  });

  it('InjectionSkipped with Linkerd’s reason texts for an opted-out pod', async () => {
    const e = await event(pod({ annotations: { 'linkerd.io/inject': 'disabled' } }), { ns: { 'linkerd.io/inject': 'enabled' } });
    expect(e).toMatchObject({
      reason: 'InjectionSkipped',
      message: 'Linkerd sidecar proxy injection skipped: pod has the annotation "linkerd.io/inject:disabled"',
    });
  });

  it('nothing for a dry run', async () => {
    expect(await event(enabled(), { dryRun: true })).toBeUndefined();
  });

  it('relevant: nothing for pods nobody asked to mesh; all: an event as Linkerd does', async () => {
    expect(await event(pod())).toBeUndefined();
    expect((await event(pod(), { policy: 'all' }))?.message).toBe(
      'Linkerd sidecar proxy injection skipped: neither the namespace nor the pod have the annotation "linkerd.io/inject:enabled"',
    );
  });

  it('a workload asking on its own metadata, where the injector never looks, is relevant: its pods get Linkerd’s skip event', async () => {
    const misplaced = { ...deployment, misplacedInject: 'enabled' };
    expect(await event(pod(), { owner: misplaced })).toEqual({
      target: misplaced,
      type: 'Normal',
      reason: 'InjectionSkipped',
      message: 'Linkerd sidecar proxy injection skipped: neither the namespace nor the pod have the annotation "linkerd.io/inject:enabled"',
    });
    // disabled there asks for nothing.
    expect(await event(pod(), { owner: { ...deployment, misplacedInject: 'disabled' } })).toBeUndefined();
  });

  it('an injected pod gets Linkerd’s Injected event, whatever its workload carries on its own metadata', async () => {
    const owner = { ...deployment, misplacedConfig: ['config.linkerd.io/proxy-cpu-limit'] };
    expect(await event(enabled(), { owner })).toEqual({ target: owner, type: 'Normal', reason: 'Injected', message: 'Linkerd sidecar proxy injected' });
  });

  it('none: never', async () => {
    expect(await event(enabled(), { policy: 'none' })).toBeUndefined();
  });

  it("a StatefulSet's or DaemonSet's event on a pod injected, or nobody asked to mesh, waits for the workload to be read; no other does", async () => {
    const statefulSet: ResolvedOwner = { kind: 'statefulset', name: 'db', apiKind: 'StatefulSet', apiVersion: 'apps/v1', namespace: 'shop', uid: 'u', exists: false };
    const daemonSet: ResolvedOwner = { ...statefulSet, kind: 'daemonset', name: 'agent', apiKind: 'DaemonSet' };
    const toRead = async (object: Record<string, unknown>, opts: EventOptions) => {
      const { handled, request } = await admitted(object, opts);
      return ownerToRead(handled, opts.owner ?? deployment, request, opts.policy ?? 'relevant');
    };
    expect(await toRead(pod(), { owner: statefulSet })).toBe(statefulSet);
    expect(await toRead(pod(), { owner: daemonSet, policy: 'all' })).toBe(daemonSet);
    // Once read, the Warning reads as a Deployment's does.
    expect((await misplacedEvent(pod(), { owner: { ...statefulSet, exists: true, misplacedInject: 'enabled' } }))?.message).toMatch(
      /is on the StatefulSet's own metadata, which the injector never reads \(it sees only the pods\), so its pods are not injected: move it to spec\.template\.metadata\.annotations$/,
    );
    expect(await toRead(enabled(), { owner: statefulSet })).toBe(statefulSet);
    expect((await misplacedEvent(enabled(), { owner: { ...statefulSet, exists: true, misplacedConfig: ['config.linkerd.io/proxy-cpu-limit'] } }))?.message).toMatch(
      /^config\.linkerd\.io\/proxy-cpu-limit is on the StatefulSet's own metadata/,
    );
    // Nothing to read: the owner read already, another kind, a pod skipped for another reason, no event.
    // Once read, it is not read again; a Deployment was named by a ReplicaSet that was read.
    expect(await toRead(pod(), { owner: { ...statefulSet, exists: true, misplacedInject: 'disabled' } })).toBeUndefined();
    expect(await toRead(pod(), { owner: deployment })).toBeUndefined();
    expect(await toRead(enabled(), { owner: deployment })).toBeUndefined();
    // An opted-out pod's event goes on the StatefulSet too, once it is known to exist.
    const optedOut = pod({ annotations: { 'linkerd.io/inject': 'disabled' } });
    expect(await toRead(optedOut, { owner: statefulSet, ns: { 'linkerd.io/inject': 'enabled' } })).toBe(statefulSet);
    expect(await event(optedOut, { owner: statefulSet, ns: { 'linkerd.io/inject': 'enabled' } })).toBeUndefined();
    expect(await toRead(pod(), { owner: statefulSet, policy: 'none' })).toBeUndefined();
    expect(await toRead(pod(), { owner: statefulSet, dryRun: true })).toBeUndefined();
  });

  it('only a workload the API server was seen to hold gets events: not a bare pod (not stored yet), nor an owner a review names', async () => {
    expect(await event(enabled(), { owner: bare('web') })).toBeUndefined();
    expect(await riskEvent(enabled(), { owner: bare('web'), labels: { 'pod-security.kubernetes.io/enforce': 'baseline' } })).toBeUndefined();
    const named = { ...deployment, exists: false };
    expect(await event(enabled(), { owner: named })).toBeUndefined();
    expect(await misplacedEvent(pod(), { owner: { ...named, misplacedInject: 'enabled' } })).toBeUndefined();
    expect(await event(enabled(), { owner: deployment })).toMatchObject({ reason: 'Injected' });
  });

  it('hostNetwork pods are skipped with their reason', async () => {
    const p = pod({ annotations: { 'linkerd.io/inject': 'enabled' }, spec: { hostNetwork: true, containers: [{ name: 'a', image: 'a' }] } });
    expect((await event(p))?.message).toBe('Linkerd sidecar proxy injection skipped: hostNetwork is enabled');
  });
});

describe('misplacedEventFor', () => {
  it('a Warning where the workload asks for injection on its own metadata, saying where the annotation goes', async () => {
    const misplaced = { ...deployment, misplacedInject: 'enabled' };
    expect(await misplacedEvent(pod(), { owner: misplaced })).toEqual({
      target: misplaced,
      type: 'Warning',
      reason: 'MisplacedAnnotation',
      message:
        "linkerd.io/inject: enabled is on the Deployment's own metadata, which the injector never reads (it sees only the pods), " +
        'so its pods are not injected: move it to spec.template.metadata.annotations',
    });
    const cronJob: ResolvedOwner = { kind: 'cronjob', name: 'nightly', apiKind: 'CronJob', apiVersion: 'batch/v1', namespace: 'shop', exists: true, misplacedInject: 'enabled' };
    expect((await misplacedEvent(pod(), { owner: cronJob }))?.message).toMatch(/is on the CronJob's jobTemplate metadata, .*move it to spec\.jobTemplate\.spec\.template\.metadata\.annotations$/);
    // ingress there asks too.
    expect((await misplacedEvent(pod(), { owner: { ...deployment, misplacedInject: 'ingress' } }))?.message).toMatch(/^linkerd\.io\/inject: ingress is on/);
  });

  it('none when the annotation asks for nothing, or the pod is skipped for another reason, or injected anyway', async () => {
    const misplaced = { ...deployment, misplacedInject: 'enabled' };
    expect(await misplacedEvent(pod(), { owner: { ...deployment, misplacedInject: 'disabled' } })).toBeUndefined();
    const host = pod({ annotations: { 'linkerd.io/inject': 'enabled' }, spec: { hostNetwork: true, containers: [{ name: 'a', image: 'a' }] } });
    expect(await misplacedEvent(host, { owner: misplaced })).toBeUndefined();
    // Injected through the namespace: the misplaced annotation does no harm.
    expect(await misplacedEvent(pod(), { owner: misplaced, ns: { 'linkerd.io/inject': 'enabled' } })).toBeUndefined();
    expect(await misplacedEvent(pod(), { owner: deployment, policy: 'all' })).toBeUndefined();
  });

  it('a Warning naming the proxy annotations an injected pod’s workload carries on its own metadata and the pod does not', async () => {
    const keys = ['config.linkerd.io/proxy-cpu-limit', 'config.linkerd.io/proxy-memory-limit'];
    const owner = { ...deployment, misplacedConfig: keys };
    expect(await misplacedEvent(enabled(), { owner })).toEqual({
      target: owner,
      type: 'Warning',
      reason: 'MisplacedAnnotation',
      message:
        "config.linkerd.io/proxy-cpu-limit, config.linkerd.io/proxy-memory-limit are on the Deployment's own metadata, which the " +
        'injector never reads (it sees only the pods), so the proxy runs without them: move them to spec.template.metadata.annotations',
    });
    // One the pod carries too reaches the proxy: only the other is named; with both on the pod, none.
    const one = pod({ annotations: { 'linkerd.io/inject': 'enabled', 'config.linkerd.io/proxy-cpu-limit': '1' } });
    expect((await misplacedEvent(one, { owner }))?.message).toBe(
      "config.linkerd.io/proxy-memory-limit is on the Deployment's own metadata, which the injector never reads (it sees only " +
        'the pods), so the proxy runs without it: move it to spec.template.metadata.annotations',
    );
    const both = pod({ annotations: { 'linkerd.io/inject': 'enabled', 'config.linkerd.io/proxy-cpu-limit': '1', 'config.linkerd.io/proxy-memory-limit': '1Gi' } });
    expect(await misplacedEvent(both, { owner })).toBeUndefined();
    const cronJob: ResolvedOwner = { kind: 'cronjob', name: 'nightly', apiKind: 'CronJob', apiVersion: 'batch/v1', namespace: 'shop', exists: true, misplacedConfig: keys };
    expect((await misplacedEvent(enabled(), { owner: cronJob }))?.message).toMatch(/are on the CronJob's jobTemplate metadata, .*move them to spec\.jobTemplate\.spec\.template\.metadata\.annotations$/);
    // Many of them: the message is clipped to what an event holds.
    const many = { ...deployment, misplacedConfig: Array.from({ length: 60 }, (_, i) => `config.linkerd.io/setting-${i}`) };
    const long = (await misplacedEvent(enabled(), { owner: many }))?.message ?? '';
    expect(long).toHaveLength(1024);
    expect(long.endsWith('…')).toBe(true);
    // A skipped pod's proxy runs nowhere: nothing to say of them.
    expect(await misplacedEvent(pod(), { owner, policy: 'all' })).toBeUndefined();
  });

  it('none under "none", for a dry run, or for a pod without a workload to put it on', async () => {
    const owner = { ...deployment, misplacedInject: 'enabled' };
    expect(await misplacedEvent(pod(), { owner, policy: 'none' })).toBeUndefined();
    expect(await misplacedEvent(pod(), { owner, dryRun: true })).toBeUndefined();
  });
});

describe('riskEventFor', () => {
  const baseline = { 'pod-security.kubernetes.io/enforce': 'baseline' };

  it("a Warning on the workload with each risk's code, text and fix, beside the Injected event", async () => {
    expect(await riskEvent(enabled(), { labels: baseline })).toEqual({
      target: deployment,
      type: 'Warning',
      reason: 'StartupRisk',
      message:
        'Linkerd sidecar proxy injected with start-up risks: pod_security_refuses_init: the namespace enforces Pod Security "baseline", ' +
        "which forbids linkerd-init's NET_ADMIN and NET_RAW capabilities: the API server refuses the pod; fix: install the Linkerd CNI " +
        'plugin (cniEnabled: true), which replaces linkerd-init with linkerd-network-validator, or set the namespace\'s ' +
        'pod-security.kubernetes.io/enforce to privileged',
    });
    expect((await event(enabled(), { labels: baseline }))?.reason).toBe('Injected');
  });

  it('several risks in one message, clipped to 1024 characters', async () => {
    const awaitOff = { 'config.linkerd.io/proxy-await': 'disabled' };
    expect((await riskEvent(enabled(), { labels: baseline, ns: awaitOff }))?.message).toMatch(
      /^Linkerd sidecar proxy injected with start-up risks: pod_security_refuses_init: .*privileged\. proxy_await_disabled: .*retry its first connections$/,
    );
    // Four risks: the namespace's level, the hook turned off, the proxy's inbound port and its uid taken by the app.
    const crowded = pod({
      annotations: { 'linkerd.io/inject': 'enabled' },
      spec: { containers: [{ name: 'app', image: 'a', ports: [{ containerPort: 4143 }], securityContext: { runAsUser: 2102 } }] },
    });
    const { handled } = await admitted(crowded, { labels: baseline, ns: awaitOff });
    const risks = handled.kind === 'evaluated' ? handled.result.risks : [];
    expect(risks.length).toBeGreaterThanOrEqual(4);
    const message = (await riskEvent(crowded, { labels: baseline, ns: awaitOff }))?.message ?? '';
    expect(message).toHaveLength(1024);
    expect(message.endsWith('…')).toBe(true);
    expect(message.startsWith('Linkerd sidecar proxy injected with start-up risks: pod_security_refuses_init: ')).toBe(true);
  });

  it('leaves out proxy-await disabled by the workload itself, a choice, but not when the namespace disabled it', async () => {
    const own = pod({ annotations: { 'linkerd.io/inject': 'enabled', 'config.linkerd.io/proxy-await': 'disabled' } });
    const { handled } = await admitted(own, {});
    expect(handled.kind === 'evaluated' && handled.result.risks.map((r) => r.code)).toEqual(['proxy_await_disabled']);
    expect(await riskEvent(own)).toBeUndefined();
    const other = (await riskEvent(own, { labels: baseline }))?.message;
    expect(other).toMatch(/start-up risks: pod_security_refuses_init: .*enforce to privileged$/);
    expect(other).not.toContain('proxy_await_disabled');
    expect((await riskEvent(enabled(), { ns: { 'config.linkerd.io/proxy-await': 'disabled' } }))?.message).toMatch(/start-up risks: proxy_await_disabled: /);
  });

  it('nothing without a risk, for a dry run, with the policy none, or for a pod that is not injected', async () => {
    expect(await riskEvent(enabled())).toBeUndefined();
    expect(await riskEvent(enabled(), { labels: { 'pod-security.kubernetes.io/enforce': 'privileged' } })).toBeUndefined();
    expect(await riskEvent(enabled(), { labels: baseline, dryRun: true })).toBeUndefined();
    expect(await riskEvent(enabled(), { labels: baseline, policy: 'none' })).toBeUndefined();
    expect(await riskEvent(pod({ annotations: { 'linkerd.io/inject': 'disabled' } }), { labels: baseline, ns: { 'linkerd.io/inject': 'enabled' } })).toBeUndefined();
  });
});
