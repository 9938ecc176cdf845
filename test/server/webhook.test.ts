/** The webhook application in-process (no sockets): envelopes, round trips, bad input, failures, metrics. */
import { request } from 'node:http';
import { createConnection } from 'node:net';
import { PassThrough, Writable, type Readable } from 'node:stream';
import { gzipSync } from 'node:zlib';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { SourceUnavailableError, type AdmissionSources } from '../../src/admission/index.js';
import { JsonValueCounter } from '../../src/server/body.js';
import { InjectorMetrics } from '../../src/server/metrics.js';
import { buildWebhookApp, DEFAULT_LIMITS, jsonSyntaxReason, type WebhookApp } from '../../src/server/webhook.js';
import { inject } from '../support/inject.js';
import { admissionReview, decodedPatch } from '../support/admission.js';
import { inject as injectPod, riskWarning, type StartupRisk } from '../../src/engine/index.js';
import { applied, names, pod, testConfig } from '../support/engine.js';

const silent = pino({ level: 'silent' });
const apps: Array<{ close(): Promise<unknown> }> = [];

function setup(overrides: Partial<AdmissionSources> = {}) {
  const metrics = new InjectorMetrics({ processMetrics: false });
  const admitted: Array<{ dryRun: boolean | undefined; outcome: string | undefined }> = [];
  const config = testConfig();
  const app = buildWebhookApp({
    sources: { config: () => config, namespaceAnnotations: () => undefined, ...overrides },
    metrics,
    logger: silent,
    onAdmitted: (handled, request) => admitted.push({ dryRun: request.dryRun, outcome: handled.kind === 'evaluated' ? handled.result.outcome : undefined }),
  });
  apps.push(app);
  return { app, metrics, admitted };
}

afterEach(async () => {
  await Promise.all(apps.splice(0).map((a) => a.close()));
});

const enabledPod = () => pod({ annotations: { 'linkerd.io/inject': 'enabled' } });

async function post(app: ReturnType<typeof setup>['app'], body: unknown, contentType = 'application/json') {
  return inject(app, {
    method: 'POST',
    url: '/',
    headers: { 'content-type': contentType },
    payload: typeof body === 'string' || Buffer.isBuffer(body) ? body : JSON.stringify(body),
  });
}

describe('round trips', () => {
  it.each(['admission.k8s.io/v1', 'admission.k8s.io/v1beta1'])('%s: echoes apiVersion, kind and uid; the patch applies', async (apiVersion) => {
    const { app } = setup();
    const review = admissionReview(enabledPod(), { apiVersion, uid: 'uid-1' });
    const res = await post(app, review);
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    const body = res.json();
    expect(body.apiVersion).toBe(apiVersion);
    expect(body.kind).toBe('AdmissionReview');
    expect(body.response.uid).toBe('uid-1');
    expect(body.response.allowed).toBe(true);
    expect(body.response.patchType).toBe('JSONPatch');
    const result = applied(review.request.object, decodedPatch(body)) as Record<string, any>;
    expect(names(result.spec.containers)).toEqual(['linkerd-proxy', 'app']);
    expect(names(result.spec.initContainers)).toEqual(['linkerd-init']);
    expect(result.metadata.annotations['linkerd.io/created-by']).toBe('linkerd/proxy-injector edge-26.8.3');
  });

  it('a pod that does not ask for injection is allowed with no patch', async () => {
    const { app } = setup();
    const res = await post(app, admissionReview(pod()));
    expect(res.json().response).toEqual({ uid: expect.any(String), allowed: true });
  });

  it('the namespace annotation enables injection', async () => {
    const { app } = setup({ namespaceAnnotations: (ns) => (ns === 'shop' ? { 'linkerd.io/inject': 'enabled' } : undefined) });
    const res = await post(app, admissionReview(pod()));
    expect(decodedPatch(res.json()).some((op) => op.path === '/spec/containers/0')).toBe(true);
  });

  it('Services get the opaque-ports annotation only', async () => {
    const { app } = setup();
    const svc = { apiVersion: 'v1', kind: 'Service', metadata: { name: 'db' }, spec: { ports: [{ port: 5432 }] } };
    const res = await post(app, admissionReview(svc, { kind: 'Service' }));
    expect(decodedPatch(res.json())).toEqual([
      { op: 'add', path: '/metadata/annotations', value: {} },
      { op: 'add', path: '/metadata/annotations/config.linkerd.io~1opaque-ports', value: '5432' },
    ]);
  });

  it('ignored annotation values come back as warnings kubectl will show', async () => {
    const { app } = setup();
    const res = await post(app, admissionReview(pod({ annotations: { 'linkerd.io/inject': 'enabled', 'config.linkerd.io/admin-port': 'x' } })));
    expect(res.json().response.warnings).toEqual([
      'ignored annotation config.linkerd.io/admin-port="x": not a port number (1-65535)',
    ]);
  });

  it('a proxy request larger than its limit comes back as a warning and the configured resources stay', async () => {
    const { app } = setup();
    const annotations = { 'linkerd.io/inject': 'enabled', 'config.linkerd.io/proxy-memory-request': '1Gi', 'config.linkerd.io/proxy-memory-limit': '512Mi' };
    const input = pod({ annotations });
    const res = await post(app, admissionReview(input));
    expect(res.json().response.warnings).toEqual([
      'ignored annotations config.linkerd.io/proxy-memory-request="1Gi" and config.linkerd.io/proxy-memory-limit="512Mi": ' +
        'the request "1Gi" is larger than the limit "512Mi", which the API server refuses',
    ]);
    const out = applied(input, decodedPatch(res.json())) as { spec: { containers: Array<{ name: string; resources?: unknown }> } };
    const proxy = out.spec.containers.find((c) => c.name === 'linkerd-proxy');
    expect(proxy).toBeDefined();
    expect(JSON.stringify(proxy?.resources ?? {})).not.toMatch(/1Gi|512Mi/);
  });

  it('start-up risks come back as warnings, after the ignored values, at most ten and each clipped', async () => {
    const { app } = setup();
    const annotations = { 'linkerd.io/inject': 'enabled', 'config.linkerd.io/proxy-await': 'disabled', 'config.linkerd.io/admin-port': 'x' };
    const spec = { restartPolicy: 'Never', containers: [{ name: 'app', image: 'app:1' }] };
    const warnings = (await post(app, admissionReview(pod({ annotations, spec })))).json().response.warnings as string[];
    expect(warnings).toHaveLength(3);
    expect(warnings[0]).toMatch(/^ignored annotation config\.linkerd\.io\/admin-port/);
    expect(warnings[1]).toMatch(/^start-up risk \(proxy_never_exits\): the pod runs to completion \(restartPolicy Never\)/);
    expect(warnings[2]).toMatch(/^start-up risk \(proxy_await_disabled\): /);
    // Eleven init containers under the CNI plugin: eleven risks, of which ten are shown and the rest counted; names
    // long enough for each risk to say more than a warning holds.
    const cni = setup({ config: () => testConfig((v) => (v.cniEnabled = true)) });
    const inits = Array.from({ length: 11 }, (_, i) => ({ name: `database-schema-migration-step-${i}`, image: 'busybox' }));
    const many = (await post(cni.app, admissionReview(pod({ annotations: { 'linkerd.io/inject': 'enabled' }, spec: { initContainers: inits, containers: [{ name: 'app', image: 'a' }] } })))).json().response.warnings as string[];
    expect(many).toHaveLength(11);
    expect(many[10]).toBe('and 1 more');
    // The warning is the risk's first 237 characters and an ellipsis.
    const risks = injectPod({ object: pod({ annotations: { 'linkerd.io/inject': 'enabled' }, spec: { initContainers: inits, containers: [{ name: 'app', image: 'a' }] } }), config: testConfig((v) => (v.cniEnabled = true)) }).risks;
    for (const [i, w] of many.slice(0, 10).entries()) {
      const full = riskWarning(risks[i] as StartupRisk);
      expect(full.length).toBeGreaterThan(240);
      expect(w).toBe(`${full.slice(0, 237)}...`);
    }
  });

  it('operations other than CREATE are allowed untouched', async () => {
    const { app } = setup();
    const res = await post(app, admissionReview(enabledPod(), { operation: 'UPDATE' }));
    expect(res.json().response).toEqual({ uid: expect.any(String), allowed: true });
  });

  it('a dry run is answered the same way and reported as a dry run to side-effect hooks', async () => {
    const { app, admitted } = setup();
    const res = await post(app, admissionReview(enabledPod(), { dryRun: true }));
    expect(res.json().response.patchType).toBe('JSONPatch');
    expect(admitted).toEqual([{ dryRun: true, outcome: 'injected' }]);
  });
});

describe('jsonSyntaxReason', () => {
  const reason = (text: string): string => {
    try {
      JSON.parse(text);
    } catch (err) {
      return jsonSyntaxReason(err, text);
    }
    throw new Error(`${text} parsed`);
  };

  it('says what V8 found and at which line and column, never the text around it', () => {
    expect(reason('{"kind" secret}')).toBe("the body is not valid JSON: expected ':' after property name at line 1, column 9");
    expect(reason('{"a":1}\n}')).toBe('the body is not valid JSON: unexpected non-whitespace character after the JSON at line 2, column 1');
    expect(reason('{"a":"\\q"}')).toBe('the body is not valid JSON: bad escaped character at line 1, column 8');
    expect(reason('{"a":secret}')).toBe('the body is not valid JSON: an unexpected character');
    expect(reason('')).toBe('the body is not valid JSON: it ends before its last value does');
    expect(jsonSyntaxReason(new Error('something else'), '{')).toBe('the body is not valid JSON');
    expect(jsonSyntaxReason('not an error', '{')).toBe('the body is not valid JSON');
  });
});

describe('an encoded body', () => {
  it('is refused with a 415 that names the encoding, not read as JSON; identity is no encoding', async () => {
    const { app, metrics } = setup();
    const review = JSON.stringify(admissionReview(pod()));
    const send = (encoding: string, payload: string | Buffer) =>
      inject(app, { method: 'POST', url: '/', headers: { 'content-type': 'application/json', 'content-encoding': encoding }, payload });
    const gzipped = await send('gzip', gzipSync(review));
    expect([gzipped.statusCode, gzipped.body]).toEqual([415, 'the body must not be encoded (Content-Encoding: gzip)\n']);
    expect((await send('deflate, gzip', review)).statusCode).toBe(415);
    expect((await send('identity', review)).statusCode).toBe(200);
    expect(await metrics.metrics()).toMatch(/proxy_inject_admission_refusals_total\{status="415",reason="unsupported_media_type"\} 2/);
  });
});

describe('bad input gets a status and a one-line reason', () => {
  const valid = admissionReview(pod());
  const without = (key: string) => ({ ...valid, request: { ...valid['request'], [key]: undefined } });
  it.each([
    ['a body that is not JSON', '{"apiVersion": ', 'application/json', 400, /^the body is not valid JSON: it ends before its last value does$/],
    ['a body with a syntax error', '{\n  "kind": "AdmissionReview"\n  "request": {}}', 'application/json', 400, /^the body is not valid JSON: expected ',' or '}' after property value at line 3, column 3$/],
    ['an empty body', '', 'application/json', 400, /^the body is empty: POST an AdmissionReview as application\/json$/],
    ['a body that reads like a refusal', 'too large', 'application/json', 400, /^the body is not valid JSON: an unexpected character$/],
    ['a JSON array', '[]', 'application/json', 400, /^the body is not a JSON object$/],
    ['the wrong kind', { ...valid, kind: 'ConversionReview' }, 'application/json', 400, /unsupported kind "ConversionReview"/],
    ['the wrong apiVersion', { ...valid, apiVersion: 'admission.k8s.io/v2' }, 'application/json', 400, /unsupported apiVersion/],
    ['no request', { apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview' }, 'application/json', 400, /has no request$/],
    ['no uid', without('uid'), 'application/json', 400, /has no uid$/],
    ['an object that cannot be decoded', { ...valid, request: { ...valid['request'], object: 'pod' } }, 'application/json', 400, /cannot be decoded/],
    ['a text body', JSON.stringify(valid), 'text/plain', 415, /must be application\/json/],
    ['a YAML body', 'kind: AdmissionReview', 'application/yaml', 415, /must be application\/json/],
  ])('%s', async (_what, body, contentType, status, reason) => {
    const { app, metrics } = setup();
    const res = await post(app, body, contentType);
    expect(res.statusCode).toBe(status);
    expect(res.headers['content-type']).toMatch(/^text\/plain/);
    expect(res.body.endsWith('\n')).toBe(true);
    expect(res.body.trimEnd().includes('\n')).toBe(false);
    expect(res.body.trimEnd()).toMatch(reason);
    expect(await metrics.metrics()).not.toMatch(/^proxy_inject_admission_requests_total\{/m);
  });

  it('a body over 4 MiB is refused with 413 without being parsed, and its connection closed', async () => {
    const { app } = setup();
    const big = JSON.stringify({ ...valid, padding: 'x'.repeat(DEFAULT_LIMITS.maxBodyBytes) });
    const res = await post(app, big);
    expect(res.statusCode).toBe(413);
    expect(res.body).toMatch(/larger than 4194304 bytes/);
    expect(res.headers['connection']).toBe('close');
  });

  it('a body just under the limit is accepted', async () => {
    const { app } = setup();
    const padded = admissionReview(pod({ spec: { containers: [{ name: 'app', image: 'app:1', command: ['x'.repeat(DEFAULT_LIMITS.maxBodyBytes - 4096)] }] } }));
    const res = await post(app, padded);
    expect(res.statusCode).toBe(200);
  });

  it('the timeout query kube-apiserver adds to the path is accepted', async () => {
    const { app } = setup();
    const res = await inject(app, { method: 'POST', url: '/?timeout=10s', headers: { 'content-type': 'application/json' }, payload: JSON.stringify(admissionReview(enabledPod())) });
    expect(res.statusCode).toBe(200);
    expect(res.json().response.patchType).toBe('JSONPatch');
  });

  it('other methods and paths get 404 with a hint', async () => {
    const { app } = setup();
    const res = await inject(app, { method: 'GET', url: '/' });
    expect(res.statusCode).toBe(404);
    expect(res.body).toMatch(/POST AdmissionReviews to \//);
  });

  it.each([
    ['spelled with escapes', '"\\u005f\\u005fproto__"'],
    ['after a byte-order mark', '"__proto__"'],
  ])('a prototype key %s is dropped too', async (what, key) => {
    const { app } = setup();
    const body = `{${key}:{"polluted":1},${JSON.stringify(admissionReview(pod(), { uid: 'u-proto' })).slice(1)}`;
    const res = await post(app, what === 'after a byte-order mark' ? `\ufeff${body}` : body);
    expect(res.statusCode).toBe(200);
    expect(res.json().response.uid).toBe('u-proto');
    expect(({} as Record<string, unknown>)['polluted']).toBeUndefined();
  });

  it('prototype-poisoning keys are dropped, not obeyed', async () => {
    const { app } = setup();
    const res = await post(app, `{"__proto__":{"polluted":1},${JSON.stringify(admissionReview(pod())).slice(1)}`);
    expect(res.statusCode).toBe(200);
    expect(({} as Record<string, unknown>)['polluted']).toBeUndefined();
  });
});

describe('failures while handling a valid request', () => {
  const broken = () => {
    throw new Error('cannot read the values file /etc/linkerd/values: ENOENT');
  };

  it('deny a pod that asks for injection: HTTP 200, allowed false, counted; the error itself only in the log', async () => {
    const lines: Array<{ msg: string; code?: string }> = [];
    const logger = pino({ level: 'info' }, { write: (line: string) => lines.push(JSON.parse(line) as (typeof lines)[number]) });
    const metrics = new InjectorMetrics({ processMetrics: false });
    const app = buildWebhookApp({ sources: { config: broken, namespaceAnnotations: () => undefined }, metrics, logger });
    apps.push(app);
    const res = await post(app, admissionReview(enabledPod(), { uid: 'u-9' }));
    expect(res.statusCode).toBe(200);
    expect(res.json().response).toEqual({
      uid: 'u-9',
      allowed: false,
      status: { code: 500, message: 'proxy-injector: an internal error (HANDLER_ERROR); the injector logged what it was' },
    });
    expect(await metrics.metrics()).toMatch(/^proxy_inject_admission_failures_total\{code="HANDLER_ERROR",denied="true"\} 1$/m);
    expect(lines.find((l) => l.code === 'HANDLER_ERROR')?.msg).toBe('failed to run webhook handler for pod/shop/(generated name). Reason: cannot read the values file /etc/linkerd/values: ENOENT');
  });

  it('admit a pod that does not ask for injection, with a warning', async () => {
    const { app, metrics } = setup({ config: broken });
    const res = await post(app, admissionReview(pod()));
    expect(res.json().response.allowed).toBe(true);
    expect(res.json().response.patch).toBeUndefined();
    expect(res.json().response.warnings[0]).toBe('proxy-injector could not evaluate this object (an internal error (HANDLER_ERROR); the injector logged what it was); it does not ask for injection');
    expect(await metrics.metrics()).toMatch(/^proxy_inject_admission_failures_total\{code="HANDLER_ERROR",denied="false"\} 1$/m);
  });

  it('missing trust anchors deny with the engine’s code', async () => {
    const config = testConfig((v) => (v.identityTrustAnchorsPEM = ''));
    const { app, metrics } = setup({ config: () => config });
    const res = await post(app, admissionReview(enabledPod()));
    expect(res.json().response.allowed).toBe(false);
    expect(res.json().response.status.message).toMatch(/no identity trust anchors/);
    expect(await metrics.metrics()).toMatch(/code="MISSING_TRUST_ANCHORS",denied="true"/);
  });

  it('a namespace lookup that throws is a failure, not a crash', async () => {
    const { app } = setup({
      namespaceAnnotations: () => Promise.reject(new Error('namespace shop is not known yet')),
    });
    const res = await post(app, admissionReview(enabledPod()));
    expect(res.statusCode).toBe(200);
    expect(res.json().response).toMatchObject({ allowed: false, status: { message: 'proxy-injector: an internal error (HANDLER_ERROR); the injector logged what it was' } });
  });
});

describe('what reviews in flight hold', () => {
  /** An app whose reviews in namespace `slow` wait until released, with limits small enough to meet. */
  function held(limits: { maxBodyBytes: number; maxInFlightBytes: number }) {
    let release: () => void = () => {};
    const waiting = new Promise<void>((resolve) => (release = resolve));
    const metrics = new InjectorMetrics({ processMetrics: false });
    const app = buildWebhookApp({
      sources: { config: () => testConfig(), namespaceAnnotations: (ns) => (ns === 'slow' ? waiting.then(() => undefined) : undefined) },
      metrics,
      logger: silent,
      limits,
    });
    apps.push(app);
    return { app, metrics, release: () => release() };
  }
  const padded = (namespace: string, bytes = 90_000) =>
    JSON.stringify(admissionReview(pod({ spec: { containers: [{ name: 'app', image: 'app:1', command: ['x'.repeat(bytes)] }] } }), { namespace }));
  const from = (app: WebhookApp, remoteAddress: string, payload: string | Readable, declared?: number) =>
    inject(app, { method: 'POST', url: '/', remoteAddress, headers: { 'content-type': 'application/json', ...(declared !== undefined && { 'content-length': String(declared) }) }, payload });

  it("are bounded per client: a client past its half gets 429 and its connection closed; another client is served; what is done is given back", async () => {
    const { app, metrics, release } = held({ maxBodyBytes: 100_000, maxInFlightBytes: 200_000 });
    const first = from(app, '10.0.0.1', padded('slow'));
    await new Promise((r) => setTimeout(r, 50));
    const second = await from(app, '10.0.0.1', padded('shop'));
    expect(second.statusCode).toBe(429);
    expect(second.body).toMatch(/^this client's reviews being read or answered hold \d+ bytes, and one client's may hold at most 100000: send the review again\n$/);
    expect(second.headers['connection']).toBe('close');
    expect((await from(app, '10.0.0.2', padded('shop'))).statusCode).toBe(200);
    release();
    expect((await first).statusCode).toBe(200);
    expect((await from(app, '10.0.0.1', padded('shop'))).statusCode).toBe(200);
    expect(await metrics.metrics()).toMatch(/proxy_inject_admission_refusals_total\{status="429",reason="client_bytes_in_flight"\} 1/);
  });

  it('are bounded in all: past the limit a review gets 503, while a small one still fits', async () => {
    const { app, metrics, release } = held({ maxBodyBytes: 100_000, maxInFlightBytes: 200_000 });
    const first = [from(app, '10.0.0.1', padded('slow')), from(app, '10.0.0.2', padded('slow'))];
    await new Promise((r) => setTimeout(r, 50));
    const third = await from(app, '10.0.0.3', padded('shop'));
    expect(third.statusCode).toBe(503);
    expect(third.body).toMatch(/^the injector's reviews being read or answered hold \d+ bytes, and it takes at most 200000 at once: send the review again\n$/);
    expect((await from(app, '10.0.0.3', JSON.stringify(admissionReview(pod())))).statusCode).toBe(200);
    release();
    for (const res of await Promise.all(first)) expect(res.statusCode).toBe(200);
    expect(await metrics.metrics()).toMatch(/proxy_inject_admission_refusals_total\{status="503",reason="too_many_bytes_in_flight"\} 1/);
  });

  it('are counted as the bytes arrive, not as declared: a body that stalls holds only what it sent', async () => {
    const { app, release } = held({ maxBodyBytes: 100_000, maxInFlightBytes: 200_000 });
    const body = padded('shop');
    const stalled = new PassThrough();
    stalled.write(body.slice(0, 1_000));
    const trickling = from(app, '10.0.0.1', stalled, body.length);
    await new Promise((r) => setTimeout(r, 50));
    // Declared at about 90,000 bytes, the stalled body holds 1,000: the same client's next review fits beside it.
    expect((await from(app, '10.0.0.1', padded('shop'))).statusCode).toBe(200);
    stalled.end(body.slice(1_000));
    release();
    expect((await trickling).statusCode).toBe(200);
  });

  it('a client that goes away before its body ends is neither answered nor counted, and what it held is given back', async () => {
    const { app, metrics } = held({ maxBodyBytes: 100_000, maxInFlightBytes: 200_000 });
    const body = padded('shop');
    const cut = new PassThrough();
    cut.write(body.slice(0, 80_000));
    const gone = from(app, '10.0.0.1', cut, body.length).catch((err: unknown) => err);
    await new Promise((r) => setTimeout(r, 50));
    cut.destroy(new Error('connection reset by peer'));
    await gone;
    // The 80,000 bytes it held are free again: two more of the same client fit.
    for (const res of await Promise.all([from(app, '10.0.0.1', padded('shop', 40_000)), from(app, '10.0.0.1', padded('shop', 40_000))])) expect(res.statusCode).toBe(200);
    const text = await metrics.metrics();
    expect(text).not.toMatch(/proxy_inject_admission_refusals_total\{/);
  });

  it("charge each JSON value: a small body of many values that alone passes a client's share gets 413 with how many", async () => {
    const { app, metrics } = held({ maxBodyBytes: 100_000, maxInFlightBytes: 200_000 });
    const review = admissionReview(pod());
    const body = JSON.stringify({ ...review, padding: Array.from({ length: 5_000 }, () => ({})) });
    expect(body.length).toBeLessThan(20_000);
    const res = await from(app, '10.0.0.1', body);
    expect(res.statusCode).toBe(413);
    expect(res.body).toMatch(/^the body would hold more than one client's reviews may, 100000 bytes, once parsed: its first \d+ bytes start \d+ JSON values, each counted 32 bytes\n$/);
    expect(res.headers['connection']).toBe('close');
    // A value inside a string is no value: the same text as one string is taken.
    expect((await from(app, '10.0.0.1', JSON.stringify({ ...review, padding: JSON.stringify(Array.from({ length: 5_000 }, () => ({}))) }))).statusCode).toBe(200);
    expect(await metrics.metrics()).toMatch(/proxy_inject_admission_refusals_total\{status="413",reason="too_many_values"\} 1/);
  });

  it('count each JSON value: a body of more than --max-json-values gets 413 as they arrive, one of as many is taken', async () => {
    const app = buildWebhookApp({ sources: { config: () => testConfig(), namespaceAnnotations: () => undefined }, metrics: new InjectorMetrics({ processMetrics: false }), logger: silent, limits: { maxJsonValues: 5_000 } });
    apps.push(app);
    const review = admissionReview(pod());
    const base = new JsonValueCounter().add(Buffer.from(JSON.stringify(review)));
    const withNumbers = (n: number) => JSON.stringify({ ...review, padding: Array.from({ length: n }, () => 1) });
    // The padding's key, its list and each number but the first start one more value each.
    const fits = await from(app, '10.0.0.1', withNumbers(5_000 - base - 2));
    expect(fits.statusCode).toBe(200);
    const over = await from(app, '10.0.0.1', withNumbers(5_000 - base - 1));
    expect(over.statusCode).toBe(413);
    expect(over.body).toMatch(/^the body holds more than 5000 JSON values \(keys, values, objects and lists\): its first \d+ bytes start 5001\n$/);
  });

  it('every refusal closes its connection', async () => {
    const { app } = setup();
    for (const res of [await post(app, '{'), await inject(app, { method: 'GET', url: '/' }), await post(app, 'x', 'text/plain')]) {
      expect(res.headers['connection']).toBe('close');
    }
  });
});

describe('every refusal', () => {
  it('is counted and logged once, in a short line, whether fastify or node:http refused it', async () => {
    const lines: string[] = [];
    const logger = pino({ level: 'info' }, new Writable({ write: (chunk: Buffer, _encoding, done) => (lines.push(chunk.toString()), done()) }));
    const metrics = new InjectorMetrics({ processMetrics: false });
    const app = buildWebhookApp({ sources: { config: () => testConfig(), namespaceAnnotations: () => undefined }, metrics, logger, limits: { maxHeaderBytes: 2_048 } });
    apps.push(app);
    await app.listen({ host: '127.0.0.1', port: 0 });
    const port = (app.server.address() as { port: number }).port;
    const raw = (text: string) =>
      new Promise<string>((resolve) => {
        let seen = '';
        const socket = createConnection({ host: '127.0.0.1', port }, () => socket.write(text));
        socket.on('data', (c: Buffer) => (seen += c.toString('latin1')));
        socket.on('error', () => {});
        socket.on('close', () => resolve(seen.split('\r\n')[0] ?? ''));
      });
    expect(await raw('GET /nowhere HTTP/1.1\r\nHost: x\r\n\r\n')).toBe('HTTP/1.1 404 Not Found');
    // A path fastify cannot decode names no route either: without frameworkErrors fastify answered it 400, unseen.
    expect(await raw('POST /%zz HTTP/1.1\r\nHost: x\r\n\r\n')).toBe('HTTP/1.1 404 Not Found');
    expect(await raw('POST / HTTP/1.1\r\nHost: x\r\n\r\n')).toBe('HTTP/1.1 400 Bad Request');
    expect(await raw(`POST / HTTP/1.1\r\nHost: x\r\nX-Big: ${'b'.repeat(4_000)}\r\n\r\n`)).toBe('HTTP/1.1 431 Request Header Fields Too Large');
    expect(await raw('\u0000\u0001 not http\r\n\r\n')).toBe('HTTP/1.1 400 Bad Request');
    const rejected = lines.filter((l) => l.includes('rejected admission request'));
    expect(rejected.map((l) => (JSON.parse(l) as { status: number }).status)).toEqual([404, 404, 400, 431, 400]);
    expect(rejected.every((l) => l.length < 512)).toBe(true);
    const text = await metrics.metrics();
    for (const [status, reason, count] of [['404', 'not_found', 2], ['400', 'empty_body', 1], ['431', 'headers_too_large', 1], ['400', 'malformed_http', 1]]) {
      expect(text).toContain(`proxy_inject_admission_refusals_total{status="${status}",reason="${reason}"} ${count}`);
    }
  });
});

describe('a review whose lookup never settles', () => {
  it('has its connection closed at the stall timeout instead of held', async () => {
    const app = buildWebhookApp({
      sources: { config: () => testConfig(), namespaceAnnotations: () => new Promise<undefined>(() => {}) },
      metrics: new InjectorMetrics({ processMetrics: false }),
      logger: silent,
      limits: { stallTimeoutMs: 500 },
    });
    apps.push(app);
    await app.listen({ host: '127.0.0.1', port: 0 });
    const { port } = app.server.address() as { port: number };
    const payload = JSON.stringify(admissionReview(enabledPod()));
    const started = performance.now();
    const outcome = await new Promise<string>((resolve) => {
      const waited = setTimeout(() => resolve('still waiting'), 500 + 3_000);
      const req = request({ host: '127.0.0.1', port, method: 'POST', path: '/', agent: false, headers: { 'content-type': 'application/json' } }, (res) => {
        clearTimeout(waited);
        res.resume();
        resolve(`answered ${res.statusCode}`);
      });
      req.on('error', (err: NodeJS.ErrnoException) => {
        clearTimeout(waited);
        resolve(err.code ?? err.message);
      });
      req.end(payload);
    });
    expect(outcome).toBe('ECONNRESET');
    expect(performance.now() - started).toBeGreaterThan(400);
    app.server.closeAllConnections();
  });
});

describe('an answer that cannot be written', () => {
  /** An app whose namespace lookup answers at once or as a promise, and whose event recording throws. */
  function throwingAfterHandling(namespaceAnnotations: AdmissionSources['namespaceAnnotations']) {
    const lines: Array<{ msg: string; err?: { message: string } }> = [];
    const logger = pino({ level: 'info' }, { write: (line: string) => lines.push(JSON.parse(line) as (typeof lines)[number]) });
    const config = testConfig();
    const app = buildWebhookApp({
      sources: { config: () => config, namespaceAnnotations },
      metrics: new InjectorMetrics({ processMetrics: false }),
      logger,
      onAdmitted: () => {
        throw new Error('the event queue is broken');
      },
    });
    apps.push(app);
    return { app, lines };
  }

  const lookups: Array<[string, AdmissionSources['namespaceAnnotations']]> = [
    ['at once', () => undefined],
    ['after a promise', () => Promise.resolve(undefined)],
  ];
  it.each(lookups)('is a 500 and an error line, never a crash, when the handler answers %s', async (_when, namespaceAnnotations) => {
    const { app, lines } = throwingAfterHandling(namespaceAnnotations);
    const res = await post(app, admissionReview(enabledPod()));
    expect(res.statusCode).toBe(500);
    expect(res.body).toBe('internal error while answering the request\n');
    expect(lines.find((l) => l.msg === 'failed to answer admission request')?.err?.message).toBe('the event queue is broken');
    // The next review is answered as well.
    expect((await post(app, admissionReview(enabledPod()))).statusCode).toBe(500);
  });

  it('answers alike whether the sources answer at once or as promises', async () => {
    const now = setup({ namespaceAnnotations: () => ({ 'config.linkerd.io/proxy-log-level': 'debug' }) });
    const later = setup({ namespaceAnnotations: () => Promise.resolve({ 'config.linkerd.io/proxy-log-level': 'debug' }) });
    const review = admissionReview(enabledPod(), { uid: 'u-same' });
    const [a, b] = [await post(now.app, review), await post(later.app, review)];
    expect(a.statusCode).toBe(200);
    expect(b.body).toBe(a.body);
    expect(decodedPatch(a.json()).length).toBeGreaterThan(0);
  });
});

describe('reviews that arrive together', () => {
  /** Posts every body at once.*/
  const together = (app: WebhookApp, bodies: unknown[]) => Promise.all(bodies.map((b) => post(app, b)));

  /** Pods that differ in their answer: each skips a different outbound port, and every third is not injected. */
  const reviews = (count: number) =>
    Array.from({ length: count }, (_, i) =>
      admissionReview(pod({ annotations: { 'linkerd.io/inject': i % 3 === 2 ? 'disabled' : 'enabled', 'config.linkerd.io/skip-outbound-ports': String(4000 + i) } }), {
        uid: `u-${i}`,
      }),
    );

  it('get each its own answer, the same as when posted alone, with refusals among them', async () => {
    const { app } = setup();
    const pods = reviews(24);
    const alone: string[] = [];
    for (const review of pods) alone.push((await post(app, review)).body);
    const refused = ['', '{', JSON.stringify({ apiVersion: 'admission.k8s.io/v1', kind: 'Other' })];
    const answers = await together(app, [...pods.slice(0, 12), ...refused, ...pods.slice(12)]);
    const bodies = answers.map((a) => a.body);
    expect([...bodies.slice(0, 12), ...bodies.slice(15)]).toEqual(alone);
    expect(answers.slice(12, 15).map((a) => [a.statusCode, a.body])).toEqual([
      [400, 'the body is empty: POST an AdmissionReview as application/json\n'],
      [400, "the body is not valid JSON: expected property name or '}' at line 1, column 2\n"],
      [400, 'unsupported kind "Other": expected AdmissionReview\n'],
    ]);
    // The answers differ from each other: a mix-up between reviews could not pass for them.
    expect(new Set(alone).size).toBe(24);
    expect(decodedPatch(JSON.parse(alone[5] as string)).length).toBe(0);
    expect(JSON.stringify(decodedPatch(JSON.parse(alone[7] as string)))).toContain('4007');
  });

  /** An app whose event recording throws for the review with uid u-4. */
  function failingFor4(logger = silent) {
    const config = testConfig();
    const app = buildWebhookApp({
      sources: { config: () => config, namespaceAnnotations: () => undefined },
      metrics: new InjectorMetrics({ processMetrics: false }),
      logger,
      onAdmitted: (_handled, request) => {
        if (request.uid === 'u-4') throw new Error('the event queue is broken');
      },
    });
    apps.push(app);
    return { app };
  }

  it('one whose answer cannot be written gets a 500; the others that arrived with it are answered', async () => {
    const lines: Array<{ msg: string }> = [];
    const { app } = failingFor4(pino({ level: 'info' }, { write: (line: string) => lines.push(JSON.parse(line) as (typeof lines)[number]) }));
    const answers = await together(app, reviews(8));
    expect(answers.map((a) => a.statusCode)).toEqual([200, 200, 200, 200, 500, 200, 200, 200]);
    expect(answers.map((a) => (a.statusCode === 200 ? a.json().response.uid : a.body))).toEqual([
      'u-0',
      'u-1',
      'u-2',
      'u-3',
      'internal error while answering the request\n',
      'u-5',
      'u-6',
      'u-7',
    ]);
    expect(lines.filter((l) => l.msg === 'failed to answer admission request')).toHaveLength(1);
  });
});

describe('a namespace whose annotations cannot be read', () => {
  const unknown = () => Promise.reject(new SourceUnavailableError('NAMESPACE_UNKNOWN', 'the annotations of namespace shop are not known yet (timeout)'));

  it.each([
    ['a pod without its own annotation (the namespace might enable it)', pod(), false],
    ['a pod that asks for injection (the namespace might configure it)', pod({ annotations: { 'linkerd.io/inject': 'enabled' } }), false],
    ['a pod that opts out itself', pod({ annotations: { 'linkerd.io/inject': 'disabled' } }), true],
  ])('%s: allowed %s', async (_what, object, allowed) => {
    const { app, metrics } = setup({ namespaceAnnotations: unknown });
    const res = await post(app, admissionReview(object));
    expect(res.statusCode).toBe(200);
    expect(res.json().response.allowed).toBe(allowed);
    if (!allowed) expect(res.json().response.status.message).toMatch(/namespace shop are not known yet/);
    expect(await metrics.metrics()).toMatch(new RegExp(`code="NAMESPACE_UNKNOWN",denied="${!allowed}"`));
  });

  it('a Service is admitted unchanged', async () => {
    const { app } = setup({ namespaceAnnotations: unknown });
    const svc = { apiVersion: 'v1', kind: 'Service', metadata: { name: 'db' }, spec: { ports: [{ port: 5432 }] } };
    const res = await post(app, admissionReview(svc, { kind: 'Service' }));
    expect(res.json().response.allowed).toBe(true);
  });
});

describe('logs', () => {
  /** A webhook app logging at `level` into `lines`, in a namespace whose annotations are `ns`. */
  function logged(level: 'info' | 'debug', ns: Record<string, string>, labels?: Record<string, string>): { app: WebhookApp; lines: Array<Record<string, unknown>> } {
    const lines: Array<Record<string, unknown>> = [];
    const logger = pino({ level }, { write: (line: string) => lines.push(JSON.parse(line) as Record<string, unknown>) });
    const app = buildWebhookApp({
      sources: { config: () => testConfig(), namespaceAnnotations: () => ns, namespaceLabels: () => labels },
      metrics: new InjectorMetrics({ processMetrics: false }),
      logger,
    });
    apps.push(app);
    return { app, lines };
  }

  it('say in one line per review, in Linkerd’s words, what was done and for which review', async () => {
    const { app, lines } = logged('info', { 'linkerd.io/inject': 'enabled' });
    await post(app, admissionReview(pod(), { uid: 'u-1' }));
    await post(app, admissionReview(pod({ annotations: { 'linkerd.io/inject': 'disabled' } }), { uid: 'u-2' }));
    expect(lines.map((l) => l['msg'])).toEqual([
      'injection patch generated for: pod/shop/web',
      'skipped pod/shop/web: pod has the annotation "linkerd.io/inject:disabled"',
    ]);
    expect(lines[0]).toMatchObject({ uid: 'u-1', operation: 'CREATE', outcome: 'injected', placement: 'containers[0]', dryRun: false });
    expect(lines[1]).toMatchObject({ uid: 'u-2', operation: 'CREATE', outcome: 'skipped', reasons: ['injection_disable_annotation_present'] });
  });

  it('clip a name from the review and escape its control characters, so that a line stays one line of bounded size', async () => {
    const { app, lines } = logged('info', { 'linkerd.io/inject': 'enabled' });
    const long = pod();
    (long['metadata'] as Record<string, unknown>)['name'] = '';
    (long['metadata'] as Record<string, unknown>)['generateName'] = 'g'.repeat(2 * 1024 * 1024);
    await post(app, admissionReview(long, { uid: 'u-long' }));
    const forged = pod();
    (forged['metadata'] as Record<string, unknown>)['name'] = 'web\n{"level":50,"msg":"forged"}';
    await post(app, admissionReview(forged, { uid: 'u-forged' }));
    expect(lines).toHaveLength(2);
    expect(String(lines[0]?.['msg']).length).toBeLessThan(300);
    expect(lines[0]?.['msg']).toMatch(/^injection patch generated for: pod\/shop\/g{244}\.\.\.$/);
    expect(lines[1]?.['msg']).toBe('injection patch generated for: pod/shop/web\\u000a{"level":50,"msg":"forged"}');
  });

  it("name an injected pod's start-up risks, which a controller that made the pod never shows", async () => {
    const { app, lines } = logged('info', { 'linkerd.io/inject': 'enabled' }, { 'pod-security.kubernetes.io/enforce': 'baseline' });
    await post(app, admissionReview(pod(), { uid: 'u-4' }));
    await post(app, admissionReview(pod({ annotations: { 'config.linkerd.io/proxy-await': 'disabled' } }), { uid: 'u-5' }));
    expect(lines[0]).toMatchObject({ uid: 'u-4', outcome: 'injected', risks: ['pod_security_refuses_init'] });
    expect(lines[1]).toMatchObject({ uid: 'u-5', outcome: 'injected', risks: ['pod_security_refuses_init', 'proxy_await_disabled'] });
    const plain = logged('info', { 'linkerd.io/inject': 'enabled' });
    await post(plain.app, admissionReview(pod(), { uid: 'u-6' }));
    expect(plain.lines[0]).not.toHaveProperty('risks');
  });

  it('leave a pod nobody asked to mesh to the counter at info, and name it at debug with the review’s arrival', async () => {
    const info = logged('info', {});
    await post(info.app, admissionReview(pod(), { uid: 'u-3' }));
    expect(info.lines).toEqual([]);
    const debug = logged('debug', {});
    await post(debug.app, admissionReview(pod(), { uid: 'u-3' }));
    expect(debug.lines.map((l) => l['msg'])).toEqual([
      'received admission review request "u-3" for pod/shop/web',
      'skipped pod/shop/web: neither the namespace nor the pod have the annotation "linkerd.io/inject:enabled"',
    ]);
    expect(debug.lines[1]).toMatchObject({ uid: 'u-3', outcome: 'skipped', reasons: ['injection_enable_annotation_absent'] });
  });
});

describe('metrics', () => {
  it('keep counting across scrapes', async () => {
    const { app, metrics } = setup();
    const count = async () => Number(/^proxy_inject_admission_requests_total\{[^}]*\} (\d+)$/m.exec(await metrics.metrics())?.[1]);
    await post(app, admissionReview(enabledPod()));
    await post(app, admissionReview(enabledPod()));
    expect(await count()).toBe(2);
    expect(await count()).toBe(2);
    await post(app, admissionReview(enabledPod()));
    expect(await count()).toBe(3);
  });

  it('count requests and responses with Linkerd’s labels', async () => {
    const { app, metrics } = setup({ owner: () => ({ kind: 'deployment', name: 'web' }) });
    await post(app, admissionReview(pod({ annotations: { 'linkerd.io/inject': 'enabled', 'config.linkerd.io/proxy-cpu-request': '100m' } })));
    await post(app, admissionReview(pod({ annotations: { 'linkerd.io/inject': 'disabled' } })));
    const text = await metrics.metrics();
    const requests = text.split('\n').filter((l) => l.startsWith('proxy_inject_admission_requests_total{'));
    expect(requests).toHaveLength(2);
    expect(requests[0]).toMatch(/owner_kind="deployment",namespace="shop",annotation_at="workload",/);
    expect(requests[0]).toMatch(/,proxy_cpu_request="100m",/);
    expect(requests[0]).toMatch(/,proxy_enable_native_sidecar="",proxy_additional_env=""} 1$/);
    const responses = text.split('\n').filter((l) => l.startsWith('proxy_inject_admission_responses_total{'));
    expect(responses.some((l) => /skip="false",skip_reason=""/.test(l))).toBe(true);
    expect(responses.some((l) => /skip="true",skip_reason="injection_enable_annotation_absent"/.test(l))).toBe(true);
    expect(text).toMatch(/^proxy_inject_admission_duration_seconds_count\{outcome="injected"\} 1$/m);
    expect(text).toMatch(/^proxy_inject_admission_duration_seconds_count\{outcome="skipped"\} 1$/m);
  });
});
