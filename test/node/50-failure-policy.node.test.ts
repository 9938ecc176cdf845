/**
 * failurePolicy Fail with the injector's pod deleted: while no injector pod is ready the API server refuses the pods
 * of the namespaces the webhook selects, the injector's own namespace still creates pods (its Deployment's new pod
 * among them), and once that pod is ready pods are admitted, and meshed, again without anyone stepping in.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '../e2e/support/kube.js';
import { useNode } from './support/context.js';
import { log, sleep } from './support/host.js';
import { APP_IMAGE } from './support/images.js';
import { INJECTOR_NS, INJECTOR_SELECTOR } from './support/injector.js';
import { onlyThisInjector } from './support/linkerd.js';
import { ApiError, api, createNamespace, isReady, podsOf, proxies, type Pod } from './support/workloads.js';

const node = useNode();
const NS = 'failclosed';
const WEBHOOK_CONFIGURATION = 'proxy-injector-proxy-injector';
const WEBHOOK = 'proxy-injector.proxy-injector.proxy-injector.io';

interface Attempt {
  at: number;
  namespace: string;
  admitted: boolean;
  message: string;
  pod?: Pod;
}

describe.skipIf(node.skip !== undefined)('failurePolicy: Fail', () => {
  if (node.skip !== undefined) return;
  const { cluster, linkerd, injector, appTag } = node;

  beforeAll(async () => {
    await onlyThisInjector(cluster, linkerd);
    await createNamespace(cluster, NS, { 'linkerd.io/inject': 'enabled' });
    await injector.upgrade({ 'webhook.failurePolicy': 'Fail' });
    const policy = await cluster.kubectl(['get', 'mutatingwebhookconfiguration', WEBHOOK_CONFIGURATION, '-o', 'jsonpath={.webhooks[0].failurePolicy}']);
    expect(policy).toBe('Fail');
  });

  afterAll(async () => {
    await injector.upgrade({ 'webhook.failurePolicy': 'Ignore' });
  });

  const pod = (name: string, namespace: string) => ({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace },
    spec: { terminationGracePeriodSeconds: 1, containers: [{ name: 'c', image: `${APP_IMAGE}:${appTag}`, imagePullPolicy: 'Never', command: ['sleep', '3600'] }] },
  });

  async function create(name: string, namespace: string): Promise<Attempt> {
    const at = Date.now();
    try {
      const created = await api<Pod>(cluster, 'POST', `/api/v1/namespaces/${namespace}/pods`, pod(name, namespace));
      return { at, namespace, admitted: true, message: '', pod: created };
    } catch (err) {
      if (!(err instanceof ApiError)) throw err;
      return { at, namespace, admitted: false, message: (JSON.parse(err.body) as { message?: string }).message ?? err.body };
    }
  }

  it('refuses pods of injected namespaces until its pod is back, while its own namespace still creates pods', async () => {
    const old = await injector.pod();
    const start = Date.now();
    await cluster.kubectl(['-n', INJECTOR_NS, 'delete', 'pod', old.metadata.name, '--wait=false']);
    const attempts: Attempt[] = [];
    let own: Attempt | undefined;
    for (let i = 0; Date.now() - start < 120_000; i++) {
      const attempt = await create(`probe-${i}`, NS);
      attempts.push(attempt);
      if (!attempt.admitted && !own) own = await create('own-namespace-probe', INJECTOR_NS);
      if (attempt.admitted && attempts.some((a) => !a.admitted)) break;
      await sleep(100);
    }
    const refused = attempts.filter((a) => !a.admitted);
    const admitted = attempts.at(-1);
    const pods = await podsOf(cluster, INJECTOR_NS, INJECTOR_SELECTOR);
    const replacement = pods.find((p) => p.metadata.name !== old.metadata.name);
    const readyAt = replacement?.status.conditions?.find((c) => c.type === 'Ready')?.lastTransitionTime;
    const t = (ms: number) => `${((ms - start) / 1000).toFixed(1)} s`;
    log(
      `deleted ${old.metadata.name}; ${refused.length} pods refused in ${NS} from ${t(refused[0]?.at ?? start)} to ${t(refused.at(-1)?.at ?? start)}: "${refused[0]?.message}"; ` +
        `meanwhile a pod in ${INJECTOR_NS} was ${own?.admitted ? 'created' : `refused: ${own?.message}`}; replacement ${replacement?.metadata.name} created ${replacement?.metadata.creationTimestamp}, Ready ${readyAt}; ` +
        `${admitted?.pod?.metadata.name} admitted at ${t(admitted?.at ?? start)} with ${admitted?.pod ? proxies(admitted.pod).length : 0} proxy`,
    );
    expect(refused.length).toBeGreaterThan(0);
    for (const r of refused) expect(r.message).toContain(`failed calling webhook "${WEBHOOK}"`);
    expect(own?.admitted).toBe(true);
    expect(own?.pod && proxies(own.pod)).toHaveLength(0);
    expect(admitted?.admitted).toBe(true);
    expect(admitted?.pod && proxies(admitted.pod)).toHaveLength(1);
    expect(replacement).toBeDefined();
    // It came back by itself: the Deployment's new pod, created without the webhook's help and ready.
    const back = await eventually('the replacement injector pod ready', async () => {
      const current = (await podsOf(cluster, INJECTOR_NS, INJECTOR_SELECTOR)).filter((p) => p.metadata.name !== old.metadata.name && isReady(p));
      return current[0];
    });
    expect(back.metadata.name).toBe(replacement?.metadata.name);
    await cluster.kubectl(['-n', NS, 'delete', 'pods', '--all', '--grace-period=1', '--wait=false']);
    await cluster.kubectl(['-n', INJECTOR_NS, 'delete', 'pod', 'own-namespace-probe', '--grace-period=1', '--wait=false']);
  });
});
