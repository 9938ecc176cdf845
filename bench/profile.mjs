/**
 * `npm run bench:profile`: where `proxy-injector serve` spends its CPU under a request mix, by kind of work.
 *
 * For each mix (bench/reviews.mjs), `serve` from a build's dist/ runs under V8's sampling profiler
 * (`--cpu-prof`, a sample every 100 µs) with the Dockerfile's NODE_OPTIONS, pinned to CPU 0, and is loaded from CPU 1
 * by autocannon (16 keep-alive connections, after two seconds of warm-up): in a cluster behind a fake API server, as
 * bench:server runs it, or with `--no-cluster`. Then the profile's samples are put into
 * kinds of work by the stack they were taken in (the first rule that matches, top to bottom in KINDS below) and printed
 * as shares of the busy time, with the µs per admission each share makes of the CPU the process used while loaded, and
 * the functions that used the most time themselves. Start-up is left out.
 *
 * The profiler costs time of its own, more the deeper the stacks: a share is the figure to compare, not the µs (those
 * without the profiler come from bench:server). Responses are counted, not checked: bench:server checks them.
 *
 * Environment: BENCH_PATH (cluster, or no-cluster), BENCH_MIXES (rollout,distinct), BENCH_SECONDS (10), BENCH_CONNECTIONS (16), BENCH_DIST (dist; another
 * build's dist/ inside this repository, such as a BENCH_BASELINE copy, to profile that build the same way), BENCH_TOP
 * (functions listed per mix, 12).
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import { startFakeCluster } from './fake-cluster.mjs';
import { clusterOf, MIXES } from './reviews.mjs';
import { cpuSecondsOf, endsWithThisProcess, imageNodeOptions, listeningUrls, onServerCore, runOnLoadCore, serveArgs, whenThisProcessEnds } from './serve-process.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const mixes = (process.env['BENCH_MIXES'] ?? 'rollout,distinct').split(',');
const seconds = Number(process.env['BENCH_SECONDS'] ?? '10');
const connections = Number(process.env['BENCH_CONNECTIONS'] ?? '16');
const top = Number(process.env['BENCH_TOP'] ?? '12');
const dist = resolve(root, process.env['BENCH_DIST'] ?? 'dist');
const path = process.env['BENCH_PATH'] ?? 'cluster';
if (path !== 'cluster' && path !== 'no-cluster') {
  console.error(`bench: BENCH_PATH ${JSON.stringify(path)}: cluster or no-cluster`);
  process.exit(2);
}
for (const mix of mixes) {
  if (!MIXES[mix]) {
    console.error(`bench: no mix ${JSON.stringify(mix)}; the mixes are ${Object.keys(MIXES).join(', ')}`);
    process.exit(2);
  }
}
if (!existsSync(join(dist, 'cli', 'main.js'))) {
  console.error(`bench: ${dist} has no cli/main.js: BENCH_DIST names a build's dist/ directory`);
  process.exit(2);
}

runOnLoadCore(import.meta.url);

/**
 * Kinds of work, tried in this order on each sample's stack (leaf first). The names are this project's functions and
 * node's; a build whose functions are named otherwise puts their time under the kinds that still match, or "the rest".
 */
const KINDS = [
  ['start-up', (stack) => stack.some((f) => /run_main|esm\/loader|compileSourceTextModule|wrapSafe/.test(f))],
  ['TLS encryption and socket writes', (stack) => /^(writev|writeUtf8String|writeBuffer|writeLatin1String|writeAsciiString) $/.test(stack[0])],
  ['garbage collection', (stack) => stack[0].startsWith('(garbage collector)')],
  ['V8 outside any function', (stack) => stack[0].startsWith('(program)')],
  ['request JSON parsing', (stack) => /^(parse |_parse .*secure-json-parse)/.test(stack[0]) || stack.some((f) => /^(parseJson|defaultJsonParser) /.test(f))],
  ['engine (inject)', (stack) => stack.some((f) => /^inject .*\/engine\/inject\.js$/.test(f))],
  ['patch JSON and base64', (stack) => /^(evaluate|handleAdmission|stringify) /.test(stack[0]) || /^base64Slice /.test(stack[0])],
  ['answer cache', (stack) => stack.some((f) => f.includes('/admission/template-answer-lru.js'))],
  // fastify's serialize: builds before 24 November answered through fastify.
  ['response JSON', (stack) => stack.some((f) => /^(answerBody|reviewHeadOf|serializeReview) /.test(f) || /^serialize .*\/fastify\//.test(f))],
  ['log line', (stack) => stack.some((f) => /\/server\/logger\.js$|^logAdmission |\/pino\//.test(f))],
  ['metrics', (stack) => stack.some((f) => /\/server\/(metrics|metric-labels)\.js$|\/prom-client\//.test(f))],
  ['the rest (node:http, streams, timers, the handler around these)', () => true],
];

/** Shares of busy samples by kind, and by function (self time), start-up left out. */
function summarise(profile) {
  const nodes = new Map(profile.nodes.map((n) => [n.id, n]));
  const parents = new Map();
  for (const n of profile.nodes) for (const child of n.children ?? []) parents.set(child, n.id);
  const frame = (n) => `${n.callFrame.functionName || '(anonymous)'} ${n.callFrame.url.replace(/^file:\/\//, '').replace(root + '/', '')}`;
  const hits = new Map();
  for (const id of profile.samples) hits.set(id, (hits.get(id) ?? 0) + 1);
  const kinds = new Map();
  const self = new Map();
  let busy = 0;
  for (const [id, count] of hits) {
    const leaf = nodes.get(id);
    if (leaf.callFrame.functionName === '(idle)') continue;
    const stack = [];
    for (let at = id; at !== undefined; at = parents.get(at)) stack.push(frame(nodes.get(at)));
    const kind = KINDS.find(([, matches]) => matches(stack))[0];
    if (kind === 'start-up') continue;
    busy += count;
    kinds.set(kind, (kinds.get(kind) ?? 0) + count);
    const where = `${frame(leaf)}:${leaf.callFrame.lineNumber + 1}`;
    self.set(where, (self.get(where) ?? 0) + count);
  }
  const sorted = (m) => [...m].sort((a, b) => b[1] - a[1]).map(([name, count]) => ({ name, share: count / busy }));
  return { busy, kinds: sorted(kinds), self: sorted(self) };
}

const dir = mkdtempSync(join(tmpdir(), 'proxy-injector-profile-'));
whenThisProcessEnds(() => rmSync(dir, { recursive: true, force: true }));

async function load(url, bodies, duration) {
  let next = 0;
  return autocannon({
    url,
    connections,
    duration,
    requests: [{ method: 'POST', headers: { 'content-type': 'application/json' }, setupRequest: (req) => ({ ...req, body: bodies[next++ % bodies.length] }) }],
  });
}

const pct = (share) => `${(100 * share).toFixed(1).padStart(5)}%`;
const nodeOptions = imageNodeOptions(root);
const fakeCluster = path === 'cluster' ? await startFakeCluster(clusterOf(500)) : undefined;
const kubeconfig = fakeCluster?.kubeconfig(dir);
console.log(`bench: profiling ${relative(root, dist) || dist} (${path}) under Node ${process.versions.node}, NODE_OPTIONS="${nodeOptions}", ${seconds} s per mix, ${connections} connections`);
for (const mix of mixes) {
  const profiles = join(dir, mix);
  const args = ['--cpu-prof', '--cpu-prof-dir', profiles, '--cpu-prof-interval', '100', ...serveArgs(dist, join(dir, 'tls'), 0, kubeconfig)];
  const child = endsWithThisProcess(
    spawn(...onServerCore(args), {
      stdio: ['ignore', 'pipe', 'inherit'],
      env: { ...process.env, KUBECONFIG: '', HOME: dir, NODE_OPTIONS: nodeOptions },
    }),
  );
  const { webhook } = await listeningUrls(child);
  child.stdout.resume();
  const url = `https://127.0.0.1:${webhook.port}/`;
  const bodies = MIXES[mix](500);
  await load(url, bodies, 2);
  const before = cpuSecondsOf(child.pid);
  const result = await load(url, bodies, seconds);
  const cpu = cpuSecondsOf(child.pid) - before;
  child.kill('SIGTERM');
  await new Promise((r) => child.once('exit', r));
  const file = readdirSync(profiles).find((f) => f.endsWith('.cpuprofile'));
  if (!file) {
    console.error(`bench: ${mix}: the server wrote no profile`);
    process.exit(1);
  }
  const { busy, kinds, self } = summarise(JSON.parse(readFileSync(join(profiles, file), 'utf8')));
  const admissions = result.requests.total;
  const micros = (cpu * 1e6) / admissions;
  const failed = result.non2xx + result.errors + result.timeouts;
  console.log(`\n${mix}: ${admissions} admissions (${failed} failed), ${Math.round(result.requests.average)} req/s, ${micros.toFixed(0)} µs of CPU per admission with the profiler on, ${busy} busy samples`);
  for (const { name, share } of kinds) console.log(`  ${pct(share)} ${(share * micros).toFixed(0).padStart(4)} µs  ${name}`);
  console.log(`  functions by their own time:`);
  for (const { name, share } of self.slice(0, top)) console.log(`  ${pct(share)}  ${name}`);
  if (failed > 0) process.exitCode = 1;
}
await fakeCluster?.close();
