/**
 * `npm run bench:scaling`: how the time of one review grows with each list a review can make long, through the
 * webhook's real path in process (dist/server/webhook.js's buildWebhookApp, plain HTTP, `app.inject`).
 *
 * Every byte of a review is chosen by whoever creates the pod, and the injector is on the path of every pod creation:
 * its work must grow linearly (or as n log n) with each list. For each list below (and the products of lists that the
 * start-up risk analysis compares), pods with none of its items, with n and with 4n are reviewed in turn, each as a new
 * controller's pod sent twice with a new name and uid (see KINDS), and each review is timed end to end, from the
 * request to the answer, in wall time and in this process's CPU time; t is the median over the runs after a warm-up.
 * The ratio (t(4n) - t0) / (t(n) - t0) of what the items add is about 4 for linear work, 4.5 for n log n and 16 for
 * quadratic: a list fails when both its wall and its CPU ratio are above RATIO_LIMIT, twice (a second measure, with
 * more runs, confirms the first). Each answer must be a 200 whose body is an AdmissionReview with a response; whether
 * it carries a patch, or allows or denies without one, is shown. A list whose pod at 4n the server does not inject (a
 * bound on what one review may hold) is measured from a smaller n, and the table says so.
 *
 * Then, for each list, the largest n the server answers (the body at most MAX_BODY_BYTES, the answer as above), found
 * by bisection, and the time of one review at that size and at a quarter of it: the longest of these is the longest a
 * single review holds the event loop, reported and not asserted. Where that largest answer is not a patch (a bound
 * refused the pod), the largest n still injected is timed too.
 *
 * Inputs are generated, the same in every run. Each part runs in a process of its own, pinned to CPU 0 where it can
 * be (see PHASES for their memory flags).
 *
 * Environment: BENCH_CHECK=1 or --short (CI: fewer runs, and no search for the largest sizes; it still fails on a
 * ratio), BENCH_LISTS (comma-separated names: only those lists), BENCH_SCALE (multiplies every n: a build that is
 * quadratic somewhere takes minutes at the usual sizes), BENCH_DIST (another build's dist/, inside this repository or
 * with its own node_modules).
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { canPin, imageNodeOptions, median, onServerCore } from './serve-process.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const short = process.env['BENCH_CHECK'] === '1' || process.argv.includes('--short');

/**
 * The ratios are measured with a young generation larger than what a review at 4n allocates: when a review's live
 * objects outgrow it, every scavenge copies all of them, and a list whose n and 4n fell on either side of that size
 * showed more than twice the ratio of its work. The largest sizes are timed with the image's flags, as the image would hold them.
 */
const PHASES = {
  ratios: ['--min-semi-space-size=64', '--max-semi-space-size=64'],
  largest: imageNodeOptions(root).split(/\s+/).filter(Boolean),
};
const phase = process.env['BENCH_SCALING_PHASE'];
if (phase === undefined) {
  // Each phase in a process of its own, on CPU 0 where processes can be pinned.
  let status = 0;
  for (const name of short ? ['ratios'] : ['ratios', 'largest']) {
    const [command, args] = onServerCore([...PHASES[name], fileURLToPath(import.meta.url), ...process.argv.slice(2)]);
    const run = spawnSync(command, args, { stdio: 'inherit', env: { ...process.env, BENCH_SCALING_PHASE: name } });
    if (run.status !== 0) status = run.status ?? 1;
  }
  process.exit(status);
}

const dist = resolve(process.env['BENCH_DIST'] ?? join(root, 'dist'));
const only = process.env['BENCH_LISTS'] ? new Set(process.env['BENCH_LISTS'].split(',')) : undefined;
const scale = Number(process.env['BENCH_SCALE'] ?? '1');

/**
 * Above this, the growth ratio says super-linear. Linear work gives 4 and n log n about 4.5, but a list whose items
 * outgrow the processor's caches between n and 4n costs more per item at 4n, and a busy machine adds its noise
 * (docs/performance.md has the ratios seen); a quadratic part gives 4 + 12f, f its share of what the items cost at n,
 * so this limit still catches one that is a third of it.
 */
const RATIO_LIMIT = 8;
const RUNS = short ? 5 : 9;
const WARM_UPS = short ? 1 : 2;
/** The server's default body limit (DEFAULT_LIMITS in src/server/webhook.ts): the largest sizes stop there. */
const MAX_BODY_BYTES = 4 * 1024 * 1024;

const load = async (path) => import(pathToFileURL(join(dist, path)).href);
const { buildWebhookApp } = await load('server/webhook.js');
const { InjectorMetrics } = await load('server/metrics.js');
const { TemplateAnswerLru } = await load('admission/template-answer-lru.js');
const { defaultValues, prepareConfig, withTrustAnchors } = await load('engine/index.js');
const { pino } = await import('pino');

const anchors = readFileSync(join(root, 'examples', 'trust-anchors.pem'), 'utf8');
const config = prepareConfig({ values: withTrustAnchors(defaultValues(), anchors), controlPlaneNamespace: 'linkerd' });
const app = buildWebhookApp({
  sources: { config: () => config, namespaceAnnotations: () => undefined, answers: new TemplateAnswerLru() },
  metrics: new InjectorMetrics(),
  logger: pino({ level: 'silent' }),
});
await app.ready();

const sample = JSON.parse(readFileSync(join(root, 'examples', 'admission-review.json'), 'utf8'));

// ---------------------------------------------------------------------------------------------------------------
// The pods

const times = (n, item) => Array.from({ length: n }, (_, i) => item(i));
/** A port number for item i: 1 to 65535, then again. */
const portOf = (i) => 1 + (i % 65535);
const portList = (n, from = 0) => times(n, (i) => String(portOf(from + i))).join(',');
const container = (pod) => pod.spec.containers[0];
const portsUpTo = (n) => times(n, (i) => ({ containerPort: portOf(i) }));
const portName = (i) => `p${i.toString(36)}`;
/** n objects named `prefix` and a number, with `fields`. */
const named = (n, prefix, fields = {}) => times(n, (i) => ({ name: `${prefix}${i}`, ...fields }));
/** A map of n keys made of `prefix` and a number, each to `value`. */
const entries = (n, prefix, value = 'v') => Object.fromEntries(times(n, (i) => [`${prefix}${i}`, value]));
/** Sets a config.linkerd.io annotation, or another when `key` is a whole name. */
const annotate = (pod, key, value) => {
  pod.metadata.annotations[key.includes('/') ? key : `config.linkerd.io/${key}`] = value;
};
/** A port in the default skip-inbound-ports, for which the risk analysis reads the opaque and identity lists. */
const skippedPort = (pod) => container(pod).ports.push({ containerPort: 4567 });
/** A pod that runs to completion, whose command line the start-up risk analysis reads, with these args. */
const jobArgs = (pod, args) => {
  pod.spec.restartPolicy = 'Never';
  container(pod).args = args;
};

/**
 * The engine counts the bytes of a pod's annotations only when they may reach the API server's 256 KiB, which made a
 * step between n and 4n for lists of annotations: their pods carry this at every size, so that the step is in t0.
 */
const BALLAST = 'x'.repeat(88 * 1024);
const inAnnotations = (lists) => lists.map((list) => ({ ...list, ballast: true }));

/**
 * Each list: its name, n, and how it makes a pod of n items. n is chosen so that what the items add at n is several
 * milliseconds on the 2-core VM of docs/performance.md and the review at 4n stays well within the body limit, except
 * for annotations, which the engine refuses beyond the API server's 256 KiB: with the ballast, 4n stays under that.
 */
const LISTS = [
  { name: 'containers', n: 8000, make: (pod, n) => (pod.spec.containers = named(n, 'c', { image: 'a' })) },
  { name: 'initContainers', n: 6000, make: (pod, n) => (pod.spec.initContainers = named(n, 'i', { image: 'i' })) },
  { name: 'ports (one container)', n: 16000, make: (pod, n) => (container(pod).ports = portsUpTo(n)) },
  {
    name: 'named ports',
    n: 8000,
    make: (pod, n) => (container(pod).ports = times(n, (i) => ({ name: portName(i), containerPort: portOf(i) }))),
  },
  { name: 'env', n: 8000, make: (pod, n) => (container(pod).env = named(n, 'E', { value: 'v' })) },
  {
    name: 'envFrom',
    n: 6000,
    make: (pod, n) => (container(pod).envFrom = named(n, 'c').map((configMapRef) => ({ configMapRef }))),
  },
  {
    name: 'command words (sh -c)',
    n: 60000,
    make: (pod, n) => {
      const words = times(n, (i) => (i % 3 === 0 ? `"w${i}"` : i % 3 === 1 ? `w${i};` : `'w${i}'&&`));
      jobArgs(pod, []);
      container(pod).command = ['sh', '-c', words.join(' ')];
    },
  },
  { name: 'args', n: 40000, make: (pod, n) => jobArgs(pod, times(n, (i) => `a${i}`)) },
  // The run that the quote-stripping regex tried from each of its positions: inside a word, followed by more of it.
  { name: 'run of quotes in a word', n: 300000, make: (pod, n) => jobArgs(pod, [`x${'"'.repeat(n)}y`]) },
  {
    name: 'words ending in /linkerd-await',
    n: 40000,
    make: (pod, n) => jobArgs(pod, ['linkerd-await', ...times(n, (i) => (i % 2 === 0 ? '-p' : '/linkerd-await'))]),
  },
  {
    name: 'linkerd-await -S/-p flags',
    n: 40000,
    make: (pod, n) => jobArgs(pod, ['linkerd-await', ...times(n, (i) => (i % 2 === 0 ? '-vS' : '-p4191')), '--', 'x']),
  },
  { name: 'shutdown URL word', n: 60000, make: (pod, n) => jobArgs(pod, ['curl', 'localhost:1'.repeat(n)]) },
  { name: 'volumes', n: 8000, make: (pod, n) => (pod.spec.volumes = named(n, 'v', { emptyDir: {} })) },
  {
    name: 'volumeMounts',
    n: 6000,
    make: (pod, n) => (container(pod).volumeMounts = times(n, (i) => ({ name: `v${i}`, mountPath: `/m/${i}` }))),
  },
  {
    name: 'capabilities',
    n: 10000,
    make: (pod, n) => {
      const capabilities = { add: times(n, (i) => `CAP_${i}`), drop: times(n, (i) => `D_${i}`) };
      container(pod).securityContext = { capabilities };
    },
  },
  {
    name: 'tolerations',
    n: 6000,
    make: (pod, n) => (pod.spec.tolerations = times(n, (i) => ({ key: `k${i}`, operator: 'Exists' }))),
  },
  { name: 'imagePullSecrets', n: 10000, make: (pod, n) => (pod.spec.imagePullSecrets = named(n, 's')) },
  {
    name: 'hostAliases',
    n: 5000,
    make: (pod, n) => (pod.spec.hostAliases = times(n, (i) => ({ ip: '10.0.0.1', hostnames: [`h${i}`, `g${i}`] }))),
  },
  { name: 'nodeSelector entries', n: 16000, make: (pod, n) => (pod.spec.nodeSelector = entries(n, 'k')) },
  {
    name: 'ownerReferences',
    n: 4000,
    // The controller's reference comes last, so that finding it walks the others.
    make: (pod, n) => {
      const others = times(n, (i) => ({ apiVersion: 'v1', kind: 'ConfigMap', name: `o${i}`, uid: `u${i}` }));
      pod.metadata.ownerReferences = [...others, ...pod.metadata.ownerReferences];
    },
  },
  { name: 'labels', n: 16000, make: (pod, n) => Object.assign(pod.metadata.labels, entries(n, 'l')) },
  {
    name: 'managedFields',
    n: 1500,
    make: (pod, n) =>
      (pod.metadata.managedFields = times(n, (i) => ({
        manager: `m${i}`,
        operation: 'Update',
        apiVersion: 'v1',
        time: '2026-11-27T10:00:00Z',
        fieldsType: 'FieldsV1',
        fieldsV1: { 'f:metadata': { 'f:labels': { [`f:l${i}`]: {} } } },
      }))),
  },
  // Lists of annotations, or in them.
  ...inAnnotations([
    { name: 'annotations', n: 2500, make: (pod, n) => Object.assign(pod.metadata.annotations, entries(n, 'a.x/')) },
    // A body with a \u escape is scanned for prototype keys before it is parsed.
    {
      name: 'annotations with \\u escapes',
      n: 1700,
      make: (pod, n) => Object.assign(pod.metadata.annotations, entries(n, 'example.com/a', '\u00e9\u2028')),
    },
    {
      name: 'tracing attribute annotations',
      n: 1300,
      make: (pod, n) => Object.assign(pod.metadata.annotations, entries(n, 'resource.opentelemetry.io/a')),
    },
    { name: 'one annotation value', n: 40000, make: (pod, n) => annotate(pod, 'example.com/long', 'x'.repeat(n)) },
    { name: 'opaque-ports', n: 7000, make: (pod, n) => (skippedPort(pod), annotate(pod, 'opaque-ports', portList(n))) },
    { name: 'skip-inbound-ports', n: 7000, make: (pod, n) => annotate(pod, 'skip-inbound-ports', portList(n)) },
    { name: 'skip-outbound-ports', n: 7000, make: (pod, n) => annotate(pod, 'skip-outbound-ports', portList(n)) },
    {
      name: 'skip-subnets',
      n: 2500,
      make: (pod, n) => annotate(pod, 'skip-subnets', times(n, (i) => `10.${(i >> 8) & 255}.${i & 255}.0/24`).join()),
    },
    {
      name: 'require-identity ports',
      n: 7000,
      make: (pod, n) => (skippedPort(pod), annotate(pod, 'proxy-require-identity-inbound-ports', portList(n))),
    },
    {
      name: 'proxy-additional-env',
      n: 1300,
      make: (pod, n) => annotate(pod, 'proxy-additional-env', JSON.stringify(named(n, 'X', { value: 'v' }))),
    },
    {
      name: 'proxy-log-level directives',
      n: 3300,
      make: (pod, n) => annotate(pod, 'proxy-log-level', times(n, (i) => `m${i}=info`).join(',')),
    },
    {
      name: 'opaque-ports names x named ports',
      n: 8000,
      make: (pod, n) => {
        container(pod).ports = times(n, (i) => ({ name: portName(i), containerPort: portOf(i) }));
        annotate(pod, 'opaque-ports', times(n, portName).join(','));
      },
    },
    {
      name: 'declared ports x skip/identity/opaque lists',
      n: 2400,
      // Every port skipped, none in the other two lists: each port is looked for in all three, and no risk is written.
      make: (pod, n) => {
        container(pod).ports = portsUpTo(n);
        annotate(pod, 'skip-inbound-ports', portList(n));
        annotate(pod, 'proxy-require-identity-inbound-ports', portList(n, n));
        annotate(pod, 'opaque-ports', portList(n, n));
      },
    },
    {
      name: 'declared ports x lists (each port a risk)',
      n: 2000,
      make: (pod, n) => {
        container(pod).ports = portsUpTo(n);
        for (const key of ['skip-inbound-ports', 'proxy-require-identity-inbound-ports', 'opaque-ports']) {
          annotate(pod, key, portList(n));
        }
      },
    },
    {
      name: 'containers x skip-inbound-ports',
      n: 4000,
      make: (pod, n) => {
        pod.spec.containers = times(n, (i) => ({ name: `c${i}`, image: 'a', ports: [{ containerPort: portOf(i) }] }));
        annotate(pod, 'skip-inbound-ports', portList(n, n));
      },
    },
  ]),
  {
    name: 'review: userInfo.groups',
    n: 40000,
    review: (request, n) => (request.userInfo = { username: 'u', groups: times(n, (i) => `g${i}`) }),
  },
];

// ---------------------------------------------------------------------------------------------------------------
// Reviews

let serial = 0;
const uuid = (first, n) => `${first.repeat(8)}-0000-4000-8000-${String(n).padStart(12, '0')}`;

/** The review of the pod with n items of `list`, made by the controller `controller`, as a JSON text. */
function reviewText(list, n, controller) {
  const id = ++serial;
  const owner = { apiVersion: 'apps/v1', kind: 'ReplicaSet', name: `r${controller}`, uid: uuid('c', controller) };
  const pod = {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: `scaling-${id}`,
      namespace: 'scaling',
      labels: { app: 'scaling' },
      annotations: { 'linkerd.io/inject': 'enabled' },
      ownerReferences: [{ ...owner, controller: true }],
    },
    spec: { containers: [{ name: 'app', image: 'app:1', ports: [{ containerPort: 8080 }] }] },
  };
  if (list.ballast) pod.metadata.annotations['a.example/ballast'] = BALLAST;
  list.make?.(pod, n);
  const request = { ...sample.request, uid: uuid('0', id), name: pod.metadata.name, namespace: 'scaling', object: pod };
  list.review?.(request, n);
  return JSON.stringify({ apiVersion: sample.apiVersion, kind: sample.kind, request });
}

/** What came back: `patch`, `allowed` or `denied` for an AdmissionReview answer, anything else says what went wrong. */
function answerOf(res) {
  if (res.statusCode !== 200) return `HTTP ${res.statusCode}: ${res.body.slice(0, 120).trim()}`;
  let body;
  try {
    body = JSON.parse(res.body);
  } catch {
    return 'a 200 whose body is not JSON';
  }
  const response = body?.response;
  const review = body?.kind === 'AdmissionReview' && typeof response?.allowed === 'boolean';
  if (!review) return 'a 200 with no AdmissionReview answer';
  if (!response.allowed) return 'denied';
  return response.patch ? 'patch' : 'allowed';
}
const answered = (answer) => answer === 'patch' || answer === 'allowed' || answer === 'denied';

/**
 * Sends one review: its time end to end in ms, the CPU time this process spent meanwhile (in ms), and its answer. The
 * heap is not collected before: a forced full collection made the next review take up to milliseconds longer.
 */
async function send(payload) {
  const cpu = process.cpuUsage();
  const started = performance.now();
  const res = await app.inject({ method: 'POST', url: '/', headers: { 'content-type': 'application/json' }, payload });
  const ms = performance.now() - started;
  const used = process.cpuUsage(cpu);
  return { ms, cpuMs: (used.user + used.system) / 1000, answer: answerOf(res) };
}

let controllers = 0;
/**
 * A new controller's pod is sent twice, with a new name and uid each time: `first` is answered without the answer
 * cache's key, as most controllers' only pod is; `second` has its key serialised, and its answer kept when the key is
 * short enough. (A third pod would be a hit only below that length, so a hit's time cannot be compared across sizes.)
 */
const KINDS = ['first', 'second'];

/** One controller's pod of n items sent as each of KINDS: the time and answer of each. */
async function sendEach(list, n) {
  const controller = ++controllers;
  const out = [];
  for (const _ of KINDS) out.push(await send(reviewText(list, n, controller)));
  return out;
}

const failures = [];

/**
 * The median time, wall and CPU, of each kind for the pod with none of the list's items (t0), with n and with 4n,
 * measured in turn in each run; the ratios of what the items add, (t(4n) - t0) / (t(n) - t0), so that the part of a
 * review that does not grow with the list does not pull them towards 1; the answers seen.
 */
async function measure(list, n, runs) {
  const sizes = [0, n, 4 * n];
  const wall = sizes.map(() => KINDS.map(() => []));
  const cpu = sizes.map(() => KINDS.map(() => []));
  const answers = new Set();
  for (let run = 0; run < WARM_UPS + runs; run++) {
    // The order turns from run to run: a review pays for some of the garbage the one before it left, and the largest
    // left the most.
    for (let turn = 0; turn < sizes.length; turn++) {
      const s = (run + turn) % sizes.length;
      const size = sizes[s];
      const sent = await sendEach(list, size);
      for (const [k, { ms, cpuMs, answer }] of sent.entries()) {
        if (size > 0) answers.add(answer);
        if (!answered(answer)) failures.push(`${list.name} at n=${size}: ${answer}`);
        if (run < WARM_UPS) continue;
        wall[s][k].push(ms);
        cpu[s][k].push(cpuMs);
      }
    }
  }
  const medians = (bySize) => bySize.map((byKind) => byKind.map(median));
  const growth = ([at0, atN, at4n]) => KINDS.map((_, k) => (at4n[k] - at0[k]) / (atN[k] - at0[k]));
  const [at0, atN, at4n] = medians(wall);
  const seen = [...answers].join(', ');
  return { at0, atN, at4n, ratios: growth([at0, atN, at4n]), cpuRatios: growth(medians(cpu)), answers: seen };
}

/**
 * What the items must add at n for a ratio to be judged: below it, a ratio is the noise of two small differences. Only
 * lists that a bound keeps short (an annotation's) stay under it, and their time at the bound is in the second table.
 */
const JUDGED_MS = 1;
const judged = (m, k) => m.atN[k] - m.at0[k] >= JUDGED_MS;

/** The answer to a new controller's pod of n items of `list`. */
const answerAt = async (list, n) => (await send(reviewText(list, n, ++controllers))).answer;

/**
 * The n a list is measured from: its own, halved as often as the server does not inject the pod at 4n (a bound on what
 * one review may hold, which the server may have grown since the list's n was chosen).
 */
async function usableN(list) {
  let n = list.n;
  while (n > 1 && (await answerAt(list, 4 * n)) !== 'patch') n = Math.floor(n / 2);
  return n;
}

/** Whether a measure says super-linear: for some kind judged, both its wall and its CPU ratio above the limit. */
const superLinear = (m) =>
  KINDS.some((_, k) => judged(m, k) && m.ratios[k] > RATIO_LIMIT && m.cpuRatios[k] > RATIO_LIMIT);

// ---------------------------------------------------------------------------------------------------------------
// The run

const fmt = (x, digits = 1) => x.toFixed(digits);
const pad = (text, width) => String(text).padEnd(width);
const lists = LISTS.filter((l) => !only || only.has(l.name)).map((l) => ({ ...l, n: Math.ceil(l.n * scale) }));
if (lists.length === 0) {
  console.error(`bench:scaling: BENCH_LISTS names no list; the lists are: ${LISTS.map((l) => l.name).join('; ')}`);
  process.exit(2);
}

console.log(
  `bench:scaling ${short ? '(short form) ' : ''}${phase}: ${new Date().toISOString().slice(0, 10)}, ` +
    `Node ${process.version}, ` +
    `${cpus().length} × ${cpus()[0]?.model ?? 'CPU'}, load average ${loadavg().map((l) => fmt(l, 2)).join(' ')}, ` +
    `${canPin() ? 'pinned to CPU 0' : 'not pinned'}, ${process.execArgv.join(' ')}`,
);

/** Each list's growth ratio at n, in a table; a failure for each super-linear one. */
async function ratios() {
  console.log(
    `times: ms end to end of a controller's first pod, median of ${RUNS} runs after ${WARM_UPS} warm-up, with ` +
      `none of the list's items (t0), n and 4n; ratio: (t(4n) - t0) / (t(n) - t0) of the first pod, 2nd: of the ` +
      `second; cpu: the larger of the two in this process's CPU time; super-linear when a pod's wall and CPU ratios ` +
      `are both above ${RATIO_LIMIT}\n`,
  );
  const columns = [['list', 50], ['n', 7], ['t0', 6], ['t(n)', 7], ['t(4n)', 7], ['ratio', 6], ['2nd', 5], ['cpu', 5]];
  columns.push(['answers', 14]);
  const header = `${columns.map(([name, width]) => pad(name, width)).join(' ')} verdict`;
  console.log(header);
  console.log('-'.repeat(header.length));
  for (const list of lists) {
    const n = await usableN(list);
    let m = await measure(list, n, RUNS);
    // Measured again with more runs before it counts: a burst of another job can land on one size's runs only.
    if (superLinear(m)) m = await measure(list, n, 2 * RUNS + 1);
    const verdict = superLinear(m) ? 'SUPER-LINEAR' : 'linear';
    if (verdict !== 'linear') {
      failures.push(`${list.name}: growth ratio ${m.ratios.map((r) => fmt(r)).join(' and ')}, above ${RATIO_LIMIT}`);
    }
    const small = KINDS.every((_, k) => judged(m, k)) ? '' : ` (not judged: the items add under ${JUDGED_MS} ms at n)`;
    const halved = n < list.n ? ` (n from ${list.n}: the server refused 4n)` : '';
    const ms = [m.at0[0], m.atN[0], m.at4n[0]].map((t) => fmt(t, 2));
    const ratioCells = [fmt(m.ratios[0]), fmt(m.ratios[1]), fmt(Math.max(...m.cpuRatios))];
    const cells = [list.name, n, ...ms, ...ratioCells, m.answers];
    console.log(`${cells.map((cell, i) => pad(cell, columns[i][1])).join(' ')} ${verdict}${small}${halved}`);
  }
}

/** The largest n in [lo, hi] for which `holds` is true, given that it holds at lo and stops holding past some n. */
async function largest(lo, hi, holds) {
  while (hi > lo) {
    const mid = Math.ceil((lo + hi) / 2);
    if (await holds(mid)) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

const bodyFits = (list, n) => Buffer.byteLength(reviewText(list, n, 0)) <= MAX_BODY_BYTES;

/** The slowest kind's time at n (the median of three sends of each, after one), the answer and the body's size. */
async function timedAt(list, n) {
  await sendEach(list, n);
  const sent = [await sendEach(list, n), await sendEach(list, n), await sendEach(list, n)];
  const ms = Math.max(...KINDS.map((_, k) => median(sent.map((s) => s[k].ms))));
  const answer = sent[0][0].answer;
  if (!answered(answer)) failures.push(`${list.name} at n=${n}: ${answer}`);
  return { ms, answer, bytes: Buffer.byteLength(reviewText(list, n, 0)) };
}

/** Each list's largest review the server answers, timed, and the longest of them. */
async function largestSizes() {
  console.log(
    `the largest review the server answers, per list (a body of at most ${MAX_BODY_BYTES} bytes): its time in ms ` +
      `(the slower of the two pods, median of 3), the time at a quarter of it, and their ratio where both answers ` +
      `are alike (growth at the top of the range, with the image's collections; reported, not judged):\n`,
  );
  const columns = [['list', 60], ['largest n', 10], ['body KiB', 9], ['answer', 8], ['ms', 7], ['n/4 ms', 7]];
  const header = `${columns.map(([name, width]) => pad(name, width)).join(' ')} ratio`;
  console.log(header);
  console.log('-'.repeat(header.length));
  const rows = [];
  const row = async (name, list, n) => {
    const timed = { list: name, n, ...(await timedAt(list, n)) };
    const quarter = await timedAt(list, Math.floor(n / 4));
    rows.push(timed);
    const ratio = quarter.answer === timed.answer ? fmt(timed.ms / quarter.ms) : '';
    const cells = [name, n, fmt(timed.bytes / 1024, 0), timed.answer, fmt(timed.ms), fmt(quarter.ms)];
    console.log(`${cells.map((cell, i) => pad(cell, columns[i][1])).join(' ')} ${ratio}`);
    return timed;
  };
  for (const list of lists) {
    // The bound on the body first, by its size alone; then the server's own bounds, by its answers.
    const lo = await usableN(list);
    let hi = 2 * lo;
    while (bodyFits(list, hi)) hi *= 2;
    const fits = await largest(lo, hi, async (n) => bodyFits(list, n));
    const accepted = async (n) => answered(await answerAt(list, n));
    const top = (await accepted(fits)) ? fits : await largest(lo, fits, accepted);
    const timed = await row(list.name, list, top);
    // A pod that a bound refused cost less than one just under it: the largest that is still injected is timed too.
    if (timed.answer !== 'patch') {
      const patched = async (n) => (await answerAt(list, n)) === 'patch';
      await row(`${list.name} (still injected)`, list, await largest(lo, top, patched));
    }
  }
  const worst = rows.reduce((a, b) => (b.ms > a.ms ? b : a));
  const what = `${worst.list}, n=${worst.n}, ${fmt(worst.bytes / 1024, 0)} KiB`;
  console.log(`\nthe longest a single review held the event loop: ${fmt(worst.ms)} ms (${what})`);
}

if (phase === 'ratios') await ratios();
else await largestSizes();

console.log(`\nload average at the end: ${loadavg().map((l) => fmt(l, 2)).join(' ')}\n`);
await app.close();
if (failures.length > 0) {
  console.error(`bench:scaling failed:\n${failures.map((f) => `  - ${f}`).join('\n')}\n`);
  process.exit(1);
}
