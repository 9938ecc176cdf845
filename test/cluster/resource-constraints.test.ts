/** ResourceConstraintCache: each namespace's ResourceQuotas and LimitRanges from two watches, with a version per state. */
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { ResourceConstraintCache } from '../../src/cluster/resource-constraints.js';
import { fakeApi, type FakeApi } from './fake-api.js';

const silent = pino({ level: 'silent' });
let api: FakeApi | undefined;
let cache: ResourceConstraintCache | undefined;

afterEach(async () => {
  await cache?.stop();
  await api?.close();
  cache = undefined;
  api = undefined;
});

const QUOTAS = '/api/v1/resourcequotas';
const RANGES = '/api/v1/limitranges';

const quota = (namespace: string, name: string, hard: Record<string, string>) => ({
  apiVersion: 'v1',
  kind: 'ResourceQuota',
  metadata: { namespace, name, resourceVersion: '3', uid: `${name}-uid`, managedFields: [{ manager: 'kubectl' }] },
  spec: { hard },
  status: { hard, used: { 'requests.cpu': '1500m' } },
});
const range = (namespace: string, name: string) => ({
  apiVersion: 'v1',
  kind: 'LimitRange',
  metadata: { namespace, name, resourceVersion: '4' },
  spec: { limits: [{ type: 'Container', default: { cpu: '100m' } }] },
});

async function synced(lists: Record<string, unknown[]>): Promise<ResourceConstraintCache> {
  api = await fakeApi({ lists: { [QUOTAS]: [], [RANGES]: [], ...lists } });
  cache = new ResourceConstraintCache({ client: api.client, logger: silent });
  cache.start();
  expect(await cache.waitForSync(5000)).toBe(true);
  expect(cache.hasSynced).toBe(true);
  return cache;
}

/** Waits until the cache's answer for `namespace` passes `check`. */
async function until(c: ResourceConstraintCache, namespace: string, check: (found: ReturnType<ResourceConstraintCache['of']>) => boolean) {
  for (let i = 0; i < 200 && !check(c.of(namespace)); i++) await new Promise((resolve) => setTimeout(resolve, 10));
  expect(check(c.of(namespace))).toBe(true);
  return c.of(namespace);
}

describe('ResourceConstraintCache', () => {
  it("gives a namespace's quotas and limit ranges, their specs only, and nothing for a namespace without any", async () => {
    const c = await synced({ [QUOTAS]: [quota('shop', 'compute', { 'limits.cpu': '4' })], [RANGES]: [range('shop', 'defaults'), range('other', 'x')] });
    const shop = c.of('shop');
    expect(shop?.resourceQuotas).toEqual([{ metadata: { namespace: 'shop', name: 'compute' }, spec: { hard: { 'limits.cpu': '4' } } }]);
    expect(shop?.limitRanges).toEqual([{ metadata: { namespace: 'shop', name: 'defaults' }, spec: range('shop', 'defaults').spec }]);
    expect(c.of('other')?.resourceQuotas).toEqual([]);
    expect(c.of('other')?.limitRanges).toHaveLength(1);
    expect(c.of('plain')).toBeUndefined();
    // Asked again with no change, the same answer and version.
    expect(c.of('shop')).toBe(shop);
  });

  it('follows the watches: a new version for every change of the namespace, none for changes elsewhere', async () => {
    const c = await synced({ [QUOTAS]: [quota('shop', 'compute', { 'limits.cpu': '4' })] });
    const first = c.of('shop');
    await api?.send(RANGES, 'ADDED', range('shop', 'defaults'));
    const second = await until(c, 'shop', (found) => found?.limitRanges.length === 1);
    expect(second?.version).not.toBe(first?.version);

    await api?.send(QUOTAS, 'ADDED', quota('elsewhere', 'q', { cpu: '1' }));
    await until(c, 'elsewhere', (found) => found !== undefined);
    expect(c.of('shop')).toBe(second);

    await api?.send(QUOTAS, 'MODIFIED', quota('shop', 'compute', { 'limits.cpu': '8' }));
    const third = await until(c, 'shop', (found) => JSON.stringify(found?.resourceQuotas).includes('"8"'));
    expect(new Set([first?.version, second?.version, third?.version]).size).toBe(3);

    await api?.send(QUOTAS, 'DELETED', quota('shop', 'compute', { 'limits.cpu': '8' }));
    await api?.send(RANGES, 'DELETED', range('shop', 'defaults'));
    await until(c, 'shop', (found) => found === undefined);
  });

  it("keeps its version while only a quota's usage changes, as its controller changes it with every pod created", async () => {
    const c = await synced({ [QUOTAS]: [quota('shop', 'compute', { 'limits.cpu': '4' })] });
    const first = c.of('shop');
    for (let used = 1; used <= 5; used++) {
      const updated = quota('shop', 'compute', { 'limits.cpu': '4' });
      await api?.send(QUOTAS, 'MODIFIED', { ...updated, metadata: { ...updated.metadata, resourceVersion: `${10 + used}` }, status: { hard: updated.spec.hard, used: { 'limits.cpu': `${used}` } } });
    }
    // A change of the spec after them is seen: the usage updates before it were read, and changed nothing.
    await api?.send(QUOTAS, 'MODIFIED', quota('shop', 'compute', { 'limits.cpu': '6' }));
    const changed = await until(c, 'shop', (found) => JSON.stringify(found?.resourceQuotas).includes('"6"'));
    expect(changed?.version).not.toBe(first?.version);
    expect(Number(changed?.version) - Number(first?.version)).toBe(1);
  });
});
