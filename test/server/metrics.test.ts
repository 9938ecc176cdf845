/** Bounded label values of the admission metrics, and the count of refused requests. */
import { connect, type AddressInfo } from 'node:net';
import { pino } from 'pino';
import { Histogram, Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { handleAdmission, type HandledAdmission } from '../../src/admission/handler.js';
import type { AdmissionRequest } from '../../src/admission/types.js';
import { DEFAULT_LINKERD_VERSION } from '../../src/engine/index.js';
import { PROXY_ANNOTATIONS } from '../../src/engine/names.js';
import { ConfigLabelValues, FREE_FORM_VALUES_PER_LABEL, LabelSetCap, MAX_LABEL_SET_BYTES, MAX_LABEL_SETS, OTHER } from '../../src/server/metric-labels.js';
import { InjectorMetrics } from '../../src/server/metrics.js';
import { buildWebhookApp, DEFAULT_LIMITS } from '../../src/server/webhook.js';
import { inject } from '../support/inject.js';
import { admissionReview } from '../support/admission.js';
import { pod, testConfig } from '../support/engine.js';

const silent = pino({ level: 'silent' });
const LOG_LEVEL = 'config.linkerd.io/proxy-log-level';

/** Series of one metric in a scrape. */
const series = (text: string, name: string) => text.split('\n').filter((l) => l.startsWith(`${name}{`));

/** A real handled admission of a pod that asks for injection, to vary the labels of. */
async function handledPod(annotations: Record<string, string> = {}): Promise<HandledAdmission> {
  const review = admissionReview(pod({ annotations: { 'linkerd.io/inject': 'enabled', ...annotations } }));
  const config = testConfig();
  return handleAdmission(review['request'] as AdmissionRequest, { config: () => config, namespaceAnnotations: () => undefined });
}

function withConfiguration(handled: HandledAdmission, configuration: Record<string, string>, owner = 'deployment'): HandledAdmission {
  if (handled.kind !== 'evaluated') throw new Error('the sample admission was not evaluated');
  return { ...handled, owner: { kind: owner, name: 'web' }, result: { ...handled.result, workloadConfiguration: configuration } };
}

describe('configuration label values', () => {
  it('enumerations pass their valid values and fold anything else into other', () => {
    const values = new ConfigLabelValues();
    expect(values.value(LOG_LEVEL, 'debug')).toBe('debug');
    expect(values.value('config.linkerd.io/proxy-log-format', 'json')).toBe('json');
    expect(values.value('config.linkerd.io/proxy-log-format', 'xml')).toBe(OTHER);
    expect(values.value('config.linkerd.io/image-pull-policy', 'IfNotPresent')).toBe('IfNotPresent');
    expect(values.value('config.linkerd.io/default-inbound-policy', 'cluster-authenticated')).toBe('cluster-authenticated');
    expect(values.value('config.linkerd.io/proxy-await', 'sometimes')).toBe(OTHER);
    expect(values.value('config.linkerd.io/enable-debug-sidecar', 'True')).toBe('True');
    expect(values.value(LOG_LEVEL, '')).toBe('');
    expect(values.value(LOG_LEVEL, undefined)).toBe('');
  });

  it('free-form labels pass their first few distinct values, then fold new ones into other for good', () => {
    const values = new ConfigLabelValues();
    const limit = 'config.linkerd.io/proxy-cpu-limit';
    const first = Array.from({ length: FREE_FORM_VALUES_PER_LABEL }, (_, i) => `${i + 1}`);
    expect(first.map((v) => values.value(limit, v))).toEqual(first);
    expect(values.value(limit, '500m')).toBe(OTHER);
    expect(values.value(limit, '1')).toBe('1');
    // Each label has its own budget.
    expect(values.value('config.linkerd.io/admin-port', '4191')).toBe('4191');
    // A log filter is free-form; a value longer than any setting worth a series never passes.
    expect(values.value(LOG_LEVEL, 'warn,linkerd=debug')).toBe('warn,linkerd=debug');
    expect(values.value('config.linkerd.io/proxy-image', `registry.example/${'x'.repeat(80)}`)).toBe(OTHER);
    expect(values.value('config.linkerd.io/proxy-additional-env', '[{"name":"A","value":"1"}]')).toBe(OTHER);
  });
});

describe('admission counters stay bounded', () => {
  it('100,000 pods with distinct proxy-log-level values add at most the free-form budget of series', async () => {
    const metrics = new InjectorMetrics({ processMetrics: false });
    const sample = await handledPod({ [LOG_LEVEL]: 'warn,linkerd=info' });
    metrics.record(sample, 'shop', 0.001);
    const before = series(await metrics.metrics(), 'proxy_inject_admission_requests_total').length;
    for (let i = 0; i < 100_000; i++) {
      metrics.record(withConfiguration(sample, { [LOG_LEVEL]: `warn,linkerd=debug,x${i}` }), 'shop', 0.001);
      if (i % 10_000 === 0) await metrics.metrics();
    }
    const text = await metrics.metrics();
    const requests = series(text, 'proxy_inject_admission_requests_total');
    // The sample (owner: the pod itself) spent one value of the budget; the loop (owner: a Deployment) the rest, then other.
    expect(before).toBe(1);
    expect(requests.length).toBe(1 + (FREE_FORM_VALUES_PER_LABEL - 1) + 1);
    expect(requests.some((l) => l.includes('proxy_log_level="other"'))).toBe(true);
    const total = requests.reduce((sum, l) => sum + Number(l.slice(l.lastIndexOf(' ') + 1)), 0);
    expect(total).toBe(100_001);
    expect(series(text, 'proxy_inject_admission_responses_total').length).toBe(requests.length);
  });

  it('100,000 pods with distinct namespaces, owner kinds and values in every label stay under the label-set cap', async () => {
    const metrics = new InjectorMetrics({ processMetrics: false });
    const sample = await handledPod();
    for (let i = 0; i < 100_000; i++) {
      const configuration: Record<string, string> = {};
      for (const key of PROXY_ANNOTATIONS) configuration[key] = `v${i}`;
      metrics.record(withConfiguration(sample, configuration, `kind${i % 997}`), `ns-${i}`, 0.001);
      if (i % 10_000 === 0) await metrics.metrics();
    }
    const text = await metrics.metrics();
    const requests = series(text, 'proxy_inject_admission_requests_total');
    const responses = series(text, 'proxy_inject_admission_responses_total');
    // The cap, plus the folded set (one per annotation_at in use).
    expect(requests.length).toBeLessThanOrEqual(MAX_LABEL_SETS + 1);
    expect(responses.length).toBeLessThanOrEqual(MAX_LABEL_SETS + 1);
    expect(metrics.labelSets).toMatchObject({ requests: MAX_LABEL_SETS, responses: MAX_LABEL_SETS });
    const folded = requests.find((l) => l.includes('owner_kind="other",namespace="other"'));
    expect(folded).toMatch(/proxy_log_level="other"/);
    expect(Number(folded?.slice(folded.lastIndexOf(' ') + 1))).toBe(100_000 - MAX_LABEL_SETS);
    // Bounded text too: a scrape is at most a few hundred KiB however many pods came by.
    expect(Buffer.byteLength(text)).toBeLessThan(2 * 1024 * 1024);
  });

  it('an owner kind that is no kind is `other`, and label sets of the longest values stay within their bytes', async () => {
    const metrics = new InjectorMetrics({ processMetrics: false });
    const sample = await handledPod();
    for (let i = 0; i < 20; i++) metrics.record(withConfiguration(sample, {}, `Deploy${'x'.repeat(3_500_000)}${i}`), 'shop', 0.001);
    let text = await metrics.metrics();
    expect(series(text, 'proxy_inject_admission_requests_total')).toHaveLength(1);
    expect(series(text, 'proxy_inject_admission_requests_total')[0]).toContain('owner_kind="other"');
    // Every configuration label at its longest free-form value, in namespaces of the longest name.
    for (let i = 0; i < 2_000; i++) {
      const configuration: Record<string, string> = {};
      for (const key of PROXY_ANNOTATIONS) configuration[key] = `${i}`.padEnd(63, 'v');
      metrics.record(withConfiguration(sample, configuration, 'deployment'), `${i}`.padEnd(63, 'n'), 0.001);
    }
    text = await metrics.metrics();
    expect(metrics.labelSets.requests).toBe(MAX_LABEL_SETS);
    expect(metrics.labelSets.bytes).toBeGreaterThan(MAX_LABEL_SETS * 1_000);
    expect(metrics.labelSets.bytes).toBeLessThanOrEqual(2 * MAX_LABEL_SET_BYTES);
    expect(Buffer.byteLength(text)).toBeLessThan(4 * 1024 * 1024);
  });

  it('a cap of bytes folds sets of long keys before a cap of sets would', () => {
    const cap = new LabelSetCap(500, 100_000);
    let admitted = 0;
    for (let i = 0; i < 500; i++) if (cap.admit(`${i}`.padEnd(1_000, 'k'))) admitted++;
    // Each key of 1,000 characters is counted 8,256 bytes: twelve fit in 100,000.
    expect(admitted).toBe(12);
    expect(cap.bytes).toBeLessThanOrEqual(100_000);
    expect(cap.admit('0'.padEnd(1_000, 'k'))).toBe(true);
  });

  it('past the cap, injected and skipped pods are folded apart, each response under its own skip labels, across scrapes', async () => {
    const metrics = new InjectorMetrics({ processMetrics: false });
    const injected = await handledPod();
    // Opted out, with no namespace asking: skipped for the want of the enable annotation, its annotation_at "".
    const unasked = await handledPod({ 'linkerd.io/inject': 'disabled' });
    const hostNetwork = await (async () => {
      const review = admissionReview(pod({ annotations: { 'linkerd.io/inject': 'enabled' }, spec: { hostNetwork: true, containers: [{ name: 'a', image: 'a' }] } }));
      const config = testConfig();
      return handleAdmission(review['request'] as AdmissionRequest, { config: () => config, namespaceAnnotations: () => undefined });
    })();
    const samples = [injected, unasked, hostNetwork];
    const pods = 3 * MAX_LABEL_SETS;
    for (let i = 0; i < pods; i++) {
      metrics.record(withConfiguration(samples[i % 3] as HandledAdmission, { [LOG_LEVEL]: `v${i}` }, 'deployment'), `ns-${i}`, 0.001);
      // A scrape hands the counts so far to the registry (whose totals go on): the folded series count on after it.
      if (i === 2 * MAX_LABEL_SETS) await metrics.metrics();
    }
    const text = await metrics.metrics();
    const folded = (name: string, skip: string) =>
      series(text, name)
        .filter((l) => l.includes('namespace="other"') && l.includes(skip))
        .reduce((sum, l) => sum + Number(l.slice(l.lastIndexOf(' ') + 1)), 0);
    // Each sample is a third of the pods; the first MAX_LABEL_SETS request sets and response sets were counted apart.
    expect(folded('proxy_inject_admission_requests_total', '')).toBe(pods - MAX_LABEL_SETS);
    const responses = ['skip="false",skip_reason=""', 'skip="true",skip_reason="injection_enable_annotation_absent"', 'skip="true",skip_reason="host_network_enabled"'];
    const foldedResponses = responses.map((labels) => folded('proxy_inject_admission_responses_total', labels));
    expect(foldedResponses.reduce((a, b) => a + b, 0)).toBe(pods - MAX_LABEL_SETS);
    // Past the cap the three kinds come in turn, so each is folded about as often as the others.
    for (const count of foldedResponses) expect(count).toBeGreaterThanOrEqual(Math.floor((pods - MAX_LABEL_SETS) / 3) - 1);
  });
});

describe('refused requests', () => {
  it('are counted by status and reason', async () => {
    const metrics = new InjectorMetrics({ processMetrics: false });
    const app = buildWebhookApp({
      sources: { config: () => testConfig(), namespaceAnnotations: () => undefined },
      metrics,
      logger: silent,
    });
    try {
      const post = (payload: string, contentType = 'application/json') =>
        inject(app, { method: 'POST', url: '/', headers: { 'content-type': contentType }, payload });
      expect((await post('{"apiVersion": ')).statusCode).toBe(400);
      expect((await post('')).statusCode).toBe(400);
      expect((await post('[]')).statusCode).toBe(400);
      expect((await post('[]')).statusCode).toBe(400);
      expect((await post('kind: AdmissionReview', 'application/yaml')).statusCode).toBe(415);
      expect((await post(JSON.stringify({ padding: 'x'.repeat(DEFAULT_LIMITS.maxBodyBytes) }))).statusCode).toBe(413);
      expect((await inject(app, { method: 'GET', url: '/metrics' })).statusCode).toBe(404);
      expect((await post(JSON.stringify(admissionReview(pod())))).statusCode).toBe(200);
      const text = await metrics.metrics();
      expect(series(text, 'proxy_inject_admission_refusals_total').sort()).toEqual([
        'proxy_inject_admission_refusals_total{status="400",reason="empty_body"} 1',
        'proxy_inject_admission_refusals_total{status="400",reason="invalid_json"} 1',
        'proxy_inject_admission_refusals_total{status="400",reason="invalid_review"} 2',
        'proxy_inject_admission_refusals_total{status="404",reason="not_found"} 1',
        'proxy_inject_admission_refusals_total{status="413",reason="body_too_large"} 1',
        'proxy_inject_admission_refusals_total{status="415",reason="unsupported_media_type"} 1',
      ]);
    } finally {
      await app.close();
    }
  });

  it('counts what node:http refuses before a request exists (headers too large, bytes that are not HTTP) and answers a CONNECT', async () => {
    const metrics = new InjectorMetrics({ processMetrics: false });
    const app = buildWebhookApp({ sources: { config: () => testConfig(), namespaceAnnotations: () => undefined }, metrics, logger: silent });
    await app.listen({ host: '127.0.0.1', port: 0 });
    const { port } = app.server.address() as AddressInfo;
    /**
     * Sends `bytes` on a connection of its own and returns the status line it got back. The server closes the
     * connection after answering; with bytes still unread it resets it, which ends the read, not the test. The
     * headers that are too large stay within one read (20 KiB), so that they are all read before the answer.
     */
    const statusOf = (bytes: string) =>
      new Promise<string>((resolve) => {
        let answer = '';
        const socket = connect(port, '127.0.0.1', () => socket.write(bytes));
        socket.on('data', (chunk) => (answer += String(chunk)));
        socket.on('error', () => socket.destroy());
        socket.on('close', () => resolve(answer.split('\r\n')[0] ?? ''));
      });
    try {
      expect(await statusOf(`POST / HTTP/1.1\r\nHost: x\r\nX-Pad: ${'a'.repeat(20 * 1024)}\r\n\r\n`)).toBe('HTTP/1.1 431 Request Header Fields Too Large');
      expect(await statusOf('HELLO\r\n\r\n')).toBe('HTTP/1.1 400 Bad Request');
      expect(await statusOf('GET / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n')).toBe('HTTP/1.1 400 Bad Request');
      expect(await statusOf('CONNECT example:443 HTTP/1.1\r\nHost: example:443\r\n\r\n')).toBe('HTTP/1.1 404 Not Found');
      expect(series(await metrics.metrics(), 'proxy_inject_admission_refusals_total').sort()).toEqual([
        'proxy_inject_admission_refusals_total{status="400",reason="malformed_http"} 2',
        'proxy_inject_admission_refusals_total{status="404",reason="not_found"} 1',
        'proxy_inject_admission_refusals_total{status="431",reason="headers_too_large"} 1',
      ]);
    } finally {
      await app.close();
    }
  });
});

describe('the admission duration histogram', () => {
  it('is exposed exactly as a prom-client histogram with the same observations would be', async () => {
    const metrics = new InjectorMetrics({ processMetrics: false });
    const registry = new Registry();
    const reference = new Histogram({
      name: 'proxy_inject_admission_duration_seconds',
      help: 'Time to answer an admission request, from its body read to its response encoded, by outcome.',
      labelNames: ['outcome'],
      buckets: [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
      registers: [registry],
    });
    const injected = await handledPod();
    const ignored: HandledAdmission = { kind: 'ignored', response: { uid: 'u', allowed: true } };
    // Below the first bound, on a bound, between bounds, and beyond the last.
    for (const [handled, outcome, seconds] of [
      [injected, 'injected', 0.00005],
      [injected, 'injected', 0.001],
      [injected, 'injected', 0.0123],
      [ignored, 'ignored', 3],
      [ignored, 'ignored', 0.3],
    ] as const) {
      metrics.record(handled, 'shop', seconds);
      reference.observe({ outcome }, seconds);
    }
    const ours = (await metrics.metrics()).split('\n').filter((l) => l.includes('proxy_inject_admission_duration_seconds'));
    const theirs = (await registry.metrics()).split('\n').filter((l) => l.includes('proxy_inject_admission_duration_seconds'));
    expect(ours.length).toBe(2 + 2 * 17);
    expect(ours).toEqual(theirs);
  });
});

describe('proxy_inject_linkerd_version_mismatch', () => {
  const gauge = async (version: string | undefined) => {
    const metrics = new InjectorMetrics({ processMetrics: false });
    metrics.reportLinkerdVersion(() => version);
    return series(await metrics.metrics(), 'proxy_inject_linkerd_version_mismatch');
  };

  it('is 0 for the version followed, 1 for another, and absent before a configuration loads', async () => {
    expect(await gauge(DEFAULT_LINKERD_VERSION)).toEqual([`proxy_inject_linkerd_version_mismatch{configured="${DEFAULT_LINKERD_VERSION}",followed="${DEFAULT_LINKERD_VERSION}"} 0`]);
    expect(await gauge('edge-26.11.2')).toEqual([`proxy_inject_linkerd_version_mismatch{configured="edge-26.11.2",followed="${DEFAULT_LINKERD_VERSION}"} 1`]);
    expect(await gauge(undefined)).toEqual([]);
    const [long] = await gauge('x'.repeat(10_000));
    expect(long?.length).toBeLessThan(200);
  });
});
