/** NamespaceCache: the watch-fed cache, and its bounded direct reads for namespaces the watch has not delivered. */
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { SourceUnavailableError } from '../../src/admission/index.js';
import { NAMESPACE_READS_BYTES, NamespaceCache, type NamespaceCacheOptions } from '../../src/cluster/namespaces.js';
import { ReadBudget } from '../../src/cluster/rate.js';
import { fakeClock } from './clock.js';
import { fakeApi, namespaceFrom, notFound, type FakeApi, type FakeApiOptions } from './fake-api.js';

const silent = pino({ level: 'silent' });
const unlimited = () => new ReadBudget({ perSecond: Infinity, burst: Infinity });
let api: FakeApi | undefined;
let cache: NamespaceCache | undefined;

afterEach(async () => {
  await cache?.stop();
  await api?.close();
  cache = undefined;
  api = undefined;
});

async function syncedCache(apiOptions: FakeApiOptions = {}, options: Partial<NamespaceCacheOptions> = {}): Promise<NamespaceCache> {
  api = await fakeApi(apiOptions);
  cache = new NamespaceCache({ client: api.client, logger: silent, ...options });
  cache.start();
  expect(await cache.waitForSync(5000)).toBe(true);
  return cache;
}

describe('NamespaceCache', () => {
  it('answers a namespace the list delivered from the cache, without a read', async () => {
    const lookups: string[] = [];
    const listed = { metadata: { name: 'shop', annotations: { 'linkerd.io/inject': 'enabled' } } };
    const c = await syncedCache({ lists: { '/api/v1/namespaces': [listed] } }, { onLookup: (r) => lookups.push(r) });
    expect(await c.annotations('shop')).toEqual({ 'linkerd.io/inject': 'enabled' });
    expect(api?.reads).toEqual([]);
    expect(lookups).toEqual(['cache']);
  });

  it('keeps only the name, resourceVersion and annotations of each namespace, and its Pod Security enforce label', async () => {
    const labels = { l: '1', 'pod-security.kubernetes.io/enforce': 'baseline', 'pod-security.kubernetes.io/warn': 'restricted' };
    const listed = { metadata: { name: 'shop', resourceVersion: '7', annotations: { a: '1' }, labels, managedFields: [{ manager: 'kubectl' }] }, spec: { finalizers: ['kubernetes'] } };
    const plain = { metadata: { name: 'plain', resourceVersion: '8', labels: { l: '1' } } };
    const c = await syncedCache({ lists: { '/api/v1/namespaces': [listed, plain] } });
    const informer = (c as unknown as { informer: { get(name: string): unknown } }).informer;
    expect(informer.get('shop')).toEqual({
      metadata: { name: 'shop', resourceVersion: '7', annotations: { a: '1' }, labels: { 'pod-security.kubernetes.io/enforce': 'baseline' } },
    });
    expect(informer.get('plain')).toEqual({ metadata: { name: 'plain', resourceVersion: '8' } });
    expect(await c.annotations('shop')).toEqual({ a: '1' });
    expect(c.labels('shop')).toEqual({ 'pod-security.kubernetes.io/enforce': 'baseline' });
    expect(c.labels('plain')).toBeUndefined();
    expect(c.labels('never-seen')).toBeUndefined();
    expect(api?.reads).toEqual([]);
  });

  it('a namespace read directly gives its Pod Security enforce label too, once read', async () => {
    const c = await syncedCache({
      read: (path, res) =>
        res.writeHead(200, { 'content-type': 'application/json' }).end(
          JSON.stringify({ metadata: { name: path.split('/').at(-1), labels: { 'pod-security.kubernetes.io/enforce': 'restricted', other: 'x' } } }),
        ),
    });
    expect(c.labels('late')).toBeUndefined();
    await c.annotations('late');
    expect(c.labels('late')).toEqual({ 'pod-security.kubernetes.io/enforce': 'restricted' });
    expect(api?.reads).toEqual(['/api/v1/namespaces/late']);
  });

  it('reads a namespace the watch has not delivered once for a burst of pods, then remembers it', async () => {
    const lookups: string[] = [];
    const c = await syncedCache({}, { onLookup: (r) => lookups.push(r) });
    const burst = await Promise.all(Array.from({ length: 10 }, () => c.annotations('new')));
    expect(burst.every((a) => a['linkerd.io/inject'] === 'enabled-new')).toBe(true);
    expect(api?.reads).toEqual(['/api/v1/namespaces/new']);
    await c.annotations('new');
    expect(api?.reads).toHaveLength(1);
    expect(lookups.filter((r) => r === 'read')).toHaveLength(10);
    expect(lookups.at(-1)).toBe('cache');
  });

  it('a namespace that cannot be read is NAMESPACE_UNKNOWN, saying why, and counted as failed', async () => {
    const lookups: string[] = [];
    const c = await syncedCache(
      { read: (_path, res) => res.writeHead(403, { 'content-type': 'application/json' }).end(JSON.stringify({ kind: 'Status', message: 'namespaces "x" is forbidden' })) },
      { onLookup: (r) => lookups.push(r) },
    );
    const error = await c.annotations('x').catch((err: unknown) => err);
    expect(error).toBeInstanceOf(SourceUnavailableError);
    expect(error).toMatchObject({ code: 'NAMESPACE_UNKNOWN', message: expect.stringMatching(/namespace x .*HTTP 403: namespaces "x" is forbidden/) });
    expect(lookups).toEqual(['failed']);
  });

  it('a read that does not answer in time fails within the read timeout', async () => {
    const c = await syncedCache({ read: () => {} }, { readTimeoutMs: 200 });
    const error = await c.annotations('slow').catch((err: unknown) => err);
    expect(error).toMatchObject({ code: 'NAMESPACE_UNKNOWN', message: expect.stringContaining('did not answer within 200 ms') });
  });

  it('remembers for a while that a namespace does not exist: 300 reviews naming it make one read', async () => {
    const c = await syncedCache({
      read: (_path, res) => {
        res.writeHead(404, { 'content-type': 'application/json' }).end('{"kind":"Status","code":404,"message":"not found"}');
      },
    });
    const reads = api?.reads ?? [];
    for (let i = 0; i < 300; i++) await expect(c.annotations('ghost')).rejects.toBeInstanceOf(SourceUnavailableError);
    expect(reads.filter((r) => r.endsWith('/ghost'))).toHaveLength(1);
  });

  it('reads at most as many namespaces as its rate allows; the others are unknown, without a read', async () => {
    const c = await syncedCache({ read: namespaceFrom }, { reads: new ReadBudget({ perSecond: 0, burst: 3 }) });
    const results = await Promise.allSettled(Array.from({ length: 10 }, (_, i) => c.annotations(`new-${i}`)));
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(3);
    const refused = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    expect((refused?.reason as Error).message).toBe('the annotations of namespace new-3 are not known yet (too many namespaces not in the cache are being read)');
    expect(api?.reads.filter((r) => r.includes('/new-'))).toHaveLength(3);
  });

  it('remembers directly read namespaces only up to its bytes under a churn of namespaces the watch never delivers', async () => {
    const maxBytes = 32 * 1024;
    const c = await syncedCache({ read: namespaceFrom }, { maxBytes, reads: unlimited() });
    let largest = 0;
    for (let i = 0; i < 400; i++) {
      expect(await c.annotations(`ns-${i}`)).toEqual({ 'linkerd.io/inject': `enabled-ns-${i}` });
      largest = Math.max(largest, c.bytes);
    }
    expect(largest).toBeLessThanOrEqual(maxBytes);
    expect(largest).toBeGreaterThan(maxBytes * 0.9);
    // The most recent are still remembered; the oldest were forgotten and are read again.
    const reads = api?.reads ?? [];
    reads.length = 0;
    await c.annotations('ns-399');
    await c.annotations('ns-0');
    expect(reads).toEqual(['/api/v1/namespaces/ns-0']);
  });

  it('remembers a direct read for a minute, and one found missing for its own time', async () => {
    const clock = fakeClock();
    const c = await syncedCache(
      { read: (path, res) => (path.endsWith('/ghost') ? notFound(res) : namespaceFrom(path, res)) },
      { now: clock.now, missingTtlMs: 5000 },
    );
    const reads = api?.reads ?? [];
    await c.annotations('late');
    await expect(c.annotations('ghost')).rejects.toMatchObject({ message: expect.stringContaining('(it was not found)') });
    clock.advance(5000);
    await c.annotations('late');
    await expect(c.annotations('ghost')).rejects.toMatchObject({ message: expect.stringContaining('(it was not found)') });
    expect(reads).toEqual(['/api/v1/namespaces/late', '/api/v1/namespaces/ghost']);
    clock.advance(1);
    await expect(c.annotations('ghost')).rejects.toBeInstanceOf(SourceUnavailableError);
    clock.advance(55_000);
    await c.annotations('late');
    expect(reads).toEqual(['/api/v1/namespaces/late', '/api/v1/namespaces/ghost', '/api/v1/namespaces/ghost', '/api/v1/namespaces/late']);
  });

  it('lets the watch win over a direct read, and forgets the read once the watch delivers the namespace', async () => {
    const c = await syncedCache();
    expect(await c.annotations('late')).toEqual({ 'linkerd.io/inject': 'enabled-late' });
    expect(c.bytes).toBeGreaterThan(0);
    await api?.send('/api/v1/namespaces', 'ADDED', { metadata: { name: 'late', resourceVersion: '2', annotations: { 'linkerd.io/inject': 'disabled' } } });
    for (let i = 0; i < 500 && c.bytes > 0; i++) await new Promise((resolve) => setTimeout(resolve, 5));
    expect(c.bytes).toBe(0);
    expect(await c.annotations('late')).toEqual({ 'linkerd.io/inject': 'disabled' });
    expect(api?.reads).toEqual(['/api/v1/namespaces/late']);
  });

  it('counts what a direct read found, annotations and all', async () => {
    const value = 'v'.repeat(10_000);
    const c = await syncedCache({
      read: (path, res) => {
        const name = path.slice(path.lastIndexOf('/') + 1);
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ metadata: { name, annotations: { a: name === 'big' ? value : 'v' } } }));
      },
    });
    await c.annotations('one');
    const one = c.bytes;
    await c.annotations('big');
    expect(c.bytes - one).toBe(one + 2 * (value.length - 1));
  });

  it('stays within its bytes while hundreds of reviews name namespaces with long names, found with large annotations or missing', async () => {
    const long = 'n'.repeat(4000);
    const c = await syncedCache(
      {
        read: (path, res) => {
          const name = decodeURIComponent(path.slice(path.lastIndexOf('/') + 1));
          if (name.startsWith('missing-')) return notFound(res);
          res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ metadata: { name, annotations: { a: 'v'.repeat(20_000) } } }));
        },
      },
      { reads: unlimited() },
    );
    let largest = 0;
    for (let i = 0; i < 300; i++) {
      await c.annotations(`${i % 2 === 0 ? 'found' : 'missing'}-${i}-${long}`).catch(() => undefined);
      largest = Math.max(largest, c.bytes);
    }
    expect(largest).toBeLessThanOrEqual(NAMESPACE_READS_BYTES);
    expect(largest).toBeGreaterThan(NAMESPACE_READS_BYTES / 2);
  });
});
