/**
 * The attacks a second security review found against `serve`, each run as an attacker would run it, against a process
 * under the image's NODE_OPTIONS (128 MiB of old space) and, where the attack needs a cluster, against a fake API: the
 * process must stay alive, keep `/live` answering within a second throughout, stay within the chart's memory limit,
 * and serve a legitimate client. Numbers in the test names are the review's; the figures seen are printed.
 */
import { mkdtempSync } from 'node:fs';
import { get } from 'node:http';
import { connect as tcpConnect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect as tlsConnect, type TLSSocket } from 'node:tls';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { admissionReview, decodedPatch } from '../support/admission.js';
import { pod } from '../support/engine.js';
import { CHART_MEMORY_LIMIT_MIB, postTo, watchHealth, type Answer, type Health } from './support/health.js';
import { caOf, cleanUp, root, runAttackers, startInjector, tlsDir, wellBehavedClient, type ClientTally, type Injector } from './support/injector.js';

afterAll(cleanUp);

/** The longest /live may take while an attack runs: kubelet's probe timeout is a second. */
const LIVE_MS = 1_000;

let nodeOptions: string;
let fakeCluster: (options: object) => Promise<{ url: string; reads: Map<string, number>; kubeconfig(dir: string): string; close(): Promise<void> }>;

beforeAll(async () => {
  const helper = (await import(pathToFileURL(join(root, 'bench', 'serve-process.mjs')).href)) as { imageNodeOptions: (dir: string) => string };
  nodeOptions = helper.imageNodeOptions(root);
  fakeCluster = ((await import(pathToFileURL(join(root, 'bench', 'fake-cluster.mjs')).href)) as { startFakeCluster: typeof fakeCluster }).startFakeCluster;
});

const fmt = (n: number): string => n.toFixed(0);

/** What every attack must leave: a live process, probes answered in time, memory within the chart's limit. */
function expectHealthy(injector: Injector, health: Health): void {
  expect(injector.child.exitCode).toBeNull();
  expect(health.liveFailures).toBe(0);
  expect(health.maxLiveMs).toBeLessThan(LIVE_MS);
  expect(health.maxRssMiB).toBeLessThan(CHART_MEMORY_LIMIT_MIB);
}

const said = (health: Health): string => `RSS at most ${fmt(health.maxRssMiB)} MiB, /live at most ${fmt(health.maxLiveMs)} ms over ${health.probes} probes`;

const enabled = { 'linkerd.io/inject': 'enabled' };
const controlledBy = (object: Record<string, unknown>, ref: Record<string, unknown>): Record<string, unknown> => {
  (object['metadata'] as Record<string, unknown>)['ownerReferences'] = [{ apiVersion: 'apps/v1', kind: 'ReplicaSet', controller: true, ...ref }];
  return object;
};

describe('without a cluster', () => {
  let injector: Injector;
  let ca: string;
  const post = (body: string, options: { localAddress?: string; headers?: Record<string, string> } = {}): Promise<Answer> => postTo(injector, ca, body, options);
  const legit = async (): Promise<Answer> => post(JSON.stringify(admissionReview(pod({ annotations: enabled }))));

  beforeAll(async () => {
    const dir = tlsDir();
    injector = await startInjector(dir, ['--log-level', 'info'], { nodeOptions });
    ca = caOf(dir);
  });

  it('1. the answer cache: pods of 84,000 tolerations are refused for their values; pods of 45,000, twice under each of 40 controllers, stay within its bytes', async () => {
    const health = watchHealth(injector);
    const review = (c: number, twice: number, tolerations: unknown[]) =>
      JSON.stringify(admissionReview(controlledBy(pod({ annotations: enabled, spec: { containers: [{ name: 'app', image: 'app:1' }], tolerations } }), { name: `web-${c}`, uid: `rs-${c}` }), { uid: `u-${c}-${twice}` }));
    const attack = await post(review(0, 0, Array.from({ length: 84_000 }, () => ({}))));
    const statuses = new Map<number, number>();
    const started = performance.now();
    const tolerations = Array.from({ length: 45_000 }, () => ({}));
    for (let c = 0; c < 40; c++) {
      for (let twice = 0; twice < 2; twice++) {
        const answer = await post(review(c, twice, tolerations));
        statuses.set(answer.status, (statuses.get(answer.status) ?? 0) + 1);
      }
    }
    const seen = await health.stop();
    console.log(
      `answer cache: 84,000 tolerations ${attack.status}; 80 pods of 45,000 tolerations in ${fmt(performance.now() - started)} ms, ` +
        `${[...statuses].map(([s, n]) => `${n} × ${s}`).join(', ')}; ${said(seen)}`,
    );
    expect(attack.status).toBe(413);
    expect(attack.text).toMatch(/^the body holds more than 100000 JSON values/);
    expect([...statuses]).toEqual([[200, 80]]);
    expectHealthy(injector, seen);
    expect((await legit()).status).toBe(200);
  });

  it('2. controller uids of a megabyte: 150 such pods are answered, the reference ignored with a warning, memory flat', async () => {
    const health = watchHealth(injector);
    const uid = 'u'.repeat(1024 * 1024);
    let first: Answer | undefined;
    for (let i = 0; i < 150; i++) {
      const answer = await post(JSON.stringify(admissionReview(controlledBy(pod({ annotations: enabled }), { name: `web-${i}`, uid: `${i}${uid}` }))));
      first ??= answer;
      expect(answer.status).toBe(200);
    }
    const seen = await health.stop();
    console.log(`1 MB controller uids: 150 pods answered; ${said(seen)}`);
    expect(first?.response?.patch).toBeDefined();
    expect(first?.response?.warnings).toContain('metadata.ownerReferences[0] is ignored: its uid is not a uid of at most 128 characters');
    expectHealthy(injector, seen);
  });

  it('5, 6, 7. the start-up risk analysis: a 100 KB run of quotes, 60,000 words ending in /linkerd-await, 30,000 ports against 40,000 skipped items, each answered at once', async () => {
    const health = watchHealth(injector);
    const job = (container: Record<string, unknown>, annotations: Record<string, string> = {}) =>
      JSON.stringify(admissionReview(pod({ annotations: { ...enabled, ...annotations }, spec: { restartPolicy: 'Never', containers: [{ name: 'app', image: 'app:1', ...container }] } })));
    const quotes = await post(job({ command: ['sh', '-c', `echo a${'"'.repeat(100_000)}b`] }));
    const awaits = await post(job({ args: Array.from({ length: 60_000 }, (_, i) => (i % 2 ? '-p' : '/usr/bin/linkerd-await')) }));
    // As many items as fit in the API server's 256 KiB of annotations.
    const skipped = Array.from({ length: 40_000 }, (_, i) => String(1 + (i % 60_000))).join(',');
    const ports = (n: number) => Array.from({ length: n }, (_, i) => ({ containerPort: 1 + i }));
    const crossed = await post(job({ ports: ports(30_000) }, { 'config.linkerd.io/skip-inbound-ports': skipped }));
    // The review's own attack, 80,000 ports, starts more values than a body may.
    const attack = await post(job({ ports: ports(80_000) }, { 'config.linkerd.io/skip-inbound-ports': skipped }));
    const seen = await health.stop();
    console.log(
      `risk analysis: quotes ${quotes.status} in ${fmt(quotes.ms)} ms, /linkerd-await words ${awaits.status} in ${fmt(awaits.ms)} ms, ` +
        `30,000 ports × 40,000 items ${crossed.status} in ${fmt(crossed.ms)} ms, 80,000 ports ${attack.status}; ${said(seen)}`,
    );
    for (const answer of [quotes, awaits, crossed]) {
      expect(answer.status).toBe(200);
      expect(answer.response?.patch).toBeDefined();
    }
    expect(attack.status).toBe(413);
    expectHealthy(injector, seen);
  });

  it('8. eight connections declaring 4 MiB bodies and sending a byte a second hold nothing: every review of another client is served', async () => {
    const health = watchHealth(injector);
    const tally: ClientTally = { sent: 0, closes: 0, failures: [], latenciesMs: [] };
    const deadline = performance.now() + 6_000;
    const url = new URL(injector.webhookUrl);
    const [attack] = await Promise.all([
      runAttackers({ target: { host: url.hostname, port: Number(url.port), ca, localAddress: '127.0.0.2' }, body: '', durationMs: 6_000, plan: { 'large body trickled': { count: 8, pauseMs: 0 } } }),
      (async () => {
        // Once the trickling connections are open.
        await new Promise((r) => setTimeout(r, 1_000));
        await wellBehavedClient({ host: url.hostname, port: Number(url.port), ca, workers: 2, keepAlive: true, pauseMs: 50, until: () => performance.now() >= deadline }, tally);
      })(),
    ]);
    const seen = await health.stop();
    console.log(`trickled 4 MiB bodies: ${attack.faults['large body trickled']?.injected} connections; ${tally.sent} reviews of another client, ${tally.failures.length} failed; ${said(seen)}`);
    expect(attack.faults['large body trickled']?.injected).toBeGreaterThanOrEqual(8);
    expect(tally.sent).toBeGreaterThan(10);
    expect(tally.failures).toEqual([]);
    expectHealthy(injector, seen);
  });

  it('9. two addresses holding 500 idle connections each: a new connection of a third is served, every time', async () => {
    const health = watchHealth(injector);
    const tally: ClientTally = { sent: 0, closes: 0, failures: [], latenciesMs: [] };
    const url = new URL(injector.webhookUrl);
    const target = (localAddress: string) => ({ host: url.hostname, port: Number(url.port), ca, localAddress });
    const durationMs = 12_000;
    const deadline = performance.now() + durationMs;
    const [one, two] = await Promise.all([
      runAttackers({ target: target('127.0.0.2'), body: '', durationMs, plan: { 'idle after handshake': { count: 500, pauseMs: 0 } } }),
      runAttackers({ target: target('127.0.0.3'), body: '', durationMs, plan: { 'idle after handshake': { count: 500, pauseMs: 0 } } }),
      (async () => {
        // Once the table is full.
        await new Promise((r) => setTimeout(r, 6_000));
        await wellBehavedClient({ host: url.hostname, port: Number(url.port), ca, workers: 2, keepAlive: false, pauseMs: 20, until: () => performance.now() >= deadline }, tally);
      })(),
    ]);
    const seen = await health.stop();
    const opened = (one.faults['idle after handshake']?.injected ?? 0) + (two.faults['idle after handshake']?.injected ?? 0);
    console.log(`1,000 idle connections from two addresses (${opened} opened in all): ${tally.sent} new connections of a third, ${tally.failures.length} failed; ${said(seen)}`);
    expect(opened).toBeGreaterThanOrEqual(1_000);
    expect(tally.sent).toBeGreaterThan(20);
    expect(tally.failures).toEqual([]);
    expectHealthy(injector, seen);
  });

  it('9. one address opening 600 connections holds at most its 500', async () => {
    const url = new URL(injector.webhookUrl);
    const sockets = Array.from({ length: 600 }, () => tlsConnect({ host: url.hostname, port: Number(url.port), ca, servername: 'localhost' }).on('error', () => {}));
    try {
      // Each connection is either handshaken or closed by the server; wait until all are one or the other.
      const settled = sockets.map((s) => new Promise<void>((resolve) => (s.once('secureConnect', () => resolve()), s.once('close', () => resolve()))));
      await Promise.race([Promise.all(settled), new Promise((r) => setTimeout(r, 30_000))]);
      await new Promise((r) => setTimeout(r, 500));
      const held = sockets.filter((s) => !s.destroyed).length;
      const other = await post(JSON.stringify(admissionReview(pod())), { localAddress: '127.0.0.2' });
      console.log(`webhook: 600 connections from 127.0.0.1, ${held} held; a review from 127.0.0.2 answered ${other.status} in ${fmt(other.ms)} ms`);
      expect(held).toBeLessThanOrEqual(500);
      expect(other.status).toBe(200);
    } finally {
      for (const s of sockets) s.destroy();
    }
  });

  it('11. eight addresses holding the admin listener\'s 64 connections: /live still answers within a second', async () => {
    const admin = new URL(injector.adminUrl);
    const held: Socket[] = [];
    for (let a = 2; a < 10; a++) {
      for (let i = 0; i < 8; i++) held.push(tcpConnect({ host: admin.hostname, port: Number(admin.port), localAddress: `127.0.0.${a}` }).on('error', () => {}));
    }
    try {
      await Promise.all(held.map((s) => new Promise((r) => (s.once('connect', r), s.once('close', r)))));
      await new Promise((r) => setTimeout(r, 300));
      const open = held.filter((s) => !s.destroyed).length;
      const probes: Array<{ status: number; ms: number }> = [];
      for (let i = 0; i < 10; i++) {
        const started = performance.now();
        const status = await new Promise<number>((resolve) => {
          get({ host: admin.hostname, port: admin.port, path: '/live', agent: false, timeout: 5_000, localAddress: '127.0.0.10' }, (res) => {
            res.resume();
            res.on('end', () => resolve(res.statusCode ?? 0));
          })
            .on('timeout', function (this: { destroy(): void }) {
              this.destroy();
            })
            .on('error', () => resolve(0));
        });
        probes.push({ status, ms: performance.now() - started });
      }
      console.log(`admin: ${open} of 64 connections held by eight addresses; 10 probes from a ninth: ${probes.map((p) => `${p.status} in ${fmt(p.ms)} ms`).join(', ')}`);
      expect(open).toBe(64);
      expect(probes.every((p) => p.status === 200 && p.ms < LIVE_MS)).toBe(true);
    } finally {
      for (const s of held) s.destroy();
    }
  });

  it('12. a POST with no body or Content-Type, and one with more than 2,000 headers, are 4xx refusals, counted, each logged in one short line', async () => {
    const logsBefore = injector.logs.length;
    const url = new URL(injector.webhookUrl);
    /** Writes `head` (and `body`) on a connection of its own and reads the status line of the answer. */
    const raw = (head: string, body = ''): Promise<string> =>
      new Promise((resolve) => {
        let seen = '';
        const socket: TLSSocket = tlsConnect({ host: url.hostname, port: Number(url.port), ca, servername: 'localhost' }, () => socket.end(head + body));
        socket.on('data', (c: Buffer) => (seen += c.toString('latin1')));
        socket.on('error', () => {});
        socket.on('close', () => resolve(seen.split('\r\n')[0] ?? ''));
      });
    const bare = await raw('POST / HTTP/1.1\r\nHost: localhost\r\n\r\n');
    const review = JSON.stringify(admissionReview(pod()));
    const crowd = Array.from({ length: 2_100 }, (_, i) => `x${i}: 1\r\n`).join('');
    const crowded = await raw(`POST / HTTP/1.1\r\nHost: localhost\r\n${crowd}Content-Type: application/json\r\nContent-Length: ${review.length}\r\n\r\n`, review);
    console.log(`no body, no Content-Type: ${bare}; 2,100 headers: ${crowded}`);
    expect(bare).toBe('HTTP/1.1 400 Bad Request');
    expect(crowded).toMatch(/^HTTP\/1\.1 4\d\d /);
    const metrics = await new Promise<string>((resolve) =>
      get(`${injector.adminUrl}/metrics`, (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (text += c));
        res.on('end', () => resolve(text));
      }),
    );
    expect(metrics).toMatch(/proxy_inject_admission_refusals_total\{status="400",reason="empty_body"\} [1-9]/);
    expect(metrics).not.toMatch(/reason="internal_error"/);
    await new Promise((r) => setTimeout(r, 200));
    const lines = injector.logs.slice(logsBefore).filter((l) => l.includes('rejected admission request'));
    expect(lines.length).toBeGreaterThanOrEqual(2);
    expect(lines.every((l) => l.length < 1_024 && !l.includes('stack'))).toBe(true);
  });

  it('13. 4 MiB of {} in eight bodies at once, from one address and from four, is refused early: memory flat', async () => {
    const health = watchHealth(injector);
    const body = `[${'{},'.repeat(1_398_000)}{}]`;
    const started = performance.now();
    const answers = await Promise.all([
      ...Array.from({ length: 4 }, () => post(body)),
      ...Array.from({ length: 4 }, (_, i) => post(body, { localAddress: `127.0.0.${i + 2}` })),
    ]);
    const wallMs = performance.now() - started;
    const seen = await health.stop();
    console.log(`8 bodies of ${(body.length / 1048576).toFixed(1)} MiB of {}: ${answers.map((a) => a.status).join(', ')} in ${fmt(wallMs)} ms; ${said(seen)}`);
    // Refused while the client is still sending, for its values or for what its address's other bodies held meanwhile:
    // the rest is dropped as it arrives, so that each client reads its refusal, not a reset.
    expect(answers.every((a) => (a.status === 413 && /^the body holds more than 100000 JSON values/.test(a.text)) || [429, 503].includes(a.status))).toBe(true);
    expect(answers.filter((a) => a.status === 413).length).toBeGreaterThanOrEqual(4);
    expectHealthy(injector, seen);
    expect((await legit()).status).toBe(200);
  });

  it('13. the largest bodies the limits take, four at once from four addresses: each answered or told to come back, memory in bounds, nothing kept', async () => {
    const health = watchHealth(injector);
    // Just under both bounds of one body: 4 MiB, and about 90,000 JSON values (a list of 30,000 ports, and a long text).
    const object = pod({ annotations: enabled, spec: { containers: [{ name: 'app', image: 'app:1', ports: Array.from({ length: 30_000 }, (_, i) => ({ containerPort: 1 + i })) }] } });
    const review = admissionReview(object);
    const head = JSON.stringify(review);
    const body = `${head.slice(0, -1)},"pad":${JSON.stringify('x'.repeat(4 * 1024 * 1024 - head.length - 64))}}`;
    const answers = await Promise.all(Array.from({ length: 4 }, (_, i) => post(body, { localAddress: `127.0.0.${i + 2}` })));
    const seen = await health.stop();
    console.log(`4 bodies of ${(body.length / 1048576).toFixed(2)} MiB and about 90,000 values at once: ${answers.map((a) => a.status).join(', ')}; ${said(seen)}`);
    // Each is charged as it arrives: arriving together, they may pass the limit before any has all arrived, and then
    // each is told to come back. Whatever they got, what they held is given back: one alone is then served.
    expect(answers.every((a) => a.status === 200 || a.status === 503)).toBe(true);
    expectHealthy(injector, seen);
    expect((await post(body, { localAddress: '127.0.0.2' })).status).toBe(200);
  });

  it('14. a review with as many start-up risks as a body can carry logs one line of a few KiB and answers eleven warnings', async () => {
    const health = watchHealth(injector);
    const logsBefore = injector.logs.length;
    const containers = Array.from({ length: 10_000 }, (_, i) => ({ name: `c${i}`, image: 'i', securityContext: { runAsUser: 2102 } }));
    const answer = await post(JSON.stringify(admissionReview(pod({ annotations: enabled, spec: { containers } }), { uid: 'many-risks' })));
    const seen = await health.stop();
    await new Promise((r) => setTimeout(r, 200));
    const line = injector.logs.slice(logsBefore).find((l) => l.includes('"uid":"many-risks"'));
    console.log(`10,000 containers run as the proxy's uid: ${answer.status} in ${fmt(answer.ms)} ms, ${answer.response?.warnings?.length} warnings, a log line of ${line?.length} characters; ${said(seen)}`);
    expect(answer.status).toBe(200);
    expect(answer.response?.warnings).toHaveLength(11);
    expect(line).toBeDefined();
    expect(line?.length).toBeLessThan(16 * 1024);
    expect(JSON.parse(line ?? '{}').risks).toContain('and 9968 more');
    expectHealthy(injector, seen);
  });
});

describe('in a cluster', () => {
  let injector: Injector;
  let ca: string;
  let cluster: Awaited<ReturnType<typeof fakeCluster>>;
  const post = (body: string, options: { localAddress?: string } = {}): Promise<Answer> => postTo(injector, ca, body, options);

  beforeAll(async () => {
    cluster = await fakeCluster({
      namespaces: { shop: enabled },
      unlisted: { fresh: enabled },
      owners: {
        'replicasets/shop/web-7d4b': { ownerReferences: [{ apiVersion: 'apps/v1', kind: 'Deployment', name: 'web', uid: 'd-1', controller: true }] },
        'replicasets/fresh/api-5c9f': { ownerReferences: [{ apiVersion: 'apps/v1', kind: 'Deployment', name: 'api', uid: 'd-2', controller: true }] },
      },
    });
    const dir = tlsDir();
    const kubeconfig = cluster.kubeconfig(mkdtempSync(join(tmpdir(), 'proxy-injector-faults-kube-')));
    injector = await startInjector(dir, ['--log-level', 'info'], { nodeOptions, kubeconfig });
    ca = caOf(dir);
    // Ready once the namespaces are listed.
    for (let i = 0; i < 100; i++) {
      const status = await new Promise<number>((resolve) => get(`${injector.adminUrl}/ready`, (res) => (res.resume(), resolve(res.statusCode ?? 0))).on('error', () => resolve(0)));
      if (status === 200) break;
      await new Promise((r) => setTimeout(r, 100));
    }
  });

  afterAll(async () => {
    injector?.child.kill('SIGKILL');
    await cluster?.close();
  });

  it('3. owner references with uids of a megabyte never reach the owner cache: no read, memory flat', async () => {
    const health = watchHealth(injector);
    const readsBefore = [...cluster.reads.values()].reduce((a, b) => a + b, 0);
    for (let i = 0; i < 150; i++) {
      const answer = await post(JSON.stringify(admissionReview(controlledBy(pod({ annotations: enabled }), { name: `rs-${i}`, uid: `${i}${'u'.repeat(1024 * 1024)}` }), { namespace: 'shop' })));
      expect(answer.status).toBe(200);
    }
    const seen = await health.stop();
    const reads = [...cluster.reads.values()].reduce((a, b) => a + b, 0) - readsBefore;
    console.log(`1 MB owner uids in a cluster: 150 pods answered, ${reads} API reads; ${said(seen)}`);
    expect(reads).toBe(0);
    expectHealthy(injector, seen);
  });

  it('4. owner kinds of 3.5 MB are no kind: ignored, and /metrics stays small and answers', async () => {
    for (let i = 0; i < 25; i++) {
      const answer = await post(JSON.stringify(admissionReview(controlledBy(pod({ annotations: enabled }), { kind: `K${'k'.repeat(3_500_000)}${i}`, name: `x-${i}`, uid: `x-${i}` }), { namespace: 'shop' })));
      expect(answer.status).toBe(200);
    }
    const started = performance.now();
    const scrape = await new Promise<{ status: number; text: string }>((resolve) => get(`${injector.adminUrl}/metrics`, (res) => {
      let text = '';
      res.setEncoding('utf8').on('data', (c: string) => (text += c)).on('end', () => resolve({ status: res.statusCode ?? 0, text }));
    }));
    console.log(`3.5 MB owner kinds: 25 pods answered; /metrics ${scrape.status}, ${scrape.text.length} bytes in ${fmt(performance.now() - started)} ms`);
    expect(scrape.status).toBe(200);
    expect(scrape.text.length).toBeLessThan(1024 * 1024);
    expect(scrape.text).not.toMatch(/owner_kind="k{64}/);
    expect(injector.child.exitCode).toBeNull();
  });

  it('10. forged reviews naming missing ReplicaSets from one address leave the reads real pods need from another', async () => {
    const forged = (i: number) => JSON.stringify(admissionReview(controlledBy(pod({ annotations: enabled }), { name: `gone-${i}`, uid: `gone-${i}` }), { namespace: 'shop', uid: `f-${i}` }));
    const started = performance.now();
    for (let batch = 0; batch < 20; batch++) await Promise.all(Array.from({ length: 20 }, (_, i) => post(forged(batch * 20 + i), { localAddress: '127.0.0.2' })));
    const forgedMs = performance.now() - started;
    const real = await post(JSON.stringify(admissionReview(controlledBy(pod({ annotations: enabled }), { name: 'web-7d4b', uid: 'rs-web' }), { namespace: 'shop' })));
    const fresh = await post(JSON.stringify(admissionReview(controlledBy(pod({ annotations: enabled }), { name: 'api-5c9f', uid: 'rs-api' }), { namespace: 'fresh' })));
    /** The labels the answer's patch adds, one operation each. */
    const labels = (answer: Answer): Record<string, unknown> =>
      Object.fromEntries(
        (decodedPatch({ response: answer.response }) as Array<{ path: string; value: unknown }>)
          .filter((op) => op.path.startsWith('/metadata/labels/'))
          .map((op) => [op.path.slice('/metadata/labels/'.length).replace(/~1/g, '/').replace(/~0/g, '~'), op.value]),
      );
    console.log(`400 forged reviews in ${fmt(forgedMs)} ms; then a real pod: ${JSON.stringify(labels(real))}; a pod in a namespace not yet listed: ${fresh.response?.allowed} ${JSON.stringify(labels(fresh))}`);
    expect(labels(real)['linkerd.io/proxy-deployment']).toBe('web');
    expect(fresh.response?.allowed).toBe(true);
    expect(labels(fresh)['linkerd.io/proxy-deployment']).toBe('api');
  });
});
