/**
 * Memory over time: `proxy-injector serve` (the compiled dist/) under the image's NODE_OPTIONS takes a long run of
 * mixed admissions (injected pods, skipped pods, random annotation values and namespaces, malformed requests) and its
 * RSS and heap are read from its own /metrics at a first and a last checkpoint. The report fails (exit 1) when either
 * grew by more than its margin between the two, or when any answer was not the one expected.
 *
 *   npm run bench:memory                     10,000 then 500,000 admissions
 *   BENCH_SHORT=1 npm run bench:memory       10,000 then 30,000 (the CI variant)
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { Agent } from 'node:https';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { endsWithThisProcess, imageNodeOptions, listeningUrls, postReview, whenThisProcessEnds } from './serve-process.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const FIRST = 10_000;
const LAST = process.env['BENCH_SHORT'] === '1' ? 30_000 : Number(process.env['BENCH_ADMISSIONS'] ?? '500000');
const CONCURRENCY = 8;
/** Margins between the two checkpoints: growth beyond these is reported as a leak. */
const RSS_MARGIN_MIB = 24;
const HEAP_MARGIN_MIB = 8;
const MiB = 1024 * 1024;

const nodeOptions = imageNodeOptions(root);

const dir = mkdtempSync(join(tmpdir(), 'proxy-injector-memory-'));
whenThisProcessEnds(() => rmSync(dir, { recursive: true, force: true }));
const server = spawn(
  process.execPath,
  [join(root, 'dist', 'cli', 'main.js'), 'serve', '--addr', '127.0.0.1:0', '--admin-addr', '127.0.0.1:0', '--tls-dir', join(dir, 'tls'),
    '--trust-anchors', join(root, 'examples', 'trust-anchors.pem'), '--log-format', 'json'],
  { stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env, NODE_OPTIONS: nodeOptions, KUBECONFIG: '', HOME: dir } },
);
endsWithThisProcess(server);
const urls = await listeningUrls(server);
// The log goes nowhere from now on, as it would to a collector that keeps up.
server.stdout.resume();

const sample = JSON.parse(readFileSync(join(root, 'examples', 'admission-review.json'), 'utf8'));
const agent = new Agent({ keepAlive: true, maxSockets: CONCURRENCY, rejectUnauthorized: false });

/** The i-th request of the mix and the status and body it must get. */
function nth(i) {
  const review = structuredClone(sample);
  review.request.uid = `uid-${i}`;
  review.request.namespace = `ns-${i % 2000}`;
  const annotations = (review.request.object.metadata.annotations ??= {});
  switch (i % 10) {
    case 0:
      return { body: '{"apiVersion": ', status: 400 };
    case 1:
      return { body: JSON.stringify({ ...review, kind: 'ConversionReview' }), status: 400 };
    case 2:
    case 3:
      annotations['linkerd.io/inject'] = 'disabled';
      return { body: JSON.stringify(review), status: 200, expect: '"allowed":true' };
    case 4:
      // A value nobody else uses: the metrics must fold it, not keep it.
      annotations['linkerd.io/inject'] = 'enabled';
      annotations['config.linkerd.io/proxy-log-level'] = `warn,linkerd=debug,r${i}`;
      annotations['config.linkerd.io/proxy-cpu-limit'] = `${i}m`;
      return { body: JSON.stringify(review), status: 200, expect: '"patchType":"JSONPatch"' };
    default:
      annotations['linkerd.io/inject'] = 'enabled';
      return { body: JSON.stringify(review), status: 200, expect: '"patchType":"JSONPatch"' };
  }
}

let sent = 0;
let failures = 0;
const failureSamples = [];
async function run(until) {
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (sent < until) {
        const i = sent++;
        const want = nth(i);
        try {
          const got = await postReview(urls.webhook, agent, want.body);
          if (got.status !== want.status || (want.expect && !got.text.includes(want.expect))) {
            failures++;
            if (failureSamples.length < 5) failureSamples.push(`#${i}: ${got.status} ${got.text.slice(0, 120)}`);
          }
        } catch (err) {
          failures++;
          if (failureSamples.length < 5) failureSamples.push(`#${i}: ${err.message}`);
        }
      }
    }),
  );
}

async function scrape() {
  const text = await (await fetch(`${urls.admin}/metrics`)).text();
  const value = (name) => Number(text.split('\n').find((l) => l.startsWith(`${name} `))?.split(' ')[1]);
  return {
    rss: value('process_resident_memory_bytes'),
    heap: value('nodejs_heap_size_used_bytes'),
    series: text.split('\n').filter((l) => l !== '' && !l.startsWith('#')).length,
    bytes: Buffer.byteLength(text),
  };
}

/**
 * Memory at a checkpoint: the lowest of several readings a second apart while idle. A single reading lands anywhere
 * in the garbage collector's cycle; the floor is what is really kept.
 */
async function checkpoint() {
  const readings = [];
  for (let i = 0; i < 5; i++) {
    await new Promise((r) => setTimeout(r, 1000));
    readings.push(await scrape());
  }
  const last = readings.at(-1);
  return { rss: Math.min(...readings.map((r) => r.rss)), heap: Math.min(...readings.map((r) => r.heap)), series: last.series, bytes: last.bytes };
}

const started = Date.now();
await run(FIRST);
const first = await checkpoint();
const firstAt = Date.now();
let nextProgress = FIRST + 50_000;
while (sent < LAST) {
  await run(Math.min(LAST, nextProgress));
  if (sent < LAST) {
    const now = await scrape();
    console.error(`  ${sent} admissions: RSS ${(now.rss / MiB).toFixed(1)} MiB, heap ${(now.heap / MiB).toFixed(1)} MiB`);
  }
  nextProgress += 50_000;
}
const last = await checkpoint();
const seconds = (Date.now() - started) / 1000;
agent.destroy();
server.kill('SIGTERM');
await new Promise((r) => server.on('exit', r));

const rssGrowth = (last.rss - first.rss) / MiB;
const heapGrowth = (last.heap - first.heap) / MiB;
const row = (label, m) =>
  `  ${label.padEnd(20)} RSS ${(m.rss / MiB).toFixed(1).padStart(6)} MiB   heap used ${(m.heap / MiB).toFixed(1).padStart(6)} MiB   ` +
  `series ${String(m.series).padStart(5)}   /metrics ${(m.bytes / 1024).toFixed(1)} KiB`;
console.log(`memory benchmark: node ${process.version}, NODE_OPTIONS="${nodeOptions}", ${CONCURRENCY} keep-alive connections, ${seconds.toFixed(0)} s`);
console.log(`  mix per 10: 5 injected (1 with fresh random annotation values), 2 skipped, 2 malformed (400); namespaces cycle through 2000`);
console.log(row(`after ${FIRST}`, first));
console.log(row(`after ${LAST}`, last));
console.log(`  growth: RSS ${rssGrowth.toFixed(1)} MiB (margin ${RSS_MARGIN_MIB}), heap ${heapGrowth.toFixed(1)} MiB (margin ${HEAP_MARGIN_MIB}); ` +
  `${sent} requests, ${failures} unexpected answers${failureSamples.length ? `: ${failureSamples.join('; ')}` : ''}`);
console.log(`  (${Math.round((LAST - FIRST) / ((Date.now() - firstAt) / 1000))} admissions/s between checkpoints, on a machine shared with other work)`);
const problems = [
  ...(rssGrowth > RSS_MARGIN_MIB ? [`RSS grew by ${rssGrowth.toFixed(1)} MiB`] : []),
  ...(heapGrowth > HEAP_MARGIN_MIB ? [`heap grew by ${heapGrowth.toFixed(1)} MiB`] : []),
  ...(failures > 0 ? [`${failures} unexpected answers`] : []),
];
if (problems.length > 0) {
  console.log(`FAIL: ${problems.join('; ')}`);
  process.exit(1);
}
console.log('PASS');
