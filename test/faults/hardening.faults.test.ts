/**
 * What one pod creator or one unauthenticated client could do to `serve` before: crash it with one pod, stall it past
 * the API server's timeout, or run it out of memory with large bodies (bounds.faults.test.ts has the later review's
 * attacks, the connections among them). Each attack here runs
 * against a real process under the image's NODE_OPTIONS (128 MiB of old space), which must stay alive, answer, keep
 * `/live` answering and stay within the chart's memory limit (256 Mi). The figures (time, RSS) are printed.
 */
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { admissionReview } from '../support/admission.js';
import { pod } from '../support/engine.js';
import { CHART_MEMORY_LIMIT_MIB, postTo, watchHealth, type Answer } from './support/health.js';
import { caOf, cleanUp, root, startInjector, tlsDir, type Injector } from './support/injector.js';

afterAll(cleanUp);

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

/** A body posted over a connection of its own (or `localAddress`'s). */
const post = (body: string, options: { localAddress?: string } = {}): Promise<Answer> => postTo(injector, ca, body, options);

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
  it('20 bodies of 4 MiB, strings and number arrays, and 60 of 2.9 MiB: what does not fit is refused, memory stays in bounds', async () => {
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
    // One address: what its share does not hold gets 429, and 4 MiB of numbers are too many values to take at all (if
    // they are not refused for the share first).
    expect(byStatus.get(200)).toBeGreaterThan(0);
    expect([...byStatus.keys()].every((s) => [200, 413, 429].includes(s))).toBe(true);
    expect(answers.filter((a) => a.status === 429).every((a) => /one client's may hold at most 8388608: send the review again/.test(a.text))).toBe(true);
    expect(answers.slice(10, 20).every((a) => (a.status === 413 && /JSON values/.test(a.text)) || a.status === 429)).toBe(true);
    expect(liveFailures).toBe(0);
    expect(maxRssMiB).toBeLessThan(CHART_MEMORY_LIMIT_MIB);
    expect(injector.child.exitCode).toBeNull();
    // And it answers as before.
    expect((await post(JSON.stringify(review))).status).toBe(200);
  });
});
