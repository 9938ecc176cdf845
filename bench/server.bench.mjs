/**
 * Webhook throughput and latency over HTTPS: `proxy-injector serve` (the compiled dist/) pinned to CPU 0 with info
 * logging to /dev/null, loaded from CPU 1 by autocannon with keep-alive connections, as kube-apiserver keeps them.
 * Each request is the sample AdmissionReview (a pod that gets injected).
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const seconds = Number(process.env['BENCH_SECONDS'] ?? '10');
const connections = Number(process.env['BENCH_CONNECTIONS'] ?? '8');
const canPin = process.platform === 'linux' && spawnSync('taskset', ['-c', '0', 'true']).status === 0;

if (canPin && process.env['BENCH_PINNED'] === undefined) {
  const run = spawnSync('taskset', ['-c', '1', process.execPath, fileURLToPath(import.meta.url)], {
    stdio: 'inherit',
    env: { ...process.env, BENCH_PINNED: '1' },
  });
  process.exit(run.status ?? 1);
}

const dir = mkdtempSync(join(tmpdir(), 'proxy-injector-bench-'));
const port = 20000 + Math.floor(Math.random() * 20000);
const adminPort = port + 1;
const serverArgs = [join(root, 'dist', 'cli', 'main.js'), 'serve', '--addr', `127.0.0.1:${port}`, '--admin-addr', `127.0.0.1:${adminPort}`,
  '--tls-dir', join(dir, 'tls'), '--trust-anchors', join(root, 'examples', 'trust-anchors.pem'), '--log-format', 'json'];
const server = canPin
  ? spawn('taskset', ['-c', '0', process.execPath, ...serverArgs], { stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env, KUBECONFIG: '', HOME: dir } })
  : spawn(process.execPath, serverArgs, { stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env, KUBECONFIG: '', HOME: dir } });
await new Promise((resolve, reject) => {
  let seen = '';
  server.stdout.on('data', (chunk) => {
    seen += chunk;
    if (seen.includes('proxy-injector listening')) resolve();
  });
  server.on('exit', (code) => reject(new Error(`server exited with ${code}`)));
});
// From now on the log goes nowhere, as it would to a log collector that keeps up.
server.stdout.removeAllListeners('data');
server.stdout.resume();

/** The server's own CPU seconds, from its metrics: the load generator's limits do not count against it. */
async function serverCpuSeconds() {
  const text = await (await fetch(`http://127.0.0.1:${adminPort}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith('process_cpu_seconds_total '));
  return Number(line?.split(' ')[1]);
}

const body = readFileSync(join(root, 'examples', 'admission-review.json'), 'utf8');
let cpuBefore = 0;
let bad = 0;
// Warm up first, separately, so the CPU reading covers only the measured run.
await autocannon({ url: `https://127.0.0.1:${port}/`, method: 'POST', headers: { 'content-type': 'application/json' }, body, connections, duration: 2 });
cpuBefore = await serverCpuSeconds();
const result = await autocannon({
  url: `https://127.0.0.1:${port}/`,
  method: 'POST',
  headers: { 'content-type': 'application/json' },
  body,
  connections,
  duration: seconds,
  verifyBody: (text) => {
    const ok = text.includes('"patchType":"JSONPatch"');
    if (!ok) bad++;
    return ok;
  },
});
const cpuSeconds = (await serverCpuSeconds()) - cpuBefore;
server.kill('SIGTERM');
await new Promise((r) => server.on('exit', r));
rmSync(dir, { recursive: true, force: true });

const l = result.latency;
console.log(`webhook benchmark: node ${process.version}, ${seconds}s, ${connections} keep-alive connections, server pinned to one core: ${canPin ? 'yes' : 'no'}`);
console.log(`  requests/s: ${Math.round(result.requests.average)} (${result.requests.total} in total, ${result.non2xx} non-2xx, ${result.errors} errors, ${bad} without a patch)`);
console.log(`  latency ms: p50 ${l.p50}, p90 ${l.p90}, p99 ${l.p99}, max ${l.max}`);
const perRequest = (cpuSeconds / result.requests.total) * 1e6;
console.log(`  server CPU per admission: ${perRequest.toFixed(0)} µs (TLS, HTTP, JSON, engine, metrics, logging), so one core can serve about ${Math.round(1e6 / perRequest)}/s`);
writeFileSync(join(root, 'bench', 'last-server-run.json'), `${JSON.stringify({ seconds, connections, requestsPerSecond: result.requests.average, cpuMicrosPerRequest: perRequest, latency: l, errors: result.errors, non2xx: result.non2xx }, null, 2)}\n`);
