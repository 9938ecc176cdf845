/**
 * ResilientInformer against a fake API server whose list and watch can be made to fail: it must sync, restart after
 * errors with the cache still serving, re-watch after a normal close, and re-list when the watch goes silent.
 */
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { V1Namespace } from '@kubernetes/client-node';
import { pino, type Logger } from 'pino';
import { Writable } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { HttpApiClient } from '../../src/cluster/client.js';
import { ResilientInformer } from '../../src/cluster/informer.js';

const silent = pino({ level: 'silent' });

class FakeApiServer {
  namespaces = new Map<string, Record<string, string>>();
  resourceVersion = 1;
  lists = 0;
  watches = 0;
  failLists = 0;
  failWatches = 0;
  /** When set, lists are answered in pages of this many, as the API server does when asked for a limit. */
  pageSize: number | undefined;
  /** The limit and continue token of each list request. */
  readonly listQueries: string[] = [];
  private readonly streams = new Set<ServerResponse>();
  private server: Server | undefined;

  async start(): Promise<string> {
    this.server = createServer((req, res) => {
      const url = new URL(req.url ?? '/', 'http://x');
      if (url.pathname !== '/api/v1/namespaces') {
        res.writeHead(404).end();
        return;
      }
      if (url.searchParams.get('watch') === 'true') {
        this.watches++;
        if (this.failWatches > 0) {
          this.failWatches--;
          res.writeHead(500, { 'content-type': 'application/json' }).end('{"kind":"Status","message":"etcd unavailable"}');
          return;
        }
        res.writeHead(200, { 'content-type': 'application/json' });
        res.flushHeaders();
        this.streams.add(res);
        res.on('close', () => this.streams.delete(res));
        return;
      }
      this.lists++;
      if (this.failLists > 0) {
        this.failLists--;
        res.writeHead(500, { 'content-type': 'application/json' }).end('{"kind":"Status","message":"list failed"}');
        return;
      }
      this.listQueries.push(`limit=${url.searchParams.get('limit')} continue=${url.searchParams.get('continue') ?? ''}`);
      const all = [...this.namespaces].map(([name, annotations]) => this.object(name, annotations));
      const from = Number(url.searchParams.get('continue') ?? '0');
      const to = this.pageSize === undefined ? all.length : from + this.pageSize;
      const metadata = { resourceVersion: String(this.resourceVersion), ...(to < all.length && { continue: String(to) }) };
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ kind: 'NamespaceList', apiVersion: 'v1', metadata, items: all.slice(from, to) }));
    });
    await new Promise<void>((r) => this.server?.listen(0, '127.0.0.1', r));
    return `http://127.0.0.1:${(this.server?.address() as AddressInfo).port}`;
  }

  private object(name: string, annotations: Record<string, string>): V1Namespace {
    return { apiVersion: 'v1', kind: 'Namespace', metadata: { name, annotations, resourceVersion: String(this.resourceVersion) } };
  }

  /** Changes a namespace; watchers see it only when `announce` is true (otherwise only a re-list finds it). */
  set(name: string, annotations: Record<string, string>, announce = true): void {
    this.resourceVersion++;
    const type = this.namespaces.has(name) ? 'MODIFIED' : 'ADDED';
    this.namespaces.set(name, annotations);
    if (announce) for (const s of this.streams) s.write(`${JSON.stringify({ type, object: this.object(name, annotations) })}\n`);
  }

  /** Deletes a namespace, telling the watchers. */
  remove(name: string): void {
    this.resourceVersion++;
    const annotations = this.namespaces.get(name) ?? {};
    this.namespaces.delete(name);
    for (const s of this.streams) s.write(`${JSON.stringify({ type: 'DELETED', object: this.object(name, annotations) })}\n`);
  }

  /** Tells the watchers that their resourceVersion is too old, as the API server does after a compaction. */
  expire(): void {
    for (const s of this.streams) s.write(`${JSON.stringify({ type: 'ERROR', object: { kind: 'Status', code: 410, reason: 'Expired', message: 'too old resource version' } })}\n`);
  }

  /** Ends every open watch normally, as the API server does after its timeout. */
  closeWatches(): void {
    for (const s of this.streams) s.end();
  }

  get openWatches(): number {
    return this.streams.size;
  }

  async stop(): Promise<void> {
    for (const s of this.streams) s.destroy();
    await new Promise((r) => this.server?.close(r));
  }
}

async function until(what: string, condition: () => boolean, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function setup(options: { watchdogMs?: number; logger?: Logger; transform?: (ns: V1Namespace) => V1Namespace; onChange?: (type: string, ns: V1Namespace) => void } = {}) {
  const fake = new FakeApiServer();
  const url = await fake.start();
  const client = new HttpApiClient(url, async () => {});
  const restarts: string[] = [];
  const informer = new ResilientInformer<V1Namespace>({
    name: 'namespaces',
    client,
    path: '/api/v1/namespaces',
    logger: options.logger ?? silent,
    initialBackoffMs: 20,
    maxBackoffMs: 100,
    onRestart: (reason) => restarts.push(reason),
    ...(options.watchdogMs !== undefined && { watchdogMs: options.watchdogMs }),
    ...(options.transform && { transform: options.transform }),
    ...(options.onChange && { onChange: options.onChange }),
  });
  cleanups.push(() => fake.stop(), async () => client.close(), () => informer.stop());
  const annotations = (name: string) => informer.get(name)?.metadata?.annotations;
  return { fake, informer, restarts, annotations };
}

describe('ResilientInformer', () => {
  it('syncs from the first list, then follows the watch', async () => {
    const { fake, informer, annotations } = await setup();
    fake.set('shop', { 'linkerd.io/inject': 'enabled' });
    expect(informer.hasSynced).toBe(false);
    informer.start();
    expect(await informer.waitForSync(5000)).toBe(true);
    expect(annotations('shop')).toEqual({ 'linkerd.io/inject': 'enabled' });
    await until('the watch', () => fake.openWatches === 1);
    fake.set('shop', { 'linkerd.io/inject': 'disabled' });
    await until('the update', () => annotations('shop')?.['linkerd.io/inject'] === 'disabled');
  });

  it('retries a failing list with backoff until it works', async () => {
    const { fake, informer, restarts } = await setup();
    fake.failLists = 3;
    informer.start();
    expect(await informer.waitForSync(5000)).toBe(true);
    expect(fake.lists).toBe(4);
    expect(restarts).toEqual(['error', 'error', 'error']);
  });

  it('waitForSync gives up after its timeout while the list keeps failing', async () => {
    const { fake, informer } = await setup();
    fake.failLists = 1000;
    informer.start();
    expect(await informer.waitForSync(200)).toBe(false);
    expect(informer.hasSynced).toBe(false);
  });

  it('re-watches after the API server closes the watch normally', async () => {
    const { fake, informer, annotations } = await setup();
    informer.start();
    await informer.waitForSync(5000);
    await until('the watch', () => fake.openWatches === 1);
    fake.closeWatches();
    await until('a new watch', () => fake.watches === 2 && fake.openWatches === 1);
    fake.set('late', { a: '1' });
    await until('the event on the new watch', () => annotations('late')?.['a'] === '1');
    expect(fake.lists).toBe(1);
  });

  it('restarts after a failed watch, serving the cache meanwhile, and catches up', async () => {
    const { fake, informer, restarts, annotations } = await setup();
    fake.set('shop', { v: '1' });
    informer.start();
    await informer.waitForSync(5000);
    await until('the watch', () => fake.openWatches === 1);
    fake.failWatches = 2;
    fake.closeWatches();
    expect(annotations('shop')).toEqual({ v: '1' });
    await until('the restart', () => restarts.length >= 1);
    expect(annotations('shop')).toEqual({ v: '1' });
    await until('a healthy watch', () => fake.openWatches === 1, 5000);
    fake.set('shop', { v: '2' });
    await until('the change after recovery', () => annotations('shop')?.['v'] === '2');
    expect(restarts.every((r) => r === 'error')).toBe(true);
  });

  it('logs an outage once when it starts and once when it ends, however many attempts it takes', async () => {
    const lines: Array<{ level: number; msg: string; attempts?: number }> = [];
    const logger = pino(
      { level: 'debug' },
      new Writable({
        write(chunk: Buffer, _encoding, done) {
          lines.push(JSON.parse(chunk.toString()));
          done();
        },
      }),
    );
    const { fake, informer, restarts, annotations } = await setup({ logger });
    fake.set('shop', { v: '1' });
    informer.start();
    await informer.waitForSync(5000);
    await until('the watch', () => fake.openWatches === 1);
    fake.failWatches = 8;
    fake.closeWatches();
    await until('eight failed attempts and a healthy watch', () => fake.watches >= 10 && fake.openWatches === 1, 10_000);
    fake.set('shop', { v: '2' });
    await until('the change after recovery', () => annotations('shop')?.['v'] === '2');
    expect(restarts).toHaveLength(8);
    const about = lines.filter((l) => /watch|list|synced/.test(l.msg));
    expect(about.map((l) => l.msg)).toEqual(['cache synced', 'watch failed; serving the cache and retrying with backoff', 'watch resumed']);
    expect(about[2]?.attempts).toBe(8);
  });

  it('re-lists when the watch has been silent too long, finding changes it never announced', async () => {
    const { fake, informer, restarts, annotations } = await setup({ watchdogMs: 300 });
    fake.set('shop', { v: '1' });
    informer.start();
    await informer.waitForSync(5000);
    fake.set('shop', { v: 'missed' }, false);
    await until('the watchdog re-list', () => annotations('shop')?.['v'] === 'missed', 5000);
    expect(restarts).toContain('watchdog');
    expect(fake.lists).toBeGreaterThanOrEqual(2);
  });

  it('lists page by page, following the continue token to the end', async () => {
    const { fake, informer, annotations } = await setup();
    for (let i = 0; i < 5; i++) fake.set(`ns-${i}`, { n: String(i) }, false);
    fake.pageSize = 2;
    informer.start();
    expect(await informer.waitForSync(5000)).toBe(true);
    expect(fake.listQueries).toEqual(['limit=500 continue=', 'limit=500 continue=2', 'limit=500 continue=4']);
    expect([0, 1, 2, 3, 4].map((i) => annotations(`ns-${i}`)?.['n'])).toEqual(['0', '1', '2', '3', '4']);
  });

  it('forgets a namespace the watch says was deleted', async () => {
    const { fake, informer, annotations } = await setup();
    fake.set('gone', { v: '1' });
    informer.start();
    await informer.waitForSync(5000);
    await until('the watch', () => fake.openWatches === 1);
    fake.remove('gone');
    await until('the deletion', () => annotations('gone') === undefined);
  });

  it('re-lists at once, without counting a restart, when the watch history has expired (410)', async () => {
    const { fake, informer, restarts, annotations } = await setup();
    informer.start();
    await informer.waitForSync(5000);
    await until('the watch', () => fake.openWatches === 1);
    fake.set('missed', { v: '1' }, false);
    fake.expire();
    await until('the re-list', () => annotations('missed')?.['v'] === '1');
    expect(fake.lists).toBe(2);
    expect(restarts).toEqual([]);
  });

  it('stop() ends the watch and further restarts', async () => {
    const { fake, informer } = await setup();
    informer.start();
    await informer.waitForSync(5000);
    await until('the watch', () => fake.openWatches === 1);
    await informer.stop();
    await until('the watch to close', () => fake.openWatches === 0);
    const lists = fake.lists;
    await new Promise((r) => setTimeout(r, 200));
    expect(fake.lists).toBe(lists);
  });
});

describe('the object contract', () => {
  it('hands the store and every callback the same transformed object: for a list, an add, an update and a delete', async () => {
    const seen: Array<{ type: string; object: V1Namespace }> = [];
    // Keeps the name and annotations only: what a callback sees must be what a later get() returns, nothing more.
    const transform = (ns: V1Namespace): V1Namespace => ({ metadata: { name: ns.metadata?.name ?? '', annotations: ns.metadata?.annotations ?? {} } });
    const { fake, informer } = await setup({ transform, onChange: (type, object) => seen.push({ type, object }) });
    fake.set('listed', { a: '1' }, false);
    informer.start();
    expect(await informer.waitForSync(5000)).toBe(true);
    await until('the watch', () => fake.openWatches > 0);
    fake.set('added', { b: '2' });
    await until('the add', () => informer.get('added') !== undefined);
    fake.set('added', { b: '3' });
    await until('the update', () => informer.get('added')?.metadata?.annotations?.['b'] === '3');
    fake.remove('listed');
    await until('the delete', () => seen.some((s) => s.type === 'delete'));
    expect(seen.map((s) => `${s.type} ${s.object.metadata?.name}`)).toEqual(['add listed', 'add added', 'update added', 'delete listed']);
    for (const { object } of seen) expect(Object.keys(object)).toEqual(['metadata']);
    for (const { object } of seen) expect(Object.keys(object.metadata ?? {}).sort()).toEqual(['annotations', 'name']);
    // The object of the last update is the one the store holds.
    expect(seen[2]?.object).toBe(informer.get('added'));
  });
});
