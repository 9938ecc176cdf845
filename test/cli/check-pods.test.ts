/**
 * `check pods`: every running pod held against what the injector would make of it now, read from a cluster a page at a
 * time and grouped by the workload that made it.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { auditPods, runCheckPods, type AuditOptions, type PodsReport, type WorkloadAudit } from '../../src/cli/check-pods.js';
import { fakeApi, kubeconfigText } from '../cluster/fake-api.js';
import { OTHER_TRUST_ANCHOR } from '../support/engine.js';
import { CONFIG_MAPS, configWith, meshed, ns, pod, type PodOptions } from '../support/running-pods.js';

type Obj = Record<string, unknown>;

const INJECT = { 'linkerd.io/inject': 'enabled' };
const NAMESPACES = [
  ns('meshed', INJECT),
  ns('drift', INJECT),
  ns('plain'),
  ns('kube-system', INJECT),
  ns('opted-out', INJECT, { 'config.linkerd.io/admission-webhooks': 'disabled' }),
];
const deploymentPod = (namespace: string, deployment: string, hash: string, name: string, more: PodOptions = {}) =>
  pod(namespace, `${deployment}-${hash}-${name}`, { owner: ['ReplicaSet', `${deployment}-${hash}`], labels: { 'pod-template-hash': hash }, ...more });
const DEBUG = configWith((v) => (v.proxy.logLevel = 'debug'));
const REGISTRY = { 'config.linkerd.io/proxy-image': 'registry.example:5000/linkerd/proxy' };

const PODS: Obj[] = [
  meshed(deploymentPod('meshed', 'web', '7d4b', 'x1')),
  deploymentPod('meshed', 'web', '0a1b', 'x2'),
  pod('meshed', 'db-0', { owner: ['StatefulSet', 'db'] }),
  pod('meshed', 'host', { spec: { hostNetwork: true } }),
  pod('meshed', 'done', { phase: 'Succeeded' }),
  pod('plain', 'solo', { annotations: INJECT }),
  // A proxy that nothing asks for: the webhook writes its namespace's linkerd.io/inject on the pods it injects.
  pod('plain', 'left', { proxy: true, owner: ['DaemonSet', 'agent'] }),
  pod('plain', 'quiet'),
  pod('kube-system', 'coredns'),
  pod('opted-out', 'x'),
  pod('meshed', 'linkerd-identity', { labels: { 'linkerd.io/control-plane-component': 'identity' } }),
  // Two pods made before the proxy's log level changed, one after it.
  meshed(deploymentPod('drift', 'api', '5f6', 'a'), DEBUG),
  meshed(deploymentPod('drift', 'api', '5f6', 'b'), DEBUG),
  meshed(deploymentPod('drift', 'api', '9c1', 'c')),
  // Made before the trust anchors changed.
  meshed(pod('drift', 'cache-0', { owner: ['StatefulSet', 'cache'] }), configWith(() => {}, OTHER_TRUST_ANCHOR)),
  // The proxy as a native sidecar, in initContainers.
  meshed(pod('drift', 'agent-q', { owner: ['DaemonSet', 'agent'], annotations: { 'config.alpha.linkerd.io/proxy-enable-native-sidecar': 'true' } })),
  // A proxy image from a registry with a port, current and from another release.
  meshed(pod('drift', 'reg', { annotations: REGISTRY })),
  meshed(pod('drift', 'reg-old', { annotations: REGISTRY }), configWith((v) => (v.proxy.image.version = 'edge-26.7.1'))),
  // A Job's pod that has finished, made before the change: left out.
  meshed(pod('drift', 'batch-x', { owner: ['Job', 'batch'], phase: 'Succeeded' }), DEBUG),
];

const WEBHOOKS = '/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations';
const POD_RULES = [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['pods', 'services'] }];
const nsOf = (p: Obj) => (p['metadata'] as { namespace: string }).namespace;

/** A fake API server with the namespaces, pods and webhooks given, and Linkerd's ConfigMaps unless `configMaps` is false. */
function cluster(webhooks?: unknown[], configMaps = true, pods = PODS) {
  return fakeApi({
    lists: {
      '/api/v1/namespaces': NAMESPACES,
      '/api/v1/pods': pods,
      '/api/v1/namespaces/meshed/pods': pods.filter((p) => nsOf(p) === 'meshed'),
      [WEBHOOKS]: webhooks ?? [],
    },
    read: (path, res) => {
      const found = NAMESPACES.find((n) => path === `/api/v1/namespaces/${n.metadata.name}`) ?? (configMaps ? CONFIG_MAPS[path] : undefined);
      res.writeHead(found ? 200 : 404, { 'content-type': 'application/json' }).end(JSON.stringify(found ?? { kind: 'Status', code: 404, message: 'not found' }));
    },
  });
}

async function audit(options: AuditOptions = {}, webhooks?: unknown[], configMaps = true): Promise<PodsReport> {
  const api = await cluster(webhooks, configMaps);
  try {
    return await auditPods({ client: api.client, server: 'fake', source: 'test' }, options);
  } finally {
    await api.close();
  }
}

const podStates = (report: PodsReport) =>
  Object.fromEntries(report.workloads.flatMap((w) => w.pods.map((p) => [`${w.namespace}/${p.name}`, p.state])));
const workload = (report: PodsReport, namespace: string, kind: string, name: string): WorkloadAudit | undefined =>
  report.workloads.find((w) => w.namespace === namespace && w.kind === kind && w.name === name);

describe('check pods', () => {
  it('sorts every running pod by what its namespace and template ask, and each meshed one by its proxy', async () => {
    const report = await audit();
    expect(podStates(report)).toEqual({
      'meshed/web-7d4b-x1': 'meshed',
      'meshed/web-0a1b-x2': 'unmeshed_asked',
      'meshed/db-0': 'unmeshed_asked',
      'meshed/host': 'skipped',
      'plain/solo': 'unmeshed_asked',
      'plain/left': 'meshed_unasked',
      'plain/quiet': 'skipped',
      'kube-system/coredns': 'not_sent',
      'opted-out/x': 'not_sent',
      'meshed/linkerd-identity': 'not_sent',
      'drift/api-5f6-a': 'drifted',
      'drift/api-5f6-b': 'drifted',
      'drift/api-9c1-c': 'meshed',
      'drift/cache-0': 'drifted',
      'drift/agent-q': 'meshed',
      'drift/reg': 'meshed',
      'drift/reg-old': 'drifted',
    });
    expect(report.counts).toEqual({ meshed: 4, drifted: 4, unreadable: 0, unmeshed_asked: 3, meshed_unasked: 1, skipped: 2, not_sent: 3 });
    expect(report.configuration).toBe('ConfigMaps linkerd/linkerd-config and linkerd/linkerd-identity-trust-roots');
    // No injector's webhook registered here (the fake has no such list): Linkerd's selectors stand in, and it says so.
    expect(report.assumed).toMatch(/Linkerd's default selectors are assumed$/);
  });

  it('groups pods by the workload that made them, with the command that makes them again', async () => {
    const report = await audit();
    // The Deployment from its ReplicaSets' names and the pods' template hashes: one workload for two ReplicaSets.
    const web = workload(report, 'meshed', 'Deployment', 'web');
    expect(web).toMatchObject({ counts: { meshed: 1, unmeshed_asked: 1 }, fix: 'kubectl rollout restart deployment/web -n meshed' });
    expect(web?.pods.find((p) => p.state === 'unmeshed_asked')?.why).toMatch(/^it has no proxy, though its namespace asks for it: it was created while the injector did not answer/);
    expect(workload(report, 'meshed', 'StatefulSet', 'db')?.fix).toBe('kubectl rollout restart statefulset/db -n meshed');
    expect(workload(report, 'plain', 'Pod', 'solo')).toMatchObject({ fix: 'create the pod again' });
    expect(workload(report, 'plain', 'Pod', 'solo')?.pods[0]?.why).toMatch(/though its pod template asks for it/);
    expect(workload(report, 'plain', 'DaemonSet', 'agent')?.fix).toBe('kubectl rollout restart daemonset/agent -n plain');
    expect(workload(report, 'meshed', 'Pod', 'host')?.pods[0]?.why).toBe('the injector would skip it: hostNetwork is enabled');
    // Nothing to do about a workload whose pods are all as the injector would make them.
    expect(workload(report, 'drift', 'DaemonSet', 'agent')).toMatchObject({ counts: { meshed: 1 }, differences: [] });
    expect(workload(report, 'drift', 'DaemonSet', 'agent')?.fix).toBeUndefined();
    // A finished pod is left out, and so is its Job.
    expect(workload(report, 'drift', 'Job', 'batch')).toBeUndefined();
  });

  it('says what drifted pods differ in, each difference once with how many pods have it', async () => {
    const report = await audit();
    const api = workload(report, 'drift', 'Deployment', 'api');
    expect(api).toMatchObject({ counts: { drifted: 2, meshed: 1 }, fix: 'kubectl rollout restart deployment/api -n drift' });
    expect(api?.differences).toEqual([
      { kind: 'proxy_config', path: 'containers[linkerd-proxy].env[LINKERD2_PROXY_LOG]', expected: 'warn,linkerd=info,[{headers}]=off,[{request}]=off', actual: 'debug,[{headers}]=off,[{request}]=off', pods: 2 },
    ]);
    expect(api?.pods.filter((p) => p.state === 'drifted').map((p) => p.kinds)).toEqual([['proxy_config'], ['proxy_config']]);
    const cache = workload(report, 'drift', 'StatefulSet', 'cache');
    expect(new Set(cache?.differences.map((d) => d.kind))).toEqual(new Set(['trust_anchors']));
    expect(cache?.differences.map((d) => d.path)).toContain('containers[linkerd-proxy].env[LINKERD2_PROXY_IDENTITY_TRUST_ANCHORS]');
    // The registry's port is part of the reference, compared as it is: only the release differs.
    const old = workload(report, 'drift', 'Pod', 'reg-old');
    expect(old?.differences.filter((d) => d.path === 'containers[linkerd-proxy].image')).toEqual([
      expect.objectContaining({ kind: 'proxy_image', expected: expect.stringMatching(/^registry\.example:5000\/linkerd\/proxy:/), actual: 'registry.example:5000/linkerd/proxy:edge-26.7.1' }),
    ]);
    expect(old?.fix).toBe('create the pod again');
  });

  it('calls no meshed pod current without the configuration: they are not compared, and it says why', async () => {
    const report = await audit({}, undefined, false);
    expect(report.counts.meshed).toBe(0);
    expect(report.counts.unreadable).toBe(8);
    expect(report.configuration).toMatch(/^the Linkerd configuration could not be read \(.*404.*\): meshed pods are not compared$/);
    // Pods without a proxy are judged as before: only the decision is read.
    expect(report.counts.unmeshed_asked).toBe(3);
  });

  it('reads the configuration from the control-plane namespace it is given', async () => {
    const report = await audit({ controlPlaneNamespace: 'mesh-system' });
    expect(report.configuration).toMatch(/^the Linkerd configuration could not be read/);
  });

  it("reads which pods reach an injector from the injectors' webhooks in the cluster", async () => {
    const webhook = (name: string, extra: Record<string, unknown>) => ({ metadata: { name }, webhooks: [{ name, rules: POD_RULES, ...extra }] });
    const report = await audit({}, [
      // Another webhook of pods, not an injector's: not read.
      webhook('policy.example.com', { namespaceSelector: { matchLabels: { nothing: 'matches' } } }),
      // This project's, as its chart names it: every namespace but plain, and pods not labelled skip-mesh.
      webhook('proxy-injector.mesh.proxy-injector.io', {
        namespaceSelector: { matchExpressions: [{ key: 'kubernetes.io/metadata.name', operator: 'NotIn', values: ['plain'] }] },
        objectSelector: { matchExpressions: [{ key: 'skip-mesh', operator: 'DoesNotExist' }] },
      }),
    ]);
    expect(report.webhooks).toEqual(['proxy-injector.mesh.proxy-injector.io']);
    expect(report.assumed).toBeUndefined();
    const state = podStates(report);
    // plain is not selected now; kube-system and the Linkerd-labelled pod are, and are asked for by their namespace.
    expect(state['plain/solo']).toBe('not_sent');
    expect(state['plain/left']).toBe('not_sent');
    expect(state['kube-system/coredns']).toBe('unmeshed_asked');
    expect(state['meshed/linkerd-identity']).toBe('unmeshed_asked');
    expect(state['opted-out/x']).toBe('unmeshed_asked');
  });

  it('reads one namespace alone when asked', async () => {
    const report = await audit({ namespace: 'meshed' });
    expect(new Set(report.workloads.map((w) => w.namespace))).toEqual(new Set(['meshed']));
    expect(report.counts.unmeshed_asked).toBe(2);
  });

  it('reads the pods a page at a time, a workload whose pods span pages still one', async () => {
    // Two pods injected, copied under a thousand names: three pages of 500.
    const made = [meshed(deploymentPod('drift', 'wide', 'aa1', 'p')), meshed(deploymentPod('drift', 'wide', 'aa1', 'p'), DEBUG)];
    const many = Array.from({ length: 1_203 }, (_, i) => {
      const copy = structuredClone(made[i % 2]) as Obj;
      (copy['metadata'] as Obj)['name'] = `wide-aa1-p${i}`;
      return copy;
    });
    const api = await cluster(undefined, true, many);
    try {
      const report = await auditPods({ client: api.client, server: 'fake', source: 'test' });
      expect(report.workloads).toHaveLength(1);
      expect(report.workloads[0]).toMatchObject({ counts: { meshed: 602, drifted: 601 } });
      expect(report.workloads[0]?.differences).toEqual([expect.objectContaining({ path: 'containers[linkerd-proxy].env[LINKERD2_PROXY_LOG]', pods: 601 })]);
    } finally {
      await api.close();
    }
  });

  it('calls a pod the engine refuses unreadable, and audits the rest', async () => {
    const huge = pod('drift', 'huge', { annotations: { 'linkerd.io/inject': 'enabled', big: 'x'.repeat(300 * 1024) } });
    const api = await cluster(undefined, true, [huge, meshed(pod('drift', 'fine'))]);
    try {
      const report = await auditPods({ client: api.client, server: 'fake', source: 'test' });
      expect(podStates(report)).toEqual({ 'drift/huge': 'unreadable', 'drift/fine': 'meshed' });
      expect(workload(report, 'drift', 'Pod', 'huge')?.pods[0]?.why).toMatch(/^the injector cannot read it: .*annotations/);
    } finally {
      await api.close();
    }
  });

  it('lists at most 20 distinct differences of a workload and counts the rest', async () => {
    const hostile = meshed(pod('drift', 'many-env'));
    const proxy = ((hostile['spec'] as Obj)['containers'] as Obj[]).find((c) => c['name'] === 'linkerd-proxy') as Obj;
    proxy['env'] = [...(proxy['env'] as Obj[]), ...Array.from({ length: 500 }, (_, i) => ({ name: `X${i}`, value: 'v' }))];
    const api = await cluster(undefined, true, [hostile]);
    try {
      const report = await auditPods({ client: api.client, server: 'fake', source: 'test' });
      expect(report.workloads[0]?.differences).toHaveLength(20);
      expect(report.workloads[0]?.moreDifferences).toBe(480);
    } finally {
      await api.close();
    }
  });

  it('prints a block per workload to act on and a summary, and fails while there is one; json has every pod', async () => {
    const api = await cluster();
    const dir = mkdtempSync(join(tmpdir(), 'check-pods-'));
    try {
      const server = (api.client as unknown as { server: string }).server;
      const kubeconfig = join(dir, 'config');
      writeFileSync(kubeconfig, kubeconfigText(server));
      const text = await runCheckPods(['--kubeconfig', kubeconfig], {});
      expect(text.code).toBe(1);
      const lines = text.stdout.trim().split('\n');
      expect(lines[0]).toBe("‼ no proxy injector's webhook is registered: Linkerd's default selectors are assumed");
      const block = (head: string) => lines.slice(lines.indexOf(head), lines.findIndex((l, i) => i > lines.indexOf(head) && !l.startsWith('    ')));
      expect(block('× meshed deployment/web: 1 of 2 pods not meshed though asked')).toEqual([
        '× meshed deployment/web: 1 of 2 pods not meshed though asked',
        expect.stringMatching(/^ {4}not meshed though asked: web-0a1b-x2; it has no proxy, though its namespace asks for it/),
        '    fix: kubectl rollout restart deployment/web -n meshed',
      ]);
      expect(block('‼ drift deployment/api: 2 of 3 pods drifted')).toEqual([
        '‼ drift deployment/api: 2 of 3 pods drifted',
        '    drifted: api-5f6-a, api-5f6-b; it has the proxy, but not as the injector gives it now: proxy_config',
        '    proxy_config containers[linkerd-proxy].env[LINKERD2_PROXY_LOG]: "warn,linkerd=info,[{headers}]=off,[{request}]=off" now, "debug,[{headers}]=off,[{request}]=off" in the pods (2 pods)',
        '    fix: kubectl rollout restart deployment/api -n drift',
      ]);
      expect(lines).toContain('‼ plain daemonset/agent: 1 of 1 pod meshed though no longer asked');
      expect(lines.at(-1)).toBe(
        '17 running pods: 4 meshed and current, 4 drifted, 0 that could not be compared, 3 not meshed though asked, ' +
          '1 meshed though no longer asked, 2 that the injector skips, 3 never sent to it',
      );
      const json = await runCheckPods(['--kubeconfig', kubeconfig, '-o', 'json'], {});
      const report = JSON.parse(json.stdout) as PodsReport;
      expect(report.workloads.reduce((n, w) => n + w.pods.length, 0)).toBe(17);
    } finally {
      rmSync(dir, { recursive: true, force: true });
      await api.close();
    }
  });

  it('says what is wrong with its arguments, or with the cluster', async () => {
    expect((await runCheckPods(['-o', 'yaml'], {})).code).toBe(2);
    expect((await runCheckPods(['--bogus'], {})).code).toBe(2);
    expect((await runCheckPods(['--help'], {})).stdout).toMatch(/^Usage: proxy-injector check pods/);
    // No credentials anywhere: ~/.kube/config is looked for in $HOME, pointed at an empty directory here.
    const home = process.env['HOME'];
    const empty = mkdtempSync(join(tmpdir(), 'check-pods-home-'));
    process.env['HOME'] = empty;
    try {
      const none = await runCheckPods([], {});
      expect(none).toMatchObject({ code: 1, stderr: 'proxy-injector check pods: no cluster: give --kubeconfig FILE, or set KUBECONFIG\n' });
    } finally {
      process.env['HOME'] = home;
      rmSync(empty, { recursive: true, force: true });
    }
    const missing = await runCheckPods(['--kubeconfig', '/nonexistent/config'], {});
    expect(missing).toMatchObject({ code: 1, stderr: 'proxy-injector check pods: --kubeconfig /nonexistent/config: no such file\n' });
  });
});
