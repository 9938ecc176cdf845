/**
 * `npm run bench:startup`: what start-up costs, by module. For each module `serve` may load, a fresh Node process
 * (with the Dockerfile's NODE_OPTIONS) imports it alone and reports the time the import took and the resident memory
 * it added over a process that imported nothing; then `proxy-injector serve --no-cluster` is started and timed to its
 * "listening" line, with its idle RSS. Each figure is the median of BENCH_RUNS (7) runs.
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { endsWithThisProcess, imageNodeOptions, listeningUrls, median, rssMiBOf, serveArgs, whenThisProcessEnds } from './serve-process.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const runs = Number(process.env['BENCH_RUNS'] ?? '7');
const nodeOptions = imageNodeOptions(root);
const env = { ...process.env, NODE_OPTIONS: nodeOptions, KUBECONFIG: '' };

/** Modules by what loads them: the webhook's own path always, the others only when their feature is used. */
const MODULES = [
  ['pino', 'logging, always'],
  ['prom-client', 'metrics, once the listeners are up (it loads @opentelemetry/api)'],
  ['secure-json-parse', 'request bodies that could carry a prototype key'],
  ['./dist/engine/index.js', 'the injection engine, always'],
  ['./dist/server/index.js', 'the listeners, metrics and logging, always'],
  ['./dist/cluster/index.js', 'the cluster client and caches, with cluster credentials'],
  ['selfsigned', 'only to generate a serving certificate'],
  ['yaml', 'only to read a values file'],
  ['@kubernetes/client-node', 'only for a kubeconfig with an exec plugin, auth provider, impersonation or proxy'],
];

/** Import time and RSS after a settled GC, in a fresh process; `spec` empty imports nothing. */
function measure(spec) {
  const script = `
    const before = performance.now();
    ${spec ? `await import(${JSON.stringify(spec.startsWith('./') ? join(root, spec) : spec)});` : ''}
    const ms = performance.now() - before;
    globalThis.gc?.(); await new Promise((r) => setTimeout(r, 50)); globalThis.gc?.();
    console.log(JSON.stringify({ ms, rss: process.memoryUsage().rss / 1048576 }));`;
  const out = spawnSync(process.execPath, ['--expose-gc', '--input-type=module', '-e', script], { cwd: root, env, encoding: 'utf8' });
  if (out.status !== 0) throw new Error(`importing ${spec}: ${out.stderr}`);
  return JSON.parse(out.stdout);
}

const baseline = median(Array.from({ length: runs }, () => measure('').rss));
const rows = MODULES.map(([spec, when]) => {
  const samples = Array.from({ length: runs }, () => measure(spec));
  return { module: spec.replace('./dist/', 'dist/'), when, importMs: Math.round(median(samples.map((s) => s.ms))), addedRssMiB: Number((median(samples.map((s) => s.rss)) - baseline).toFixed(1)) };
});

/** `serve --no-cluster` from spawn to its "listening" line, and its RSS once idle. */
async function serveOnce(dir) {
  const started = performance.now();
  const child = spawn(process.execPath, serveArgs(join(root, 'dist'), join(dir, 'tls')), { env: { ...env, HOME: dir }, stdio: ['ignore', 'pipe', 'inherit'] });
  endsWithThisProcess(child);
  await listeningUrls(child);
  const readyMs = performance.now() - started;
  child.stdout.resume();
  await new Promise((r) => setTimeout(r, 500));
  const rss = rssMiBOf(child.pid);
  child.kill('SIGTERM');
  await new Promise((r) => child.on('exit', r));
  return { readyMs, rss };
}

const dir = mkdtempSync(join(tmpdir(), 'proxy-injector-startup-'));
whenThisProcessEnds(() => rmSync(dir, { recursive: true, force: true }));
await serveOnce(dir); // generates the certificate, so that the runs measured read it
const serves = [];
for (let i = 0; i < runs; i++) serves.push(await serveOnce(dir));

console.log(`start-up: node ${process.version}, NODE_OPTIONS="${nodeOptions}", median of ${runs} runs; an empty process is ${baseline.toFixed(1)} MiB`);
console.log('| module | loaded | import ms | RSS added MiB |');
console.log('|---|---|---|---|');
for (const r of rows) console.log(`| ${r.module} | ${r.when} | ${r.importMs} | ${r.addedRssMiB} |`);
console.log(`\n\`serve --no-cluster\`: ready (spawn to "listening") ${Math.round(median(serves.map((s) => s.readyMs)))} ms, idle RSS ${median(serves.map((s) => s.rss)).toFixed(1)} MiB`);
