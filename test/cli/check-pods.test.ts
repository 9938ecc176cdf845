/** `check pods`: the running pods that are not meshed as their namespace and template ask, read from a cluster. */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { auditPods, runCheckPods, type PodsReport } from '../../src/cli/check-pods.js';
import { fakeApi } from '../cluster/fake-api.js';

const ns = (name: string, annotations: Record<string, string> = {}, labels: Record<string, string> = {}) => ({ metadata: { name, annotations, labels } });
const container = (name: string) => ({ name, image: `${name}:1` });

function pod(namespace: string, name: string, opts: { proxy?: boolean; annotations?: Record<string, string>; labels?: Record<string, string>; owner?: [string, string]; phase?: string; spec?: Record<string, unknown> } = {}) {
  return {
    metadata: {
      namespace,
      name,
      annotations: opts.annotations ?? {},
      labels: opts.labels ?? {},
      ...(opts.owner && { ownerReferences: [{ apiVersion: 'apps/v1', kind: opts.owner[0], name: opts.owner[1], uid: 'u', controller: true }] }),
    },
    spec: { containers: opts.proxy ? [container('linkerd-proxy'), container('app')] : [container('app')], ...opts.spec },
    status: { phase: opts.phase ?? 'Running' },
  };
}

const NAMESPACES = [ns('meshed', { 'linkerd.io/inject': 'enabled' }), ns('plain'), ns('kube-system', { 'linkerd.io/inject': 'enabled' }), ns('opted-out', { 'linkerd.io/inject': 'enabled' }, { 'config.linkerd.io/admission-webhooks': 'disabled' })];
const PODS = [
  pod('meshed', 'web-7d4b-x1', { proxy: true, owner: ['ReplicaSet', 'web-7d4b'], labels: { 'pod-template-hash': '7d4b' } }),
  pod('meshed', 'web-old-x2', { owner: ['ReplicaSet', 'web-0a1b'], labels: { 'pod-template-hash': '0a1b' } }),
  pod('meshed', 'db-0', { owner: ['StatefulSet', 'db'] }),
  pod('meshed', 'host', { spec: { hostNetwork: true } }),
  pod('meshed', 'done', { phase: 'Succeeded' }),
  pod('plain', 'solo', { annotations: { 'linkerd.io/inject': 'enabled' } }),
  pod('plain', 'left', { proxy: true, owner: ['DaemonSet', 'agent'] }),
  pod('plain', 'quiet'),
  pod('kube-system', 'coredns'),
  pod('opted-out', 'x'),
  pod('meshed', 'linkerd-identity', { labels: { 'linkerd.io/control-plane-component': 'identity' } }),
];

const WEBHOOKS = '/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations';
const POD_RULES = [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['pods', 'services'] }];

async function audit(namespace?: string, webhooks?: unknown[]): Promise<PodsReport> {
  const api = await fakeApi({
    lists: {
      '/api/v1/namespaces': NAMESPACES,
      '/api/v1/pods': PODS,
      '/api/v1/namespaces/meshed/pods': PODS.filter((p) => p.metadata.namespace === 'meshed'),
      ...(webhooks && { [WEBHOOKS]: webhooks }),
    },
    read: (path, res) => {
      const found = NAMESPACES.find((n) => path === `/api/v1/namespaces/${n.metadata.name}`);
      res.writeHead(found ? 200 : 404, { 'content-type': 'application/json' }).end(JSON.stringify(found ?? { kind: 'Status', code: 404, message: 'not found' }));
    },
  });
  try {
    return await auditPods({ client: api.client, server: 'fake', source: 'test' }, namespace);
  } finally {
    await api.close();
  }
}

describe('check pods', () => {
  it('sorts every running pod by what its namespace and template ask and whether it has the proxy', async () => {
    const report = await audit();
    const state = Object.fromEntries(report.pods.map((p) => [`${p.namespace}/${p.name}`, p.state]));
    expect(state).toEqual({
      'meshed/web-7d4b-x1': 'meshed',
      'meshed/web-old-x2': 'unmeshed_asked',
      'meshed/db-0': 'unmeshed_asked',
      'meshed/host': 'skipped',
      'plain/solo': 'unmeshed_asked',
      'plain/left': 'meshed_unasked',
      'plain/quiet': 'skipped',
      'kube-system/coredns': 'not_sent',
      'opted-out/x': 'not_sent',
      'meshed/linkerd-identity': 'not_sent',
    });
    expect(report.counts).toEqual({ meshed: 1, unmeshed_asked: 3, meshed_unasked: 1, skipped: 2, not_sent: 3 });
    // No injector's webhook registered here (the fake has no such list): Linkerd's selectors stand in, and it says so.
    expect(report.assumed).toMatch(/Linkerd's default selectors are assumed$/);
    const byName = (name: string) => report.pods.find((p) => p.name === name);
    // The Deployment from its ReplicaSet's name and the pod's template hash; the remedy for each maker.
    expect(byName('web-old-x2')).toMatchObject({ workload: { kind: 'Deployment', name: 'web' }, fix: 'kubectl rollout restart deployment/web -n meshed' });
    expect(byName('web-old-x2')?.why).toMatch(/^it has no proxy, though its namespace asks for it: it was created while the injector did not answer/);
    expect(byName('db-0')?.fix).toBe('kubectl rollout restart statefulset/db -n meshed');
    expect(byName('solo')).toMatchObject({ workload: { kind: 'Pod', name: 'solo' }, fix: 'create the pod again' });
    expect(byName('solo')?.why).toMatch(/though its pod template asks for it/);
    expect(byName('left')).toMatchObject({ fix: 'kubectl rollout restart daemonset/agent -n plain' });
    expect(byName('host')?.why).toBe('the injector would skip it: hostNetwork is enabled');
  });

  it("reads which pods reach an injector from the injectors' webhooks in the cluster", async () => {
    const webhook = (name: string, extra: Record<string, unknown>) => ({ metadata: { name }, webhooks: [{ name, rules: POD_RULES, ...extra }] });
    const report = await audit(undefined, [
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
    const state = Object.fromEntries(report.pods.map((p) => [`${p.namespace}/${p.name}`, p.state]));
    // plain is not selected now; kube-system and the Linkerd-labelled pod are, and are asked for by their namespace.
    expect(state['plain/solo']).toBe('not_sent');
    expect(state['plain/left']).toBe('not_sent');
    expect(state['kube-system/coredns']).toBe('unmeshed_asked');
    expect(state['meshed/linkerd-identity']).toBe('unmeshed_asked');
    expect(state['opted-out/x']).toBe('unmeshed_asked');
  });

  it('reads one namespace alone when asked', async () => {
    const report = await audit('meshed');
    expect(new Set(report.pods.map((p) => p.namespace))).toEqual(new Set(['meshed']));
    expect(report.counts.unmeshed_asked).toBe(2);
  });

  it('prints a line per pod to act on and a summary, and fails while there is one; json has every pod', async () => {
    const api = await fakeApi({ lists: { '/api/v1/namespaces': NAMESPACES, '/api/v1/pods': PODS } });
    const dir = mkdtempSync(join(tmpdir(), 'check-pods-'));
    try {
      const server = (api.client as unknown as { server: string }).server;
      const kubeconfig = join(dir, 'config');
      writeFileSync(
        kubeconfig,
        `apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: "${server}"}}]\nusers: [{name: u, user: {token: t}}]\n` +
          'contexts: [{name: x, context: {cluster: c, user: u}}]\ncurrent-context: x\n',
      );
      const text = await runCheckPods(['--kubeconfig', kubeconfig], {});
      expect(text.code).toBe(1);
      const lines = text.stdout.trim().split('\n');
      expect(lines).toHaveLength(6);
      expect(lines[0]).toMatch(/^‼ no proxy injector's webhook is registered: Linkerd's default selectors are assumed$/);
      expect(lines[1]).toMatch(/^× meshed\/web-old-x2 \(Deployment web\): it has no proxy, .*; fix: kubectl rollout restart deployment\/web -n meshed$/);
      expect(lines[4]).toMatch(/^‼ plain\/left \(DaemonSet agent\): it has the proxy, but neither its namespace nor its pod template asks for it any more/);
      expect(lines[5]).toBe('10 running pods: 1 meshed as asked, 3 not meshed though asked, 1 meshed though no longer asked, 2 that the injector skips, 3 never sent to it');
      const json = await runCheckPods(['--kubeconfig', kubeconfig, '-o', 'json'], {});
      expect((JSON.parse(json.stdout) as PodsReport).pods).toHaveLength(10);
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
