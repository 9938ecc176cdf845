/**
 * Engine throughput: how many patches per second one core builds for the baseline pod (the shape of Linkerd's
 * baseline fixture: one nginx container, port 80, an HTTP readiness probe on 9090, `linkerd.io/inject: enabled`), and
 * for the webhook benchmark's rollout and distinct mixes with a prepared configuration.
 * Re-runs itself under `taskset -c 0` when available so the number is a one-core number. It measures the compiled
 * engine in dist/, the code the server runs.
 */
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { defaultValues, inject, prepareConfig, withTrustAnchors } from '../dist/engine/index.js';
import { MIXES } from './reviews.mjs';
import { runOnCore } from './serve-process.mjs';

runOnCore(import.meta.url, 0);

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const anchors = readFileSync(join(root, 'examples', 'trust-anchors.pem'), 'utf8');

const baselinePod = {
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name: 'nginx', namespace: 'default', annotations: { 'linkerd.io/inject': 'enabled' }, labels: { app: 'nginx' } },
  spec: {
    containers: [
      {
        name: 'nginx',
        image: 'nginx',
        ports: [{ name: 'http', containerPort: 80 }],
        readinessProbe: { httpGet: { path: '/metrics', port: 9090 } },
      },
    ],
  },
};

function scenario(name, native) {
  const values = withTrustAnchors(defaultValues(), anchors);
  values.proxy.nativeSidecar = native;
  return {
    name,
    request: {
      object: baselinePod,
      kind: 'Pod',
      namespace: 'default',
      owner: { kind: 'deployment', name: 'nginx' },
      config: { values, controlPlaneNamespace: 'linkerd' },
    },
  };
}

/** Runs `fn` for about `seconds` after a warm-up and returns the rate. */
function rate(fn, seconds) {
  let iterations = 0;
  const start = process.hrtime.bigint();
  const deadline = start + BigInt(Math.round(seconds * 1e9));
  let now = start;
  while (now < deadline) {
    for (let i = 0; i < 200; i++) fn();
    iterations += 200;
    now = process.hrtime.bigint();
  }
  return iterations / (Number(now - start) / 1e9);
}

/** Median and range over `rounds` rounds: a shared machine makes single runs vary by tens of percent. */
function measure(fn, seconds, rounds = 5) {
  for (let i = 0; i < 2000; i++) fn();
  const rates = Array.from({ length: rounds }, () => rate(fn, seconds / rounds)).sort((a, b) => a - b);
  const median = rates[Math.floor(rounds / 2)];
  return { median, min: rates[0], max: rates[rounds - 1], meanMicros: 1e6 / median };
}

const show = (m) =>
  `${Math.round(m.median)}/s median (${m.meanMicros.toFixed(1)} µs; range ${Math.round(m.min)}-${Math.round(m.max)})`;

const seconds = Number(process.env['BENCH_SECONDS'] ?? '5');
let sink = 0;
console.log(`engine benchmark: node ${process.version}, ${seconds}s per row in 5 rounds, pinned to one core: ${process.env['BENCH_PINNED'] ? 'yes' : 'no'}`);
for (const { name, request } of [scenario('baseline pod, classic sidecar', false), scenario('baseline pod, native sidecar', true)]) {
  const engineOnly = measure(() => {
    sink += inject(request).patch.length;
  }, seconds);
  const withEncoding = measure(() => {
    sink += Buffer.from(JSON.stringify(inject(request).patch)).toString('base64').length;
  }, seconds);
  console.log(`${name}:\n  patches: ${show(engineOnly)}\n  patch + JSON + base64: ${show(withEncoding)}`);
}

// The webhook benchmark's mixes, with the configuration prepared as the server prepares it, one pod after another.
const prepared = prepareConfig({ values: withTrustAnchors(defaultValues(), anchors), controlPlaneNamespace: 'linkerd' });
for (const mix of ['rollout', 'distinct']) {
  const requests = MIXES[mix](500).map((text) => JSON.parse(text).request);
  let next = 0;
  const one = () => {
    const r = requests[next];
    next = (next + 1) % requests.length;
    return inject({ object: r.object, kind: r.kind.kind, namespace: r.namespace, namespaceAnnotations: {}, config: prepared });
  };
  const engineOnly = measure(() => {
    sink += one().patch.length;
  }, seconds);
  const withEncoding = measure(() => {
    sink += Buffer.from(JSON.stringify(one().patch)).toString('base64').length;
  }, seconds);
  console.log(`${mix} mix (500 pods in turn):\n  patches: ${show(engineOnly)}\n  patch + JSON + base64: ${show(withEncoding)}`);
}
const heapMiB = process.memoryUsage().heapUsed / 2 ** 20;
console.log(`heap used after the run: ${heapMiB.toFixed(1)} MiB (checksum ${sink % 997})`);
