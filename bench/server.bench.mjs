/**
 * `npm run bench:server`: the webhook against its floors, in one run, with the same load.
 *
 * For each request mix (bench/reviews.mjs), three floors (bench/floor-server.mjs, answering with the injector's
 * answers computed beforehand: `floor` over fastify with its JSON parsing, `bare` over node:https alone, and `busy`,
 * the bare floor keeping the CPU busy for as long per request as the injector's own work takes in this process) and
 * `proxy-injector serve` (dist/, info logging to a pipe that is drained) are started, all pinned to
 * CPU 0 with the Dockerfile's NODE_OPTIONS, warmed up, and loaded in turn from CPU 1 by autocannon with the same
 * keep-alive connections, in rounds of about two seconds (BENCH_SECONDS per server in all) whose order rotates: a
 * machine whose load changes during the run then weighs on all alike. Each round follows half a second of load that is
 * not counted, so that a round measures a server under steady load, not one waking from its pause since its last
 * round. Each server runs as BENCH_PROCESSES processes (3), one per round in turn: processes of the same build, loaded
 * alternately, differed by as much as a fifth in CPU per admission, as much as the differences being measured.
 * Figures are the median over rounds (RSS and ready time: over processes); each ratio is the median of the rounds'
 * ratios, against the fastify floor (`ratio`), the bare one (`ratioToBare`) and the busy one (`ratioToBusy`). The
 * busy floor's own ratio to the fastify floor (`busyToFloor`) is about the most a server doing the injector's work
 * could reach; what the injector loses beyond it goes to what it does around that work (the log line, the metrics,
 * the memory the work touches). Every response is checked against the answer the engine gives in this process for
 * that request (allowed, patch, warnings): a run with a single wrong or failed response is not reported. CPU per
 * admission is read from /proc (utime + stime of the server process).
 *
 * The injector runs as a cluster runs it (`injector`): with `--kubeconfig` to a fake API server on loopback
 * (bench/fake-cluster.mjs) that lists the reviews' namespace, serves their ReplicaSet and Jobs and Linkerd's two
 * ConfigMaps, so that each admission goes through the namespace cache, the owner resolver with its read budget, the
 * configuration watched through the API, the quota cache and the Event recorder. It runs again with `--no-cluster`
 * and the same configuration from files (`no-cluster`), the path of `serve` on a laptop. The floors answer with the
 * cluster's answers; each server is checked against the answers of its own path, computed in this process with the
 * same sources (a cluster context on the same fake API, or none).
 *
 * Then, in this process, the time per admission (engine, patch JSON and base64, response JSON) for pods of 1, 10 and
 * 40 containers with 1, 100 and 1,000 annotations, to show how cost grows with the pod.
 *
 * BENCH_BASELINE names another build's dist/ (a copy inside this repository, so that it finds the same
 * node_modules): it is started as `baseline` and `baseline-no-cluster`, loaded in the same rotation and checked against
 * the same answers, and the injector's ratios to it are reported too. That is how a change is measured against the build before
 * it, in one run: two runs of this benchmark an hour apart differ by more than most changes.
 *
 * Environment: BENCH_SECONDS (10), BENCH_CONNECTIONS (16), BENCH_MIXES (rollout,distinct,owned,skip,large),
 * BENCH_REQUESTS (distinct requests per mix, 500), BENCH_PROCESSES (3), BENCH_BASELINE (unset), BENCH_CHECK=1 (CI: one
 * second per server and one process each, correctness only, no figures printed as results), BENCH_JSON (write the
 * figures there, e.g. bench/results/server.json).
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import { pino } from 'pino';
import { startFakeCluster } from './fake-cluster.mjs';
import { clusterOf, MIXES, sizedPod } from './reviews.mjs';
import { canPin, cpuSecondsOf, endsWithThisProcess, imageNodeOptions, onServerCore, rssMiBOf, runOnLoadCore, serveArgs, whenThisProcessEnds } from './serve-process.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const check = process.env['BENCH_CHECK'] === '1';
const seconds = check ? 1 : Number(process.env['BENCH_SECONDS'] ?? '10');
const connections = Number(process.env['BENCH_CONNECTIONS'] ?? '16');
const requestsPerMix = Number(process.env['BENCH_REQUESTS'] ?? (check ? '100' : '500'));
const mixes = (process.env['BENCH_MIXES'] ?? 'rollout,distinct,owned,skip,large').split(',');
const processes = check ? 1 : Math.max(1, Number(process.env['BENCH_PROCESSES'] ?? '3'));
const baseline = process.env['BENCH_BASELINE'] ? resolve(process.env['BENCH_BASELINE']) : undefined;
if (baseline !== undefined && !existsSync(join(baseline, 'cli', 'main.js'))) {
  console.error(`bench: BENCH_BASELINE=${baseline} has no cli/main.js: give the dist/ directory of another build`);
  process.exit(2);
}
// The image's memory flags, so that the figures are the image's.
const nodeOptions = imageNodeOptions(root);

runOnLoadCore(import.meta.url);

const { answerBody, handleAdmission } = await import(join(root, 'dist', 'admission', 'handler.js'));
const { TemplateAnswerLru } = await import(join(root, 'dist', 'admission', 'template-answer-lru.js'));
const { serializeReview } = await import(join(root, 'dist', 'admission', 'review.js'));
const { defaultValues, prepareConfig, withCheckedTrustAnchors } = await import(join(root, 'dist', 'engine', 'index.js'));
const { connectToCluster, createContext } = await import(join(root, 'dist', 'cluster', 'index.js'));
const { InjectorMetrics } = await import(join(root, 'dist', 'server', 'metrics.js'));

const dir = mkdtempSync(join(tmpdir(), 'proxy-injector-bench-'));
const tlsDir = join(dir, 'tls');
// However the run ends, the scratch directory goes, and no server outlives it.
whenThisProcessEnds(() => rmSync(dir, { recursive: true, force: true }));

const fakeCluster = await startFakeCluster(clusterOf(requestsPerMix));
const kubeconfig = fakeCluster.kubeconfig(dir);
/** The sources of each path: the cluster context `serve` wires, on the same fake API, and none (`--no-cluster`). */
const SOURCES = {
  cluster: await readyContext(),
  'no-cluster': (() => {
    const anchors = readFileSync(join(root, 'examples', 'trust-anchors.pem'), 'utf8');
    // Prepared as the server prepares the configuration it loads.
    const values = withCheckedTrustAnchors(defaultValues(), { pem: anchors, source: 'examples/trust-anchors.pem' }, 'the embedded defaults');
    const config = prepareConfig({ values, controlPlaneNamespace: 'linkerd' });
    return { config: () => config, namespaceAnnotations: () => undefined };
  })(),
};
const sources = SOURCES.cluster;

async function readyContext() {
  const cluster = await connectToCluster({ kubeconfig });
  const metrics = new InjectorMetrics({ processMetrics: false });
  const context = await createContext({ cluster, controlPlaneNamespace: 'linkerd', logger: pino({ level: 'silent' }), metrics, events: 'none' });
  while (context.notReadyBecause().length > 0) await new Promise((r) => setTimeout(r, 10));
  return context.sources;
}

/** The answer the engine gives for a review on a path, as the server should send it. */
async function expectedAnswer(body, path) {
  const review = JSON.parse(body);
  const handled = await handleAdmission(review.request, SOURCES[path]);
  return { apiVersion: review.apiVersion, kind: 'AdmissionReview', response: handled.response };
}

/**
 * The injector's own work per request of a mix, measured in this process: the handler (with an answer cache, as the
 * server has one) and the response's body as the server writes it, less the JSON parsing that the floors do too.
 * Microseconds per admission, the median over rounds of the whole mix; no logging, metrics or transport. This process
 * runs with Node's default heap settings, not the image's smaller young generation, so it collects garbage less often
 * than the server does: if anything, the figure is low.
 */
async function ownWorkMicros(bodies) {
  const withCache = { ...sources, answers: new TemplateAnswerLru() };
  let sink = 0;
  const parseAll = () => {
    for (const body of bodies) sink += JSON.parse(body).request.uid.length;
  };
  const answerAll = async () => {
    for (const body of bodies) {
      const review = JSON.parse(body);
      const handled = await handleAdmission(review.request, withCache);
      sink += answerBody(review.apiVersion, review.request.uid, handled).length;
    }
  };
  const micros = async (pass) => {
    const t = performance.now();
    await pass();
    return ((performance.now() - t) * 1000) / bodies.length;
  };
  // Warm-up, not counted: until the compiler has optimised the handler (after 500 calls it still took 4 to 5 times as
  // long), and the cache filled as a serving process's is.
  for (let done = 0; done < 5000; done += bodies.length) await answerAll();
  const answering = [];
  const parsing = [];
  for (let i = 0; i < 9; i++) {
    answering.push(await micros(answerAll));
    parsing.push(await micros(parseAll));
  }
  if (sink === 0) throw new Error('bench: no response was written');
  return Math.max(0, median(answering) - median(parsing));
}

async function freePort() {
  const { createServer } = await import('node:net');
  const s = createServer();
  await new Promise((r) => s.listen(0, '127.0.0.1', r));
  const { port } = s.address();
  await new Promise((r) => s.close(r));
  return port;
}

/**
 * Starts a server pinned to CPU 0; resolves once `ready` appears on its stdout, after which stdout is drained. A server
 * that exits before that ends the run, saying which.
 */
async function start(who, args, ready) {
  const started = performance.now();
  const child = spawn(...onServerCore(args), {
    stdio: ['ignore', 'pipe', 'inherit'],
    env: { ...process.env, KUBECONFIG: '', HOME: dir, NODE_OPTIONS: nodeOptions },
  });
  endsWithThisProcess(child);
  await new Promise((resolve) => {
    let seen = '';
    const onData = (chunk) => {
      seen += chunk;
      if (seen.includes(ready)) {
        child.off('exit', onEarlyExit);
        resolve();
      }
    };
    const onEarlyExit = (code, signal) => {
      console.error(`bench: the ${who} server (${args[0]}) exited with ${signal ?? `code ${code}`} before it printed "${ready}"`);
      process.exit(1);
    };
    child.stdout.on('data', onData);
    child.on('exit', onEarlyExit);
  });
  const readyMs = performance.now() - started;
  child.stdout.removeAllListeners('data');
  child.stdout.resume();
  return { child, readyMs };
}

async function stop(child) {
  child.kill('SIGTERM');
  await new Promise((r) => child.on('exit', r));
}

/** Loads `url` with the bodies in turn; every response is checked against `expected` (by uid). */
async function load(url, bodies, expected, duration) {
  let next = 0;
  const wrong = [];
  const result = await autocannon({
    url,
    connections,
    duration,
    requests: [
      {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        setupRequest: (req) => ({ ...req, body: bodies[next++ % bodies.length] }),
      },
    ],
    verifyBody: (text) => {
      let ok = false;
      try {
        const got = JSON.parse(text).response;
        const want = expected.get(got.uid)?.response;
        ok =
          want !== undefined &&
          got.allowed === want.allowed &&
          got.patchType === want.patchType &&
          got.patch === want.patch &&
          JSON.stringify(got.warnings) === JSON.stringify(want.warnings);
      } catch {
        ok = false;
      }
      if (!ok && wrong.length < 3) wrong.push(text.slice(0, 300));
      return ok;
    },
  });
  const failures = result.non2xx + result.errors + result.timeouts + (result.mismatches ?? 0);
  return { result, failures, wrong };
}

/** Seconds per round: long enough for autocannon's figures, short enough that the two servers see the same load. */
const ROUND_SECONDS = 2;
/** Seconds of load, not counted, before each round. */
const ROUND_WARM_UP_SECONDS = 0.5;
const median = (xs) => {
  const sorted = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
};

/** One round of load on one server: its figures, with the CPU it used. */
async function round(name, server, url, bodies, expected, duration) {
  const cpuBefore = cpuSecondsOf(server.child.pid);
  const { result, failures, wrong } = await load(url, bodies, expected, duration);
  const cpu = cpuSecondsOf(server.child.pid) - cpuBefore;
  if (failures > 0) {
    console.error(`bench: ${name}: ${failures} failed or wrong responses (non-2xx ${result.non2xx}, errors ${result.errors}, mismatches ${result.mismatches}); first: ${wrong.join('\n')}`);
    process.exitCode = 1;
  }
  return {
    requestsPerSecond: result.requests.total / duration,
    requests: result.requests.total,
    failures,
    p50Ms: result.latency.p50,
    p99Ms: result.latency.p99,
    maxMs: result.latency.max,
    cpuMicrosPerAdmission: (cpu / result.requests.total) * 1e6,
  };
}

function summary(rounds, instances) {
  return {
    requestsPerSecond: Math.round(median(rounds.map((r) => r.requestsPerSecond))),
    requests: rounds.reduce((n, r) => n + r.requests, 0),
    failures: rounds.reduce((n, r) => n + r.failures, 0),
    p50Ms: median(rounds.map((r) => r.p50Ms)),
    p99Ms: median(rounds.map((r) => r.p99Ms)),
    maxMs: Math.max(...rounds.map((r) => r.maxMs)),
    cpuMicrosPerAdmission: Math.round(median(rounds.map((r) => r.cpuMicrosPerAdmission))),
    rssMiB: Math.round(median(instances.map((i) => rssMiBOf(i.child.pid)))),
    readyMs: Math.round(median(instances.map((i) => i.readyMs))),
    processes: instances.length,
  };
}

/**
 * The servers (each as its processes), warmed up, then loaded in rounds; each round loads every server once, through
 * its next process, starting with the next server in turn.
 */
async function compare(mix, servers, bodies) {
  for (const s of servers) for (const i of s.instances) await load(i.url, bodies, s.expected, check ? 0.5 : 2); // warm-up, not counted
  // A whole number of rounds per process, so that every process weighs alike.
  const count = processes * Math.max(1, Math.round(seconds / ROUND_SECONDS / processes));
  const rounds = Object.fromEntries(servers.map((s) => [s.who, []]));
  for (let i = 0; i < count; i++) {
    const order = [...servers.slice(i % servers.length), ...servers.slice(0, i % servers.length)];
    for (const s of order) {
      const instance = s.instances[i % s.instances.length];
      // Each process has been idle since its last round (the longer, the more processes), and the injector's first
      // half-second of load after such a pause cost it more (188 against 163 to 175 µs per `distinct` admission
      // with eight processes); the floors' did not. Measured from steady load, as a busy webhook runs.
      if (!check) await load(instance.url, bodies, s.expected, ROUND_WARM_UP_SECONDS);
      rounds[s.who].push(await round(`${mix} ${s.who}`, instance, instance.url, bodies, s.expected, seconds / count));
    }
  }
  /** One server against another, round by round: the median of the rounds' ratios (above 1, `who` is faster). */
  const ratioOf = (who, other) => {
    const ratios = rounds[who].map((r, i) => ({
      requestsPerSecond: r.requestsPerSecond / rounds[other][i].requestsPerSecond,
      cpuPerAdmission: rounds[other][i].cpuMicrosPerAdmission / r.cpuMicrosPerAdmission,
    }));
    return {
      requestsPerSecond: Number(median(ratios.map((r) => r.requestsPerSecond)).toFixed(2)),
      cpuPerAdmission: Number(median(ratios.map((r) => r.cpuPerAdmission)).toFixed(2)),
    };
  };
  return {
    ...Object.fromEntries(servers.map((s) => [s.who, summary(rounds[s.who], s.instances)])),
    rounds: count,
    ratio: ratioOf('injector', 'floor'),
    ratioToBare: ratioOf('injector', 'bare'),
    busyToFloor: ratioOf('busy', 'floor'),
    ratioToBusy: ratioOf('injector', 'busy'),
    ...(rounds.baseline && { ratioToBaseline: ratioOf('injector', 'baseline'), noClusterRatioToBaseline: ratioOf('no-cluster', 'baseline-no-cluster') }),
  };
}

/** The arguments that start `serve` from a build's dist/ on `port`, with the run's serving certificate, on a path. */
const serve = (dist, path = 'cluster') => (port) => serveArgs(dist, tlsDir, port, path === 'cluster' ? kubeconfig : undefined);

// The serving certificate, made once by the injector itself, shared by all the servers.
{
  const s = await start('injector', serve(join(root, 'dist'))(await freePort()), 'proxy-injector listening');
  await stop(s.child);
}

const figures = { node: process.version, seconds, processes, connections, requestsPerMix, pinned: canPin(), ...(baseline && { baseline }), mixes: {} };
for (const mix of mixes) {
  const bodies = MIXES[mix](requestsPerMix);
  const expectedOn = {};
  for (const path of Object.keys(SOURCES)) {
    expectedOn[path] = new Map();
    for (const body of bodies) {
      const answer = await expectedAnswer(body, path);
      expectedOn[path].set(answer.response.uid, answer);
    }
    if (mix !== 'skip' && [...expectedOn[path].values()].some((a) => a.response.patchType !== 'JSONPatch')) throw new Error(`${mix}: a request of this mix is not injected (${path})`);
  }
  const expected = expectedOn.cluster;
  const ownWork = await ownWorkMicros(bodies);
  const answersPath = join(dir, `${mix}-answers.json`);
  writeFileSync(answersPath, JSON.stringify(Object.fromEntries([...expected].map(([uid, a]) => [uid, JSON.stringify(a)]))));

  /** `processes` processes of one server, started one after the other. */
  const startAll = async (who, argsFor, ready, answers = expected) => {
    const instances = [];
    for (let i = 0; i < processes; i++) {
      const port = await freePort();
      instances.push({ ...(await start(who, argsFor(port), ready)), url: `https://127.0.0.1:${port}/` });
    }
    return { who, instances, expected: answers };
  };
  const injectors = [['injector', join(root, 'dist')], ...(baseline ? [['baseline', baseline]] : [])];
  const servers = [
    await startAll('floor', (port) => [join(root, 'bench', 'floor-server.mjs'), 'fastify', tlsDir, answersPath, String(port)], 'listening'),
    await startAll('bare', (port) => [join(root, 'bench', 'floor-server.mjs'), 'node', tlsDir, answersPath, String(port)], 'listening'),
    await startAll('busy', (port) => [join(root, 'bench', 'floor-server.mjs'), 'node', tlsDir, answersPath, String(port), ownWork.toFixed(1)], 'listening'),
  ];
  for (const [who, dist] of injectors) {
    servers.push(await startAll(who, serve(dist), 'proxy-injector listening'));
    servers.push(await startAll(who === 'injector' ? 'no-cluster' : `${who}-no-cluster`, serve(dist, 'no-cluster'), 'proxy-injector listening', expectedOn['no-cluster']));
  }
  const readsBefore = [...fakeCluster.reads.values()].reduce((a, b) => a + b, 0);
  const compared = await compare(mix, servers, bodies);
  compared.apiReads = [...fakeCluster.reads.values()].reduce((a, b) => a + b, 0) - readsBefore;
  for (const s of servers) for (const i of s.instances) await stop(i.child);
  figures.mixes[mix] = { ownWorkMicros: Number(ownWork.toFixed(1)), ...compared };
  const answeredBy = (f) => `${f.requests} requests, ${f.failures} failed`;
  console.error(`bench: ${mix}: ${servers.map((s) => `${s.who} ${answeredBy(compared[s.who])}`).join('; ')}; ${compared.apiReads} reads of the fake API`);
}

const SERVERS = ['floor', 'bare', 'busy', 'injector', 'no-cluster', 'baseline', 'baseline-no-cluster'];
if (process.exitCode) {
  console.error('bench: not reported: some responses were wrong or failed');
  process.exit(1);
}
if (check) {
  const counted = Object.values(figures.mixes).reduce((n, m) => n + SERVERS.reduce((k, who) => k + (m[who]?.requests ?? 0), 0), 0);
  console.log(`bench check: ${counted} responses from the three floors and the injector in a cluster and without${baseline ? ', and the baseline' : ''}, all allowed with the expected patch`);
  process.exit(0);
}

// How cost grows with the pod: in this process, what the server does with a parsed review (the handler, then the
// response's JSON), per admission. These pods have no controller, so none is answered from the cache.
const series = [];
const sized = [];
for (const containers of [1, 10, 40]) {
  for (const annotations of [1, 100, 1000]) {
    const review = { apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', request: { ...JSON.parse(MIXES.rollout(1)[0]).request, object: sizedPod(containers, containers * 5, annotations) } };
    sized.push({ containers, annotations, body: JSON.stringify(review) });
  }
}
const answerOnce = async (body) => {
  const review = JSON.parse(body);
  return serializeReview(review.apiVersion, (await handleAdmission(review.request, sources)).response);
};
for (const { body } of sized) for (let i = 0; i < 50; i++) await answerOnce(body); // warm-up, not counted
// Rounds go over every cell in turn, so that a change in the machine's state weighs on all cells alike; each cell's
// figure is its fastest round (the one least disturbed by other work and by garbage collection of earlier rounds).
const SERIES_ROUNDS = 9;
const timings = sized.map(() => []);
for (let round = 0; round < SERIES_ROUNDS; round++) {
  for (const [cell, { containers, annotations, body }] of sized.entries()) {
    const review = JSON.parse(body);
    const iterations = Math.max(10, Math.round(1000 / containers / Math.sqrt(annotations)));
    // A fresh copy per call, parsed outside the timing: the server parses each body once.
    const requests = Array.from({ length: iterations }, () => structuredClone(review.request));
    const t = performance.now();
    for (const request of requests) serializeReview(review.apiVersion, (await handleAdmission(request, sources)).response);
    timings[cell].push(((performance.now() - t) * 1000) / iterations);
  }
}
for (const [cell, { containers, annotations }] of sized.entries()) {
  series.push({ containers, annotations, microsPerAdmission: Math.round(Math.min(...timings[cell])) });
}
figures.series = series;

console.log(`webhook vs floors (injector: in a cluster behind a fake API; no-cluster: --no-cluster): node ${process.version}, NODE_OPTIONS="${nodeOptions}", ${seconds}s per server in rotating rounds over ${processes} processes each, ${connections} keep-alive connections, ${requestsPerMix} distinct requests per mix, servers pinned to one core: ${canPin() ? 'yes' : 'no'}${baseline ? `, baseline ${baseline}` : ''}`);
console.log('| mix | server | req/s | p50 ms | p99 ms | max ms | CPU µs/admission | RSS MiB | ready ms | injector/floor req/s | floor/injector CPU | injector/bare req/s | bare/injector CPU |');
console.log('|---|---|---|---|---|---|---|---|---|---|---|---|---|');
for (const [mix, m] of Object.entries(figures.mixes)) {
  for (const who of SERVERS) {
    const f = m[who];
    if (f === undefined) continue;
    const ratios = who === 'injector' ? `${m.ratio.requestsPerSecond} | ${m.ratio.cpuPerAdmission} | ${m.ratioToBare.requestsPerSecond} | ${m.ratioToBare.cpuPerAdmission}` : ' | | | ';
    console.log(`| ${mix} | ${who} | ${f.requestsPerSecond} | ${f.p50Ms} | ${f.p99Ms} | ${f.maxMs} | ${f.cpuMicrosPerAdmission} | ${f.rssMiB} | ${f.readyMs} | ${ratios} |`);
  }
}
console.log("\nthe injector's own work per admission in process, and the busy floor that spends as much per request:");
console.log('| mix | own work µs | busy/floor req/s | floor/busy CPU | injector/busy req/s | busy/injector CPU |');
console.log('|---|---|---|---|---|---|');
for (const [mix, m] of Object.entries(figures.mixes)) {
  console.log(`| ${mix} | ${m.ownWorkMicros} | ${m.busyToFloor.requestsPerSecond} | ${m.busyToFloor.cpuPerAdmission} | ${m.ratioToBusy.requestsPerSecond} | ${m.ratioToBusy.cpuPerAdmission} |`);
}
if (baseline) {
  console.log('\ninjector against the baseline (medians of the rounds\' ratios; above 1, the injector is faster):');
  console.log('| mix | injector/baseline req/s | baseline/injector CPU | the same without a cluster: req/s | CPU |');
  console.log('|---|---|---|---|---|');
  for (const [mix, m] of Object.entries(figures.mixes)) {
    const [a, b] = [m.ratioToBaseline, m.noClusterRatioToBaseline];
    console.log(`| ${mix} | ${a.requestsPerSecond} | ${a.cpuPerAdmission} | ${b.requestsPerSecond} | ${b.cpuPerAdmission} |`);
  }
}
console.log('\nper admission in process (handler + response JSON, body already parsed), µs, by containers (rows) and annotations (columns):');
console.log('| containers | 1 | 100 | 1000 |');
console.log('|---|---|---|---|');
for (const containers of [1, 10, 40]) {
  console.log(`| ${containers} | ${series.filter((s) => s.containers === containers).map((s) => s.microsPerAdmission).join(' | ')} |`);
}
if (process.env['BENCH_JSON']) {
  mkdirSync(dirname(process.env['BENCH_JSON']), { recursive: true });
  writeFileSync(process.env['BENCH_JSON'], `${JSON.stringify(figures, null, 2)}\n`);
}
// The fake API and the cluster context's watches would keep this process alive after its last figure.
process.exit(0);
