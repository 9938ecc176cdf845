/**
 * Drift verdicts in a running mesh: the shadow verdict this injector gives each pod Linkerd's injector
 * meshed while both webhooks are registered (`same` with the same configuration, `differs`, with the difference in
 * its log, with one setting changed for this injector only); `check pods` after a change to Linkerd's proxy settings
 * and after a new trust-anchor bundle (the pods started before are drifted, those started after are current); a pod
 * created unmeshed while the injector was away; and, for every pod `check pods` calls current, the pod a fresh
 * admission through the API server gives the same pod, field by field. Everything is read from the injector's metrics
 * and log, the CLI's JSON, and the pods the API server returns.
 *
 * It runs after 10-swap and leaves the cluster as it found it: Linkerd's webhook selecting as at the start, Linkerd's
 * values as installed (its release rolled back to the revision it found), this injector with its own values.
 */
import { parseDocument } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LINKERD_NAMESPACE_SELECTOR, NO_NAMESPACE_SELECTOR } from '../e2e/support/chart.js';
import { eventually } from '../e2e/support/kube.js';
import { withSecondRoot } from './support/pki.js';
import { useNode } from './support/context.js';
import { log } from './support/host.js';
import { APP_IMAGE } from './support/images.js';
import { INJECTOR_NS, INJECTOR_RELEASE, INJECTOR_SELECTOR } from './support/injector.js';
import { LINKERD_INJECTOR_AWAY, LINKERD_NS, linkerdInjectorMetrics, linkerdWebhookSelector } from './support/linkerd.js';
import {
  api,
  apply,
  appDeployment,
  appPod,
  createNamespace,
  getPod,
  podsOf,
  proxies,
  readyPods,
  serviceAccount,
  type Container,
  type Pod,
} from './support/workloads.js';
import { sum } from '../support/metrics.js';

const node = useNode();
const NS = 'drift';
/** The log level given to this injector only (proof 2) and then to Linkerd's control plane (proof 3). */
const CHANGED_LOG_LEVEL = 'warn,linkerd=debug';
const INJECTED = new Set(['linkerd-proxy', 'linkerd-init', 'linkerd-network-validator', 'linkerd-debug']);
const WEBHOOK_CONFIGURATION = 'proxy-injector-proxy-injector';

// ---------------------------------------------------------------------------------------------------------------
// check pods, as its JSON reads

interface Difference {
  kind: string;
  path: string;
  expected?: string;
  actual?: string;
  pods?: number;
}

interface PodRow {
  namespace: string;
  /** `Kind/name` of the workload that made it */
  workload: string;
  name: string;
  state: string;
  kinds: string[];
}

interface Checked {
  code: number;
  configuration?: unknown;
  counts: Record<string, number>;
  pods: PodRow[];
  /** by `namespace/Kind/name` */
  differences: Map<string, Difference[]>;
  fixes: Map<string, string>;
}

interface WorkloadJson {
  namespace: string;
  kind: string;
  name: string;
  fix?: string;
  pods?: Array<{ name: string; state: string; kinds?: string[] }>;
  differences?: Difference[];
}

/** Reads `check pods -o json` into rows, one per pod. */
function readCheck(code: number, stdout: string, stderr: string): Checked {
  let report: { configuration?: unknown; counts?: Record<string, number>; workloads?: WorkloadJson[] };
  try {
    report = JSON.parse(stdout) as typeof report;
  } catch {
    throw new Error(`check pods exit ${code}, not JSON: ${stdout.slice(0, 500)} ${stderr.slice(0, 500)}`);
  }
  if (!Array.isArray(report.workloads)) throw new Error(`check pods gave no workloads: ${stdout.slice(0, 500)}`);
  const pods: PodRow[] = [];
  const differences = new Map<string, Difference[]>();
  const fixes = new Map<string, string>();
  for (const w of report.workloads) {
    const workload = `${w.kind}/${w.name}`;
    for (const p of w.pods ?? []) pods.push({ namespace: w.namespace, workload, name: p.name, state: p.state, kinds: p.kinds ?? [] });
    differences.set(`${w.namespace}/${workload}`, w.differences ?? []);
    if (w.fix) fixes.set(`${w.namespace}/${workload}`, w.fix);
  }
  return { code, configuration: report.configuration, counts: report.counts ?? {}, pods, differences, fixes };
}

/** `Kind/name: state, state` per workload, for the log. */
const showRows = (rows: PodRow[]): string => {
  const by = new Map<string, string[]>();
  for (const r of rows) by.set(r.workload, [...(by.get(r.workload) ?? []), `${r.state}${r.kinds.length ? `(${r.kinds.join('+')})` : ''}`]);
  return [...by].map(([w, states]) => `${w}: ${states.join(', ')}`).join('; ');
};

// ---------------------------------------------------------------------------------------------------------------
// a pod as a fresh admission would make it

const isToken = (name: unknown): boolean => typeof name === 'string' && name.startsWith('kube-api-access-');

/** What injection decides of a pod: the containers (in order, without the service-account token's mount), volumes, and Linkerd's metadata. */
function injectedParts(pod: Pod & { spec: { volumes?: Array<{ name: string }> } }) {
  const container = (c: Container) => ({ ...c, volumeMounts: ((c['volumeMounts'] as Array<{ name: string }> | undefined) ?? []).filter((m) => !isToken(m.name)) });
  const linkerdKeys = (m: Record<string, string> = {}) =>
    Object.fromEntries(Object.entries(m).filter(([k]) => (k.startsWith('linkerd.io/') || k.startsWith('config.linkerd.io/')) && k !== 'linkerd.io/created-by'));
  return {
    initContainers: (pod.spec.initContainers ?? []).map(container),
    containers: pod.spec.containers.map(container),
    volumes: (pod.spec.volumes ?? []).filter((v) => !isToken(v.name)),
    annotations: linkerdKeys(pod.metadata.annotations),
    labels: linkerdKeys(pod.metadata.labels),
  };
}

describe.skipIf(node.skip !== undefined)('drift verdicts: the shadow verdict during the swap, and check pods after a change', () => {
  if (node.skip !== undefined) return;
  const { cluster, linkerd, injector, appTag } = node;
  let linkerdRevision = 0;
  let injectorRevision = 0;
  let linkerdChanged = false;
  let injectorChanged = false;
  let injectorScaledDown = false;
  /** what proxy.logHTTPHeaders appends to the level in LINKERD2_PROXY_LOG (read in proof 2) */
  let logSuffix = '';

  const shadow = async (): Promise<Record<'same' | 'differs' | 'unreadable', number>> => {
    const text = await injector.metrics();
    return {
      same: sum(text, 'proxy_inject_shadow_total', { verdict: 'same' }),
      differs: sum(text, 'proxy_inject_shadow_total', { verdict: 'differs' }),
      unreadable: sum(text, 'proxy_inject_shadow_total', { verdict: 'unreadable' }),
    };
  };
  const checkPods = async (namespace?: string): Promise<Checked> => {
    const r = await injector.cli(['check', 'pods', '--kubeconfig', cluster.kubeconfigPath, ...(namespace ? ['-n', namespace] : []), '-o', 'json']);
    return readCheck(r.code, r.stdout, r.stderr);
  };
  const restart = async (deployment: string) => {
    await cluster.kubectl(['-n', NS, 'rollout', 'restart', `deployment/${deployment}`]);
    await cluster.kubectl(['-n', NS, 'rollout', 'status', `deployment/${deployment}`, '--timeout=180s']);
  };
  const proxyEnv = (pod: Pod, name: string): string | undefined =>
    (proxies(pod)[0]?.['env'] as Array<{ name: string; value?: string }> | undefined)?.find((e) => e.name === name)?.value;
  /** The one injector pod, once every other (an old one still serving after a rollout) is gone. */
  const injectorSettled = () =>
    eventually(
      'one injector pod, ready, and no other',
      async () => {
        const all = await podsOf(cluster, INJECTOR_NS, INJECTOR_SELECTOR);
        return all.length === 1 ? injector.pod() : undefined;
      },
      { timeoutMs: 90_000 },
    );
  const livePods = async (selector: string) => (await podsOf(cluster, NS, selector)).filter((p) => !p.metadata.deletionTimestamp);

  beforeAll(async () => {
    // As 10-swap left it: both webhooks select the namespace, Linkerd's (its configuration's name sorts first) runs first.
    expect(await linkerdWebhookSelector(cluster)).toEqual(LINKERD_NAMESPACE_SELECTOR);
    linkerdRevision = await linkerd.revision();
    injectorRevision = await injector.revision();
    const order = (await cluster.kubectl(['get', 'mutatingwebhookconfigurations', '-o', 'jsonpath={.items[*].metadata.name}'])).split(/\s+/).filter(Boolean).sort();
    log(`mutating webhook configurations, in the order the API server calls them: ${order.join(', ')}; Linkerd revision ${linkerdRevision}, this injector's ${injectorRevision}`);
    expect(order.indexOf('linkerd-proxy-injector-webhook-config')).toBeLessThan(order.indexOf(WEBHOOK_CONFIGURATION));
    await createNamespace(cluster, NS, { 'linkerd.io/inject': 'enabled' });
    await apply(cluster, [serviceAccount('web', NS)]);
  });

  afterAll(async () => {
    // Whatever failed: this injector back with its values and its pod, Linkerd's release as found, the namespace gone.
    if (injectorScaledDown) await cluster.kubectl(['-n', INJECTOR_NS, 'scale', `deployment/${INJECTOR_RELEASE}`, '--replicas=1']);
    if (injectorChanged) await injector.rollback(injectorRevision);
    if (linkerdChanged) await linkerd.rollback(linkerdRevision);
    // The files after this one read the injector's pod: the one that is left, once an old one stopped serving.
    await injectorSettled();
    await cluster.kubectl(['delete', 'namespace', NS, '--wait=false']);
  });

  it("gives every pod Linkerd's injector makes the verdict same, with the same configuration", async () => {
    const before = await shadow();
    await apply(cluster, [
      appDeployment(appTag, { name: 'web', namespace: NS, serviceAccount: 'web', replicas: 2, serverOnly: true }),
      appPod(appTag, { name: 'solo', namespace: NS, serviceAccount: 'web', serverOnly: true }),
    ]);
    const pods = [...(await readyPods(cluster, NS, 'app=web', 2)), ...(await readyPods(cluster, NS, 'app=solo', 1))];
    for (const pod of pods) expect(proxies(pod), pod.metadata.name).toHaveLength(1);
    // The verdict is given once the answer is sent: wait until as many verdicts as pods were counted, then read them.
    const after = await eventually('a shadow verdict for each pod', async () => {
      const now = await shadow();
      return now.same + now.differs + now.unreadable - (before.same + before.differs + before.unreadable) >= pods.length ? now : undefined;
    });
    const delta = { same: after.same - before.same, differs: after.differs - before.differs, unreadable: after.unreadable - before.unreadable };
    log(`both webhooks, the same configuration: ${pods.length} pods made by Linkerd's injector (${pods.map((p) => p.metadata.name).join(', ')}); proxy_inject_shadow_total deltas ${JSON.stringify(delta)}`);
    expect(delta).toEqual({ same: pods.length, differs: 0, unreadable: 0 });
  });

  it("gives each pod differs, naming LINKERD2_PROXY_LOG in its log, when this injector alone has another proxy.logLevel", async () => {
    const values = parseDocument(await linkerd.configValues());
    const original = String(values.getIn(['proxy', 'logLevel']));
    expect(original).not.toBe(CHANGED_LOG_LEVEL);
    values.setIn(['proxy', 'logLevel'], CHANGED_LOG_LEVEL);
    // linkerd-config's values as they are, the chart's documented use: their PEM ends with a newline that the bundle
    // Linkerd's injector reads (linkerd-identity-trust-roots) has not, and the injector trims it as Linkerd's chart does.
    const roots = await cluster.kubectl(['-n', LINKERD_NS, 'get', 'configmap', 'linkerd-identity-trust-roots', '-o', 'jsonpath={.data.ca-bundle\\.crt}']);
    const inValues = String(values.get('identityTrustAnchorsPEM'));
    log(`linkerd-config's identityTrustAnchorsPEM ${inValues === roots ? 'equals' : inValues.trim() === roots.trim() ? 'differs only in surrounding whitespace from' : 'differs from'} linkerd-identity-trust-roots' ca-bundle.crt`);
    injectorChanged = true;
    await injector.upgrade({ 'linkerd.values': values.toString() });
    // The upgrade rolled the injector's pod: its counters start again from zero, read before any pod is made, once the
    // old pod (which serves for a while after it is told to stop) is gone.
    const ours = await injectorSettled();
    const before = await shadow();
    await apply(cluster, [appDeployment(appTag, { name: 'other', namespace: NS, serviceAccount: 'web', replicas: 2, serverOnly: true })]);
    const pods = await readyPods(cluster, NS, 'app=other', 2);
    // The proxy's LINKERD2_PROXY_LOG is the level followed by what proxy.logHTTPHeaders adds.
    const env = proxyEnv(pods[0] as Pod, 'LINKERD2_PROXY_LOG') ?? '';
    expect(env.startsWith(original), env).toBe(true);
    logSuffix = env.slice(original.length);
    for (const pod of pods) expect(proxyEnv(pod, 'LINKERD2_PROXY_LOG'), `${pod.metadata.name} has Linkerd's log level`).toBe(env);
    const after = await eventually('a shadow verdict for each pod', async () => {
      const now = await shadow();
      return now.same + now.differs + now.unreadable - (before.same + before.differs + before.unreadable) >= pods.length ? now : undefined;
    });
    const delta = { same: after.same - before.same, differs: after.differs - before.differs, unreadable: after.unreadable - before.unreadable };
    const lines = (await cluster.kubectl(['-n', INJECTOR_NS, 'logs', ours.metadata.name]))
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as { msg?: string; owner?: string; path?: string; kind?: string; expected?: string; actual?: string; differences?: number })
      .filter((l) => l.msg?.startsWith(`shadow verdict for pod/${NS}/other-`));
    log(
      `this injector with proxy.logLevel ${JSON.stringify(CHANGED_LOG_LEVEL)} (Linkerd's: ${JSON.stringify(original)}): ${pods.length} pods; deltas ${JSON.stringify(delta)}; ` +
        `${lines.length} warnings, the first: ${JSON.stringify(lines[0])}`,
    );
    expect(delta).toEqual({ same: 0, differs: pods.length, unreadable: 0 });
    expect(lines).toHaveLength(pods.length);
    for (const line of lines) {
      expect(line.msg).toContain("differs from this injector's answer at");
      expect(line.msg).toContain('LINKERD2_PROXY_LOG');
      expect(line.path).toMatch(/^(initContainers|containers)\[linkerd-proxy\]\.env\[LINKERD2_PROXY_LOG\]$/);
      expect(line.kind).toBe('proxy_config');
      expect(line.owner).toMatch(/^deployment\/other$/i);
      expect(line.expected).toBe(`${CHANGED_LOG_LEVEL}${logSuffix}`);
      expect(line.actual).toBe(env);
      // The one deliberate difference, and nothing else.
      expect(line.differences).toBe(1);
    }
    await injector.rollback(injectorRevision);
    injectorChanged = false;
    await injectorSettled();
    expect((await cluster.kubectl(['-n', INJECTOR_NS, 'get', 'deployment', INJECTOR_RELEASE, '-o', 'jsonpath={.spec.template.spec.containers[0].args}'])).includes('--values=')).toBe(false);
  });

  it('after a helm upgrade of proxy.logLevel, check pods calls drifted exactly the workloads started before it', async () => {
    const before = await checkPods(NS);
    log(`before the change: check pods exit ${before.code}, ${showRows(before.pods)}`);
    expect(before.code).toBe(0);
    expect(before.pods.every((p) => p.state === 'meshed')).toBe(true);

    const started = Date.now();
    linkerdChanged = true;
    await linkerd.upgrade({ 'proxy.logLevel': CHANGED_LOG_LEVEL });
    const upgraded = Date.now();
    let runs = 0;
    const seen = await eventually(
      'check pods to call web and solo drifted',
      async () => {
        runs++;
        const c = await checkPods(NS);
        const drifted = new Set(c.pods.filter((p) => p.state === 'drifted').map((p) => p.workload));
        return drifted.has('Deployment/web') && drifted.has('Pod/solo') ? c : undefined;
      },
      { timeoutMs: 120_000 },
    );
    const reported = Date.now();

    // Started after the change: one Deployment restarted, one new.
    await restart('other');
    await apply(cluster, [appDeployment(appTag, { name: 'fresh', namespace: NS, serviceAccount: 'web', replicas: 1, serverOnly: true })]);
    const after = [...(await readyPods(cluster, NS, 'app=other', 2)), ...(await readyPods(cluster, NS, 'app=fresh', 1))];
    for (const pod of after) expect(proxyEnv(pod, 'LINKERD2_PROXY_LOG'), `${pod.metadata.name} was injected with the new level`).toBe(`${CHANGED_LOG_LEVEL}${logSuffix}`);
    const check = await checkPods(NS);
    const drifted = check.pods.filter((p) => p.state === 'drifted');
    log(
      `proxy.logLevel ${JSON.stringify(CHANGED_LOG_LEVEL)}: helm upgrade ${((upgraded - started) / 1000).toFixed(1)} s, check pods reported the drift ` +
        `${((reported - upgraded) / 1000).toFixed(1)} s after it returned, on its run ${runs} (${showRows(seen.pods)}); after restarting other and creating fresh: exit ${check.code}, ` +
        `counts ${JSON.stringify(check.counts)}, ${showRows(check.pods)}; web's differences ${JSON.stringify(check.differences.get(`${NS}/Deployment/web`))}; ` +
        `fix ${JSON.stringify(check.fixes.get(`${NS}/Deployment/web`))}; configuration ${JSON.stringify(check.configuration)}`,
    );
    expect(check.code).toBe(1);
    expect(new Set(drifted.map((p) => p.workload))).toEqual(new Set(['Deployment/web', 'Pod/solo']));
    expect(drifted.map((p) => p.name).sort()).toEqual((await livePods('app in (web, solo)')).map((p) => p.metadata.name).sort());
    for (const p of drifted) expect(p.kinds, p.name).toEqual(['proxy_config']);
    for (const workload of ['Deployment/web', 'Pod/solo']) {
      const differences = check.differences.get(`${NS}/${workload}`) ?? [];
      expect(differences, workload).toHaveLength(1);
      expect(differences[0]?.kind).toBe('proxy_config');
      expect(differences[0]?.path).toContain('LINKERD2_PROXY_LOG');
      expect(differences[0]?.expected).toBe(`${CHANGED_LOG_LEVEL}${logSuffix}`);
    }
    const current = check.pods.filter((p) => p.state === 'meshed').map((p) => p.name).sort();
    expect(current).toEqual(after.map((p) => p.metadata.name).sort());
    expect(check.fixes.get(`${NS}/Deployment/web`)).toBe(`kubectl rollout restart deployment/web -n ${NS}`);

    await linkerd.rollback(linkerdRevision);
    linkerdChanged = false;
  });

  it('after a new trust-anchor bundle, check pods calls the pods started before it drifted (trust_anchors) and those restarted after it current', async () => {
    // A new root beside the old one: the issuer, signed by the old root, stays valid for every proxy meanwhile.
    const bundle = await withSecondRoot(linkerd.trustAnchorPem);
    const rolledBack = await eventually('other and fresh drifted by the rollback, web and solo current', async () => {
      const c = await checkPods(NS);
      const state = (w: string) => new Set(c.pods.filter((p) => p.workload === w).map((p) => p.state));
      return [...state('Deployment/web'), ...state('Pod/solo')].every((s) => s === 'meshed') && state('Deployment/other').has('drifted') ? c : undefined;
    });
    log(`after rolling Linkerd back: exit ${rolledBack.code}, ${showRows(rolledBack.pods)}`);

    const started = Date.now();
    linkerdChanged = true;
    await linkerd.upgrade({ identityTrustAnchorsPEM: bundle });
    const upgraded = Date.now();
    const roots = await cluster.kubectl(['-n', LINKERD_NS, 'get', 'configmap', 'linkerd-identity-trust-roots', '-o', 'jsonpath={.data.ca-bundle\\.crt}']);
    expect(roots.trim()).toBe(bundle.trim());
    let runs = 0;
    const seen = await eventually(
      'check pods to call web and solo drifted',
      async () => {
        runs++;
        const c = await checkPods(NS);
        const web = c.pods.filter((p) => p.workload === 'Deployment/web' || p.workload === 'Pod/solo');
        return web.length === 3 && web.every((p) => p.state === 'drifted') ? c : undefined;
      },
      { timeoutMs: 120_000 },
    );
    const reported = Date.now();

    await restart('other');
    await restart('fresh');
    const after = [...(await readyPods(cluster, NS, 'app=other', 2)), ...(await readyPods(cluster, NS, 'app=fresh', 1))];
    for (const pod of after) expect(proxyEnv(pod, 'LINKERD2_PROXY_IDENTITY_TRUST_ANCHORS')?.trim(), `${pod.metadata.name} trusts the bundle`).toBe(bundle.trim());
    const check = await checkPods(NS);
    const drifted = check.pods.filter((p) => p.state === 'drifted');
    log(
      `new trust-anchor bundle (2 roots): helm upgrade ${((upgraded - started) / 1000).toFixed(1)} s, check pods reported the drift ` +
        `${((reported - upgraded) / 1000).toFixed(1)} s after it returned, on its run ${runs} (${showRows(seen.pods)}); after restarting other and fresh (Ready, so identity still issues): exit ${check.code}, ` +
        `counts ${JSON.stringify(check.counts)}, ${showRows(check.pods)}; web's differences ${JSON.stringify(check.differences.get(`${NS}/Deployment/web`)?.map((d) => ({ kind: d.kind, path: d.path })))}`,
    );
    expect(check.code).toBe(1);
    expect(new Set(drifted.map((p) => p.workload))).toEqual(new Set(['Deployment/web', 'Pod/solo']));
    expect(drifted.map((p) => p.name).sort()).toEqual((await livePods('app in (web, solo)')).map((p) => p.metadata.name).sort());
    for (const p of drifted) expect(p.kinds, p.name).toEqual(['trust_anchors']);
    expect(check.pods.filter((p) => p.state === 'meshed').map((p) => p.name).sort()).toEqual(after.map((p) => p.metadata.name).sort());

    await linkerd.rollback(linkerdRevision);
    linkerdChanged = false;
    // Everything current again, for the proofs that follow: the pods made with the bundle are made again.
    await restart('other');
    await restart('fresh');
    const settled = await eventually('every pod in the namespace current', async () => {
      const c = await checkPods(NS);
      return c.code === 0 ? c : undefined;
    });
    log(`rolled Linkerd back and restarted other and fresh: check pods exit ${settled.code}, ${showRows(settled.pods)}`);
  });

  describe("with Linkerd's webhook pointed away, so that this injector answers", () => {
    beforeAll(async () => {
      linkerdChanged = true;
      await linkerd.upgrade(LINKERD_INJECTOR_AWAY);
      expect(await linkerdWebhookSelector(cluster)).toEqual(NO_NAMESPACE_SELECTOR);
    });

    afterAll(async () => {
      await linkerd.rollback(linkerdRevision);
      linkerdChanged = false;
      expect(await linkerdWebhookSelector(cluster)).toEqual(LINKERD_NAMESPACE_SELECTOR);
    });

    it('lists a pod created while the injector was away as unmeshed_asked', async () => {
      const policy = await cluster.kubectl(['get', 'mutatingwebhookconfiguration', WEBHOOK_CONFIGURATION, '-o', 'jsonpath={.webhooks[0].failurePolicy}']);
      expect(policy).toBe('Ignore');
      injectorScaledDown = true;
      await cluster.kubectl(['-n', INJECTOR_NS, 'scale', `deployment/${INJECTOR_RELEASE}`, '--replicas=0']);
      await eventually('no injector pod left', async () => ((await podsOf(cluster, INJECTOR_NS, INJECTOR_SELECTOR)).length === 0 ? true : undefined), { timeoutMs: 60_000 });
      const endpoints = await cluster.kubectl(['-n', INJECTOR_NS, 'get', 'endpointslices', '-l', `kubernetes.io/service-name=${INJECTOR_RELEASE}`, '-o', 'jsonpath={.items[*].endpoints}']);
      const away = await api<Pod>(cluster, 'POST', `/api/v1/namespaces/${NS}/pods`, {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: 'away', namespace: NS, labels: { app: 'away' } },
        spec: { terminationGracePeriodSeconds: 1, containers: [{ name: 'c', image: `${APP_IMAGE}:${appTag}`, imagePullPolicy: 'Never', command: ['sleep', '3600'] }] },
      });
      await cluster.kubectl(['-n', INJECTOR_NS, 'scale', `deployment/${INJECTOR_RELEASE}`, '--replicas=1']);
      injectorScaledDown = false;
      await readyPods(cluster, INJECTOR_NS, INJECTOR_SELECTOR, 1);
      await readyPods(cluster, NS, 'app=away', 1);
      const check = await checkPods(NS);
      const row = check.pods.find((p) => p.name === 'away');
      log(
        `failurePolicy ${policy}, the injector scaled to 0 (endpoints: ${JSON.stringify(endpoints)}): pod away admitted with ${proxies(away).length} proxies; ` +
          `check pods exit ${check.code}, counts ${JSON.stringify(check.counts)}, away: ${JSON.stringify(row)}, fix ${JSON.stringify(check.fixes.get(`${NS}/Pod/away`))}`,
      );
      expect(proxies(away)).toHaveLength(0);
      expect(row?.state).toBe('unmeshed_asked');
      expect(check.code).toBe(1);
      expect(check.pods.filter((p) => p.state === 'unmeshed_asked').map((p) => p.name)).toEqual(['away']);
      await cluster.kubectl(['-n', NS, 'delete', 'pod', 'away', '--grace-period=1', '--wait=false']);
    });

    it('every pod check pods calls current is, field by field, what a fresh admission through the API server gives it', async () => {
      const check = await checkPods();
      const current = check.pods.filter((p) => p.state === 'meshed' && !(p.namespace === NS && p.name === 'away'));
      log(`check pods (all namespaces): exit ${check.code}, counts ${JSON.stringify(check.counts)}; comparing the ${current.length} current pods`);
      // This namespace's six pods at least (10-swap's three too, when it ran before).
      const mine = (await podsOf(cluster, NS, 'app in (web, solo, other, fresh)')).filter((p) => !p.metadata.deletionTimestamp).map((p) => p.metadata.name);
      expect(mine).toHaveLength(6);
      expect(current.filter((p) => p.namespace === NS).map((p) => p.name).sort()).toEqual(mine.sort());
      const injectedBefore = sum(await injector.metrics(), 'proxy_inject_admission_responses_total', { skip: 'false' });
      const linkerdBefore = sum(await linkerdInjectorMetrics(cluster), 'proxy_inject_admission_requests_total');
      for (const row of current) {
        const running = (await getPod(cluster, row.namespace, row.name)) as Pod & { spec: Record<string, unknown> };
        // The injection taken out by this injector's own CLI, then what the API server and kubelet filled in.
        const out = await injector.cli(['uninject', '-o', 'json', '-'], { input: JSON.stringify(running) });
        expect(out.code, out.stderr).toBe(0);
        const bare = JSON.parse(out.stdout) as { metadata: Record<string, unknown>; spec: Record<string, unknown> & { containers: Container[]; initContainers?: Container[]; volumes?: Array<{ name: string }> }; status?: unknown };
        expect(proxies(bare as unknown as Pod)).toHaveLength(0);
        for (const key of ['uid', 'resourceVersion', 'creationTimestamp', 'managedFields', 'generateName']) delete bare.metadata[key];
        bare.metadata['name'] = `${row.name}-again`;
        delete bare.status;
        delete bare.spec['nodeName'];
        delete bare.spec['priority'];
        const dropToken = (c: Container) => ({ ...c, volumeMounts: ((c['volumeMounts'] as Array<{ name: string }> | undefined) ?? []).filter((m) => !isToken(m.name)) });
        bare.spec.containers = bare.spec.containers.map(dropToken);
        if (bare.spec.initContainers) bare.spec.initContainers = bare.spec.initContainers.map(dropToken);
        bare.spec.volumes = (bare.spec.volumes ?? []).filter((v) => !isToken(v.name));
        const fresh = JSON.parse(await cluster.kubectl(['create', '--dry-run=server', '-o', 'json', '-f', '-'], { input: JSON.stringify(bare) })) as Pod & { spec: { volumes?: Array<{ name: string }> } };
        const createdBy = [running.metadata.annotations?.['linkerd.io/created-by'], fresh.metadata.annotations?.['linkerd.io/created-by']];
        expect(proxies(fresh), `${row.namespace}/${row.name} injected again`).toHaveLength(1);
        const [a, b] = [injectedParts(running), injectedParts(fresh)];
        log(
          `${row.namespace}/${row.name}: injected by ${JSON.stringify(createdBy[0])}, again by ${JSON.stringify(createdBy[1])}; ` +
            `init ${a.initContainers.map((c) => c.name).join(',')} / ${b.initContainers.map((c) => c.name).join(',')}, ` +
            `containers ${a.containers.map((c) => c.name).join(',')} / ${b.containers.map((c) => c.name).join(',')}, ` +
            `${a.volumes.length}/${b.volumes.length} volumes, ${Object.keys(a.annotations).length}/${Object.keys(b.annotations).length} annotations, ` +
            `${Object.keys(a.labels).length}/${Object.keys(b.labels).length} labels`,
        );
        expect(b.initContainers, `${row.namespace}/${row.name} initContainers`).toEqual(a.initContainers);
        expect(b.containers, `${row.namespace}/${row.name} containers`).toEqual(a.containers);
        expect(b.volumes, `${row.namespace}/${row.name} volumes`).toEqual(a.volumes);
        expect(b.annotations, `${row.namespace}/${row.name} annotations`).toEqual(a.annotations);
        expect(b.labels, `${row.namespace}/${row.name} labels`).toEqual(a.labels);
        expect([...b.initContainers, ...b.containers].some((c) => INJECTED.has(c.name))).toBe(true);
      }
      // The fresh admissions were this injector's (Linkerd's webhook selects no namespace).
      const injected = sum(await injector.metrics(), 'proxy_inject_admission_responses_total', { skip: 'false' }) - injectedBefore;
      const linkerdReviews = sum(await linkerdInjectorMetrics(cluster), 'proxy_inject_admission_requests_total') - linkerdBefore;
      log(`${current.length} dry runs: this injector injected ${injected}, Linkerd's injector reviewed ${linkerdReviews}`);
      expect(injected).toBe(current.length);
      expect(linkerdReviews).toBe(0);
    });
  });
});
