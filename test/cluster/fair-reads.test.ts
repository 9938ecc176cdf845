/**
 * The reads that reviews cause, as the cluster context wires them: one budget for owners and namespaces, shared by the
 * addresses reviews come from, so that a client forging reviews cannot take the reads that real pods need.
 */
import type { ServerResponse } from 'node:http';
import { describe, expect, it } from 'vitest';
import { handleAdmission, type AdmissionRequest } from '../../src/admission/index.js';
import type { EventPolicy, InjectorContext } from '../../src/cluster/context.js';
import { admissionReview } from '../support/admission.js';
import { pod } from '../support/engine.js';
import { fakeClock } from './clock.js';
import { clusterContext } from './cluster-context.js';
import { namespaceFrom, notFound } from './fake-api.js';

const FORGER = '10.0.0.66';
const APISERVER = '10.0.0.1';

/**
 * A cluster in which every workload and namespace exists, a ReplicaSet owned by a Deployment named after it, but those
 * named `forged-…`, which do not. The watch delivers only namespace shop.
 */
function cluster(path: string, res: ServerResponse): void {
  const name = path.slice(path.lastIndexOf('/') + 1);
  if (name.startsWith('forged-')) return notFound(res);
  if (!path.startsWith('/apis/')) return namespaceFrom(path, res);
  const deployment = { apiVersion: 'apps/v1', kind: 'Deployment', name: `${name}-deployment`, uid: `uid-${name}`, controller: true };
  const owners = path.includes('/replicasets/') ? [deployment] : [];
  res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ metadata: { name, ownerReferences: owners } }));
}

const request = { namespace: 'shop' } as AdmissionRequest;
const podOf = (replicaSet: string) => ({
  metadata: { name: `${replicaSet}-x1`, ownerReferences: [{ apiVersion: 'apps/v1', kind: 'ReplicaSet', name: replicaSet, uid: `uid-${replicaSet}`, controller: true }] },
});
const range = (n: number) => Array.from({ length: n }, (_, i) => i);

/** The context, on a cluster whose watch delivers only namespace shop; time stands still for its read budget. */
async function shopContext(events: EventPolicy = 'none'): Promise<{ context: InjectorContext; sources: InjectorContext['sources']; reads: string[] }> {
  const shop = { kind: 'Namespace', apiVersion: 'v1', metadata: { name: 'shop' } };
  // Time stands still: what the budget allows is then a count, whatever the machine's speed.
  const { api, context } = await clusterContext({ lists: { '/api/v1/namespaces': [shop] }, read: cluster }, { events, now: fakeClock().now });
  return { context, sources: context.sources, reads: api.reads };
}

describe('the reads reviews cause, shared by client address', () => {
  it("a client forging hundreds of reviews that name missing ReplicaSets and namespaces leaves another client's pods their reads", async () => {
    const { sources, reads } = await shopContext();
    const owner = sources.owner;
    if (!owner) throw new Error('a cluster context resolves owners');

    /** One wave of the flood: every review is read or refused before any answer comes back. */
    const wave = (n: number) => [
      ...range(300).map((i) => owner(request, podOf(`forged-${n}-${i}`), FORGER)),
      ...range(300).map((i) => sources.namespaceAnnotations(`forged-${n}-${i}`, FORGER)),
    ];
    const first = await Promise.allSettled(wave(0));
    const owners = first.slice(0, 300).map((r) => (r.status === 'fulfilled' ? r.value : undefined));
    expect(owners.every((o) => o?.kind === 'replicaset' && !(o as { exists?: boolean }).exists)).toBe(true);
    expect(first.slice(300).every((r) => r.status === 'rejected' && (r.reason as { code?: string }).code === 'NAMESPACE_UNKNOWN')).toBe(true);

    // The flood goes on when the API server's pods arrive.
    const second = Promise.allSettled(wave(1));
    // The pod of a new ReplicaSet is named after its Deployment, which gets its events...
    const deployment = owner(request, podOf('web-5f7b9c'), APISERVER);
    // ...and one in a namespace the watch has not delivered yet is read rather than refused.
    const fresh = sources.namespaceAnnotations('fresh', APISERVER);
    expect(await deployment).toMatchObject({ kind: 'deployment', name: 'web-5f7b9c-deployment', exists: true });
    expect(await fresh).toEqual({ 'linkerd.io/inject': 'enabled-fresh' });
    await second;

    // The forger read one address's share of the budget, and was refused the rest.
    const forgedReads = reads.filter((path) => path.includes('/forged-')).length;
    expect(forgedReads).toBe(100);
    expect(reads.filter((path) => !path.includes('/forged-') && path !== '/version')).toEqual([
      '/apis/apps/v1/namespaces/shop/replicasets/web-5f7b9c',
      '/api/v1/namespaces/fresh',
    ]);
  });

  it('a client alone still gets a burst of 100 reads, as when one budget was shared by all', async () => {
    const { sources, reads } = await shopContext();
    const owner = sources.owner;
    if (!owner) throw new Error('a cluster context resolves owners');
    const resolved = await Promise.all(range(100).map((i) => owner(request, podOf(`web-${i}`), APISERVER)));
    expect(resolved.map((o) => o?.name)).toEqual(range(100).map((i) => `web-${i}-deployment`));
    expect(reads.filter((path) => path.includes('/replicasets/'))).toHaveLength(100);
  });

  it("the read made for a StatefulSet's events, once its pod is answered, costs the address the pod came from", async () => {
    const { context, sources, reads } = await shopContext('all');
    const owner = sources.owner;
    if (!owner) throw new Error('a cluster context resolves owners');
    await Promise.allSettled(range(300).map((i) => owner(request, podOf(`forged-${i}`), FORGER)));
    const podOfStatefulSet = (name: string) => ({
      ...pod(),
      metadata: { name: `${name}-0`, namespace: 'shop', ownerReferences: [{ apiVersion: 'apps/v1', kind: 'StatefulSet', name, uid: `uid-${name}`, controller: true }] },
    });
    // The forger's first: had its read been made, it would reach the API server before the other's Event is written.
    for (const [name, client] of [['forged-db', FORGER], ['db', APISERVER]] as const) {
      const review = admissionReview(podOfStatefulSet(name))['request'] as AdmissionRequest;
      context.onAdmitted(await handleAdmission(review, sources, { client }), review);
    }
    const written = () => reads.some((path) => path === '/api/v1/namespaces/shop/events');
    for (let i = 0; i < 1000 && !written(); i++) await new Promise((resolve) => setTimeout(resolve, 5));
    expect(written()).toBe(true);
    expect(reads.filter((path) => path.includes('/statefulsets/'))).toEqual(['/apis/apps/v1/namespaces/shop/statefulsets/db']);
  });
});
