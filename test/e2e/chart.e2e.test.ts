/**
 * The Helm chart against a real kube-apiserver: installed and upgraded with helm (whose server-side apply refuses any
 * field the API server's schema does not declare), next to Linkerd's own injector objects, and then doing the injecting through its own webhook
 * configuration with the injector running on loopback under the chart's ServiceAccount and RBAC. Also the swap a
 * Linkerd user makes (Linkerd's webhook pointed away, then back) with both webhooks registered.
 */
import { X509Certificate } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  AdmissionregistrationV1Api,
  ApiextensionsV1Api,
  AppsV1Api,
  AuthorizationV1Api,
  CoreV1Api,
  KubeConfig,
  KubernetesObjectApi,
  loadAllYaml,
  type KubernetesObject,
  type V1MutatingWebhookConfiguration,
  type V1Pod,
} from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  CHART_DIR,
  HelmError,
  LINKERD_NAMESPACE_SELECTOR,
  NO_NAMESPACE_SELECTOR,
  certManagerCrdDir,
  helm,
  linkerdInjectorObjects,
  nameOf,
  prometheusOperatorCrdDir,
  renderChart,
  sameObject,
} from './support/chart.js';
import { freePorts, startControlPlane, type ControlPlane } from './support/control-plane.js';
import { startInjector, tokenKubeconfig, type RunningInjector } from './support/injector.js';
import { createLinkerdNamespace, createNamespace, eventually } from './support/kube.js';
import { sum } from '../support/metrics.js';
import { runHealCommand } from '../../src/cli/heal.js';

const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const TRUST_ANCHORS = readFileSync(join(REPO_ROOT, 'examples', 'trust-anchors.pem'), 'utf8');
const LINKERD_VALUES = 'linkerdVersion: edge-26.8.3\ncniEnabled: false\nproxy:\n  nativeSidecar: false\nproxyInit:\n  iptablesMode: legacy\n';
const RELEASE = 'proxy-injector';
const RELEASE_NS = 'proxy-injector';
const LINKERD_WEBHOOK = 'linkerd-proxy-injector-webhook-config';
/** A selector no namespace has, for the extra releases that must not intercept the other tests' pods. */
const NOWHERE = { matchLabels: { 'proxy-injector.io/test-never': 'true' } };

let cp: ControlPlane;
let kc: KubeConfig;
let core: CoreV1Api;
let apps: AppsV1Api;
let admission: AdmissionregistrationV1Api;
let objects: KubernetesObjectApi;
/** Stands in for Linkerd's own injector: the same pods for the same configuration, under Linkerd's names and RBAC. */
let linkerdInjector: RunningInjector;
let chartInjector: RunningInjector;
let chartValues: Record<string, unknown>;
let linkerdSnapshot: Map<string, string>;
const scratch = mkdtempSync(join(tmpdir(), 'chart-e2e-'));

const namespace = (name: string, annotations: Record<string, string> = {}, labels: Record<string, string> = {}) => createNamespace(core, name, annotations, labels);

const pod = (name: string): V1Pod => ({ metadata: { name, labels: { app: name } }, spec: { containers: [{ name: 'app', image: 'nginx:1.27' }] } });
const allContainers = (p: V1Pod) => [...(p.spec?.initContainers ?? []), ...(p.spec?.containers ?? [])].map((c) => c.name);

/** Sum of a counter's series whose labels include all of `labels`, read from an injector's /metrics. */
const counter = async (injector: RunningInjector, metric: string, labels: Record<string, string> = {}): Promise<number> =>
  sum(await (await fetch(`${injector.adminUrl}/metrics`)).text(), metric, labels);
const reviews = (injector: RunningInjector) => counter(injector, 'proxy_inject_admission_requests_total');

async function serviceAccountKubeconfig(ns: string, name: string, path: string): Promise<string> {
  const token = await core.createNamespacedServiceAccountToken({ name, namespace: ns, body: { spec: { audiences: [], expirationSeconds: 3600 } } });
  return tokenKubeconfig(path, cp.apiServerUrl, cp.caPem, token.status?.token ?? '');
}

async function readWebhook(name: string): Promise<V1MutatingWebhookConfiguration> {
  return admission.readMutatingWebhookConfiguration({ name });
}

async function setLinkerdNamespaceSelector(selector: object): Promise<void> {
  const current = await readWebhook(LINKERD_WEBHOOK);
  const hook = current.webhooks?.[0];
  if (!hook) throw new Error('Linkerd webhook has no entry');
  hook.namespaceSelector = selector;
  await admission.replaceMutatingWebhookConfiguration({ name: LINKERD_WEBHOOK, body: current });
}

async function snapshot(list: KubernetesObject[]): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  for (const o of list) {
    const read = await objects.read({ apiVersion: o.apiVersion ?? '', kind: o.kind ?? '', metadata: { name: o.metadata?.name ?? '', ...(o.metadata?.namespace && { namespace: o.metadata.namespace }) } });
    out.set(`${o.kind}/${o.metadata?.namespace ?? ''}/${o.metadata?.name ?? ''}`, read.metadata?.resourceVersion ?? '');
  }
  return out;
}

const kubeconfigOpt = () => ({ kubeconfig: cp.kubeconfigPath });

beforeAll(async () => {
  cp = await startControlPlane();
  kc = new KubeConfig();
  kc.loadFromString(cp.kubeconfig);
  core = kc.makeApiClient(CoreV1Api);
  apps = kc.makeApiClient(AppsV1Api);
  admission = kc.makeApiClient(AdmissionregistrationV1Api);
  objects = kc.makeApiClient(KubernetesObjectApi);

  // Linkerd's control plane namespace, its ConfigMaps, and its injector's objects. Linkerd's injector mounts its
  // ConfigMaps; its stand-in reads the same content from files.
  await createLinkerdNamespace(core, LINKERD_VALUES, TRUST_ANCHORS);
  const linkerdDir = join(scratch, 'linkerd');
  mkdirSync(linkerdDir, { recursive: true });
  writeFileSync(join(linkerdDir, 'values'), LINKERD_VALUES);
  writeFileSync(join(linkerdDir, 'ca-bundle.crt'), TRUST_ANCHORS);
  const withoutWebhook = linkerdInjectorObjects('linkerd', '', '').filter((o) => o.kind !== 'MutatingWebhookConfiguration');
  for (const o of withoutWebhook) await objects.create(o);
  linkerdInjector = await startInjector({
    workDir: linkerdDir,
    kubeconfigPath: await serviceAccountKubeconfig('linkerd', 'linkerd-proxy-injector', join(linkerdDir, 'kubeconfig')),
    extraArgs: ['--linkerd-namespace', 'linkerd', '--values', join(linkerdDir, 'values'), '--trust-anchors', join(linkerdDir, 'ca-bundle.crt')],
  });
  const linkerdObjects = linkerdInjectorObjects('linkerd', linkerdInjector.caPem, `${linkerdInjector.webhookUrl}/`);
  await objects.create(linkerdObjects.find((o) => o.kind === 'MutatingWebhookConfiguration') as KubernetesObject);
  linkerdSnapshot = await snapshot(linkerdObjects);

  // The chart, installed as a user would, but with the webhook called on loopback where the injector runs.
  const [port] = (await freePorts(1)) as [number];
  chartValues = { webhook: { url: `https://127.0.0.1:${port}/` } };
  helm(['install', RELEASE, CHART_DIR, '--namespace', RELEASE_NS, '--create-namespace'], { ...kubeconfigOpt(), values: chartValues });

  // The injector, from what the chart installed: its Secret's key pair, its ServiceAccount's token and its
  // Deployment's arguments (with only the listen addresses and the certificate directory made local).
  const workDir = join(scratch, 'chart');
  const tlsDir = join(workDir, 'tls');
  mkdirSync(tlsDir, { recursive: true });
  const secret = await core.readNamespacedSecret({ name: `${RELEASE}-tls`, namespace: RELEASE_NS });
  for (const key of ['tls.crt', 'tls.key', 'ca.crt']) writeFileSync(join(tlsDir, key), Buffer.from(secret.data?.[key] ?? '', 'base64'));
  const deployment = await apps.readNamespacedDeployment({ name: RELEASE, namespace: RELEASE_NS });
  const args = (deployment.spec?.template.spec?.containers[0]?.args ?? []).filter((a) => !/^--(addr|admin-addr|tls-dir)=/.test(a));
  expect(args[0]).toBe('serve');
  chartInjector = await startInjector({
    workDir,
    kubeconfigPath: await serviceAccountKubeconfig(RELEASE_NS, RELEASE, join(workDir, 'kubeconfig')),
    addr: `127.0.0.1:${port}`,
    tlsDir,
    extraArgs: [...args.slice(1), '--shutdown-delay=0s'],
  });

  await namespace('meshed', { 'linkerd.io/inject': 'enabled' });
}, 600_000);

afterAll(async () => {
  await chartInjector?.stop();
  await linkerdInjector?.stop();
  await cp?.stop();
  rmSync(scratch, { recursive: true, force: true });
});

describe('the Helm chart in a real cluster', () => {
  it('helm installs with server-side apply, which refuses a field the schema does not declare', () => {
    const bad = join(scratch, 'bad-chart');
    mkdirSync(join(bad, 'templates'), { recursive: true });
    writeFileSync(join(bad, 'Chart.yaml'), 'apiVersion: v2\nname: bad\nversion: 0.0.1\n');
    writeFileSync(join(bad, 'templates', 'cm.yaml'), 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: bad\ndata: {}\nnotAField: true\n');
    let error: unknown;
    try {
      helm(['install', 'bad', bad, '--namespace', 'default'], kubeconfigOpt());
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(HelmError);
    expect((error as HelmError).stderr).toMatch(/\.notAField: field not declared in schema/);
  });

  it('installs next to Linkerd without sharing a name with any of its objects, and leaves them untouched', async () => {
    const manifest = helm(['get', 'manifest', RELEASE, '--namespace', RELEASE_NS], kubeconfigOpt());
    const installed = (loadAllYaml(manifest) as KubernetesObject[]).filter(Boolean).map(nameOf);
    expect(installed.map((o) => o.kind).sort()).toEqual(
      ['ClusterRole', 'ClusterRoleBinding', 'Deployment', 'MutatingWebhookConfiguration', 'NetworkPolicy', 'Role', 'RoleBinding', 'Secret', 'Secret', 'Service', 'ServiceAccount'].sort(),
    );
    const linkerd = linkerdInjectorObjects('linkerd', '', '').map(nameOf);
    // Installed into Linkerd's own namespace (which mounts its ConfigMaps) as well as into a namespace of its own.
    const intoLinkerdNamespace = renderChart(RELEASE, 'linkerd').map(nameOf);
    for (const ours of [...installed, ...intoLinkerdNamespace]) {
      expect(linkerd.filter((theirs) => sameObject(ours, theirs)), `${ours.kind} ${ours.name}`).toEqual([]);
    }
    expect(() => renderChart('linkerd-proxy-injector', 'linkerd')).toThrow(/Linkerd's own objects use/);
    expect(await snapshot(linkerdInjectorObjects('linkerd', '', ''))).toEqual(linkerdSnapshot);
  });

  it("installs healing only when asked, with its own account, and pods the webhook's Service never selects", () => {
    const kinds = (values: Record<string, unknown>) => renderChart(RELEASE, RELEASE_NS, values).map((o) => `${o.kind}/${o.metadata?.name}`);
    expect(kinds({}).filter((k) => k.includes('-heal'))).toEqual([]);
    const healing = renderChart(RELEASE, RELEASE_NS, { heal: { enabled: true } });
    const deployment = healing.find((o) => o.kind === 'Deployment' && o.metadata?.name?.endsWith('-heal')) as unknown as {
      spec: { replicas: number; template: { metadata: { labels: Record<string, string> }; spec: { serviceAccountName: string; containers: Array<{ args: string[] }> } } };
    };
    expect(deployment.spec.replicas).toBe(1);
    expect(deployment.spec.template.spec.containers[0]?.args.slice(0, 3)).toEqual(['heal', '--apply', '--every=10m']);
    const service = healing.find((o) => o.kind === 'Service') as unknown as { spec: { selector: Record<string, string> } };
    const labels = deployment.spec.template.metadata.labels;
    expect(Object.entries(service.spec.selector).every(([k, v]) => labels[k] === v)).toBe(false);
    // The webhook's own objects do not change (with cert-manager's certificates, which a render does not generate).
    const certManager = { certificates: { mode: 'certManager' } };
    const webhook = (values: Record<string, unknown>) => renderChart(RELEASE, RELEASE_NS, { ...certManager, ...values }).filter((o) => !o.metadata?.name?.endsWith('-heal'));
    expect(JSON.stringify(webhook({ heal: { enabled: true } }))).toBe(JSON.stringify(webhook({})));
  });

  it('scrapes the injector and heal with PodMonitors only when asked, each selecting its own pods and port', () => {
    type Pods = { kind: string; metadata: { name: string }; spec: { template: { metadata: { labels: Record<string, string> }; spec: { priorityClassName?: string; containers: Array<{ ports: Array<{ name: string }> }> } } } };
    type Monitor = { kind: string; metadata: { name: string; labels: Record<string, string> }; spec: { selector: { matchLabels: Record<string, string> }; podMetricsEndpoints: Array<Record<string, string>> } };
    const kinds = (values: Record<string, unknown>) => renderChart(RELEASE, RELEASE_NS, values).map((o) => o.kind);
    expect(kinds({ heal: { enabled: true } })).not.toContain('PodMonitor');
    expect(kinds({ podMonitor: { enabled: true } }).filter((k) => k === 'PodMonitor')).toHaveLength(1);

    const rendered = renderChart(RELEASE, RELEASE_NS, {}, ['-f', join(CHART_DIR, 'ci', 'pod-monitor-values.yaml')]) as unknown as Array<Pods & Monitor>;
    const deployments = rendered.filter((o) => o.kind === 'Deployment') as Pods[];
    const monitors = rendered.filter((o) => o.kind === 'PodMonitor') as Monitor[];
    const selects = (m: Monitor, d: Pods) => Object.entries(m.spec.selector.matchLabels).every(([k, v]) => d.spec.template.metadata.labels[k] === v);
    const ports = (d: Pods) => d.spec.template.spec.containers.flatMap((c) => c.ports.map((p) => p.name));
    expect(monitors).toHaveLength(2);
    for (const m of monitors) {
      // Exactly one Deployment's pods, and a port those pods name.
      const selected = deployments.filter((d) => selects(m, d));
      expect(selected.map((d) => d.metadata.name), m.metadata.name).toEqual([m.metadata.name]);
      expect(ports(selected[0] as Pods)).toContain(m.spec.podMetricsEndpoints[0]?.port);
      expect(m.spec.podMetricsEndpoints).toEqual([{ port: m.metadata.name.endsWith('-heal') ? 'metrics' : 'admin', path: '/metrics', interval: '30s', scrapeTimeout: '15s' }]);
      expect(m.metadata.labels).toMatchObject({ release: 'prometheus', 'app.kubernetes.io/instance': RELEASE });
    }
    // Prometheus reaches the admin port only as networkPolicy.metricsFrom lets it (`_from`: the client's typed model).
    const policy = rendered.find((o) => (o.kind as string) === 'NetworkPolicy') as unknown as { spec: { ingress: Array<{ ports: Array<{ port: string }>; _from?: unknown[] }> } };
    expect(policy.spec.ingress.find((r) => r.ports.some((p) => p.port === 'admin'))?._from).toEqual([{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'monitoring' } } }]);
    expect(() => renderChart(RELEASE, RELEASE_NS, { podMonitor: { enabled: true, scrapeInterval: '30 seconds' } })).toThrow(/podMonitor\/scrapeInterval/);

    // The priority class is the injector's alone: heal restarts workloads, and nothing waits on it.
    const prioritized = renderChart(RELEASE, RELEASE_NS, { heal: { enabled: true }, priorityClassName: 'system-cluster-critical' }).filter((o) => o.kind === 'Deployment') as unknown as Pods[];
    expect(prioritized.map((d) => [d.metadata.name, d.spec.template.spec.priorityClassName]).sort()).toEqual([[RELEASE, 'system-cluster-critical'], [`${RELEASE}-heal`, undefined]]);
  });

  it("gives the heal Deployment's account what heal does, and nothing more: a plan read with it, and every verb checked", async () => {
    const ns = 'heal-rbac';
    await core.createNamespace({ body: { metadata: { name: ns } } });
    const rendered = renderChart('pi-heal', ns, { heal: { enabled: true } }, ['--show-only', 'templates/heal.yaml']);
    for (const o of rendered.filter((x) => x.kind !== 'Deployment')) await objects.create(o);
    const account = rendered.find((o) => o.kind === 'ServiceAccount')?.metadata?.name ?? '';
    const dir = mkdtempSync(join(scratch, 'heal-'));
    const healing = await runHealCommand(['--kubeconfig', await serviceAccountKubeconfig(ns, account, join(dir, 'kubeconfig')), '--injector-namespace', ns, '-o', 'json'], {});
    // Whatever the plan holds, it was read: nothing was forbidden.
    expect(healing.stderr).toBe('');
    expect(JSON.parse(healing.stdout)).toMatchObject({ plan: { counts: expect.objectContaining({ unreadable: 0 }) } });
    const authorization = kc.makeApiClient(AuthorizationV1Api);
    const may = async (verb: string, resource: string, namespace = 'meshed', group = '', subresource?: string, name?: string) => {
      const review = await authorization.createSubjectAccessReview({
        body: {
          spec: {
            user: `system:serviceaccount:${ns}:${account}`,
            groups: ['system:serviceaccounts', `system:serviceaccounts:${ns}`, 'system:authenticated'],
            resourceAttributes: { verb, resource, namespace, group, ...(subresource && { subresource }), ...(name && { name }) },
          },
        },
      });
      return review.status?.allowed === true;
    };
    const allowed = [
      await may('list', 'pods', ''),
      await may('list', 'namespaces', ''),
      await may('list', 'mutatingwebhookconfigurations', '', 'admissionregistration.k8s.io'),
      await may('get', 'configmaps', 'linkerd', '', undefined, 'linkerd-config'),
      await may('get', 'configmaps', 'linkerd', '', undefined, 'linkerd-identity-trust-roots'),
      ...(await Promise.all(['deployments', 'statefulsets', 'daemonsets'].flatMap((r) => ['get', 'patch'].map((v) => may(v, r, 'meshed', 'apps'))))),
      await may('create', 'events'),
    ];
    expect(allowed.every(Boolean)).toBe(true);
    const denied = [
      await may('delete', 'pods'),
      await may('create', 'pods', 'meshed', '', 'eviction'),
      await may('update', 'deployments', 'meshed', 'apps'),
      await may('delete', 'deployments', 'meshed', 'apps'),
      await may('get', 'secrets'),
      await may('get', 'configmaps', 'linkerd', '', undefined, 'other'),
      await may('patch', 'mutatingwebhookconfigurations', '', 'admissionregistration.k8s.io'),
    ];
    expect(denied.some(Boolean)).toBe(false);
  });

  it('grants list on pods and mutating webhook configurations only with podScan.interval, and passes the flag', () => {
    const rules = (values: Record<string, unknown>) => {
      const role = renderChart(RELEASE, RELEASE_NS, values, ['--show-only', 'templates/rbac.yaml']).find((o) => o.kind === 'ClusterRole') as unknown as { rules: Array<{ resources: string[]; verbs: string[] }> };
      return role.rules.map((r) => `${r.resources.join(',')}:${r.verbs.join(',')}`);
    };
    const args = (values: Record<string, unknown>) => {
      const deployment = renderChart(RELEASE, RELEASE_NS, values, ['--show-only', 'templates/deployment.yaml'])[0] as unknown as { spec: { template: { spec: { containers: Array<{ args: string[] }> } } } };
      return deployment.spec.template.spec.containers[0]?.args ?? [];
    };
    expect(rules({})).not.toContain('pods:list');
    expect(args({}).filter((a) => a.startsWith('--pod-scan-interval'))).toEqual([]);
    const scanning = { podScan: { interval: '10m' } };
    expect(rules(scanning)).toEqual([...rules({}), 'pods:list', 'mutatingwebhookconfigurations:list']);
    expect(args(scanning)).toContain('--pod-scan-interval=10m');
    expect(() => renderChart(RELEASE, RELEASE_NS, { podScan: { interval: 'hourly' } })).toThrow(/'\/podScan\/interval': 'hourly' does not match pattern/);
  });

  it('with both webhooks registered, a pod gets exactly one proxy: the injector called second sees it and skips', async () => {
    // kube-apiserver calls mutating webhooks in the order of their configurations' names: Linkerd's first.
    await eventually('both webhooks to be called', async () => {
      const [l, c] = [await reviews(linkerdInjector), await reviews(chartInjector)];
      await core.createNamespacedPod({ namespace: 'meshed', body: pod('probe'), dryRun: 'All' });
      return (await reviews(linkerdInjector)) > l && (await reviews(chartInjector)) > c ? true : undefined;
    });
    const skippedBefore = await counter(chartInjector, 'proxy_inject_admission_responses_total', { skip_reason: 'sidecar_already_exists' });
    const shadow = async () => ({
      same: await counter(chartInjector, 'proxy_inject_shadow_total', { verdict: 'same' }),
      differs: await counter(chartInjector, 'proxy_inject_shadow_total', { verdict: 'differs' }),
      unreadable: await counter(chartInjector, 'proxy_inject_shadow_total', { verdict: 'unreadable' }),
    });
    const shadowBefore = await shadow();
    const created = await core.createNamespacedPod({ namespace: 'meshed', body: pod('both-registered') });
    expect(allContainers(created).filter((n) => n === 'linkerd-proxy')).toHaveLength(1);
    expect(allContainers(created).filter((n) => n === 'linkerd-init')).toHaveLength(1);
    expect(await counter(chartInjector, 'proxy_inject_admission_responses_total', { skip_reason: 'sidecar_already_exists' })).toBe(skippedBefore + 1);
    // The injector called second, with the same configuration, would have made exactly the pod the first one made.
    expect(await shadow()).toEqual({ ...shadowBefore, same: shadowBefore.same + 1 });
  });

  it('the swap: with Linkerd’s webhook pointed at no namespace only the chart’s injector mutates; reverting restores Linkerd’s', async () => {
    await setLinkerdNamespaceSelector(NO_NAMESPACE_SELECTOR);
    await eventually('Linkerd’s webhook to stop being called', async () => {
      const l = await reviews(linkerdInjector);
      const probe = await core.createNamespacedPod({ namespace: 'meshed', body: pod('swap-probe'), dryRun: 'All' });
      return (await reviews(linkerdInjector)) === l && allContainers(probe).includes('linkerd-proxy') ? true : undefined;
    });
    const linkerdBefore = await reviews(linkerdInjector);
    const injectedBefore = await counter(chartInjector, 'proxy_inject_admission_responses_total', { skip: 'false' });
    const created = await core.createNamespacedPod({ namespace: 'meshed', body: pod('after-swap') });
    expect(allContainers(created)).toEqual(['linkerd-init', 'linkerd-proxy', 'app']);
    expect(created.metadata?.annotations?.['linkerd.io/created-by']).toMatch(/^linkerd\/proxy-injector /);
    expect(await counter(chartInjector, 'proxy_inject_admission_responses_total', { skip: 'false' })).toBe(injectedBefore + 1);
    expect(await reviews(linkerdInjector)).toBe(linkerdBefore);

    // Rolling back is the same step reverted: Linkerd's injector is called again (first, by name) and injects.
    await setLinkerdNamespaceSelector(LINKERD_NAMESPACE_SELECTOR);
    await eventually('Linkerd’s webhook to be called again', async () => {
      const l = await reviews(linkerdInjector);
      await core.createNamespacedPod({ namespace: 'meshed', body: pod('rollback-probe'), dryRun: 'All' });
      return (await reviews(linkerdInjector)) > l ? true : undefined;
    });
    const rolledBack = await core.createNamespacedPod({ namespace: 'meshed', body: pod('after-rollback') });
    expect(allContainers(rolledBack).filter((n) => n === 'linkerd-proxy')).toHaveLength(1);
    await setLinkerdNamespaceSelector(NO_NAMESPACE_SELECTOR);
  });

  it('helm upgrade keeps the CA and the serving certificate; near expiry it signs a new one with the same CA', async () => {
    const state = async () => {
      const hook = await readWebhook(`${RELEASE}-${RELEASE_NS}`);
      const secret = await core.readNamespacedSecret({ name: `${RELEASE}-tls`, namespace: RELEASE_NS });
      const deployment = await apps.readNamespacedDeployment({ name: RELEASE, namespace: RELEASE_NS });
      return {
        caBundle: hook.webhooks?.[0]?.clientConfig.caBundle ?? '',
        cert: secret.data?.['tls.crt'] ?? '',
        checksum: deployment.spec?.template.metadata?.annotations?.['checksum/config'] ?? '',
      };
    };
    const before = await state();
    expect(before.caBundle).not.toBe('');
    helm(['upgrade', RELEASE, CHART_DIR, '--namespace', RELEASE_NS], { ...kubeconfigOpt(), values: chartValues });
    expect(await state()).toEqual(before);

    // Renewal window wider than the certificate's life: this upgrade must renew, from the same CA.
    helm(['upgrade', RELEASE, CHART_DIR, '--namespace', RELEASE_NS], { ...kubeconfigOpt(), values: { ...chartValues, certificates: { generate: { renewBeforeDays: 400 } } } });
    const renewed = await state();
    expect(renewed.caBundle).toBe(before.caBundle);
    expect(renewed.cert).not.toBe(before.cert);
    expect(renewed.checksum).not.toBe(before.checksum);
    const ca = new X509Certificate(Buffer.from(renewed.caBundle, 'base64'));
    const cert = new X509Certificate(Buffer.from(renewed.cert, 'base64'));
    expect(cert.verify(ca.publicKey)).toBe(true);
    expect(cert.subjectAltName).toContain('DNS:proxy-injector.proxy-injector.svc');
    expect(cert.subjectAltName).toContain('IP Address:127.0.0.1');
    helm(['upgrade', RELEASE, CHART_DIR, '--namespace', RELEASE_NS], { ...kubeconfigOpt(), values: chartValues });
  });

  it('the cert-manager, existing-Secret, HA and PodMonitor variants are accepted by the API server', async () => {
    // cert-manager's and Prometheus Operator's CRDs, from the Go modules pinned beside helm, so that Certificate, Issuer
    // and PodMonitor are checked too (helm's server-side apply refuses a field their schemas do not declare).
    const extensions = kc.makeApiClient(ApiextensionsV1Api);
    const crdFiles = [
      ...['cert-manager.io_certificates.yaml', 'cert-manager.io_issuers.yaml', 'cert-manager.io_clusterissuers.yaml'].map((f) => join(certManagerCrdDir(), f)),
      join(prometheusOperatorCrdDir(), 'monitoring.coreos.com_podmonitors.yaml'),
    ];
    for (const file of crdFiles) {
      for (const crd of loadAllYaml(readFileSync(file, 'utf8')) as KubernetesObject[]) {
        if (crd) await objects.create(crd);
      }
    }
    for (const name of ['certificates.cert-manager.io', 'issuers.cert-manager.io', 'clusterissuers.cert-manager.io', 'podmonitors.monitoring.coreos.com']) {
      await eventually(`CRD ${name} established`, async () => {
        const crd = await extensions.readCustomResourceDefinition({ name });
        return crd.status?.conditions?.some((c) => c.type === 'Established' && c.status === 'True') ? true : undefined;
      });
    }
    await core.createNamespace({ body: { metadata: { name: 'variant-secret' } } });
    await core.createNamespacedSecret({
      namespace: 'variant-secret',
      body: { metadata: { name: 'serving' }, type: 'kubernetes.io/tls', data: { 'tls.crt': Buffer.from(chartInjector.caPem).toString('base64'), 'tls.key': Buffer.from('unused').toString('base64') } },
    });
    const haValues = readFileSync(join(CHART_DIR, 'values-ha.yaml'), 'utf8');
    // The Priority admission plugin gives a pod the value of its class, and refuses one whose class does not exist: the
    // HA pods the ReplicaSet controller created, stored with system-cluster-critical's value, were admitted with it.
    const criticalPods = async (ns: string) => {
      const pods = await eventually(`the HA ReplicaSet's 3 pods in ${ns}`, async () => {
        const list = await core.listNamespacedPod({ namespace: ns });
        return list.items.length === 3 ? list.items : undefined;
      });
      expect(pods.map((p) => [p.spec?.priorityClassName, p.spec?.priority])).toEqual(Array(3).fill(['system-cluster-critical', 2_000_000_000]));
    };
    // Both PodMonitors stored, each naming the port its pods serve /metrics on.
    const podMonitors = async (ns: string) => {
      const list = (await objects.list('monitoring.coreos.com/v1', 'PodMonitor', ns)) as unknown as { items: Array<{ metadata: { name: string }; spec: { podMetricsEndpoints: Array<{ port: string }> } }> };
      const stored = list.items.map((m) => [m.metadata.name, m.spec.podMetricsEndpoints.map((e) => e.port)]).sort();
      expect(stored).toEqual([[`pi-${ns}-proxy-injector`, ['admin']], [`pi-${ns}-proxy-injector-heal`, ['metrics']]]);
    };
    const variants: Array<{ ns: string; values: Record<string, unknown>; args?: string[]; kinds: string[]; check?: (ns: string) => Promise<void> }> = [
      { ns: 'variant-cm', values: { certificates: { mode: 'certManager' } }, kinds: ['Certificate', 'Certificate', 'Issuer', 'Issuer'] },
      { ns: 'variant-cm-issuer', values: { certificates: { mode: 'certManager', certManager: { issuerRef: { name: 'corp', kind: 'ClusterIssuer' } } } }, kinds: ['Certificate'] },
      { ns: 'variant-secret', values: { certificates: { mode: 'existingSecret', existingSecret: { name: 'serving', caBundle: chartInjector.caPem } } }, kinds: [] },
      { ns: 'variant-ha', values: {}, args: ['-f', join(CHART_DIR, 'values-ha.yaml')], kinds: ['PodDisruptionBudget', 'Secret', 'Secret'], check: criticalPods },
      { ns: 'linkerd', values: {}, kinds: ['Secret', 'Secret'] },
      { ns: 'variant-heal', values: {}, args: ['-f', join(CHART_DIR, 'ci', 'heal-values.yaml')], kinds: ['Deployment', 'Deployment', 'ServiceAccount', 'ServiceAccount', 'ClusterRole', 'ClusterRole'] },
      { ns: 'variant-monitor', values: {}, args: ['-f', join(CHART_DIR, 'ci', 'pod-monitor-values.yaml')], kinds: ['PodMonitor'], check: podMonitors },
    ];
    expect(haValues).toMatch(/failurePolicy: Fail/);
    for (const v of variants) {
      const values = { ...v.values, webhook: { namespaceSelector: NOWHERE } };
      const release = `pi-${v.ns}`;
      helm(['install', release, CHART_DIR, '--namespace', v.ns, '--create-namespace', ...(v.args ?? [])], { ...kubeconfigOpt(), values });
      const kinds = (loadAllYaml(helm(['get', 'manifest', release, '--namespace', v.ns], kubeconfigOpt())) as KubernetesObject[]).filter(Boolean).map((o) => o.kind ?? '');
      for (const kind of v.kinds) expect(kinds, `${v.ns} installs ${kind}`).toContain(kind);
      expect(kinds).toContain('MutatingWebhookConfiguration');
      await v.check?.(v.ns);
      helm(['uninstall', release, '--namespace', v.ns, '--wait=false'], kubeconfigOpt());
    }
  });

  it('under failurePolicy Fail with no injector answering, the injector’s own namespace still creates pods', async () => {
    helm(['upgrade', RELEASE, CHART_DIR, '--namespace', RELEASE_NS], { ...kubeconfigOpt(), values: { ...chartValues, webhook: { ...(chartValues['webhook'] as object), failurePolicy: 'Fail' } } });
    expect(await chartInjector.stop(), chartInjector.logs.slice(-10).join('\n')).toBe(0);
    const refusal = await eventually('failurePolicy Fail to apply', async () => {
      try {
        await core.createNamespacedPod({ namespace: 'meshed', body: pod(`refused-${Date.now()}`) });
        return undefined;
      } catch (err) {
        const body = (err as { body?: string }).body;
        return body ? (JSON.parse(body) as { message: string }).message : String(err);
      }
    });
    expect(refusal).toMatch(/failed calling webhook "proxy-injector\.proxy-injector\.proxy-injector\.io"/);
    const own = await core.createNamespacedPod({ namespace: RELEASE_NS, body: pod('injector-replacement') });
    expect(allContainers(own)).toEqual(['app']);
  });
});
