/**
 * What one pod creator or one unauthenticated client could do to `serve` before: crash it with one pod, stall it past
 * the API server's timeout, run it out of memory with large bodies, or take every connection. Each attack here runs
 * against a real process under the image's NODE_OPTIONS (128 MiB of old space), which must stay alive, answer, keep
 * `/live` answering and stay within the chart's memory limit (256 Mi). The figures (time, RSS) are printed.
 */
import { readFileSync } from 'node:fs';
import { get } from 'node:http';
import { Agent, request } from 'node:https';
import { connect as tcpConnect, type Socket } from 'node:net';
import { join } from 'node:path';
import { connect as tlsConnect, type TLSSocket } from 'node:tls';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { admissionReview } from '../support/admission.js';
import { pod } from '../support/engine.js';
import { caOf, cleanUp, root, startInjector, tlsDir, type Injector } from './support/injector.js';

afterAll(cleanUp);

/** The chart's memory limit for the injector's container. */
const CHART_MEMORY_LIMIT_MIB = 256;

let injector: Injector;
let ca: string;

beforeAll(async () => {
  // Read as the benchmarks read it, so that there is one reading of the Dockerfile's line.
  const helper = pathToFileURL(join(root, 'bench', 'serve-process.mjs')).href;
  const { imageNodeOptions } = (await import(helper)) as { imageNodeOptions: (dir: string) => string };
  const dir = tlsDir();
  injector = await startInjector(dir, [], { nodeOptions: imageNodeOptions(root) });
  ca = caOf(dir);
});

const rssMiB = (pid: number): number => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) / 1024;

/** Samples the process's RSS and the time `/live` takes to answer, every 50 ms, until stopped. */
function watchHealth(target: Injector): { stop(): Promise<{ maxRssMiB: number; maxLiveMs: number; liveFailures: number }> } {
  let maxRssMiB = 0;
  let maxLiveMs = 0;
  let liveFailures = 0;
  let running = true;
  const loop = (async () => {
    while (running) {
      maxRssMiB = Math.max(maxRssMiB, rssMiB(target.child.pid ?? 0));
      const started = performance.now();
      const ok = await new Promise<boolean>((resolve) => {
        const req = get(`${target.adminUrl}/live`, { agent: false, timeout: 9_000 }, (res) => {
          res.resume();
          res.on('end', () => resolve(res.statusCode === 200));
        });
        req.on('timeout', () => req.destroy());
        req.on('error', () => resolve(false));
      });
      if (!ok) liveFailures++;
      maxLiveMs = Math.max(maxLiveMs, performance.now() - started);
      await new Promise((r) => setTimeout(r, 50));
    }
  })();
  return {
    async stop() {
      running = false;
      await loop;
      return { maxRssMiB, maxLiveMs, liveFailures };
    },
  };
}

interface Answer {
  status: number;
  ms: number;
  response: { allowed?: boolean; warnings?: string[]; status?: { message?: string }; patch?: string } | undefined;
  text: string;
}

/** POSTs a body over a connection of its own (or `localAddress`'s) and reads the answer, however it ends. */
function post(body: string, options: { localAddress?: string } = {}): Promise<Answer> {
  const url = new URL(injector.webhookUrl);
  const started = performance.now();
  return new Promise((resolve) => {
    const req = request(
      {
        hostname: url.hostname,
        port: url.port,
        path: '/',
        method: 'POST',
        ca,
        servername: 'localhost',
        agent: false,
        ...(options.localAddress && { localAddress: options.localAddress }),
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let response: Answer['response'];
          try {
            response = (JSON.parse(text) as { response: Answer['response'] }).response;
          } catch {
            response = undefined;
          }
          resolve({ status: res.statusCode ?? 0, ms: performance.now() - started, response, text });
        });
      },
    );
    req.on('error', (err: NodeJS.ErrnoException) => resolve({ status: 0, ms: performance.now() - started, response: undefined, text: err.code ?? err.message }));
    req.end(body);
  });
}

const enabledPod = (annotations: Record<string, string>): string =>
  JSON.stringify(admissionReview(pod({ annotations: { 'linkerd.io/inject': 'enabled', ...annotations } })));

const fmt = (n: number): string => n.toFixed(0);

describe('one pod', () => {
  it('with 800,000 invalid opaque ports (1.6 MB) is answered at once, and one with 120,000 gets eleven warnings', async () => {
    const health = watchHealth(injector);
    const huge = await post(enabledPod({ 'config.linkerd.io/opaque-ports': Array.from({ length: 800_000 }, () => 'x').join(',') }));
    const large = await post(enabledPod({ 'config.linkerd.io/opaque-ports': Array.from({ length: 120_000 }, () => '!').join(',') }));
    const { maxRssMiB, maxLiveMs, liveFailures } = await health.stop();
    console.log(`opaque-ports: 800,000 items answered in ${fmt(huge.ms)} ms, 120,000 in ${fmt(large.ms)} ms; RSS at most ${fmt(maxRssMiB)} MiB, /live at most ${fmt(maxLiveMs)} ms`);
    expect(huge.status).toBe(200);
    expect(huge.response?.allowed).toBe(false);
    expect(huge.response?.status?.message).toMatch(/^proxy-injector: the annotations of pod web take 16000\d\d bytes, more than the 262144 \(256 KiB\) the API server accepts$/);
    expect(large.response?.allowed).toBe(true);
    // The engine's ten and the one that counts the rest, as the answer shows warnings: ten, then how many more.
    expect(large.response?.warnings).toHaveLength(11);
    expect(large.response?.warnings?.[10]).toBe('and 1 more');
    expect(liveFailures).toBe(0);
    expect(maxRssMiB).toBeLessThan(CHART_MEMORY_LIMIT_MIB);
    expect(injector.child.exitCode).toBeNull();
  });

  it('with 100,000 additional env entries, or a 2.9 MB skip-inbound-ports list, does not stall it; 8,000 entries are merged', async () => {
    const health = watchHealth(injector);
    const env = (n: number) => JSON.stringify(Array.from({ length: n }, (_, i) => ({ name: `E${i}`, value: 'v' })));
    const many = await post(enabledPod({ 'config.linkerd.io/proxy-additional-env': env(100_000) }));
    const fits = await post(enabledPod({ 'config.linkerd.io/proxy-additional-env': env(8_000) }));
    const ports = await post(enabledPod({ 'config.linkerd.io/skip-inbound-ports': Array.from({ length: 450_000 }, (_, i) => String(1 + (i % 65_000))).join(',') }));
    const { maxRssMiB, maxLiveMs, liveFailures } = await health.stop();
    console.log(
      `additional env: 100,000 entries answered in ${fmt(many.ms)} ms, 8,000 in ${fmt(fits.ms)} ms; a 2.9 MB port list in ${fmt(ports.ms)} ms; ` +
        `RSS at most ${fmt(maxRssMiB)} MiB, /live at most ${fmt(maxLiveMs)} ms`,
    );
    expect(many.response?.allowed).toBe(false);
    expect(many.response?.status?.message).toMatch(/more than the 262144 \(256 KiB\) the API server accepts$/);
    expect(ports.response?.allowed).toBe(false);
    expect(fits.response?.allowed).toBe(true);
    expect(Buffer.from(fits.response?.patch ?? '', 'base64').toString()).toContain('"name":"E7999"');
    // Far inside kube-apiserver's 10 s timeout, on a loaded two-core machine: a bound, not a speed target.
    for (const answer of [many, fits, ports]) expect(answer.ms).toBeLessThan(5_000);
    expect(liveFailures).toBe(0);
    expect(maxRssMiB).toBeLessThan(CHART_MEMORY_LIMIT_MIB);
  });
});

describe('many large bodies at once', () => {
  it('20 bodies of 4 MiB, strings and number arrays, and 60 of 2.9 MiB: the rest waits its turn with 503, memory stays in bounds', async () => {
    const health = watchHealth(injector);
    const limit = 4 * 1024 * 1024;
    const review = admissionReview(pod());
    const padded = (kind: 'text' | 'numbers', bytes: number): string => {
      const head = JSON.stringify(review).slice(0, -1);
      const room = bytes - head.length - 16;
      const pad = kind === 'text' ? JSON.stringify('x'.repeat(room - 2)) : `[${'1,'.repeat(Math.floor(room / 2) - 1)}1]`;
      return `${head},"pad":${pad}}`;
    };
    const started = performance.now();
    const answers = await Promise.all([
      ...Array.from({ length: 10 }, () => post(padded('text', limit - 1024))),
      ...Array.from({ length: 10 }, () => post(padded('numbers', limit - 1024))),
      ...Array.from({ length: 60 }, () => post(padded('text', 2.9 * 1024 * 1024))),
    ]);
    const wallMs = performance.now() - started;
    const { maxRssMiB, maxLiveMs, liveFailures } = await health.stop();
    const byStatus = new Map<number, number>();
    for (const a of answers) byStatus.set(a.status, (byStatus.get(a.status) ?? 0) + 1);
    console.log(
      `80 large bodies at once: ${[...byStatus].map(([s, n]) => `${n} × ${s}`).join(', ')} in ${fmt(wallMs)} ms; RSS at most ${fmt(maxRssMiB)} MiB, ` +
        `/live at most ${fmt(maxLiveMs)} ms`,
    );
    expect([...byStatus.keys()].sort()).toEqual([200, 503]);
    expect(answers.filter((a) => a.status === 503).every((a) => /takes at most 16777216 at once/.test(a.text))).toBe(true);
    expect(liveFailures).toBe(0);
    expect(maxRssMiB).toBeLessThan(CHART_MEMORY_LIMIT_MIB);
    expect(injector.child.exitCode).toBeNull();
    // And it answers as before.
    expect((await post(JSON.stringify(review))).status).toBe(200);
  });
});

/** Opens `count` connections from `localAddress` and resolves with those still open after a moment. */
async function hold(count: number, open: () => Socket | TLSSocket): Promise<Array<Socket | TLSSocket>> {
  const sockets = Array.from({ length: count }, () => open().on('error', () => {}));
  await new Promise((r) => setTimeout(r, 1_000));
  return sockets.filter((s) => !s.destroyed);
}

describe('one client taking the connections', () => {
  it('holds at most its share of the webhook: 600 connections from one address leave room for another', async () => {
    const url = new URL(injector.webhookUrl);
    const held = await hold(600, () => tlsConnect({ host: url.hostname, port: Number(url.port), ca, servername: 'localhost' }));
    try {
      const other = await post(JSON.stringify(admissionReview(pod())), { localAddress: '127.0.0.2' });
      console.log(`webhook: 600 connections from 127.0.0.1, ${held.length} held; a review from 127.0.0.2 answered ${other.status} in ${fmt(other.ms)} ms`);
      expect(held.length).toBeLessThanOrEqual(500);
      expect(other.status).toBe(200);
    } finally {
      for (const s of held) s.destroy();
    }
  });

  it('holds no slot with requests the webhook refuses: each is answered and its connection closed', async () => {
    const agent = new Agent({ keepAlive: true, maxSockets: 1, ca, servername: 'localhost' } as ConstructorParameters<typeof Agent>[0]);
    const url = new URL(injector.webhookUrl);
    const refused = await new Promise<{ status: number; connection: string | undefined }>((resolve, reject) => {
      request({ hostname: url.hostname, port: url.port, path: '/', method: 'GET', agent }, (res) => {
        res.resume();
        res.on('end', () => resolve({ status: res.statusCode ?? 0, connection: res.headers.connection }));
      })
        .on('error', reject)
        .end();
    });
    agent.destroy();
    expect(refused).toEqual({ status: 404, connection: 'close' });
  });

  it('holds at most its share of the admin port: /live still answers another address', async () => {
    const admin = new URL(injector.adminUrl);
    const held = await hold(64, () => tcpConnect({ host: admin.hostname, port: Number(admin.port) }));
    try {
      const status = await new Promise<number>((resolve) => {
        get({ host: admin.hostname, port: admin.port, path: '/live', agent: false, localAddress: '127.0.0.2' }, (res) => {
          res.resume();
          res.on('end', () => resolve(res.statusCode ?? 0));
        }).on('error', () => resolve(0));
      });
      console.log(`admin: 64 connections from 127.0.0.1, ${held.length} held; /live from 127.0.0.2 answered ${status}`);
      expect(held.length).toBeLessThanOrEqual(8);
      expect(status).toBe(200);
    } finally {
      for (const s of held) s.destroy();
    }
  });
});
