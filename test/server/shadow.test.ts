/**
 * Shadow verdicts through the webhook: a pod Linkerd's injector made arrives with its proxy, and the webhook counts
 * whether its own answer would have made the same pod, logs the first difference when not, and answers as it always did.
 */
import { Writable } from 'node:stream';
import jsonPatch from 'fast-json-patch';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { MAX_SHADOW_BYTES, TemplateAnswerLru, handleAdmission, parseReview, type AdmissionSources } from '../../src/admission/index.js';
import type { InjectorConfig, LinkerdValues } from '../../src/engine/index.js';
import { inheritedNamespaceAnnotations } from '../../src/engine/overrides.js';
import { InjectorMetrics } from '../../src/server/metrics.js';
import { buildWebhookApp, type WebhookApp } from '../../src/server/webhook.js';
import { admissionReview } from '../support/admission.js';
import { testConfig } from '../support/engine.js';
import { inject } from '../support/inject.js';
import { fixtureValues, loadObject, present, read, type Cases } from '../support/linkerd-fixtures.js';
import { sum } from '../support/metrics.js';
import { withServiceAccount } from '../support/stored-pod.js';

type Obj = Record<string, unknown>;

const SHADOW = 'proxy_inject_shadow_total';
const apps: WebhookApp[] = [];

afterEach(async () => {
  await Promise.all(apps.splice(0).map((a) => a.close()));
});

/** A webhook whose log lines are kept, with the sources given. */
function setup(sources: AdmissionSources) {
  const metrics = new InjectorMetrics({ processMetrics: false });
  const lines: Array<Record<string, unknown>> = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString().split('\n')) if (line) lines.push(JSON.parse(line) as Record<string, unknown>);
      done();
    },
  });
  const app = buildWebhookApp({ sources, metrics, logger: pino({ level: 'info' }, sink) });
  apps.push(app);
  return { app, metrics, lines };
}

async function post(app: WebhookApp, review: unknown) {
  const payload = typeof review === 'string' ? review : JSON.stringify(review);
  const res = await inject(app, { method: 'POST', url: '/', headers: { 'content-type': 'application/json' }, payload });
  expect(res.statusCode).toBe(200);
  return res.json() as { response: Obj };
}

/** The answer the handler gives on its own, without the server: what the webhook answered before shadow verdicts. */
async function handlerAnswer(review: Obj, sources: AdmissionSources): Promise<Obj> {
  const handled = await handleAdmission(parseReview(review).request, sources);
  return JSON.parse(JSON.stringify(handled.response)) as Obj;
}

const verdicts = async (metrics: InjectorMetrics) => {
  const text = await metrics.metrics();
  return { same: sum(text, SHADOW, { verdict: 'same' }), differs: sum(text, SHADOW, { verdict: 'differs' }), unreadable: sum(text, SHADOW, { verdict: 'unreadable' }) };
};

const shadowLines = (lines: Array<Record<string, unknown>>) => lines.filter((l) => String(l['msg']).includes('shadow verdict'));

describe.skipIf(!present)("a pod Linkerd's injector made, through the webhook", () => {
  const cases = present ? (JSON.parse(read('cases.json')) as Cases) : undefined;
  const owner = cases?.podPatchCases.owner ?? { kind: 'deployment', name: 'owner-deployment' };
  const namespaceAnnotations = cases?.namespaceAnnotations['enabled'] ?? {};

  const config = (change: (v: LinkerdValues) => void = () => {}): InjectorConfig => {
    if (!cases) throw new Error('fixtures not loaded');
    const values = fixtureValues(cases);
    change(values);
    return { values, controlPlaneNamespace: cases.values.controlPlaneNamespace };
  };

  /** Linkerd's pod for its fixture pod-inject-enabled.yaml, as the next webhook in the chain receives it. */
  function linkerdPod(): Obj {
    const golden = JSON.parse(read('fake-data/pod.patch.json')) as jsonPatch.Operation[];
    const pod = jsonPatch.applyPatch(loadObject('fake-data/pod-inject-enabled.yaml'), golden).newDocument;
    const metadata = pod['metadata'] as { annotations: Record<string, string> };
    // Linkerd's webhook, unlike the unit test that made the golden, also copies the namespace's annotations.
    metadata.annotations = { ...inheritedNamespaceAnnotations(metadata.annotations, namespaceAnnotations), ...metadata.annotations };
    return withServiceAccount(pod);
  }

  const sourcesWith = (c: InjectorConfig): AdmissionSources => ({ config: () => c, namespaceAnnotations: () => namespaceAnnotations, owner: () => owner });
  const review = (opts: { dryRun?: boolean } = {}) => admissionReview(linkerdPod(), { namespace: 'kube-public', uid: 'uid-shadow', ...opts });

  it('with the same configuration: counted same, nothing logged, the answer as before', async () => {
    const sources = sourcesWith(config());
    const { app, metrics, lines } = setup(sources);
    const body = await post(app, review());
    expect(await verdicts(metrics)).toEqual({ same: 1, differs: 0, unreadable: 0 });
    expect(shadowLines(lines)).toEqual([]);
    expect(body.response).toEqual(await handlerAnswer(review(), sources));
    expect(body.response).toEqual({ uid: 'uid-shadow', allowed: true });
  });

  it('a dry run is the same pod, and counts', async () => {
    const { app, metrics } = setup(sourcesWith(config()));
    await post(app, review({ dryRun: true }));
    await post(app, review());
    expect(await verdicts(metrics)).toEqual({ same: 2, differs: 0, unreadable: 0 });
  });

  it('with another proxy log level: counted differs, one line naming the owner and LINKERD2_PROXY_LOG, the answer as before', async () => {
    const sources = sourcesWith(config((v) => (v.proxy.logLevel = 'debug')));
    const { app, metrics, lines } = setup(sources);
    const body = await post(app, review());
    expect(await verdicts(metrics)).toEqual({ same: 0, differs: 1, unreadable: 0 });
    const logged = shadowLines(lines);
    expect(logged).toHaveLength(1);
    expect(logged[0]).toMatchObject({ level: 40, owner: 'deployment/owner-deployment', kind: 'proxy_config', differences: 1 });
    expect(logged[0]?.['expected']).toMatch(/^debug,/);
    expect(logged[0]?.['path']).toBe('initContainers[linkerd-proxy].env[LINKERD2_PROXY_LOG]');
    expect(logged[0]?.['msg']).toContain('LINKERD2_PROXY_LOG');
    expect(body.response).toEqual(await handlerAnswer(review(), sources));
    expect(body.response).toEqual({ uid: 'uid-shadow', allowed: true });
  });

  it('the second pod of a rollout, answered from the cache, counts too', async () => {
    const sources: AdmissionSources = { ...sourcesWith(config()), answers: new TemplateAnswerLru() };
    const { app, metrics } = setup(sources);
    for (const name of ['nginx-a', 'nginx-b']) {
      const pod = linkerdPod();
      (pod['metadata'] as Obj)['name'] = name;
      (pod['metadata'] as Obj)['ownerReferences'] = [{ apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'nginx-5d4f', uid: 'rs-uid', controller: true }];
      await post(app, admissionReview(pod, { namespace: 'kube-public' }));
    }
    expect(await verdicts(metrics)).toEqual({ same: 2, differs: 0, unreadable: 0 });
  });
});

describe('a hostile pod with a proxy', () => {
  /** A pod that says it has a proxy, with the rest of it built to hurt. */
  const hostile = (proxy: Obj, more: Obj = {}): Obj => ({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'evil', annotations: { 'linkerd.io/inject': 'enabled' }, ...more },
    spec: { containers: [{ name: 'app', image: 'app:1' }, { name: 'linkerd-proxy', ...proxy }] },
  });

  // As many entries, and as long, as a review under the webhook's limits of bytes and JSON values can carry.
  const hugeEnv = Array.from({ length: 14_000 }, (_, i) => ({ name: `X${i}`, value: 'v'.repeat(260) }));
  /** JSON nested deeper than a recursive reader's stack, as text: no test helper can serialise it either. */
  const DEEP = `${'{"a":'.repeat(20_000)}1${'}'.repeat(20_000)}`;

  it.each([
    ['a huge env list', hostile({ image: 'proxy', env: hugeEnv })],
    ['env that is not a list', hostile({ env: { LINKERD2_PROXY_LOG: 'debug' } })],
    ['a deeply nested field', hostile({ resources: 'DEEP' })],
    ['annotations that are not text', hostile({}, { annotations: { 'linkerd.io/inject': 'enabled', n: 1 } })],
    ['two proxies', { ...hostile({}), spec: { containers: [{ name: 'linkerd-proxy' }, { name: 'linkerd-proxy' }] } }],
    ['a proxy without a name in its list', { ...hostile({}), spec: { containers: [{ name: 'linkerd-proxy' }, 7, null] } }],
  ])('%s: counted unreadable or differs, answered as before', async (_name, pod) => {
    const config = testConfig();
    const sources: AdmissionSources = { config: () => config, namespaceAnnotations: () => ({}), owner: () => ({ kind: 'deployment', name: 'evil' }) };
    const { app, metrics, lines } = setup(sources);
    const text = JSON.stringify(admissionReview(pod, { uid: 'uid-evil' })).replace('"DEEP"', DEEP);
    expect(text.length).toBeLessThan(4 * 1024 * 1024);
    const review = JSON.parse(text) as Obj;
    const body = await post(app, text);
    const counted = await verdicts(metrics);
    expect(counted.same).toBe(0);
    expect(counted.differs + counted.unreadable).toBe(1);
    expect(body.response).toEqual(await handlerAnswer(review, sources));
    for (const line of shadowLines(lines)) expect(JSON.stringify(line).length).toBeLessThan(16 * 1024);
  });

  it('compares a review up to its bound and leaves a larger one to check pods, saying so', async () => {
    const config = testConfig();
    const sources: AdmissionSources = { config: () => config, namespaceAnnotations: () => ({}), owner: () => ({ kind: 'deployment', name: 'evil' }) };
    const { app, metrics, lines } = setup(sources);
    const sized = (entries: number) => JSON.stringify(admissionReview(hostile({ image: 'proxy', env: hugeEnv.slice(0, entries) }), { uid: 'uid-big' }));
    const under = sized(MAX_SHADOW_BYTES / 300);
    const over = sized(MAX_SHADOW_BYTES / 250);
    expect(under.length).toBeLessThanOrEqual(MAX_SHADOW_BYTES);
    expect(over.length).toBeGreaterThan(MAX_SHADOW_BYTES);
    await post(app, under);
    expect(await verdicts(metrics)).toEqual({ same: 0, differs: 1, unreadable: 0 });
    await post(app, over);
    expect(await verdicts(metrics)).toEqual({ same: 0, differs: 1, unreadable: 1 });
    const last = shadowLines(lines).at(-1) as Obj;
    expect(last['reason']).toBe(`the review is ${over.length} bytes, more than the ${MAX_SHADOW_BYTES} compared during admission; \`check pods\` compares the running pod`);
  });
});
