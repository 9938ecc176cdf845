/**
 * An API server outage under a serving injector: kube-apiserver and etcd stop for longer than the API server's watch
 * timeout while a steady creator keeps making pods, then start again on the same ports and data. The injector must stay
 * up and ready on its caches, retry with backoff without spinning or flooding its log, resume its watches without a
 * restart, and with failurePolicy Fail no pod may be stored unmeshed in an enabled namespace.
 */
import { mkdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { renderChart } from './support/chart.js';
import { eventually as eventuallyOr } from './support/kube.js';
import { kubeRequest, startControlPlane, type ControlPlane } from './support/control-plane.js';
import { linkerdWebhookConfiguration, readyStatus, startInjector, tokenKubeconfig, type RunningInjector } from './support/injector.js';

const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const TRUST_ANCHORS = readFileSync(join(REPO_ROOT, 'examples', 'trust-anchors.pem'), 'utf8');
const values = (logLevel: string) => `linkerdVersion: edge-26.8.3\nproxy:\n  logLevel: ${logLevel}\nproxyInit:\n  iptablesMode: legacy\n`;
/** Watches end after 15 to 30 s (kube-apiserver's --min-request-timeout and its jitter); the outage outlasts both. */
const WATCH_TIMEOUT_S = 15;
const OUTAGE_MS = Number(process.env['E2E_OUTAGE_SECONDS'] ?? '45') * 1000;
/** The injector's backoff doubles from 0.5 s to 30 s (±20 %): attempts per cache over the outage and the restart. */
const MAX_ATTEMPTS_PER_CACHE = 14;

let cp: ControlPlane;
let injector: RunningInjector;

interface PodLike {
  metadata?: { name?: string; annotations?: Record<string, string> };
  spec?: { containers?: Array<{ name: string; env?: Array<{ name: string; value?: string }> }>; initContainers?: Array<{ name: string }> };
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
const api = (method: string, path: string, body?: unknown, contentType?: string) =>
  kubeRequest(cp, method, path, body, { timeoutMs: 15_000, ...(contentType && { contentType }) });

async function ok(method: string, path: string, body?: unknown, contentType?: string): Promise<unknown> {
  const res = await api(method, path, body, contentType);
  if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${res.body.slice(0, 300)}`);
  return res.json;
}

const eventually = <T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 60_000) =>
  eventuallyOr(what, probe, { timeoutMs, context: () => injector?.logs.slice(-20).join('\n') ?? '' });

const podBody = (prefix: string) => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { generateName: `${prefix}-` },
  spec: { containers: [{ name: 'app', image: 'nginx:1.27', ports: [{ containerPort: 80 }] }] },
});
const isMeshed = (pod: PodLike) =>
  (pod.spec?.containers ?? [])[0]?.name === 'linkerd-proxy' && (pod.spec?.initContainers ?? []).some((c) => c.name === 'linkerd-init');
const proxyLog = (pod: PodLike) => pod.spec?.containers?.find((c) => c.name === 'linkerd-proxy')?.env?.find((e) => e.name === 'LINKERD2_PROXY_LOG')?.value;

async function namespace(name: string, annotations: Record<string, string> = {}, labels: Record<string, string> = {}): Promise<void> {
  await ok('POST', '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name, annotations, labels } });
  await eventually(`ServiceAccount default in ${name}`, async () => ((await api('GET', `/api/v1/namespaces/${name}/serviceaccounts/default`)).status === 200 ? true : undefined));
}

/** A sum over the series of one metric in the injector's /metrics, optionally only those whose labels match. */
async function metric(name: string, labels = ''): Promise<number> {
  const text = await (await fetch(`${injector.adminUrl}/metrics`)).text();
  return text
    .split('\n')
    .filter((l) => (l.startsWith(`${name}{`) || l.startsWith(`${name} `)) && l.includes(labels))
    .reduce((sum, l) => sum + Number(l.slice(l.lastIndexOf(' ') + 1)), 0);
}

/** Creates a pod in `ns` every `intervalMs` until stopped, recording what each attempt got. */
function steadyCreator(ns: string, intervalMs: number) {
  const results: Array<{ at: number; status: number; error?: string; pod?: PodLike }> = [];
  let stopped = false;
  const done = (async () => {
    // Bounded in count as well as by stop(): at most 2000 requests.
    for (let i = 0; i < 2000 && !stopped; i++) {
      const at = Date.now();
      try {
        const res = await api('POST', `/api/v1/namespaces/${ns}/pods`, podBody('steady'));
        results.push({ at, status: res.status, pod: res.json as PodLike, ...(res.status >= 300 && { error: res.body.slice(0, 200) }) });
      } catch (err) {
        results.push({ at, status: 0, error: (err as Error).message });
      }
      await sleep(intervalMs);
    }
  })();
  return {
    results,
    async stop() {
      stopped = true;
      await done;
    },
  };
}

beforeAll(async () => {
  cp = await startControlPlane({ apiServerArgs: [`--min-request-timeout=${WATCH_TIMEOUT_S}`] });
  await namespace('linkerd', {}, { 'config.linkerd.io/admission-webhooks': 'disabled' });
  await ok('POST', '/api/v1/namespaces/linkerd/configmaps', { metadata: { name: 'linkerd-config' }, data: { values: values('warn,linkerd=info') } });
  await ok('POST', '/api/v1/namespaces/linkerd/configmaps', { metadata: { name: 'linkerd-identity-trust-roots' }, data: { 'ca-bundle.crt': TRUST_ANCHORS } });
  // The injector's ServiceAccount and RBAC, rendered from the chart, and a token for its service account.
  await namespace('proxy-injector');
  for (const doc of renderChart('proxy-injector', 'proxy-injector', {}, ['--show-only', 'templates/serviceaccount.yaml', '--show-only', 'templates/rbac.yaml'])) {
    const group = doc.apiVersion === 'v1' ? '/api/v1' : `/apis/${doc.apiVersion}`;
    const plural = `${(doc.kind ?? '').toLowerCase()}s`;
    await ok('POST', `${group}${doc.metadata?.namespace ? `/namespaces/${doc.metadata.namespace}` : ''}/${plural}`, doc);
  }
  const token = (await ok('POST', '/api/v1/namespaces/proxy-injector/serviceaccounts/proxy-injector/token', {
    apiVersion: 'authentication.k8s.io/v1',
    kind: 'TokenRequest',
    spec: { audiences: [], expirationSeconds: 3600 },
  })) as { status: { token: string } };
  const workDir = join(cp.workDir, 'injector');
  mkdirSync(workDir, { recursive: true });
  const kubeconfigPath = tokenKubeconfig(join(workDir, 'kubeconfig'), cp.apiServerUrl, cp.caPem, token.status.token);
  injector = await startInjector({ workDir, kubeconfigPath, extraArgs: ['--linkerd-namespace', 'linkerd'] });

  await namespace('meshed', { 'linkerd.io/inject': 'enabled' });
  // Known to the cache before the outage, enabled only after it: only a resumed watch can tell the injector.
  await namespace('later');
  await ok('POST', '/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations', linkerdWebhookConfiguration(injector.webhookUrl, injector.caPem, 'Fail'));
  await eventually('the webhook to be called', async () => {
    const probe = (await ok('POST', '/api/v1/namespaces/meshed/pods?dryRun=All', podBody('probe'))) as PodLike;
    return isMeshed(probe) ? true : undefined;
  });
}, 600_000);

afterAll(async () => {
  await injector?.stop();
  await cp?.stop();
});

describe('an API server outage', () => {
  it('leaves the injector up and ready, resumes its watches, and lets no pod through unmeshed', { timeout: 600_000 }, async () => {
    const pid = injector.child.pid;
    const creator = steadyCreator('meshed', 300);
    await sleep(5_000);

    const cpuBefore = await metric('process_cpu_seconds_total');
    const outageStart = Date.now();
    await cp.stopApiServer();
    const readiness: number[] = [];
    while (Date.now() - outageStart < OUTAGE_MS) {
      readiness.push(await readyStatus(injector.adminUrl));
      await sleep(1_000);
    }
    const cpuDuringOutage = (await metric('process_cpu_seconds_total')) - cpuBefore;
    const restartStart = Date.now();
    await cp.restartApiServer();
    const restartMs = Date.now() - restartStart;
    const outageMs = Date.now() - outageStart;

    // A namespace annotation and a Linkerd configuration change made after the restart reach the injector.
    await ok('PATCH', '/api/v1/namespaces/later', { metadata: { annotations: { 'linkerd.io/inject': 'enabled' } } }, 'application/merge-patch+json');
    await ok(
      'PATCH',
      '/api/v1/namespaces/linkerd/configmaps/linkerd-config',
      { data: { values: values('warn,linkerd=debug') } },
      'application/merge-patch+json',
    );
    const laterPod = await eventually('a pod in the namespace enabled after the restart to be injected', async () => {
      const res = await api('POST', '/api/v1/namespaces/later/pods', podBody('later'));
      return res.status === 201 && isMeshed(res.json as PodLike) ? (res.json as PodLike) : undefined;
    });
    await eventually('the new proxy log level', async () => {
      const res = await api('POST', '/api/v1/namespaces/later/pods?dryRun=All', podBody('config'));
      return proxyLog(res.json as PodLike)?.startsWith('warn,linkerd=debug') ? true : undefined;
    });
    // So does a ResourceQuota: the webhook warns that it refuses the injected containers.
    await ok('POST', '/api/v1/namespaces/later/resourcequotas', { apiVersion: 'v1', kind: 'ResourceQuota', metadata: { name: 'compute' }, spec: { hard: { 'requests.cpu': '8' } } });
    await eventually('the webhook to warn of the quota created after the restart', async () => {
      const res = await api('POST', '/api/v1/namespaces/later/pods?dryRun=All', podBody('quota'));
      return res.warnings.some((w) => w.includes('resource_quota_needs_resources')) ? true : undefined;
    });
    // The watches that nothing above waits for (limit ranges) resume within their backoff, at most 36 s.
    const resumed = () => injector.logs.filter((l) => l.includes('"msg":"watch resumed"')).length;
    await eventually('every watch to resume', async () => (resumed() >= 4 ? true : undefined));
    await sleep(5_000);
    await creator.stop();

    // The injector never exited nor was restarted.
    expect(injector.child.exitCode).toBeNull();
    expect(injector.child.pid).toBe(pid);
    // Readiness held on the caches throughout: the API server itself is what sends admissions.
    expect(readiness.length).toBeGreaterThan(0);
    expect(readiness.every((s) => s === 200)).toBe(true);

    const results = creator.results;
    const before = results.filter((r) => r.at < outageStart);
    const after = results.filter((r) => r.at > outageStart + outageMs);
    const during = results.filter((r) => r.at >= outageStart && r.at <= outageStart + outageMs);
    const created = results.filter((r) => r.status === 201);
    expect(before.filter((r) => r.status === 201).length).toBeGreaterThan(0);
    expect(after.filter((r) => r.status === 201).length).toBeGreaterThan(0);
    expect(during.some((r) => r.status !== 201)).toBe(true);
    // Every creation that succeeded returned an injected pod, and every pod stored in the namespace is meshed
    // (including any whose response was lost when the API server went away).
    expect(created.filter((r) => !isMeshed(r.pod ?? {}))).toEqual([]);
    const stored = ((await ok('GET', '/api/v1/namespaces/meshed/pods')) as { items: PodLike[] }).items;
    expect(stored.length).toBeGreaterThanOrEqual(created.length);
    expect(stored.filter((p) => !isMeshed(p)).map((p) => p.metadata?.name)).toEqual([]);
    expect(isMeshed(laterPod)).toBe(true);

    // Bounded retries with backoff, no spinning, and one log line per state change per cache.
    const restarts = await metric('proxy_inject_watch_restarts_total', 'reason="error"');
    const logs = injector.logs.map((l) => {
      try {
        return JSON.parse(l) as { msg?: string; informer?: string; level?: number };
      } catch {
        return {};
      }
    });
    const failedLines = logs.filter((l) => l.msg?.startsWith('watch failed'));
    const resumedLines = logs.filter((l) => l.msg === 'watch resumed');
    const caches = ['limitranges', 'linkerd configuration', 'namespaces', 'resourcequotas'];
    expect(failedLines.map((l) => l.informer).sort()).toEqual(caches);
    expect(resumedLines.map((l) => l.informer).sort()).toEqual(caches);
    expect(restarts).toBeGreaterThan(0);
    expect(restarts).toBeLessThanOrEqual(caches.length * MAX_ATTEMPTS_PER_CACHE);
    expect(cpuDuringOutage).toBeLessThan((OUTAGE_MS / 1000) * 0.2);
    const errors = logs.filter((l) => (l.level ?? 0) >= 50);
    expect(errors).toEqual([]);

    console.log(
      `outage: ${results.length} pod creations (${before.length} before, ${during.length} during, ${after.length} after), ` +
        `${created.length} created, all ${stored.length} stored pods meshed; apiserver+etcd down ${Math.round(outageMs / 1000)} s ` +
        `(restart took ${Math.round(restartMs / 1000)} s); watch restarts ${restarts}; injector CPU during outage ${cpuDuringOutage.toFixed(2)} s; ` +
        `/ready samples ${readiness.length}, all 200; warnings: ${logs.filter((l) => l.level === 40).map((l) => l.msg).join(' | ')}`,
    );
  });
});
