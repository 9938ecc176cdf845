/**
 * Memory and start-up of `proxy-injector serve` in cluster mode: a real kube-apiserver and etcd on loopback (the e2e
 * suite's control plane, no controllers), the compiled dist/ under the image's NODE_OPTIONS, and a few tens of
 * thousands of admissions for pods in namespaces that exist: a third owned by a ReplicaSet that exists (the owner is
 * read once), a third by one that does not (read, 404, every time), a third bare. Every answer must be allowed.
 *
 * Reported: the time from spawn to the "proxy-injector listening" line and to /ready (median of BENCH_STARTS starts, 7
 * by default, with the serving certificate in place as the chart mounts it); RSS (from /proc) idle, its peak
 * under load, and after; and what loading each part of the Kubernetes client costs a bare node process.
 *
 *   npm run bench:cluster-memory                        30,000 admissions
 *   BENCH_ADMISSIONS=5000 npm run bench:cluster-memory
 *   BENCH_SHORT=1 npm run bench:cluster-memory          3,000 admissions, no module costs (the CI variant: it fails
 *                                                       only when an answer was not the one expected)
 *
 * Runs under tsx (it starts the control plane with test/e2e/support/control-plane.ts); the binaries come from
 * scripts/e2e-binaries.sh as for `npm run test:e2e`.
 */
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { Agent } from 'node:https';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { kubeRequest, startControlPlane } from '../test/e2e/support/control-plane.ts';
import { endsWithThisProcess, exitOnSignals, imageNodeOptions, listeningUrls, median, postReview } from './serve-process.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const SHORT = process.env['BENCH_SHORT'] === '1';
const ADMISSIONS = Number(process.env['BENCH_ADMISSIONS'] ?? (SHORT ? '3000' : '30000'));
const CONCURRENCY = 8;
const STARTS = Number(process.env['BENCH_STARTS'] ?? (SHORT ? '1' : '7'));
const NAMESPACES = 20;
const MiB = 1024 * 1024;

const nodeOptions = imageNodeOptions(root);

/** RSS of a fresh node process after importing each list of modules (and the time the imports took). */
function moduleCosts() {
  const probe = `
    const t = performance.now();
    for (const m of process.argv.slice(1)) await import(m);
    const ms = performance.now() - t;
    globalThis.gc(); await new Promise((r) => setTimeout(r, 100)); globalThis.gc();
    console.log(JSON.stringify({ ms, rss: process.memoryUsage().rss, heap: process.memoryUsage().heapUsed }));`;
  const client = '@kubernetes/client-node';
  const dist = (p) => join(root, 'dist', p);
  const shared = ['admission/index.js', 'server/index.js'].map(dist);
  // Each row: a label, the modules, and the row its RSS is counted from (node alone unless said).
  const rows = [
    ['node alone', []],
    [`${client} (the package index)`, [client]],
    [`${client}/dist/config.js (KubeConfig)`, [`${client}/dist/config.js`]],
    [`${client}/dist/gen/apis/CoreV1Api.js`, [`${client}/dist/gen/apis/CoreV1Api.js`]],
    [`${client}/dist/cache.js (ListWatch)`, [`${client}/dist/cache.js`]],
    [`${client}/dist/watch.js (Watch)`, [`${client}/dist/watch.js`]],
    ['dist/admission and dist/server (serve loads them anyway)', shared],
    ['dist/cluster, over the row above', [...shared, ...['kubeconfig.js', 'context.js', 'events.js', 'namespaces.js', 'owners.js', 'linkerd-config.js'].map((f) => dist(`cluster/${f}`))], 6],
  ];
  return rows.map(([label, modules, from = 0]) => {
    const runs = [0, 1, 2].map(() =>
      JSON.parse(execFileSync(process.execPath, ['--expose-gc', ...nodeOptions.split(' '), '--input-type=module', '-e', probe, ...modules], { cwd: root }).toString()),
    );
    const best = (k) => Math.min(...runs.map((r) => r[k]));
    return { label, rss: best('rss'), heap: best('heap'), ms: best('ms'), from };
  });
}

const costs = SHORT ? [] : moduleCosts();
const base = costs[0];

// The control plane's helper stops etcd and kube-apiserver from an 'exit' handler, which a signal skips: from before
// they start, a signal ends this process through process.exit.
exitOnSignals();
const cp = await startControlPlane({ controllers: false });
const dir = mkdtempSync(join(tmpdir(), 'proxy-injector-cluster-memory-'));
let server;
try {
  const ok = async (method, path, body) => {
    const res = await kubeRequest(cp, method, path, body);
    if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${res.body.slice(0, 300)}`);
    return res.json;
  };
  const values = 'linkerdVersion: edge-26.8.3\nproxy:\n  logLevel: warn,linkerd=info\n';
  await ok('POST', '/api/v1/namespaces', { metadata: { name: 'linkerd', labels: { 'config.linkerd.io/admission-webhooks': 'disabled' } } });
  await ok('POST', '/api/v1/namespaces/linkerd/configmaps', { metadata: { name: 'linkerd-config' }, data: { values } });
  await ok('POST', '/api/v1/namespaces/linkerd/configmaps', {
    metadata: { name: 'linkerd-identity-trust-roots' },
    data: { 'ca-bundle.crt': readFileSync(join(root, 'examples', 'trust-anchors.pem'), 'utf8') },
  });
  const replicaSets = [];
  for (let n = 0; n < NAMESPACES; n++) {
    const ns = `bench-${n}`;
    await ok('POST', '/api/v1/namespaces', { metadata: { name: ns, annotations: n % 2 === 0 ? { 'linkerd.io/inject': 'enabled' } : {} } });
    const labels = { app: 'web' };
    const rs = await ok('POST', `/apis/apps/v1/namespaces/${ns}/replicasets`, {
      metadata: {
        name: 'web-5f7b9c',
        labels,
        ownerReferences: [{ apiVersion: 'apps/v1', kind: 'Deployment', name: 'web', uid: `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`, controller: true }],
      },
      spec: { replicas: 0, selector: { matchLabels: labels }, template: { metadata: { labels }, spec: { containers: [{ name: 'web', image: 'nginx:1.27' }] } } },
    });
    replicaSets.push({ name: rs.metadata.name, uid: rs.metadata.uid });
  }

  // The chart mounts the serving certificate from a Secret, so a deployed injector never generates one: it is made
  // here beforehand, and serve finds and loads it (generating it would add a quarter of a second to every start).
  const tlsDir = join(dir, 'tls');
  const { ensureCertificates } = await import(join(root, 'dist', 'tls', 'index.js'));
  await ensureCertificates(tlsDir, [], { info() {}, warn() {}, error() {} });

  /** Starts serve; resolves once /ready answers 200, with the times from spawn to "listening" and to ready. */
  const start = async () => {
    const spawnedAt = performance.now();
    server = spawn(
      process.execPath,
      [join(root, 'dist', 'cli', 'main.js'), 'serve', '--addr', '127.0.0.1:0', '--admin-addr', '127.0.0.1:0', '--tls-dir', tlsDir,
        '--kubeconfig', cp.kubeconfigPath, '--linkerd-namespace', 'linkerd', '--log-format', 'json'],
      { stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env, NODE_OPTIONS: nodeOptions, KUBECONFIG: '', HOME: dir } },
    );
    endsWithThisProcess(server);
    const urls = await listeningUrls(server);
    const listeningMs = performance.now() - spawnedAt;
    server.stdout.resume();
    // Bounded: 30 s at 5 ms.
    for (let i = 0; i < 6000; i++) {
      const status = await fetch(`${urls.admin}/ready`).then((r) => r.status, () => 0);
      if (status === 200) return { urls, listeningMs, readyMs: performance.now() - spawnedAt };
      await new Promise((r) => setTimeout(r, 5));
    }
    throw new Error('serve did not become ready within 30 s');
  };
  // Several starts, the last one kept for the load: a single start lands anywhere in the machine's noise.
  const starts = [];
  for (let i = 0; i < STARTS; i++) {
    if (i > 0) {
      server.kill('SIGTERM');
      await new Promise((r) => server.on('exit', r));
    }
    starts.push(await start());
  }
  const { urls } = starts.at(-1);
  const listeningMs = median(starts.map((s) => s.listeningMs));
  const readyMs = median(starts.map((s) => s.readyMs));

  const rssNow = () => {
    const status = readFileSync(`/proc/${server.pid}/status`, 'utf8');
    return Number(/^VmRSS:\s+(\d+) kB/m.exec(status)?.[1]) * 1024;
  };
  const heapNow = async () => {
    const text = await (await fetch(`${urls.admin}/metrics`)).text();
    return Number(text.split('\n').find((l) => l.startsWith('nodejs_heap_size_used_bytes '))?.split(' ')[1]);
  };
  /** The lowest of five readings a second apart: a single one lands anywhere in the garbage collector's cycle. */
  const settled = async () => {
    const rss = [];
    const heap = [];
    for (let i = 0; i < 5; i++) {
      await new Promise((r) => setTimeout(r, 1000));
      rss.push(rssNow());
      heap.push(await heapNow());
    }
    return { rss: Math.min(...rss), heap: Math.min(...heap) };
  };
  const idle = await settled();

  const sample = JSON.parse(readFileSync(join(root, 'examples', 'admission-review.json'), 'utf8'));
  const agent = new Agent({ keepAlive: true, maxSockets: CONCURRENCY, rejectUnauthorized: false });
  const kinds = { existing: 0, missing: 0, bare: 0 };
  const nth = (i) => {
    const n = i % NAMESPACES;
    const ns = `bench-${n}`;
    const review = structuredClone(sample);
    review.request.uid = `uid-${i}`;
    review.request.namespace = ns;
    const meta = review.request.object.metadata;
    meta.namespace = ns;
    delete meta.annotations;
    switch (i % 3) {
      case 0:
        kinds.existing++;
        meta.name = `web-5f7b9c-${i}`;
        meta.ownerReferences = [{ apiVersion: 'apps/v1', kind: 'ReplicaSet', name: replicaSets[n].name, uid: replicaSets[n].uid, controller: true }];
        break;
      case 1:
        kinds.missing++;
        meta.name = `gone-${i}`;
        meta.ownerReferences = [{ apiVersion: 'apps/v1', kind: 'ReplicaSet', name: `gone-${i % 50}`, uid: `uid-gone-${i % 50}`, controller: true }];
        break;
      default:
        kinds.bare++;
        meta.name = `bare-${i}`;
    }
    return { body: JSON.stringify(review), injected: n % 2 === 0 };
  };

  let peak = rssNow();
  const sampler = setInterval(() => (peak = Math.max(peak, rssNow())), 100);
  let sent = 0;
  let failures = 0;
  const failureSamples = [];
  const loadStarted = performance.now();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (sent < ADMISSIONS) {
        const want = nth(sent++);
        try {
          const got = await postReview(urls.webhook, agent, want.body);
          const good = got.status === 200 && got.text.includes('"allowed":true') && got.text.includes('"patchType"') === want.injected;
          if (!good) {
            failures++;
            if (failureSamples.length < 5) failureSamples.push(`${got.status} ${got.text.slice(0, 160)}`);
          }
        } catch (err) {
          failures++;
          if (failureSamples.length < 5) failureSamples.push(err.message);
        }
      }
    }),
  );
  const loadSeconds = (performance.now() - loadStarted) / 1000;
  clearInterval(sampler);
  peak = Math.max(peak, rssNow());
  agent.destroy();
  const after = await settled();
  const metrics = await (await fetch(`${urls.admin}/metrics`)).text();
  const eventsWritten = metrics.split('\n').filter((l) => /^proxy_inject_events_total\{.*result="written"/.test(l)).map((l) => Number(l.split(' ').at(-1)));

  const mib = (b) => `${(b / MiB).toFixed(1)} MiB`;
  console.log(`cluster-mode memory: node ${process.version}, NODE_OPTIONS="${nodeOptions}", kube-apiserver and etcd on loopback`);
  console.log('  (figures taken on a machine shared with other work: times vary with its load, RSS much less)');
  if (costs.length > 0) console.log('  module cost, each loaded alone into a fresh node (RSS above node alone, heap used, import time):');
  for (const c of costs) {
    const from = costs[c.from];
    const rss = c === base ? mib(c.rss) : `+${mib(c.rss - from.rss)}`;
    const heap = c.from === 0 ? mib(c.heap) : `+${mib(c.heap - from.heap)}`;
    const ms = c.from === 0 ? c.ms : c.ms - from.ms;
    console.log(`    ${c.label.padEnd(58)} RSS ${rss.padStart(10)}   heap ${heap.padStart(9)}   ${ms.toFixed(0).padStart(4)} ms`);
  }
  console.log(`  start-up (median of ${STARTS}, serving certificate provided as the chart mounts it): "proxy-injector listening" ` +
    `${listeningMs.toFixed(0)} ms after spawn, /ready 200 after ${readyMs.toFixed(0)} ms; ready each time: ${starts.map((s) => s.readyMs.toFixed(0)).join(', ')} ms`);
  console.log(`  RSS idle (caches synced)      ${mib(idle.rss)}   (heap used ${mib(idle.heap)})`);
  console.log(`  RSS peak under load           ${mib(peak)}   (${ADMISSIONS} admissions, ${CONCURRENCY} connections, ${(ADMISSIONS / loadSeconds).toFixed(0)}/s)`);
  console.log(`  RSS after load                ${mib(after.rss)}   (heap used ${mib(after.heap)})`);
  console.log(`  pods: ${kinds.existing} owned by an existing ReplicaSet, ${kinds.missing} by a missing one, ${kinds.bare} bare; ` +
    `events written: ${eventsWritten.reduce((a, b) => a + b, 0)}; unexpected answers: ${failures}${failureSamples.length ? `: ${failureSamples.join('; ')}` : ''}`);
  if (failures > 0) process.exitCode = 1;
} finally {
  if (server && server.exitCode === null) {
    server.kill('SIGTERM');
    await new Promise((r) => server.on('exit', r));
  }
  rmSync(dir, { recursive: true, force: true });
  await cp.stop();
}
