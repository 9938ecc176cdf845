/**
 * End to end against a real kube-apiserver (and kube-controller-manager, so Deployments and Jobs make their pods):
 * the injector runs as its own process with only the RBAC of the Helm chart, is registered with Linkerd's
 * MutatingWebhookConfiguration and our CA, and every assertion reads objects as the API server stored them.
 */
import { mkdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  AdmissionregistrationV1Api,
  AppsV1Api,
  BatchV1Api,
  CoreV1Api,
  KubeConfig,
  KubernetesObjectApi,
  type V1Pod,
} from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCheckPods, type PodsReport } from '../../src/cli/check-pods.js';
import { runExplain, type Explanation } from '../../src/cli/explain.js';
import { renderChart } from './support/chart.js';
import { kubeRequest, startControlPlane, type ControlPlane } from './support/control-plane.js';
import { createLinkerdNamespace, createNamespace, eventually as eventuallyOr } from './support/kube.js';
import { linkerdWebhookConfiguration, startInjector, tokenKubeconfig, type RunningInjector } from './support/injector.js';
import { httpsPost } from '../support/https.js';
import { samples, sum } from '../support/metrics.js';

const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const TRUST_ANCHORS = readFileSync(join(REPO_ROOT, 'examples', 'trust-anchors.pem'), 'utf8');
const VALUES = (cni: boolean) => `linkerdVersion: edge-26.8.3\ncniEnabled: ${cni}\nproxy:\n  nativeSidecar: false\nproxyInit:\n  iptablesMode: legacy\n`;

let cp: ControlPlane;
let injector: RunningInjector;
let core: CoreV1Api;
let apps: AppsV1Api;
let batch: BatchV1Api;
let admission: AdmissionregistrationV1Api;
const timings: Record<string, number> = {};
/** Every pod the webhook injected, checked at the end to exist as the API server stored (and validated) it. */
const injectedPods: Array<{ namespace: string; name: string }> = [];

const eventually = <T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 30_000) =>
  eventuallyOr(what, probe, { timeoutMs, context: () => `injector log tail:\n${injector?.logs.slice(-15).join('\n')}` });
const namespace = (name: string, annotations: Record<string, string> = {}, labels: Record<string, string> = {}) => createNamespace(core, name, annotations, labels);

function podSpec(name: string, annotations: Record<string, string> = {}, extra: Partial<V1Pod['spec']> = {}): V1Pod {
  return {
    metadata: { name, annotations, labels: { app: name } },
    spec: { containers: [{ name: 'app', image: 'nginx:1.27', ports: [{ containerPort: 80 }] }], ...extra },
  };
}

/** The webhook's start-up risk warnings on an answer, by code. */
const warned = (res: { warnings: string[] }) => res.warnings.flatMap((w) => /start-up risk \((\w+)\)/.exec(w)?.[1] ?? []);
const containerNames = (pod: V1Pod) => (pod.spec?.containers ?? []).map((c) => c.name);
const initNames = (pod: V1Pod) => (pod.spec?.initContainers ?? []).map((c) => c.name);

async function createPod(ns: string, pod: V1Pod): Promise<V1Pod> {
  const created = await core.createNamespacedPod({ namespace: ns, body: pod });
  if (containerNames(created).includes('linkerd-proxy') || initNames(created).includes('linkerd-proxy')) {
    injectedPods.push({ namespace: ns, name: created.metadata?.name ?? '' });
  }
  return created;
}

async function eventsFor(ns: string, kind: string, name: string) {
  const list = await core.listNamespacedEvent({ namespace: ns, fieldSelector: `involvedObject.kind=${kind},involvedObject.name=${name}` });
  return list.items;
}

/** POSTs a review straight to the injector, as anyone who can reach it could. */
const postReview = (body: string) => httpsPost(injector.webhookUrl, { ca: injector.caPem, body });

/** The injector's log line that says why a pod was skipped. */
function skipLine(ns: string, name: string): Promise<string> {
  return eventually(`the log line of ${ns}/${name}`, async () =>
    injector.logs
      .flatMap((line) => {
        try {
          return [(JSON.parse(line) as { msg?: string }).msg ?? ''];
        } catch {
          return [];
        }
      })
      .find((msg) => msg.startsWith(`skipped pod/${ns}/${name}:`)),
  );
}

async function setWebhook(failurePolicy: 'Ignore' | 'Fail', url = injector.webhookUrl): Promise<void> {
  const body = linkerdWebhookConfiguration(url, injector.caPem, failurePolicy);
  try {
    const existing = await admission.readMutatingWebhookConfiguration({ name: body.metadata?.name ?? '' });
    body.metadata = { ...body.metadata, resourceVersion: existing.metadata?.resourceVersion ?? '' };
    await admission.replaceMutatingWebhookConfiguration({ name: body.metadata?.name ?? '', body });
  } catch (err) {
    if ((err as { code?: number }).code !== 404) throw err;
    await admission.createMutatingWebhookConfiguration({ body });
  }
}

beforeAll(async () => {
  let t = Date.now();
  cp = await startControlPlane();
  timings['control plane start'] = Date.now() - t;
  const kc = new KubeConfig();
  kc.loadFromString(cp.kubeconfig);
  core = kc.makeApiClient(CoreV1Api);
  apps = kc.makeApiClient(AppsV1Api);
  batch = kc.makeApiClient(BatchV1Api);
  admission = kc.makeApiClient(AdmissionregistrationV1Api);

  // The control plane namespace, as Linkerd labels it (excluded from its own webhook), and its ConfigMaps.
  await createLinkerdNamespace(core, VALUES(false), TRUST_ANCHORS);

  // The injector's identity: the chart's ServiceAccount and RBAC exactly, and a token for its service account.
  await namespace('proxy-injector');
  const objects = kc.makeApiClient(KubernetesObjectApi);
  // With podScan.interval, whose scans test 7 reads: the chart then grants list on pods and webhooks.
  const rbac = renderChart('proxy-injector', 'proxy-injector', { podScan: { interval: '1m' } }, ['--show-only', 'templates/serviceaccount.yaml', '--show-only', 'templates/rbac.yaml']);
  expect(rbac.map((o) => o.kind)).toEqual(['ServiceAccount', 'ClusterRole', 'ClusterRoleBinding', 'Role', 'RoleBinding']);
  for (const doc of rbac) await objects.create(doc);
  const token = await core.createNamespacedServiceAccountToken({
    name: 'proxy-injector',
    namespace: 'proxy-injector',
    body: { spec: { audiences: [], expirationSeconds: 3600 } },
  });
  const workDir = join(cp.workDir, 'injector');
  mkdirSync(workDir, { recursive: true });
  const kubeconfigPath = tokenKubeconfig(join(workDir, 'kubeconfig'), cp.apiServerUrl, cp.caPem, token.status?.token ?? '');

  t = Date.now();
  injector = await startInjector({ workDir, kubeconfigPath, extraArgs: ['--linkerd-namespace', 'linkerd', '--pod-scan-interval', '1m'] });
  timings['injector ready'] = Date.now() - t;

  await namespace('emojivoto', { 'linkerd.io/inject': 'enabled' });
  await namespace('plain');
  t = Date.now();
  await setWebhook('Ignore');
  // The API server picks up a new webhook configuration asynchronously: wait until a dry run shows injection.
  await eventually('the webhook to be called', async () => {
    const probe = await core.createNamespacedPod({ namespace: 'emojivoto', body: podSpec('probe'), dryRun: 'All' });
    return containerNames(probe).includes('linkerd-proxy') ? true : undefined;
  });
  timings['webhook registered'] = Date.now() - t;
}, 600_000);

afterAll(async () => {
  console.log(`e2e timings (ms): ${JSON.stringify(timings)}`);
  // The refused configuration of scenario 4 is the one error expected in the injector's log.
  const problems = (injector?.logs ?? []).filter((l) => /"level":(40|50|60)/.test(l) && !l.includes('refusing the new Linkerd configuration'));
  console.log(`injector warnings and errors (${problems.length}):\n${problems.map((l) => l.slice(0, 300)).join('\n')}`);
  await injector?.stop();
  await cp?.stop();
});

describe('with a real kube-apiserver', () => {
  it('1. a Deployment in an enabled namespace gets pods with the proxy first, the await hook, linkerd-init, the owner label, and an Injected event', async () => {
    await apps.createNamespacedDeployment({
      namespace: 'emojivoto',
      body: {
        metadata: { name: 'web' },
        spec: {
          replicas: 2,
          selector: { matchLabels: { app: 'web' } },
          template: { metadata: { labels: { app: 'web' } }, spec: { containers: [{ name: 'web-svc', image: 'buoyantio/emojivoto-web:v11', ports: [{ containerPort: 8080 }] }] } },
        },
      },
    });
    const pods = await eventually('the Deployment’s pods', async () => {
      const list = await core.listNamespacedPod({ namespace: 'emojivoto', labelSelector: 'app=web' });
      return list.items.length === 2 ? list.items : undefined;
    });
    for (const pod of pods) {
      injectedPods.push({ namespace: 'emojivoto', name: pod.metadata?.name ?? '' });
      expect(containerNames(pod)).toEqual(['linkerd-proxy', 'web-svc']);
      expect(pod.spec?.containers[0]?.lifecycle?.postStart?.exec?.command).toEqual(['/usr/lib/linkerd/linkerd-await', '--timeout=2m', '--port=4191']);
      expect(initNames(pod)).toEqual(['linkerd-init']);
      expect(pod.metadata?.labels?.['linkerd.io/proxy-deployment']).toBe('web');
      expect(pod.metadata?.labels?.['linkerd.io/workload-ns']).toBe('emojivoto');
      expect(pod.metadata?.annotations?.['linkerd.io/inject']).toBe('enabled');
      // The ServiceAccount admission plugin mounted the token before us; Linkerd copies that mount to its containers.
      const saMount = pod.spec?.containers[1]?.volumeMounts?.find((m) => m.mountPath === '/var/run/secrets/kubernetes.io/serviceaccount');
      expect(saMount).toBeDefined();
      expect(pod.spec?.containers[0]?.volumeMounts).toContainEqual(expect.objectContaining({ name: saMount?.name, mountPath: saMount?.mountPath }));
    }
    const events = await eventually('the Injected event on the Deployment', async () => {
      const items = await eventsFor('emojivoto', 'Deployment', 'web');
      return items.some((e) => e.reason === 'Injected') ? items : undefined;
    });
    const injected = events.find((e) => e.reason === 'Injected');
    expect(injected?.message).toBe('Linkerd sidecar proxy injected');
    expect(injected?.source?.component).toBe('linkerd-proxy-injector');
    await eventually('the count of both pods', async () => ((await eventsFor('emojivoto', 'Deployment', 'web')).find((e) => e.reason === 'Injected')?.count === 2 ? true : undefined));
  });

  it('2. a pod annotated enabled in a plain namespace is injected; one annotated disabled in an enabled namespace is not, and the log says why', async () => {
    const enabled = await createPod('plain', podSpec('opted-in', { 'linkerd.io/inject': 'enabled' }));
    expect(containerNames(enabled)).toEqual(['linkerd-proxy', 'app']);
    const untouched = await createPod('plain', podSpec('not-asked'));
    expect(containerNames(untouched)).toEqual(['app']);

    const disabled = await createPod('emojivoto', podSpec('opted-out', { 'linkerd.io/inject': 'disabled' }));
    expect(containerNames(disabled)).toEqual(['app']);
    expect(initNames(disabled)).toEqual([]);
    expect(await skipLine('emojivoto', 'opted-out')).toBe('skipped pod/emojivoto/opted-out: pod has the annotation "linkerd.io/inject:disabled"');
  });

  it('3. proxy-await disabled removes the hook and moves the proxy last', async () => {
    const pod = await createPod('emojivoto', podSpec('no-await', { 'config.linkerd.io/proxy-await': 'disabled' }));
    expect(containerNames(pod)).toEqual(['app', 'linkerd-proxy']);
    expect(pod.spec?.containers[1]?.lifecycle).toBeUndefined();
  });

  it('4. cniEnabled in linkerd-config switches the next pods to linkerd-network-validator, without a restart', async () => {
    const pid = injector.child.pid;
    await core.replaceNamespacedConfigMap({
      name: 'linkerd-config',
      namespace: 'linkerd',
      body: { metadata: { name: 'linkerd-config' }, data: { values: VALUES(true) } },
    });
    const t = Date.now();
    await eventually('the new configuration to apply', async () => {
      const probe = await core.createNamespacedPod({ namespace: 'emojivoto', body: podSpec('cni-probe'), dryRun: 'All' });
      return initNames(probe).includes('linkerd-network-validator') ? true : undefined;
    });
    timings['config change applied'] = Date.now() - t;
    const pod = await createPod('emojivoto', podSpec('with-cni'));
    expect(initNames(pod)).toEqual(['linkerd-network-validator']);
    expect(containerNames(pod)).toEqual(['linkerd-proxy', 'app']);
    expect((pod.spec?.volumes ?? []).map((v) => v.name)).not.toContain('linkerd-proxy-init-xtables-lock');
    expect(injector.child.pid).toBe(pid);
    expect(injector.child.exitCode).toBeNull();

    // Pod Security restricted: with the CNI plugin, an app that meets it brings the validator and the proxy (which takes
    // the app's capabilities) through; the debug sidecar, which sets no securityContext, is refused, as the webhook warns.
    await namespace('psa-restricted', { 'linkerd.io/inject': 'enabled' }, { 'pod-security.kubernetes.io/enforce': 'restricted' });
    const meets = { allowPrivilegeEscalation: false, runAsNonRoot: true, runAsUser: 101, seccompProfile: { type: 'RuntimeDefault' }, capabilities: { drop: ['ALL'] } };
    const restrictedPod = (name: string, annotations: Record<string, string> = {}) => {
      const p = podSpec(name, annotations);
      return { apiVersion: 'v1', kind: 'Pod', ...p, spec: { ...p.spec, containers: (p.spec?.containers ?? []).map((c) => ({ ...c, securityContext: meets })) } };
    };
    const stored = await kubeRequest(cp, 'POST', '/api/v1/namespaces/psa-restricted/pods', restrictedPod('meets-restricted'));
    expect(stored.status, JSON.stringify(stored.json)).toBe(201);
    expect(initNames(stored.json as V1Pod)).toEqual(['linkerd-network-validator']);
    expect(containerNames(stored.json as V1Pod)).toEqual(['linkerd-proxy', 'app']);
    expect(warned(stored)).toEqual([]);
    const debugged = await kubeRequest(cp, 'POST', '/api/v1/namespaces/psa-restricted/pods', restrictedPod('with-debug', { 'config.linkerd.io/enable-debug-sidecar': 'true' }));
    expect(debugged.status).toBe(403);
    const message = (debugged.json as { message: string }).message;
    expect(message).toMatch(/^pods "with-debug" is forbidden: violates PodSecurity "restricted:latest": /);
    for (const check of ['allowPrivilegeEscalation != false', 'unrestricted capabilities', 'runAsNonRoot != true', 'seccompProfile']) {
      expect(message).toContain(`${check} (`);
    }
    expect(message.match(/container "[a-z-]+"/g)?.every((c) => c === 'container "linkerd-debug"')).toBe(true);
    expect(debugged.warnings.filter((w) => w.includes('pod_security_refuses_container'))).toEqual([
      '299 - "start-up risk (pod_security_refuses_container): Pod Security \\"restricted\\" in this namespace refuses linkerd-debug (allowPrivilegeEscalation != false, unrestricted capabilities, runAsNonRoot != true, seccompProfile), and with it the pod"',
    ]);

    await core.replaceNamespacedConfigMap({ name: 'linkerd-config', namespace: 'linkerd', body: { metadata: { name: 'linkerd-config' }, data: { values: VALUES(false) } } });
    await eventually('the configuration to switch back', async () => {
      const probe = await core.createNamespacedPod({ namespace: 'emojivoto', body: podSpec('cni-probe'), dryRun: 'All' });
      return initNames(probe).includes('linkerd-init') ? true : undefined;
    });

    // An invalid configuration is refused and counted; pods keep being injected with the last good one.
    await core.replaceNamespacedConfigMap({
      name: 'linkerd-config',
      namespace: 'linkerd',
      body: { metadata: { name: 'linkerd-config' }, data: { values: 'proxy:\n  ports:\n    admin: "not a port"\n' } },
    });
    await eventually('the refusal to be counted', async () => {
      const metrics = await (await fetch(`${injector.adminUrl}/metrics`)).text();
      return /^proxy_inject_config_reloads_total\{result="refused"\} 1$/m.test(metrics) ? true : undefined;
    });
    const afterRefusal = await createPod('emojivoto', podSpec('after-bad-config'));
    expect(initNames(afterRefusal)).toEqual(['linkerd-init']);
    expect(containerNames(afterRefusal)).toEqual(['linkerd-proxy', 'app']);
    expect(injector.logs.some((l) => l.includes('refusing the new Linkerd configuration') && l.includes('proxy.ports.admin must be a number'))).toBe(true);
    await core.replaceNamespacedConfigMap({ name: 'linkerd-config', namespace: 'linkerd', body: { metadata: { name: 'linkerd-config' }, data: { values: VALUES(false) } } });
  });

  it('5. a native sidecar is accepted: the proxy keeps restartPolicy Always as an init container', async () => {
    const pod = await createPod('emojivoto', podSpec('native', { 'config.linkerd.io/proxy-enable-native-sidecar': 'true' }, { initContainers: [{ name: 'migrate', image: 'busybox' }] }));
    expect(initNames(pod)).toEqual(['linkerd-init', 'linkerd-proxy', 'migrate']);
    expect(pod.spec?.initContainers?.[1]?.restartPolicy).toBe('Always');
    expect(pod.spec?.initContainers?.[1]?.startupProbe?.httpGet?.path).toBe('/ready');
    expect(containerNames(pod)).toEqual(['app']);
    // The injector read the API server's release with no more than the chart's RBAC (every client may read /version):
    // 1.29 or later, so a native sidecar draws no native_sidecar_unsupported warning.
    const served = (await kubeRequest(cp, 'GET', '/version')).json as { gitVersion: string };
    const read = injector.logs.filter((l) => l.includes('"msg":"Kubernetes API server version"')).map((l) => (JSON.parse(l) as { kubernetes?: string }).kubernetes);
    expect(read).toEqual([served.gitVersion]);
    const again = await kubeRequest(cp, 'POST', '/api/v1/namespaces/emojivoto/pods?dryRun=All', {
      apiVersion: 'v1',
      kind: 'Pod',
      ...podSpec('native-again', { 'config.linkerd.io/proxy-enable-native-sidecar': 'true' }),
    });
    expect(again.status).toBe(201);
    expect(warned(again)).toEqual([]);
  });

  it('6. hostNetwork pods, kube-system (excluded by the selector) and dry runs behave as specified; a dry run records no event', async () => {
    const host = await createPod('emojivoto', podSpec('host-net', {}, { hostNetwork: true }));
    expect(containerNames(host)).toEqual(['app']);
    expect(await skipLine('emojivoto', 'host-net')).toBe('skipped pod/emojivoto/host-net: hostNetwork is enabled');
    // A pod on its own is not stored yet while it is admitted: like Linkerd, the injector writes Events only on workloads
    // it found.
    expect(await eventsFor('emojivoto', 'Pod', 'host-net')).toEqual([]);

    const system = await core.createNamespacedPod({ namespace: 'kube-system', body: podSpec('system', { 'linkerd.io/inject': 'enabled' }) });
    expect(containerNames(system)).toEqual(['app']);
    expect(system.metadata?.annotations?.['linkerd.io/created-by']).toBeUndefined();

    // Pods of the Deployment of scenario 1, made by hand: a dry run adds nothing to its Injected event, a real one does.
    const replicaSets = await apps.listNamespacedReplicaSet({ namespace: 'emojivoto', labelSelector: 'app=web' });
    const rs = replicaSets.items[0]?.metadata;
    const owned = (name: string): V1Pod => {
      const p = podSpec(name);
      p.metadata = { ...p.metadata, labels: { app: 'web-extra' }, ownerReferences: [{ apiVersion: 'apps/v1', kind: 'ReplicaSet', name: rs?.name ?? '', uid: rs?.uid ?? '', controller: true }] };
      return p;
    };
    const injectedCount = async () => (await eventsFor('emojivoto', 'Deployment', 'web')).find((e) => e.reason === 'Injected')?.count ?? 0;
    const before = await injectedCount();
    const dry = await core.createNamespacedPod({ namespace: 'emojivoto', body: owned('dry-run-only'), dryRun: 'All' });
    expect(containerNames(dry)).toEqual(['linkerd-proxy', 'app']);
    // A real pod created right after does count; by then the dry run's would have been counted too.
    await createPod('emojivoto', owned('after-dry-run'));
    await eventually('the real pod counted', async () => ((await injectedCount()) === before + 1 ? true : undefined));
  });

  it('10. a static pod’s mirror is admitted unchanged, and the log says why; injected, the API server would refuse it', async () => {
    // What a kubelet creates for a static pod: the mirror annotation (the hash of its manifest) and the node set.
    const mirror = await createPod('emojivoto', podSpec('static-web-node-1', { 'kubernetes.io/config.mirror': '5a1e2f3c', 'kubernetes.io/config.source': 'file' }, { nodeName: 'node-1' }));
    expect(containerNames(mirror)).toEqual(['app']);
    expect(initNames(mirror)).toEqual([]);
    expect(Object.keys(mirror.metadata?.annotations ?? {}).sort()).toEqual(['kubernetes.io/config.mirror', 'kubernetes.io/config.source']);
    expect(await skipLine('emojivoto', 'static-web-node-1')).toBe(
      'skipped pod/emojivoto/static-web-node-1: pod is the mirror of a static pod, which the kubelet runs from its manifest file',
    );

    // Linkerd injects it: the same pod as injected for an ordinary pod, marked as a mirror, is refused by the
    // ServiceAccount admission plugin, because the proxy's identity volume projects a service-account token.
    const shape = await core.createNamespacedPod({ namespace: 'emojivoto', body: podSpec('injected-shape', {}, { nodeName: 'node-1', automountServiceAccountToken: false }), dryRun: 'All' });
    expect(containerNames(shape)).toEqual(['linkerd-proxy', 'app']);
    const { serviceAccountName: _account, serviceAccount: _alias, ...spec } = shape.spec ?? { containers: [] };
    const injectedMirror: V1Pod = {
      metadata: { name: 'static-injected-node-1', labels: shape.metadata?.labels ?? {}, annotations: { ...shape.metadata?.annotations, 'kubernetes.io/config.mirror': '5a1e2f3c' } },
      spec,
    };
    const refusal = await core.createNamespacedPod({ namespace: 'plain', body: injectedMirror }).then(
      () => 'created',
      (err: unknown) => String((err as { body?: string }).body ?? err),
    );
    expect(refusal).toContain('a mirror pod may not use ServiceAccountToken volume projections');
  });

  it('11. a Windows pod is admitted unchanged, and the log says why; injected, the API server would refuse it', async () => {
    const windows = await createPod('emojivoto', podSpec('windows-web', {}, { os: { name: 'windows' } }));
    expect(containerNames(windows)).toEqual(['app']);
    expect(initNames(windows)).toEqual([]);
    expect(await skipLine('emojivoto', 'windows-web')).toBe('skipped pod/emojivoto/windows-web: pod runs on Windows, where the Linux proxy cannot run');

    // Linkerd injects it: the same pod as injected for Linux is invalid for Windows, for the proxy's security context.
    const shape = await core.createNamespacedPod({ namespace: 'emojivoto', body: podSpec('linux-shape'), dryRun: 'All' });
    expect(containerNames(shape)).toEqual(['linkerd-proxy', 'app']);
    const injectedWindows: V1Pod = { metadata: { name: 'windows-injected', labels: shape.metadata?.labels ?? {} }, spec: { ...(shape.spec ?? { containers: [] }), os: { name: 'windows' } } };
    const refusal = await core.createNamespacedPod({ namespace: 'plain', body: injectedWindows }).then(
      () => 'created',
      (err: unknown) => String((err as { body?: string }).body ?? err),
    );
    expect(refusal).toContain('spec.containers[0].securityContext.runAsUser: Forbidden: cannot be set for a windows pod');
  });

  it('12. in a namespace enforcing Pod Security baseline, the API server refuses an injected pod for linkerd-init, as the webhook warns and explain says it will', async () => {
    await namespace('psa-baseline', { 'linkerd.io/inject': 'enabled' }, { 'pod-security.kubernetes.io/enforce': 'baseline' });
    const refused = await kubeRequest(cp, 'POST', '/api/v1/namespaces/psa-baseline/pods', { apiVersion: 'v1', kind: 'Pod', ...podSpec('under-baseline') });
    expect(refused.status).toBe(403);
    expect((refused.json as { message: string }).message).toBe(
      'pods "under-baseline" is forbidden: violates PodSecurity "baseline:latest": non-default capabilities (container "linkerd-init" must not include "NET_ADMIN", "NET_RAW" in securityContext.capabilities.add)',
    );
    // The webhook's warning comes with the refusal: kubectl prints it above the error.
    expect(refused.warnings.filter((w) => w.includes('pod_security_refuses_init'))).toEqual([
      '299 - "start-up risk (pod_security_refuses_init): the namespace enforces Pod Security \\"baseline\\", which forbids linkerd-init\'s NET_ADMIN and NET_RAW capabilities: the API server refuses the pod"',
    ]);

    // A Deployment's pods are created by its ReplicaSet, which drops warnings: the risk is an event on the Deployment,
    // beside the ReplicaSet's FailedCreate with the API server's refusal.
    await apps.createNamespacedDeployment({
      namespace: 'psa-baseline',
      body: {
        metadata: { name: 'refused' },
        spec: { replicas: 1, selector: { matchLabels: { app: 'refused' } }, template: { metadata: { labels: { app: 'refused' } }, spec: podSpec('refused').spec ?? { containers: [] } } },
      },
    });
    const risk = await eventually('the StartupRisk event on the Deployment', async () =>
      (await eventsFor('psa-baseline', 'Deployment', 'refused')).find((e) => e.reason === 'StartupRisk'),
    );
    expect(risk.type).toBe('Warning');
    expect(risk.message).toMatch(/^Linkerd sidecar proxy injected with start-up risks: pod_security_refuses_init: the namespace enforces Pod Security "baseline".*; fix: install the Linkerd CNI plugin/);
    const failedCreate = await eventually('the ReplicaSet’s FailedCreate', async () => {
      const list = await core.listNamespacedEvent({ namespace: 'psa-baseline', fieldSelector: 'involvedObject.kind=ReplicaSet,reason=FailedCreate' });
      return list.items[0];
    });
    expect(failedCreate.message).toContain('violates PodSecurity "baseline:latest": non-default capabilities (container "linkerd-init"');
    expect((await core.listNamespacedPod({ namespace: 'psa-baseline' })).items).toEqual([]);

    const manifests = JSON.stringify({
      kind: 'List',
      items: [
        { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'psa-baseline', annotations: { 'linkerd.io/inject': 'enabled' }, labels: { 'pod-security.kubernetes.io/enforce': 'baseline' } } },
        { apiVersion: 'v1', kind: 'Pod', ...podSpec('under-baseline'), metadata: { ...podSpec('under-baseline').metadata, namespace: 'psa-baseline' } },
      ],
    });
    const explained = await runExplain(['--trust-anchors', join(REPO_ROOT, 'examples', 'trust-anchors.pem'), '-o', 'json', '-'], { stdin: manifests });
    expect(explained.code, explained.stderr).toBe(0);
    const [pod] = JSON.parse(explained.stdout) as Explanation[];
    expect(pod?.risks.map((r) => r.code)).toEqual(['pod_security_refuses_init']);
  });

  it('13. a ResourceQuota on CPU refuses the injected containers unless a LimitRange gives them defaults, and a LimitRange max refuses a larger proxy, as the webhook warns and explain says', async () => {
    await namespace('quota', { 'linkerd.io/inject': 'enabled' });
    const quota = { apiVersion: 'v1', kind: 'ResourceQuota', metadata: { name: 'compute', namespace: 'quota' }, spec: { hard: { 'limits.cpu': '4', 'requests.cpu': '2' } } };
    const limitRange = { apiVersion: 'v1', kind: 'LimitRange', metadata: { name: 'defaults', namespace: 'quota' }, spec: { limits: [{ type: 'Container', default: { cpu: '100m' } }] } };
    const app = podSpec('under-quota');
    app.spec!.containers[0]!.resources = { limits: { cpu: '1' }, requests: { cpu: '500m' } };
    const pod = { apiVersion: 'v1', kind: 'Pod', ...app, metadata: { ...app.metadata, namespace: 'quota' } };
    // Raw requests: the client's model names LimitRange's `default` field `_default`.
    const create = async (path: string, body: unknown) => kubeRequest(cp, 'POST', `/api/v1/namespaces/quota/${path}`, body);
    expect((await create('resourcequotas', quota)).status).toBe(201);
    const explained = async (objects: unknown[]) => {
      const namespaceObject = { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'quota', annotations: { 'linkerd.io/inject': 'enabled' } } };
      const stdin = JSON.stringify({ kind: 'List', items: [namespaceObject, ...objects] });
      const result = await runExplain(['--trust-anchors', join(REPO_ROOT, 'examples', 'trust-anchors.pem'), '-o', 'json', '-'], { stdin });
      expect(result.code, result.stderr).toBe(0);
      return (JSON.parse(result.stdout) as Explanation[])[0]?.risks.map((r) => r.code);
    };

    const refusal = await eventually('the quota to be in force, and seen by the webhook', async () => {
      const res = await create('pods?dryRun=All', pod);
      return res.status === 403 && !res.body.includes('status unknown') && warned(res).length > 0 ? res : undefined;
    });
    expect((refusal.json as { message: string }).message).toBe(
      'pods "under-quota" is forbidden: failed quota: compute: must specify limits.cpu for: linkerd-init,linkerd-proxy; requests.cpu for: linkerd-init,linkerd-proxy',
    );
    expect(warned(refusal)).toEqual(['resource_quota_needs_resources']);
    expect(await explained([quota, pod])).toEqual(['resource_quota_needs_resources']);

    expect((await create('limitranges', limitRange)).status).toBe(201);
    const admitted = await eventually('the LimitRange to be in force, and seen by the webhook', async () => {
      const res = await create('pods?dryRun=All', pod);
      return res.status === 201 && warned(res).length === 0 ? (res.json as V1Pod) : undefined;
    });
    expect([...(admitted.spec?.initContainers ?? []), ...(admitted.spec?.containers ?? [])].map((c) => [c.name, c.resources?.limits?.['cpu']])).toEqual([
      ['linkerd-init', '100m'],
      ['linkerd-proxy', '100m'],
      ['app', '1'],
    ]);
    expect(await explained([quota, limitRange, pod])).toEqual([]);

    // The same LimitRange with a max, and a proxy whose annotation asks for more.
    const bounded = { ...limitRange, metadata: { name: 'bounded', namespace: 'quota' }, spec: { limits: [{ type: 'Container', max: { cpu: '500m' } }] } };
    expect((await create('limitranges', bounded)).status).toBe(201);
    // The app within the max, so that the API server's refusal (which names no container) can only be the proxy's.
    const smallApp = { ...app.spec!.containers[0]!, resources: { limits: { cpu: '400m' }, requests: { cpu: '200m' } } };
    const bigProxy = { ...pod, metadata: { ...pod.metadata, annotations: { 'config.linkerd.io/proxy-cpu-limit': '1' } }, spec: { ...pod.spec, containers: [smallApp] } };
    expect((await create('pods?dryRun=All', { ...bigProxy, metadata: pod.metadata })).status).toBe(201);
    const tooBig = await eventually('the max to be in force, and seen by the webhook', async () => {
      const res = await create('pods?dryRun=All', bigProxy);
      return res.status === 403 && warned(res).length > 0 ? res : undefined;
    });
    expect((tooBig.json as { message: string }).message).toBe('pods "under-quota" is forbidden: maximum cpu usage per Container is 500m, but limit is 1');
    expect(warned(tooBig)).toEqual(['limit_range_refuses_resources']);
    expect(await explained([quota, limitRange, bounded, bigProxy])).toEqual(['limit_range_refuses_resources']);

    // A Deployment of that pod: its ReplicaSet's pods are refused, and the Deployment is told why and what to change.
    const template = { metadata: { labels: { app: 'bounded' }, annotations: bigProxy.metadata.annotations }, spec: bigProxy.spec };
    await apps.createNamespacedDeployment({
      namespace: 'quota',
      body: { metadata: { name: 'bounded' }, spec: { replicas: 1, selector: { matchLabels: { app: 'bounded' } }, template } },
    });
    const risk = await eventually('the StartupRisk event on the Deployment', async () =>
      (await eventsFor('quota', 'Deployment', 'bounded')).find((e) => e.reason === 'StartupRisk'),
    );
    expect(risk.message).toMatch(
      /^Linkerd sidecar proxy injected with start-up risks: limit_range_refuses_resources: LimitRange "bounded": maximum cpu usage per Container is 500m, but limit is 1, for linkerd-init and linkerd-proxy: the API server refuses the pod; fix: bring the proxy's resources within the LimitRange/,
    );
  });

  it('13b. a scoped ResourceQuota counts only the pods its scopes take in (by deadline, by QoS class with the proxy), for the API server and the webhook alike', async () => {
    await namespace('scoped', { 'linkerd.io/inject': 'enabled' });
    const quota = {
      apiVersion: 'v1',
      kind: 'ResourceQuota',
      metadata: { name: 'deadlines', namespace: 'scoped' },
      spec: { hard: { 'limits.cpu': '4' }, scopes: ['Terminating'] },
    };
    const create = async (path: string, body: unknown) => kubeRequest(cp, 'POST', `/api/v1/namespaces/scoped/${path}`, body);
    expect((await create('resourcequotas', quota)).status).toBe(201);
    const pod = (name: string, extra: Partial<V1Pod['spec']>) => {
      const spec = podSpec(name, {}, extra);
      spec.spec!.containers[0]!.resources = { limits: { cpu: '1' } };
      return { apiVersion: 'v1', kind: 'Pod', ...spec, metadata: { ...spec.metadata, namespace: 'scoped' } };
    };
    // A pod with a deadline is Terminating: the quota counts it, and the injected containers state no CPU limit.
    const withDeadline = pod('with-deadline', { activeDeadlineSeconds: 600 });
    const refusal = await eventually('the quota to be in force, and seen by the webhook', async () => {
      const res = await create('pods?dryRun=All', withDeadline);
      return res.status === 403 && !res.body.includes('status unknown') && warned(res).length > 0 ? res : undefined;
    });
    expect((refusal.json as { message: string }).message).toBe(
      'pods "with-deadline" is forbidden: failed quota: deadlines: must specify limits.cpu for: linkerd-init,linkerd-proxy',
    );
    expect(warned(refusal)).toEqual(['resource_quota_needs_resources']);
    // Without a deadline the quota does not count the pod: admitted, and the webhook does not warn of it.
    const admitted = await create('pods?dryRun=All', pod('without-deadline', {}));
    expect(admitted.status).toBe(201);
    expect(warned(admitted)).toEqual([]);
    expect(containerNames(admitted.json as V1Pod)).toContain('linkerd-proxy');

    // A NotBestEffort quota: a pod whose containers state nothing is BestEffort and not counted, until a proxy CPU limit
    // makes it Burstable; then the app container must state its own, which the webhook says before the refusal.
    await namespace('burstable', { 'linkerd.io/inject': 'enabled' });
    const notBestEffort = { ...quota, metadata: { name: 'burstable', namespace: 'burstable' }, spec: { hard: { 'limits.cpu': '4' }, scopes: ['NotBestEffort'] } };
    const createIn = async (path: string, body: unknown) => kubeRequest(cp, 'POST', `/api/v1/namespaces/burstable/${path}`, body);
    expect((await createIn('resourcequotas', notBestEffort)).status).toBe(201);
    const plainPod = (name: string, annotations: Record<string, string>) => ({ apiVersion: 'v1', kind: 'Pod', ...podSpec(name, annotations), metadata: { ...podSpec(name, annotations).metadata, namespace: 'burstable' } });
    const limited = plainPod('proxy-limited', { 'config.linkerd.io/proxy-cpu-limit': '1' });
    const refusedApp = await eventually('the NotBestEffort quota to be in force, and seen by the webhook', async () => {
      const res = await createIn('pods?dryRun=All', limited);
      return res.status === 403 && !res.body.includes('status unknown') && warned(res).length > 0 ? res : undefined;
    });
    expect((refusedApp.json as { message: string }).message).toBe('pods "proxy-limited" is forbidden: failed quota: burstable: must specify limits.cpu for: app');
    expect(warned(refusedApp)).toEqual(['resource_quota_needs_resources']);
    const bestEffort = await createIn('pods?dryRun=All', plainPod('best-effort', {}));
    expect(bestEffort.status).toBe(201);
    expect(warned(bestEffort)).toEqual([]);
  });

  it('a Job’s pod is labelled with its Job, and the Job gets a StartupRisk event (which names a refused shutdown request); a Service gets the opaque-ports annotation', async () => {
    await batch.createNamespacedJob({
      namespace: 'emojivoto',
      body: { metadata: { name: 'migrate' }, spec: { template: { spec: { restartPolicy: 'Never', containers: [{ name: 'm', image: 'busybox' }] } } } },
    });
    const pod = await eventually('the Job’s pod', async () => (await core.listNamespacedPod({ namespace: 'emojivoto', labelSelector: 'job-name=migrate' })).items[0]);
    injectedPods.push({ namespace: 'emojivoto', name: pod.metadata?.name ?? '' });
    expect(pod.metadata?.labels?.['linkerd.io/proxy-job']).toBe('migrate');
    // With a classic sidecar the proxy outlives the Job's container: said where `kubectl describe job` shows it.
    const risk = await eventually('the StartupRisk event on the Job', async () => (await eventsFor('emojivoto', 'Job', 'migrate')).find((e) => e.reason === 'StartupRisk'));
    expect(risk.type).toBe('Warning');
    expect(risk.message).toMatch(/^Linkerd sidecar proxy injected with start-up risks: proxy_never_exits: the pod runs to completion \(a Job\)/);
    // A Job that asks its proxy to shut down, as Linkerd documents, while the endpoint is disabled (the default):
    // linkerd-await ignores the refusal, so the pod would never complete without a word. The Job is told which.
    await batch.createNamespacedJob({
      namespace: 'emojivoto',
      body: {
        metadata: { name: 'backup' },
        spec: { template: { spec: { restartPolicy: 'Never', containers: [{ name: 'b', image: 'busybox', command: ['/linkerd-await', '--shutdown', '--', '/backup'] }] } } },
      },
    });
    const refused = await eventually('the StartupRisk event on the shutting-down Job', async () =>
      (await eventsFor('emojivoto', 'Job', 'backup')).find((e) => e.reason === 'StartupRisk'),
    );
    expect(refused.message).toMatch(/^Linkerd sidecar proxy injected with start-up risks: proxy_shutdown_fails: container "b" asks the proxy to shut down \(linkerd-await --shutdown\), but the proxy's shutdown endpoint is disabled/);
    const backupPod = await eventually('the backup Job’s pod', async () => (await core.listNamespacedPod({ namespace: 'emojivoto', labelSelector: 'job-name=backup' })).items[0]);
    injectedPods.push({ namespace: 'emojivoto', name: backupPod.metadata?.name ?? '' });
    const svc = await core.createNamespacedService({ namespace: 'emojivoto', body: { metadata: { name: 'db' }, spec: { ports: [{ port: 5432 }] } } });
    expect(svc.metadata?.annotations?.['config.linkerd.io/opaque-ports']).toBe('5432');
  });

  it('a Deployment or StatefulSet annotated on its own metadata instead of its pod template is told where the annotation goes, injected or not', async () => {
    // The deployment controller copies the Deployment's annotations to its ReplicaSets, which the injector reads. A
    // StatefulSet owns its pods directly: the injector reads it after answering its pod.
    const spec = (app: string) => ({ selector: { matchLabels: { app } }, template: { metadata: { labels: { app } }, spec: podSpec(app).spec! } });
    await apps.createNamespacedDeployment({
      namespace: 'plain',
      body: { metadata: { name: 'misplaced', annotations: { 'linkerd.io/inject': 'enabled' } }, spec: { replicas: 1, ...spec('misplaced') } },
    });
    await apps.createNamespacedStatefulSet({
      namespace: 'plain',
      body: { metadata: { name: 'misplaced-db', annotations: { 'linkerd.io/inject': 'enabled' } }, spec: { replicas: 1, serviceName: 'misplaced-db', ...spec('misplaced-db') } },
    });
    for (const kind of ['Deployment', 'StatefulSet']) {
      const name = kind === 'Deployment' ? 'misplaced' : 'misplaced-db';
      const events = await eventually(`the InjectionSkipped and MisplacedAnnotation events on the ${kind}`, async () => {
        const all = await eventsFor('plain', kind, name);
        return all.some((e) => e.reason === 'InjectionSkipped') && all.some((e) => e.reason === 'MisplacedAnnotation') ? all : undefined;
      });
      const skipped = events.find((e) => e.reason === 'InjectionSkipped');
      expect(skipped?.type).toBe('Normal');
      expect(skipped?.message).toBe('Linkerd sidecar proxy injection skipped: neither the namespace nor the pod have the annotation "linkerd.io/inject:enabled"');
      const misplaced = events.find((e) => e.reason === 'MisplacedAnnotation');
      expect(misplaced?.type).toBe('Warning');
      expect(misplaced?.message).toBe(
        `linkerd.io/inject: enabled is on the ${kind}'s own metadata, which the injector never reads (it sees only the pods), ` +
          'so its pods are not injected: move it to spec.template.metadata.annotations',
      );
    }

    // Injected, but with a proxy setting left on the workload's own metadata: a Warning beside Linkerd's Injected event
    // names it, and the proxy indeed runs without it.
    await apps.createNamespacedDeployment({
      namespace: 'emojivoto',
      body: { metadata: { name: 'misplaced-config', annotations: { 'config.linkerd.io/proxy-cpu-limit': '3' } }, spec: { replicas: 1, ...spec('misplaced-config') } },
    });
    await apps.createNamespacedStatefulSet({
      namespace: 'emojivoto',
      body: {
        metadata: { name: 'misplaced-config-db', annotations: { 'config.linkerd.io/proxy-cpu-limit': '3' } },
        spec: { replicas: 1, serviceName: 'misplaced-config-db', ...spec('misplaced-config-db') },
      },
    });
    for (const kind of ['Deployment', 'StatefulSet']) {
      const name = kind === 'Deployment' ? 'misplaced-config' : 'misplaced-config-db';
      const events = await eventually(`the Injected and MisplacedAnnotation events on the ${kind}`, async () => {
        const all = await eventsFor('emojivoto', kind, name);
        return all.some((e) => e.reason === 'Injected') && all.some((e) => e.reason === 'MisplacedAnnotation') ? all : undefined;
      });
      expect(events.find((e) => e.reason === 'Injected')?.message).toBe('Linkerd sidecar proxy injected');
      const misplaced = events.find((e) => e.reason === 'MisplacedAnnotation');
      expect(misplaced?.type).toBe('Warning');
      expect(misplaced?.message).toBe(
        `config.linkerd.io/proxy-cpu-limit is on the ${kind}'s own metadata, which the injector never reads (it sees only the ` +
          'pods), so the proxy runs without it: move it to spec.template.metadata.annotations',
      );
    }
    const db = await eventually('the pod of misplaced-config-db', async () => (await core.listNamespacedPod({ namespace: 'emojivoto', labelSelector: 'app=misplaced-config-db' })).items[0]);
    injectedPods.push({ namespace: 'emojivoto', name: db.metadata?.name ?? '' });
    const pod = await eventually('the pod of misplaced-config', async () => (await core.listNamespacedPod({ namespace: 'emojivoto', labelSelector: 'app=misplaced-config' })).items[0]);
    injectedPods.push({ namespace: 'emojivoto', name: pod.metadata?.name ?? '' });
    const proxy = [...(pod.spec?.containers ?? []), ...(pod.spec?.initContainers ?? [])].find((c) => c.name === 'linkerd-proxy');
    expect(proxy?.resources?.limits?.['cpu']).not.toBe('3');
  });

  it("a pod that already has a volume of an injected one's name: served as it is when the same, refused with a warning when not", async () => {
    const base = podSpec('own-end-entity');
    const withVolume = (name: string, emptyDir: Record<string, unknown>) => ({
      apiVersion: 'v1',
      kind: 'Pod',
      ...base,
      metadata: { ...base.metadata, name },
      spec: { ...base.spec!, volumes: [{ name: 'linkerd-identity-end-entity', emptyDir }] },
    });
    // The volume as an injection leaves it: one volume of the name in the stored pod, mounted by the proxy.
    const same = await kubeRequest(cp, 'POST', '/api/v1/namespaces/emojivoto/pods', withVolume('own-end-entity', { medium: 'Memory' }));
    expect(same.status, JSON.stringify(same.json)).toBe(201);
    const stored = same.json as V1Pod;
    injectedPods.push({ namespace: 'emojivoto', name: 'own-end-entity' });
    expect((stored.spec?.volumes ?? []).filter((v) => v.name === 'linkerd-identity-end-entity')).toEqual([{ name: 'linkerd-identity-end-entity', emptyDir: { medium: 'Memory' } }]);
    expect(same.warnings).toEqual([]);
    // Another volume of that name: the API server refuses the pod with two, and the webhook's warning says why.
    const other = await kubeRequest(cp, 'POST', '/api/v1/namespaces/emojivoto/pods', withVolume('other-end-entity', {}));
    expect(other.status).toBe(422);
    expect((other.json as { message: string }).message).toMatch(/spec\.volumes\[\d+\]\.name: Duplicate value: "linkerd-identity-end-entity"/);
    expect(other.warnings.filter((w) => w.includes('name_taken'))).toEqual([
      '299 - "start-up risk (name_taken): the pod already has a volume named linkerd-identity-end-entity, unlike the one the injector adds under that name: the API server refuses a pod with two volumes of one name"',
    ]);
  });

  it('9. proxy.capabilities and additional env reach the stored pods; env the API server cannot decode is left out', async () => {
    // The API server's own answers to what the injector now refuses to write (no webhook in the way: the namespace
    // is plain): each of these in a container makes the whole pod undecodable.
    const undecodable: Array<[Record<string, unknown>, RegExp]> = [
      [{ env: [{ name: 'A', value: 1 }] }, /cannot unmarshal number into Go struct field EnvVar\.spec\.containers\.env\.value of type string/],
      [{ env: [{ name: 'A', value: true }] }, /cannot unmarshal bool into Go struct field EnvVar\.spec\.containers\.env\.value of type string/],
      [{ env: [{ name: 'A', value: { x: 'y' } }] }, /cannot unmarshal object into Go struct field EnvVar\.spec\.containers\.env\.value of type string/],
      [{ securityContext: { runAsUser: '1000' } }, /cannot unmarshal string into Go struct field SecurityContext\.spec\.containers\.securityContext\.runAsUser of type int64/],
      [{ securityContext: { capabilities: { drop: 'ALL' } } }, /cannot unmarshal string into Go struct field Capabilities\.spec\.containers\.securityContext\.capabilities\.drop of type \[\]v1\.Capability/],
      [{ resources: { requests: { cpu: 'lots' } } }, /quantities must match the regular expression/],
      [{ livenessProbe: { httpGet: { port: 4191 }, initialDelaySeconds: 1.5 } }, /cannot unmarshal number 1\.5 into Go struct field Probe\.spec\.containers\.livenessProbe\.initialDelaySeconds of type int32/],
    ];
    for (const [i, [fields, message]] of undecodable.entries()) {
      const refused = await kubeRequest(cp, 'POST', '/api/v1/namespaces/plain/pods', {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: `undecodable-${i}` },
        spec: { containers: [{ name: 'app', image: 'nginx:1.27', ...fields }] },
      });
      expect(refused.status, JSON.stringify(fields)).toBe(400);
      expect(refused.body, JSON.stringify(fields)).toMatch(message);
    }

    const values =
      'linkerdVersion: edge-26.8.3\ncniEnabled: false\nproxyInit:\n  iptablesMode: legacy\nproxy:\n  nativeSidecar: false\n' +
      '  capabilities:\n    add: [NET_ADMIN]\n    drop: [ALL]\n' +
      '  additionalEnv:\n    - name: EMPTY\n      value: ""\n' +
      '    - name: MEM\n      valueFrom:\n        resourceFieldRef: {containerName: app, resource: limits.memory, divisor: 1}\n';
    await core.replaceNamespacedConfigMap({ name: 'linkerd-config', namespace: 'linkerd', body: { metadata: { name: 'linkerd-config' }, data: { values } } });
    try {
      await eventually('the capabilities to apply', async () => {
        const probe = await core.createNamespacedPod({ namespace: 'emojivoto', body: podSpec('caps-probe'), dryRun: 'All' });
        return probe.spec?.containers[0]?.securityContext?.capabilities ? true : undefined;
      });
      const classic = await createPod('emojivoto', podSpec('caps-classic', { 'config.linkerd.io/proxy-additional-env': '[{"name":"A","value":1}]' }));
      const proxy = classic.spec?.containers[0];
      expect(proxy?.name).toBe('linkerd-proxy');
      expect(proxy?.securityContext?.capabilities).toEqual({ add: ['NET_ADMIN'], drop: ['ALL'] });
      expect(classic.spec?.initContainers?.[0]?.securityContext?.capabilities).toEqual({ add: ['NET_ADMIN', 'NET_RAW', 'NET_ADMIN'], drop: ['ALL'] });
      const env = proxy?.env ?? [];
      expect(env.map((e) => e.name)).not.toContain('A');
      expect(env.find((e) => e.name === 'EMPTY')).toEqual({ name: 'EMPTY' });
      expect(env.find((e) => e.name === 'MEM')?.valueFrom?.resourceFieldRef).toMatchObject({ containerName: 'app', resource: 'limits.memory' });

      const nativeEnv = '[{"NAME":"B","value":"x"},{"name":"C","value":null,"valueFrom":{"fieldRef":{"fieldPath":"metadata.name"}}}]';
      const native = await createPod(
        'emojivoto',
        podSpec('caps-native', { 'config.linkerd.io/proxy-enable-native-sidecar': 'true', 'config.linkerd.io/proxy-additional-env': nativeEnv }),
      );
      const [init, nativeProxy] = native.spec?.initContainers ?? [];
      expect(nativeProxy?.name).toBe('linkerd-proxy');
      expect(nativeProxy?.securityContext?.capabilities).toEqual({ add: ['NET_ADMIN'], drop: ['ALL'] });
      expect(init?.securityContext?.capabilities).toEqual({ add: ['NET_ADMIN', 'NET_RAW', 'NET_ADMIN'], drop: ['ALL'] });
      expect(nativeProxy?.env?.find((e) => e.name === 'B')).toEqual({ name: 'B', value: 'x' });
      expect(nativeProxy?.env?.find((e) => e.name === 'C')?.valueFrom?.fieldRef?.fieldPath).toBe('metadata.name');
    } finally {
      await core.replaceNamespacedConfigMap({ name: 'linkerd-config', namespace: 'linkerd', body: { metadata: { name: 'linkerd-config' }, data: { values: VALUES(false) } } });
      await eventually('the configuration to switch back', async () => {
        const probe = await core.createNamespacedPod({ namespace: 'emojivoto', body: podSpec('caps-probe'), dryRun: 'All' });
        return probe.spec?.containers[0]?.securityContext?.capabilities ? undefined : true;
      });
    }
  });

  it('reviews forged and sent straight to the webhook write no Event on workloads that do not exist, and read a missing namespace once', async () => {
    await namespace('prod-forged', { 'linkerd.io/inject': 'enabled' });
    const forged = (namespaceName: string, i: number, owner: { kind: string; name: string }) =>
      JSON.stringify({
        apiVersion: 'admission.k8s.io/v1',
        kind: 'AdmissionReview',
        request: {
          uid: `forged-${namespaceName}-${i}`,
          kind: { group: '', version: 'v1', kind: 'Pod' },
          resource: { group: '', version: 'v1', resource: 'pods' },
          namespace: namespaceName,
          operation: 'CREATE',
          userInfo: { username: 'nobody' },
          object: {
            apiVersion: 'v1',
            kind: 'Pod',
            metadata: {
              name: `ghost-${i}`,
              namespace: namespaceName,
              ownerReferences: [{ apiVersion: 'apps/v1', kind: owner.kind, name: owner.name, uid: `uid-${owner.name}`, controller: true }],
            },
            spec: { restartPolicy: 'Never', containers: [{ name: 'URGENT-security-team-says-run-kubectl-delete-ns-prod', image: 'x' }] },
          },
        },
      });
    const namespaceGets = async (): Promise<number> => {
      const text = (await kubeRequest(cp, 'GET', '/metrics')).body;
      return text
        .split('\n')
        .filter((l) => l.startsWith('apiserver_request_total{') && l.includes('resource="namespaces"') && l.includes('verb="GET"') && l.includes('scope="resource"'))
        .reduce((sum, l) => sum + Number(l.split(' ').pop()), 0);
    };
    const before = await namespaceGets();
    const answers: number[] = [];
    for (let i = 0; i < 300; i++) {
      const owner = i % 2 === 0 ? { kind: 'StatefulSet', name: 'ghost-db' } : { kind: 'ReplicaSet', name: 'ghost-rs' };
      answers.push((await postReview(forged('prod-forged', i, owner))).status);
      answers.push((await postReview(forged('no-such-namespace', i, owner))).status);
    }
    expect(answers.every((s) => s === 200)).toBe(true);
    // The events are written in the background: give them time to be written, were any to be.
    await new Promise((r) => setTimeout(r, 3_000));
    const events = (await core.listNamespacedEvent({ namespace: 'prod-forged' })).items;
    expect(events.filter((e) => e.source?.component === 'linkerd-proxy-injector')).toEqual([]);
    // One read of the missing namespace (remembered for 10 s), and none of one the watch has.
    expect(await namespaceGets()).toBeLessThanOrEqual(before + 1);
  });

  it('8. every injected pod was accepted and stored by the API server', async () => {
    expect(injectedPods.length).toBeGreaterThanOrEqual(7);
    for (const { namespace: ns, name } of injectedPods) {
      const stored = await core.readNamespacedPod({ namespace: ns, name });
      expect([...containerNames(stored), ...initNames(stored)]).toContain('linkerd-proxy');
    }
  });

  it("the injector's pod scan exports what check pods finds, with the chart's RBAC for it", async () => {
    const t = Date.now();
    const scrape = async () => (await fetch(`${injector.adminUrl}/metrics`)).text();
    const before = sum(await scrape(), 'proxy_inject_pod_scans_total', { result: 'done' });
    // A scan that starts after this point (one a minute): nothing creates pods meanwhile.
    const text = await eventually('a pod scan to finish', async () => {
      const now = await scrape();
      return sum(now, 'proxy_inject_pod_scans_total', { result: 'done' }) > before ? now : undefined;
    }, 150_000);
    const checked = await runCheckPods(['--kubeconfig', cp.kubeconfigPath, '-n', 'emojivoto', '-o', 'json'], {});
    const report = JSON.parse(checked.stdout) as PodsReport;
    const gauges = Object.fromEntries(samples(text, 'proxy_inject_pods').filter((g) => g.labels['namespace'] === 'emojivoto').map((g) => [g.labels['state'], g.value]));
    const counted = Object.fromEntries(Object.entries(report.counts).filter(([, n]) => n > 0));
    timings['wait for a pod scan'] = Date.now() - t;
    expect(gauges).toEqual(counted);
    expect(counted['meshed']).toBeGreaterThan(5);
    expect(sum(text, 'proxy_inject_pod_scans_total', { result: 'failed' })).toBe(0);
  });

  it('7. with the injector stopped, failurePolicy Ignore admits pods uninjected (which check pods then lists) and Fail rejects them', async () => {
    const url = injector.webhookUrl;
    expect(await injector.stop()).toBe(0);
    const t = Date.now();
    const admitted = await createPod('emojivoto', podSpec('while-down-ignore'));
    timings['create with injector down (Ignore)'] = Date.now() - t;
    expect(containerNames(admitted)).toEqual(['app']);
    // check pods finds it, and it alone, among the namespace's pods: every other one is meshed or skipped as asked.
    const checked = await runCheckPods(['--kubeconfig', cp.kubeconfigPath, '-n', 'emojivoto', '-o', 'json'], {});
    expect(checked.code, checked.stderr).toBe(1);
    const report = JSON.parse(checked.stdout) as PodsReport;
    const toActOn = report.workloads.filter((w) => w.counts.unmeshed_asked || w.counts.meshed_unasked || w.counts.drifted || w.counts.unreadable);
    const kindsOf = (name: string) => [...new Set(toActOn.find((w) => w.name === name)?.differences.map((d) => d.kind))];
    expect(toActOn.map((w) => [w.name, w.counts]).sort()).toEqual([
      ['caps-classic', { drifted: 1 }],
      ['caps-native', { drifted: 1 }],
      ['while-down-ignore', { unmeshed_asked: 1 }],
      ['with-cni', { drifted: 1 }],
    ]);
    expect(toActOn.find((w) => w.name === 'while-down-ignore')?.fix).toBe('create the pod again');
    // The pods made while linkerd-config said otherwise (test 4's cniEnabled, test 9's capabilities and env), which
    // it no longer does: drifted, with that kind; every other meshed pod is what a fresh admission makes now.
    expect(kindsOf('with-cni')).toEqual(['startup_mode']);
    expect(kindsOf('caps-classic')).toEqual(['proxy_config']);
    expect(kindsOf('caps-native')).toEqual(['proxy_config']);
    expect(report.counts.meshed).toBeGreaterThan(5);
    expect(report.counts.unreadable).toBe(0);
    expect(report.configuration).toMatch(/^ConfigMaps linkerd\/linkerd-config/);

    await setWebhook('Fail', url);
    const refusal = await eventually('failurePolicy Fail to apply', async () => {
      try {
        await core.createNamespacedPod({ namespace: 'emojivoto', body: podSpec(`while-down-fail-${Date.now()}`) });
        return undefined;
      } catch (err) {
        const body = (err as { body?: string }).body;
        return body ? (JSON.parse(body) as { message: string }).message : String(err);
      }
    });
    expect(refusal).toMatch(/^Internal error occurred: failed calling webhook "linkerd-proxy-injector.linkerd.io": .*connection refused/);
  });
});
