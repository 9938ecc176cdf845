import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { CoreV1Event } from '@kubernetes/client-node';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { HttpApiClient } from '../../src/cluster/client.js';
import { apiEventSink, EVENT_SERIES_BYTES, EventRecorder, type EventSink, type PendingEvent } from '../../src/cluster/events.js';
import { TokenBucket } from '../../src/cluster/rate.js';

const silent = pino({ level: 'silent' });

function fakeSink(fail: { create?: number; bump?: number } = {}) {
  const created: Array<{ namespace: string; event: CoreV1Event }> = [];
  const bumps: Array<{ name: string; count: number }> = [];
  const sink: EventSink = {
    async create(namespace, event) {
      if (fail.create && fail.create-- > 0) throw new Error('apiserver unavailable');
      created.push({ namespace, event });
    },
    async bump(_namespace, name, count) {
      if (fail.bump && fail.bump-- > 0) throw Object.assign(new Error('gone'), { code: 404 });
      bumps.push({ name, count });
    },
  };
  return { sink, created, bumps };
}

const injected = (name = 'web'): PendingEvent => ({
  target: { kind: 'deployment', name, apiKind: 'Deployment', apiVersion: 'apps/v1', namespace: 'shop', uid: `uid-${name}`, exists: true },
  type: 'Normal',
  reason: 'Injected',
  message: 'Linkerd sidecar proxy injected',
});

const settle = () => new Promise((r) => setTimeout(r, 20));

describe('EventRecorder', () => {
  it('creates an Event on the workload with Linkerd’s reason, message and component', async () => {
    const { sink, created } = fakeSink();
    const recorder = new EventRecorder({ sink, logger: silent });
    recorder.record(injected());
    await recorder.close();
    expect(created).toHaveLength(1);
    expect(created[0]?.event).toMatchObject({
      involvedObject: { apiVersion: 'apps/v1', kind: 'Deployment', name: 'web', namespace: 'shop', uid: 'uid-web' },
      reason: 'Injected',
      message: 'Linkerd sidecar proxy injected',
      type: 'Normal',
      source: { component: 'linkerd-proxy-injector' },
      count: 1,
    });
    expect(created[0]?.event.metadata?.name).toMatch(/^web\.[0-9a-f]+$/);
  });

  it('folds the pods of one rollout into one Event with a count', async () => {
    const { sink, created, bumps } = fakeSink();
    const recorder = new EventRecorder({ sink, logger: silent });
    recorder.record(injected());
    await settle();
    for (let i = 0; i < 99; i++) recorder.record(injected());
    await recorder.close();
    expect(created).toHaveLength(1);
    expect(bumps.at(-1)?.count).toBe(100);
    expect(bumps.length).toBeLessThan(99);
  });

  it('different workloads or messages get their own Events', async () => {
    const { sink, created } = fakeSink();
    const recorder = new EventRecorder({ sink, logger: silent });
    recorder.record(injected('a'));
    recorder.record(injected('b'));
    recorder.record({ ...injected('a'), reason: 'InjectionSkipped', message: 'Linkerd sidecar proxy injection skipped: x' });
    await recorder.close();
    expect(created.map((c) => `${c.event.involvedObject.name}:${c.event.reason}`)).toEqual(['a:Injected', 'b:Injected', 'a:InjectionSkipped']);
  });

  it('after the window a new Event starts', async () => {
    const { sink, created } = fakeSink();
    const recorder = new EventRecorder({ sink, logger: silent, windowMs: 0 });
    recorder.record(injected());
    await settle();
    await new Promise((r) => setTimeout(r, 5));
    recorder.record(injected());
    await recorder.close();
    expect(created).toHaveLength(2);
  });

  it('an expired Event (404 on update) is written anew with the whole count', async () => {
    const { sink, created } = fakeSink({ bump: 1 });
    const recorder = new EventRecorder({ sink, logger: silent });
    recorder.record(injected());
    await settle();
    recorder.record(injected());
    await recorder.close();
    expect(created).toHaveLength(2);
    expect(created[1]?.event.count).toBe(2);
  });

  it('a failing API is counted and logged, never thrown', async () => {
    const { sink } = fakeSink({ create: 5 });
    const results: boolean[] = [];
    const recorder = new EventRecorder({ sink, logger: silent, onWritten: (ok) => results.push(ok) });
    expect(() => recorder.record(injected())).not.toThrow();
    await recorder.close();
    expect(results).toEqual([false]);
  });

  it('drops new series beyond maxPending, counting them', async () => {
    const { sink, created } = fakeSink();
    let dropped = 0;
    const slow: EventSink = { ...sink, create: (ns, e) => new Promise((r) => setTimeout(r, 50)).then(() => sink.create(ns, e)) };
    const recorder = new EventRecorder({ sink: slow, logger: silent, maxPending: 3, onDropped: () => dropped++ });
    for (let i = 0; i < 10; i++) recorder.record(injected(`w${i}`));
    await recorder.close(5000);
    expect(dropped).toBeGreaterThan(0);
    expect(created.length + dropped).toBe(10);
  });

  it('ignores targets without a name (a pod with only generateName and no owner)', async () => {
    const { sink, created } = fakeSink();
    const recorder = new EventRecorder({ sink, logger: silent });
    recorder.record({ ...injected(), target: { ...injected().target, name: '' } });
    await recorder.close();
    expect(created).toEqual([]);
  });

  it('writes at most the new Events its rate allows, dropping and counting the rest; repeats still fold into those written', async () => {
    const { sink, created, bumps } = fakeSink();
    let dropped = 0;
    const recorder = new EventRecorder({ sink, logger: silent, onDropped: () => dropped++, newEvents: new TokenBucket(0, 5) });
    for (let i = 0; i < 50; i++) recorder.record(injected(`w${i}`));
    await settle();
    expect(created.map((e) => e.event.involvedObject.name)).toEqual(['w0', 'w1', 'w2', 'w3', 'w4']);
    expect(dropped).toBe(45);
    recorder.record(injected('w0'));
    await settle();
    expect(bumps).toEqual([{ name: expect.any(String), count: 2 }]);
  });

  it('stays within maxBytes under a churn of namespaces and workloads, still folding recent repeats', async () => {
    const { sink, created, bumps } = fakeSink();
    let dropped = 0;
    const unbounded = new TokenBucket(Infinity, Infinity);
    const maxBytes = 512 * 1024;
    const recorder = new EventRecorder({ sink, logger: silent, maxBytes, onDropped: () => dropped++, newEvents: unbounded });
    let largest = 0;
    for (let i = 0; i < 20_000; i++) {
      const event = injected(`w${i}`);
      recorder.record({ ...event, target: { ...event.target, namespace: `ns-${i % 3000}` } });
      largest = Math.max(largest, recorder.bytes);
      // Let the writes keep up, as they do against a live API server.
      if (i % 100 === 99) await settle();
    }
    await settle();
    // A workload seen a moment ago is still folded into its Event.
    const recent = injected('w19999');
    recorder.record({ ...recent, target: { ...recent.target, namespace: `ns-${19_999 % 3000}` } });
    await recorder.close(5000);
    expect(largest).toBeLessThanOrEqual(maxBytes);
    expect(largest).toBeGreaterThan(maxBytes * 0.9);
    expect(dropped).toBe(0);
    expect(created).toHaveLength(20_000);
    expect(bumps.at(-1)).toMatchObject({ name: expect.stringMatching(/^w19999\./), count: 2 });
  });

  it('drops a new series rather than grow past maxBytes while every remembered one is still waiting to be written', async () => {
    const { sink } = fakeSink();
    const stuck: EventSink = { ...sink, create: () => new Promise(() => {}) };
    // Workloads named alike, so that each series costs the same; what one costs, measured on a recorder of its own.
    const named = (i: number) => injected(`w${String(i).padStart(2, '0')}`);
    const measure = new EventRecorder({ sink: stuck, logger: silent });
    measure.record(named(0));
    const one = measure.bytes;
    await measure.close(10);
    let dropped = 0;
    const maxBytes = 10 * one;
    const recorder = new EventRecorder({ sink: stuck, logger: silent, maxBytes, maxPending: 100, onDropped: () => dropped++ });
    for (let i = 0; i < 50; i++) recorder.record(named(i));
    expect(recorder.bytes).toBe(maxBytes);
    // The first series is being written (its occurrences are no longer waiting), so it made room for one more.
    expect(dropped).toBe(39);
    await recorder.close(10);
  });

  it('counts the names and messages of what it remembers in full, and stays within its bytes with hundreds of long ones', async () => {
    const { sink } = fakeSink();
    const recorder = new EventRecorder({ sink, logger: silent, newEvents: new TokenBucket(Infinity, Infinity) });
    const long = (i: number, event: PendingEvent): PendingEvent => ({
      ...event,
      target: { ...event.target, name: `w${i}-${'n'.repeat(10_000)}` },
      message: `${i}: ${'m'.repeat(100_000)}`,
    });
    recorder.record(injected('short'));
    await settle();
    const short = recorder.bytes;
    recorder.record(long(0, injected()));
    // The key and the event each hold the message; the key, the target and the Event's name each hold the name.
    expect(recorder.bytes - short).toBeGreaterThan(2 * 2 * 100_000 + 3 * 2 * 10_000);
    let largest = 0;
    for (let i = 1; i < 300; i++) {
      recorder.record(long(i, injected()));
      largest = Math.max(largest, recorder.bytes);
      if (i % 20 === 0) await settle();
    }
    await recorder.close(5000);
    expect(largest).toBeLessThanOrEqual(EVENT_SERIES_BYTES);
    expect(largest).toBeGreaterThan(EVENT_SERIES_BYTES / 2);
  });
});

describe('apiEventSink', () => {
  it('creates an Event with a POST and raises its count with a merge patch', async () => {
    const seen: Array<{ line: string; type: string | undefined; body: Record<string, unknown> }> = [];
    const server = createServer((req, res) => {
      let text = '';
      req.on('data', (c: Buffer) => (text += c.toString()));
      req.on('end', () => {
        seen.push({ line: `${req.method} ${req.url}`, type: req.headers['content-type'], body: JSON.parse(text) as Record<string, unknown> });
        res.writeHead(201, { 'content-type': 'application/json' }).end(text);
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const client = new HttpApiClient(`http://127.0.0.1:${(server.address() as AddressInfo).port}`, async () => {});
    try {
      const sink = apiEventSink(client);
      await sink.create('shop', { metadata: { name: 'web.1' }, involvedObject: { kind: 'Deployment', name: 'web' }, reason: 'Injected' });
      await sink.bump('shop', 'web.1', 3, new Date('2026-01-02T03:04:05Z'));
      expect(seen).toEqual([
        {
          line: 'POST /api/v1/namespaces/shop/events',
          type: 'application/json',
          body: { apiVersion: 'v1', kind: 'Event', metadata: { name: 'web.1' }, involvedObject: { kind: 'Deployment', name: 'web' }, reason: 'Injected' },
        },
        { line: 'PATCH /api/v1/namespaces/shop/events/web.1', type: 'application/merge-patch+json', body: { count: 3, lastTimestamp: '2026-01-02T03:04:05.000Z' } },
      ]);
    } finally {
      client.close();
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    }
  });
});
