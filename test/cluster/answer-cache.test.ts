/**
 * The answer cache behind the real cluster sources: the namespace, owner and quota caches fed by a fake API's lists and
 * watches, as `serve` wires them in a cluster.
 */
import type { ServerResponse } from 'node:http';
import { describe, expect, it } from 'vitest';
import { handleAdmission, TemplateAnswerLru, type AdmissionRequest } from '../../src/admission/index.js';
import { admissionReview } from '../support/admission.js';
import { pod } from '../support/engine.js';
import { clusterContext } from './cluster-context.js';

const QUOTAS = '/api/v1/resourcequotas';

/** A ReplicaSet owned by a Deployment, as the owner reads find every ReplicaSet here. */
function replicaSet(_path: string, res: ServerResponse): void {
  const owner = { apiVersion: 'apps/v1', kind: 'Deployment', name: 'web', uid: 'uid-web', controller: true };
  res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ metadata: { name: 'web-7d4b', ownerReferences: [owner] } }));
}

/** The quota as the API server sends it, its usage at `used` CPU and its resourceVersion moving with it. */
const quota = (used: number, hard = '4') => ({
  apiVersion: 'v1',
  kind: 'ResourceQuota',
  metadata: { namespace: 'shop', name: 'compute', resourceVersion: String(100 + used), managedFields: [{ manager: 'kube-controller-manager', time: `2026-11-29T00:00:${String(used % 60).padStart(2, '0')}Z` }] },
  spec: { hard: { 'requests.cpu': hard } },
  status: { hard: { 'requests.cpu': hard }, used: { 'requests.cpu': `${used}00m` } },
});

/** A pod of the ReplicaSet web-7d4b, as the ReplicaSet controller creates each. */
const podOf = (i: number): AdmissionRequest => {
  const object = pod({ annotations: { 'linkerd.io/inject': 'enabled' }, spec: { containers: [{ name: 'app', image: 'app:1', resources: { requests: { cpu: '100m' } } }] } });
  (object['metadata'] as Record<string, unknown>)['name'] = `web-7d4b-${i}`;
  (object['metadata'] as Record<string, unknown>)['ownerReferences'] = [{ apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'web-7d4b', uid: 'uid-rs', controller: true }];
  return admissionReview(object, { uid: `uid-${i}`, namespace: 'shop' })['request'] as AdmissionRequest;
};

describe('the answer cache in a cluster', () => {
  it('answers a rollout from its cache in a namespace whose ResourceQuota usage changes with every pod, and anew when the quota does', async () => {
    const shop = { kind: 'Namespace', apiVersion: 'v1', metadata: { name: 'shop', annotations: {} } };
    const { api, context } = await clusterContext({ lists: { '/api/v1/namespaces': [shop], [QUOTAS]: [quota(0)] }, read: replicaSet });
    const answers = new TemplateAnswerLru();
    const sources = { ...context.sources, answers };
    const quotaRisk = (warnings: string[] | undefined) => (warnings ?? []).some((w) => w.includes('resource_quota_needs_resources'));

    /** Sends quota events and waits until the cache has read them: a marker quota sent after them on the same watch. */
    let marks = 0;
    const delivered = async (...events: unknown[]) => {
      for (const event of events) await api.send(QUOTAS, 'MODIFIED', event);
      const mark = String(++marks);
      await api.send(QUOTAS, 'MODIFIED', { metadata: { namespace: 'marker', name: 'm' }, spec: { hard: { pods: mark } } });
      for (let tries = 0; tries < 500; tries++) {
        if ((JSON.stringify(context.sources.namespaceConstraints?.('marker')?.resourceQuotas) ?? '').includes(`"${mark}"`)) return;
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
      throw new Error('the quota watch did not deliver its events');
    };

    for (let i = 1; i <= 20; i++) {
      // The quota controller counts each pod created: the quota's status and resourceVersion change, its spec not.
      await delivered(quota(i));
      const handled = await handleAdmission(podOf(i), sources);
      expect(handled.response.patchType).toBe('JSONPatch');
      expect(quotaRisk(handled.response.warnings), `pod ${i}`).toBe(true);
    }
    // The first pod is answered without the cache, the second kept, the other 18 answered from it.
    expect(answers.stats).toEqual({ hits: 18, misses: 1 });

    // A change of what the risks read (the quota's spec) is a new answer.
    await delivered({ ...quota(21), spec: { hard: { 'limits.memory': '1Gi' } } });
    const after = await handleAdmission(podOf(22), sources);
    expect(answers.stats).toEqual({ hits: 18, misses: 2 });
    expect(after.response.warnings?.some((w) => w.includes('limits.memory'))).toBe(true);
  });
});

describe('events in a cluster', () => {
  it('go only on a workload the context itself resolved: an owner from another source, however alike, gets none', async () => {
    const shop = { kind: 'Namespace', apiVersion: 'v1', metadata: { name: 'shop', annotations: {} } };
    const { api, context } = await clusterContext({ lists: { '/api/v1/namespaces': [shop] }, read: replicaSet }, { events: 'all' });
    const written = () => api.reads.filter((path) => path === '/api/v1/namespaces/shop/events').length;
    const request = podOf(1);
    const handled = await handleAdmission(request, context.sources);
    expect(handled.kind === 'evaluated' && handled.owner).toMatchObject({ kind: 'deployment', name: 'web' });
    // The same owner's fields in an object of its own, as another source would hand it.
    context.onAdmitted({ ...handled, ...(handled.kind === 'evaluated' && handled.owner && { owner: { ...handled.owner } }) }, request);
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(written()).toBe(0);
    context.onAdmitted(handled, request);
    for (let tries = 0; tries < 200 && written() === 0; tries++) await new Promise((resolve) => setTimeout(resolve, 10));
    expect(written()).toBe(1);
  });
});
