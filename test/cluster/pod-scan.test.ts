/**
 * The webhook's own pod scan (serve --pod-scan-interval): check pods' audit against the configuration it injects with,
 * its counts as gauges by namespace that replace the last scan's, bounded in namespaces, kept when a scan fails.
 */
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { PodScan, countsOf, type PodScanCounts } from '../../src/cluster/index.js';
import type { InjectorConfig } from '../../src/engine/index.js';
import { auditPods } from '../../src/cli/check-pods.js';
import { InjectorMetrics, MAX_SCAN_NAMESPACES } from '../../src/server/metrics.js';
import { samples } from '../support/metrics.js';
import { CONFIG, configWith, meshed, ns, pod } from '../support/running-pods.js';
import { fakeApi, type FakeApi } from './fake-api.js';

type Obj = Record<string, unknown>;

const INJECT = { 'linkerd.io/inject': 'enabled' };
const DEBUG = configWith((v) => (v.proxy.logLevel = 'debug'));
const PODS: Obj[] = [
  meshed(pod('shop', 'web-1', { owner: ['StatefulSet', 'web'] })),
  meshed(pod('shop', 'web-2', { owner: ['StatefulSet', 'web'] }), DEBUG),
  pod('shop', 'late', { owner: ['StatefulSet', 'late'] }),
  meshed(pod('pay', 'api-1', { owner: ['DaemonSet', 'api'] }), DEBUG),
  pod('plain', 'quiet'),
];

const apis: FakeApi[] = [];
afterEach(async () => {
  await Promise.all(apis.splice(0).map((a) => a.close()));
});

async function cluster(pods: Obj[] = PODS, namespaces = [ns('shop', INJECT), ns('pay', INJECT), ns('plain')]) {
  const api = await fakeApi({ lists: { '/api/v1/namespaces': namespaces, '/api/v1/pods': pods, '/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations': [] } });
  apis.push(api);
  return { client: api.client, server: 'fake', source: 'test' };
}

/** A scan of the fake cluster into `metrics`, with its log lines kept. */
async function scanOf(metrics: InjectorMetrics, config: () => InjectorConfig = () => CONFIG) {
  const lines: string[] = [];
  const logger = pino({ level: 'info' }, { write: (line: string) => lines.push(line) });
  const scan = new PodScan({ cluster: await cluster(), config, kubectlDefaultContainer: false, intervalMs: 60_000, metrics, logger });
  return { scan, lines };
}

/** The gauge's samples as "namespace state=n" lines, sorted. */
async function gauge(metrics: InjectorMetrics, name: string, label: string): Promise<string[]> {
  return samples(await metrics.metrics(), name)
    .map((s) => `${s.labels['namespace']} ${s.labels[label]}=${s.value}`)
    .sort();
}

describe('the pod scan', () => {
  it("counts every running pod by namespace and state, and drifted pods by kind, against the injector's configuration", async () => {
    const report = await auditPods(await cluster(), { config: { config: CONFIG, source: 'given' } });
    // The ConfigMaps are never read: the fake has none, and no pod is unreadable.
    expect(report.configuration).toBe('given');
    const counts = countsOf(report);
    expect(Object.fromEntries(counts.pods)).toEqual({ shop: { meshed: 1, drifted: 1, unmeshed_asked: 1 }, pay: { drifted: 1 }, plain: { skipped: 1 } });
    expect(Object.fromEntries(counts.drifted)).toEqual({ shop: { proxy_config: 1 }, pay: { proxy_config: 1 } });
  });

  it('exports the last scan as gauges, a namespace gone from the cluster gone from them', async () => {
    const metrics = new InjectorMetrics({ processMetrics: false });
    // Before any scan, the gauges say nothing rather than zero.
    expect(await gauge(metrics, 'proxy_inject_pods', 'state')).toEqual([]);
    const { scan } = await scanOf(metrics);
    scan.start();
    await scan.stop();
    // stop() drops the result of a scan under way: nothing is reported or counted.
    expect(await gauge(metrics, 'proxy_inject_pods', 'state')).toEqual([]);
    expect(samples(await metrics.metrics(), 'proxy_inject_pod_scans_total')).toEqual([]);
    const { scan: finished, lines } = await scanOf(metrics);
    finished.start();
    await expect.poll(() => lines.length).toBe(1);
    await finished.stop();
    expect(JSON.parse(lines[0] ?? '{}')).toMatchObject({ msg: expect.stringMatching(/^scanned the running pods in \d+\.\d s$/), counts: { meshed: 1, drifted: 2 } });
    expect(await gauge(metrics, 'proxy_inject_pods', 'state')).toEqual(['pay drifted=1', 'plain skipped=1', 'shop drifted=1', 'shop meshed=1', 'shop unmeshed_asked=1']);
    // Small pages: each is audited in one turn of the event loop, and admissions wait for no more than one.
    expect(apis.at(-1)?.listed.filter((l) => l.startsWith('/api/v1/pods?'))).toEqual(['/api/v1/pods?limit=20']);
    expect(await gauge(metrics, 'proxy_inject_drifted_pods', 'kind')).toEqual(['pay proxy_config=1', 'shop proxy_config=1']);
    expect(samples(await metrics.metrics(), 'proxy_inject_pod_scans_total').map((s) => [s.labels['result'], s.value])).toEqual([['done', 1]]);

    metrics.podScanned({ pods: new Map([['shop', { meshed: 3 }]]), drifted: new Map() });
    expect(await gauge(metrics, 'proxy_inject_pods', 'state')).toEqual(['shop meshed=3']);
    expect(await gauge(metrics, 'proxy_inject_drifted_pods', 'kind')).toEqual([]);
  });

  it('keeps the last counts when a scan fails, and counts the failure', async () => {
    const metrics = new InjectorMetrics({ processMetrics: false });
    metrics.podScanned({ pods: new Map([['shop', { meshed: 2 }]]), drifted: new Map() });
    const { scan, lines } = await scanOf(metrics, () => {
      throw new Error('the Linkerd configuration is not loaded');
    });
    scan.start();
    await expect.poll(() => lines.length).toBe(1);
    await scan.stop();
    expect(JSON.parse(lines[0] ?? '{}')).toMatchObject({ err: 'the Linkerd configuration is not loaded', msg: 'could not scan the running pods; the gauges keep the last scan' });
    expect(await gauge(metrics, 'proxy_inject_pods', 'state')).toEqual(['shop meshed=2']);
    expect(samples(await metrics.metrics(), 'proxy_inject_pod_scans_total').map((s) => [s.labels['result'], s.value])).toEqual([['done', 1], ['failed', 1]]);
  });

  it(`names at most ${MAX_SCAN_NAMESPACES} namespaces, and adds up the pods of the rest as other`, async () => {
    const metrics = new InjectorMetrics({ processMetrics: false });
    const many = (count: number): PodScanCounts['pods'] => new Map(Array.from({ length: count }, (_, i) => [`ns-${String(i).padStart(4, '0')}`, { meshed: 2, drifted: 1 }]));
    metrics.podScanned({ pods: many(MAX_SCAN_NAMESPACES + 30), drifted: new Map([['ns-0000', { trust_anchors: 1 }]]) });
    const lines = await gauge(metrics, 'proxy_inject_pods', 'state');
    expect(lines).toHaveLength(2 * (MAX_SCAN_NAMESPACES + 1));
    expect(lines).toContain('other meshed=60');
    expect(lines).toContain('other drifted=30');
    expect(lines).toContain(`ns-${String(MAX_SCAN_NAMESPACES - 1).padStart(4, '0')} meshed=2`);
    expect(await gauge(metrics, 'proxy_inject_drifted_pods', 'kind')).toEqual(['ns-0000 trust_anchors=1']);
  });
});
