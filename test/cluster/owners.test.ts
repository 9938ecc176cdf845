import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { apiOwnerLookup, OWNER_CACHE_BYTES, OwnerResolver, type OwnerLookup, type OwnerResolverOptions } from '../../src/cluster/owners.js';
import { ReadBudget } from '../../src/cluster/rate.js';
import { fakeClock } from './clock.js';
import { fakeApi } from './fake-api.js';

const silent = pino({ level: 'silent' });
const ref = (kind: string, name: string, apiVersion = 'apps/v1') => ({ apiVersion, kind, name, uid: `uid-${name}`, controller: true });

/** Answers from `owners`; an owner not there fails with `status` (404: it does not exist). */
function lookup(owners: Record<string, ReturnType<typeof ref>[]>, calls: string[] = [], status = 404): OwnerLookup {
  return {
    async ownersOf(kind, namespace, name) {
      calls.push(`${kind}/${namespace}/${name}`);
      const found = owners[`${kind}/${name}`];
      if (!found) throw Object.assign(new Error(status === 404 ? 'not found' : 'etcd unavailable'), { code: status });
      return { owners: found };
    },
  };
}

const podOwnedBy = (...refs: ReturnType<typeof ref>[]) => ({ metadata: { name: 'p-1', ownerReferences: refs } });

describe('OwnerResolver', () => {
  const owners = {
    'ReplicaSet/web-5f': [ref('Deployment', 'web')],
    'ReplicaSet/orphan': [],
    'ReplicaSet/rollout-rs': [ref('Rollout', 'canary', 'argoproj.io/v1alpha1')],
    'Job/nightly-123': [ref('CronJob', 'nightly', 'batch/v1')],
    'Job/once': [],
  };

  it.each([
    ['a bare pod', { metadata: { name: 'solo' } }, { kind: 'pod', name: 'solo', apiKind: 'Pod', exists: false }],
    ['a bare pod with only generateName', { metadata: { generateName: 'solo-' } }, { kind: 'pod', name: 'solo-', exists: false }],
    ['more than one owner', podOwnedBy(ref('ReplicaSet', 'a'), ref('ReplicaSet', 'b')), { kind: 'pod', name: 'p-1', exists: false }],
    ['ReplicaSet → Deployment', podOwnedBy(ref('ReplicaSet', 'web-5f')), { kind: 'deployment', name: 'web', apiKind: 'Deployment', uid: 'uid-web', exists: true }],
    ['a ReplicaSet with no owner', podOwnedBy(ref('ReplicaSet', 'orphan')), { kind: 'replicaset', name: 'orphan', exists: true }],
    ['a ReplicaSet owned by an unknown kind', podOwnedBy(ref('ReplicaSet', 'rollout-rs')), { kind: 'replicaset', name: 'rollout-rs', exists: true }],
    ['Job → CronJob', podOwnedBy(ref('Job', 'nightly-123', 'batch/v1')), { kind: 'cronjob', name: 'nightly', apiVersion: 'batch/v1', exists: true }],
    ['a Job of its own', podOwnedBy(ref('Job', 'once', 'batch/v1')), { kind: 'job', name: 'once', exists: true }],
    ['a StatefulSet, by kind', podOwnedBy(ref('StatefulSet', 'db')), { kind: 'statefulset', name: 'db', uid: 'uid-db', exists: false }],
    ['a DaemonSet, by kind', podOwnedBy(ref('DaemonSet', 'agent')), { kind: 'daemonset', name: 'agent', exists: false }],
    ['an unknown kind, by kind', podOwnedBy(ref('Rollout', 'canary', 'argoproj.io/v1alpha1')), { kind: 'rollout', name: 'canary', exists: false }],
    ['a ReplicaSet that cannot be read falls back to the ReplicaSet, not known to exist', podOwnedBy(ref('ReplicaSet', 'gone')), { kind: 'replicaset', name: 'gone', exists: false }],
  ])('%s', async (_what, pod, expected) => {
    const resolver = new OwnerResolver(lookup(owners), silent);
    expect(await resolver.resolve(pod, 'shop')).toMatchObject({ ...expected, namespace: 'shop' });
  });

  it('reads each ReplicaSet once for all its pods', async () => {
    const calls: string[] = [];
    const resolver = new OwnerResolver(lookup(owners, calls), silent);
    for (let i = 0; i < 50; i++) await resolver.resolve(podOwnedBy(ref('ReplicaSet', 'web-5f')), 'shop');
    expect(calls).toEqual(['ReplicaSet/shop/web-5f']);
  });

  it('reads a ReplicaSet once for a burst of its pods arriving together', async () => {
    const calls: string[] = [];
    const resolver = new OwnerResolver(lookup(owners, calls), silent);
    const resolved = await Promise.all(Array.from({ length: 20 }, () => resolver.resolve(podOwnedBy(ref('ReplicaSet', 'web-5f')), 'shop')));
    expect(resolved.every((o) => o.name === 'web')).toBe(true);
    expect(calls).toEqual(['ReplicaSet/shop/web-5f']);
  });

  it('remembers for a while that a ReplicaSet does not exist, and says so once', async () => {
    const calls: string[] = [];
    const warnings: string[] = [];
    const logger = pino({ level: 'warn' }, { write: (line: string) => void warnings.push((JSON.parse(line) as { msg: string }).msg) });
    const resolver = new OwnerResolver(lookup(owners, calls), logger);
    for (let i = 0; i < 5; i++) expect(await resolver.resolve(podOwnedBy(ref('ReplicaSet', 'gone')), 'shop')).toMatchObject({ kind: 'replicaset', name: 'gone' });
    expect(calls).toEqual(['ReplicaSet/shop/gone']);
    expect(warnings).toEqual(['could not read the pod owner; using it as the workload']);
  });

  /**
   * How many reads two pods owned by ReplicaSet `name` cost a fresh resolver whose failed reads fail with `status`, the
   * second pod coming `laterMs` after the first.
   */
  async function readsForTwoPods(name: string, options: OwnerResolverOptions, { status = 404, laterMs = 0 } = {}): Promise<number> {
    const calls: string[] = [];
    const clock = fakeClock();
    const resolver = new OwnerResolver(lookup(owners, calls, status), silent, { now: clock.now, ...options });
    await resolver.resolve(podOwnedBy(ref('ReplicaSet', name)), 'shop');
    clock.advance(laterMs);
    await resolver.resolve(podOwnedBy(ref('ReplicaSet', name)), 'shop');
    return calls.length;
  }

  it('remembers a ReplicaSet found missing for its own, shorter time', async () => {
    expect(await readsForTwoPods('gone', {}, { laterMs: 10_000 })).toBe(1);
    expect(await readsForTwoPods('gone', {}, { laterMs: 10_001 })).toBe(2);
    expect(await readsForTwoPods('gone', { missingTtlMs: 60_000 }, { laterMs: 30_000 })).toBe(1);
  });

  it('reads again after a failure other than 404', async () => {
    expect(await readsForTwoPods('unreadable', {}, { status: 500 })).toBe(2);
  });

  it('forgets entries after the TTL', async () => {
    expect(await readsForTwoPods('web-5f', {}, { laterMs: 600_000 })).toBe(1);
    expect(await readsForTwoPods('web-5f', {}, { laterMs: 600_001 })).toBe(2);
    expect(await readsForTwoPods('web-5f', { ttlMs: 1000 }, { laterMs: 1001 })).toBe(2);
  });

  /** What one entry for a ReplicaSet named like `rs-0` costs, as the resolver counts it. */
  async function entryBytes(): Promise<number> {
    const resolver = new OwnerResolver(lookup({ 'ReplicaSet/rs-0': [ref('Deployment', 'd-0')] }), silent);
    await resolver.resolve(podOwnedBy(ref('ReplicaSet', 'rs-0')), 'ns');
    return resolver.bytes;
  }

  it('keeps at most maxBytes, the least recently used read again', async () => {
    const calls: string[] = [];
    const many: Record<string, ReturnType<typeof ref>[]> = {};
    for (let i = 0; i < 40; i++) many[`ReplicaSet/rs-${i}`] = [ref('Deployment', `d-${i}`)];
    // Room for twenty entries, but for the names of two digits, which cost a little more.
    const maxBytes = 20 * (await entryBytes());
    const resolver = new OwnerResolver(lookup(many, calls), silent, { maxBytes, reads: new ReadBudget({ perSecond: Infinity, burst: Infinity }) });
    for (let i = 0; i < 40; i++) {
      await resolver.resolve(podOwnedBy(ref('ReplicaSet', `rs-${i}`)), 'ns');
      expect(resolver.bytes).toBeLessThanOrEqual(maxBytes);
    }
    expect(resolver.bytes).toBeGreaterThan(maxBytes - (await entryBytes()) * 2);
    calls.length = 0;
    await resolver.resolve(podOwnedBy(ref('ReplicaSet', 'rs-39')), 'ns');
    await resolver.resolve(podOwnedBy(ref('ReplicaSet', 'rs-0')), 'ns');
    expect(calls).toEqual(['ReplicaSet/ns/rs-0']);
  });

  it("carries linkerd.io/inject found on the ReplicaSet or Job, where a Deployment's or a jobTemplate's metadata puts it", async () => {
    const annotated: OwnerLookup = {
      async ownersOf(kind, _namespace, name) {
        const parents: Record<string, ReturnType<typeof ref>[]> = {
          'ReplicaSet/web-5f': [ref('Deployment', 'web')],
          'ReplicaSet/bare': [],
          'ReplicaSet/rollout-rs': [ref('Rollout', 'canary', 'argoproj.io/v1alpha1')],
          'Job/nightly-1': [ref('CronJob', 'nightly', 'batch/v1')],
          'Job/once': [],
        };
        return { owners: parents[`${kind}/${name}`] ?? [], inject: 'enabled', config: ['config.linkerd.io/proxy-cpu-limit'] };
      },
    };
    const resolver = new OwnerResolver(annotated, silent);
    const misplaced = async (kind: string, name: string) => {
      const owner = await resolver.resolve(podOwnedBy(ref(kind, name)), 'shop');
      expect(owner.misplacedConfig).toEqual(owner.misplacedInject === undefined ? undefined : ['config.linkerd.io/proxy-cpu-limit']);
      return owner.misplacedInject;
    };
    expect(await misplaced('ReplicaSet', 'web-5f')).toBe('enabled');
    expect(await misplaced('ReplicaSet', 'bare')).toBe('enabled');
    expect(await misplaced('Job', 'nightly-1')).toBe('enabled');
    expect(await misplaced('Job', 'once')).toBe('enabled');
    // A ReplicaSet of another controller: where its annotations come from is not known.
    expect(await misplaced('ReplicaSet', 'rollout-rs')).toBeUndefined();
    expect((await new OwnerResolver(lookup(owners), silent).resolve(podOwnedBy(ref('ReplicaSet', 'web-5f')), 'shop')).misplacedInject).toBeUndefined();
  });

  it("reads a StatefulSet's or DaemonSet's own linkerd.io/inject and proxy annotations only when asked, through the same cache, and never fails", async () => {
    const calls: string[] = [];
    const annotated: OwnerLookup = {
      async ownersOf(kind, namespace, name) {
        calls.push(`${kind}/${namespace}/${name}`);
        if (name === 'down') throw Object.assign(new Error('etcd unavailable'), { code: 503 });
        if (name === 'tuned') return { owners: [], config: ['config.linkerd.io/proxy-cpu-limit'] };
        return { owners: [], ...(name !== 'plain' && { inject: name === 'off' ? 'disabled' : 'enabled' }) };
      },
    };
    const resolver = new OwnerResolver(annotated, silent);
    // Resolving the pods' owner reads nothing: the pods name their StatefulSet or DaemonSet themselves.
    const db = await resolver.resolve(podOwnedBy(ref('StatefulSet', 'db')), 'shop');
    const agent = await resolver.resolve(podOwnedBy(ref('DaemonSet', 'agent')), 'shop');
    expect(calls).toEqual([]);
    expect(db.misplacedInject).toBeUndefined();

    expect((await resolver.withOwnMetadata(db)).misplacedInject).toBe('enabled');
    expect((await resolver.withOwnMetadata(db)).misplacedInject).toBe('enabled');
    expect((await resolver.withOwnMetadata(agent)).misplacedInject).toBe('enabled');
    expect(calls).toEqual(['StatefulSet/shop/db', 'DaemonSet/shop/agent']);
    const off = await resolver.resolve(podOwnedBy(ref('StatefulSet', 'off')), 'shop');
    expect((await resolver.withOwnMetadata(off)).misplacedInject).toBe('disabled');
    // Named by the pod only, a workload is not known to exist until it is read.
    const plain = await resolver.resolve(podOwnedBy(ref('StatefulSet', 'plain')), 'shop');
    expect(plain.exists).toBe(false);
    expect(await resolver.withOwnMetadata(plain)).toEqual({ ...plain, exists: true });
    const tuned = await resolver.resolve(podOwnedBy(ref('DaemonSet', 'tuned')), 'shop');
    expect(await resolver.withOwnMetadata(tuned)).toEqual({ ...tuned, exists: true, misplacedConfig: ['config.linkerd.io/proxy-cpu-limit'] });

    // Unreadable: the owner as it was, read again next time.
    const down = await resolver.resolve(podOwnedBy(ref('DaemonSet', 'down')), 'shop');
    expect(await resolver.withOwnMetadata(down)).toEqual(down);
    expect(await resolver.withOwnMetadata(down)).toEqual(down);
    expect(calls.filter((c) => c.endsWith('/down'))).toHaveLength(2);

    // Other owners are never read here: a ReplicaSet's or Job's was read when the pod's owner was resolved, and a kind
    // of another API group is not one of the two, whatever its name.
    calls.length = 0;
    const rollout = await resolver.resolve(podOwnedBy(ref('Rollout', 'canary', 'argoproj.io/v1alpha1')), 'shop');
    expect(await resolver.withOwnMetadata(rollout)).toEqual(rollout);
    const foreign = await resolver.resolve(podOwnedBy(ref('StatefulSet', 'kruise', 'apps.kruise.io/v1beta1')), 'shop');
    expect(await resolver.withOwnMetadata(foreign)).toEqual(foreign);
    expect(calls).toEqual([]);
  });

  it('reads at most as many owners as its rate allows; a pod whose owner is not read keeps it as named, not known to exist', async () => {
    const calls: string[] = [];
    const resolver = new OwnerResolver(lookup(owners, calls), silent, { reads: new ReadBudget({ perSecond: 0, burst: 2 }) });
    const got = [];
    for (const name of ['web-5f', 'orphan', 'rollout-rs']) got.push(await resolver.resolve(podOwnedBy(ref('ReplicaSet', name)), 'shop'));
    expect(calls).toEqual(['ReplicaSet/shop/web-5f', 'ReplicaSet/shop/orphan']);
    expect(got.map((o) => [o.name, o.exists])).toEqual([['web', true], ['orphan', true], ['rollout-rs', false]]);
    // A name no object can have is not read at all.
    const long = await resolver.resolve(podOwnedBy(ref('ReplicaSet', 'x'.repeat(254))), 'shop');
    expect(long.exists).toBe(false);
    expect(calls).toHaveLength(2);
  });

  it('stays within maxBytes under a churn of namespaces and owners, keeping the most recent', async () => {
    const calls: string[] = [];
    const churn: OwnerLookup = {
      async ownersOf(kind, namespace, name) {
        calls.push(`${kind}/${namespace}/${name}`);
        return { owners: [ref('Deployment', name.replace(/-rs$/, ''))] };
      },
    };
    const maxBytes = 64 * 1024;
    const resolver = new OwnerResolver(churn, silent, { maxBytes, reads: new ReadBudget({ perSecond: Infinity, burst: Infinity }) });
    let largest = 0;
    for (let i = 0; i < 10_000; i++) {
      const owner = await resolver.resolve(podOwnedBy(ref('ReplicaSet', `d${i}-rs`)), `ns-${i % 700}`);
      expect(owner.name).toBe(`d${i}`);
      largest = Math.max(largest, resolver.bytes);
    }
    expect(largest).toBeLessThanOrEqual(maxBytes);
    expect(largest).toBeGreaterThan(maxBytes * 0.9);
    calls.length = 0;
    await resolver.resolve(podOwnedBy(ref('ReplicaSet', 'd9999-rs')), `ns-${9999 % 700}`);
    await resolver.resolve(podOwnedBy(ref('ReplicaSet', 'd0-rs')), 'ns-0');
    expect(calls).toEqual(['ReplicaSet/ns-0/d0-rs']);
  });

  it('an entry refreshed after its TTL is not counted twice', async () => {
    const clock = fakeClock();
    const resolver = new OwnerResolver(lookup(owners), silent, { now: clock.now });
    await resolver.resolve(podOwnedBy(ref('ReplicaSet', 'web-5f')), 'shop');
    const once = resolver.bytes;
    expect(once).toBeGreaterThan(0);
    for (let i = 0; i < 5; i++) {
      clock.advance(600_001);
      await resolver.resolve(podOwnedBy(ref('ReplicaSet', 'web-5f')), 'shop');
    }
    expect(resolver.bytes).toBe(once);
  });

  describe('counted in bytes, since a review can put anything in an owner reference', () => {
    const MB = 1024 * 1024;
    const unlimited = () => new ReadBudget({ perSecond: Infinity, burst: Infinity });

    it("counts an owner reference's uid in full, and what was read", async () => {
      const long = 'x'.repeat(10_000);
      const readOf: OwnerLookup = { ownersOf: async (_kind, _namespace, name) => ({ owners: [ref('Deployment', 'web')], ...(name === 'annotated' && { inject: long }) }) };
      const resolver = new OwnerResolver(readOf, silent);
      const pod = (name: string, uid: string) => ({ metadata: { name: 'p', ownerReferences: [{ ...ref('ReplicaSet', name), uid }] } });
      await resolver.resolve(pod('web-5f', 'u'), 'shop');
      const short = resolver.bytes;
      await resolver.resolve(pod('web-5f', `u${long}`), 'shop');
      expect(resolver.bytes - short).toBe(short + 2 * long.length);
      const twoEntries = resolver.bytes;
      // Another ReplicaSet's name, three characters longer, whose read found a long annotation.
      await resolver.resolve(pod('annotated', 'u'), 'shop');
      expect(resolver.bytes - twoEntries).toBeGreaterThan(short + 2 * long.length);
      // A name of that length is no object's: it is not read, and nothing is kept of it.
      const before = resolver.bytes;
      await resolver.resolve(pod(long, 'u'), 'shop');
      expect(resolver.bytes).toBe(before);
    });

    it('stays within its bytes while hundreds of pods name owners with uids and names of a megabyte, and keeps what real pods use', async () => {
      const calls: string[] = [];
      const resolver = new OwnerResolver(lookup(owners, calls), silent, { reads: unlimited() });
      expect(await resolver.resolve(podOwnedBy(ref('ReplicaSet', 'web-5f')), 'shop')).toMatchObject({ kind: 'deployment', name: 'web' });
      const big = 'x'.repeat(MB);
      let largest = 0;
      for (let i = 0; i < 300; i++) {
        const named = i % 3 === 0 ? `${i}${big}` : i % 3 === 1 ? `forged-${i}` : 'web-5f';
        const pod = { metadata: { name: 'p', ownerReferences: [{ ...ref('ReplicaSet', named), uid: `${i}${big}` }] } };
        await resolver.resolve(pod, 'shop');
        largest = Math.max(largest, resolver.bytes);
      }
      expect(largest).toBeLessThanOrEqual(OWNER_CACHE_BYTES);
      // Each of those entries is larger than any real one, so none pushed out what the real pods' owner was read for.
      calls.length = 0;
      expect(await resolver.resolve(podOwnedBy(ref('ReplicaSet', 'web-5f')), 'shop')).toMatchObject({ kind: 'deployment', name: 'web' });
      expect(calls).toEqual([]);
    });

    it('counts reads in progress by their keys, within the same bound', async () => {
      const answers: Array<() => void> = [];
      const slow: OwnerLookup = {
        ownersOf: () => new Promise((resolve) => answers.push(() => resolve({ owners: [ref('Deployment', 'web')] }))),
      };
      const maxBytes = 1024 * 1024;
      const resolver = new OwnerResolver(slow, silent, { maxBytes, reads: unlimited() });
      const uid = 'u'.repeat(8 * 1024);
      const resolving = Array.from({ length: 100 }, (_, i) =>
        resolver.resolve({ metadata: { name: 'p', ownerReferences: [{ ...ref('ReplicaSet', `rs-${i}`), uid: `${i}${uid}` }] } }, 'shop'),
      );
      expect(answers).toHaveLength(100);
      // Each read in progress counts its key of sixteen kilobytes: the bound holds about sixty of them.
      expect(resolver.bytes).toBeLessThanOrEqual(maxBytes);
      expect(resolver.bytes).toBeGreaterThan(maxBytes - 2 * 2 * uid.length);
      for (const answer of answers) answer();
      // A read pushed out while in progress still answers the pod that waited for it.
      expect((await Promise.all(resolving)).every((owner) => owner.name === 'web' && owner.exists)).toBe(true);
      expect(resolver.bytes).toBeLessThanOrEqual(maxBytes);
    });
  });

  it('reads ReplicaSets, Jobs, StatefulSets and DaemonSets at their API paths, with their own linkerd.io/inject and proxy annotations, and a missing one is an error with its status', async () => {
    const api = await fakeApi({
      read: (path, res) => {
        if (path.includes('/gone')) return void res.writeHead(404, { 'content-type': 'application/json' }).end('{"kind":"Status","code":404}');
        const annotations = path.includes('/replicasets/')
          ? { other: 'x', 'config.linkerd.io/proxy-memory-limit': '1Gi', 'config.alpha.linkerd.io/proxy-wait-before-exit-seconds': '5', 'config.linkerd.io/proxy-cpu-limit': '1' }
          : { 'linkerd.io/inject': 'enabled', other: 'x', 'config.linkerd.io/not-a-proxy-setting': 'x' };
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ metadata: { ownerReferences: [ref('Deployment', 'web')], annotations } }));
      },
    });
    try {
      const lookup = apiOwnerLookup(api.client);
      expect(await lookup.ownersOf('ReplicaSet', 'shop', 'web-5f')).toEqual({
        owners: [ref('Deployment', 'web')],
        config: ['config.alpha.linkerd.io/proxy-wait-before-exit-seconds', 'config.linkerd.io/proxy-cpu-limit', 'config.linkerd.io/proxy-memory-limit'],
      });
      expect(await lookup.ownersOf('Job', 'shop', 'nightly-1')).toEqual({ owners: [ref('Deployment', 'web')], inject: 'enabled' });
      expect(await lookup.ownersOf('StatefulSet', 'shop', 'db')).toEqual({ owners: [ref('Deployment', 'web')], inject: 'enabled' });
      expect(await lookup.ownersOf('DaemonSet', 'shop', 'agent')).toEqual({ owners: [ref('Deployment', 'web')], inject: 'enabled' });
      await expect(lookup.ownersOf('ReplicaSet', 'shop', 'gone')).rejects.toMatchObject({ code: 404 });
      expect(api.reads).toEqual([
        '/apis/apps/v1/namespaces/shop/replicasets/web-5f',
        '/apis/batch/v1/namespaces/shop/jobs/nightly-1',
        '/apis/apps/v1/namespaces/shop/statefulsets/db',
        '/apis/apps/v1/namespaces/shop/daemonsets/agent',
        '/apis/apps/v1/namespaces/shop/replicasets/gone',
      ]);
    } finally {
      await api.close();
    }
  });
});
