/**
 * `npm run bench:rate`: `proxy-injector serve` at the rates a cluster sends, rather than as fast as it can answer.
 *
 * For each mix (bench/reviews.mjs) and rate, `serve` from dist/ (and BENCH_BASELINE's, when given) runs, as a cluster
 * runs it with `--kubeconfig` to a fake API server (bench/fake-cluster.mjs: the reviews' namespace, owners and Linkerd's
 * ConfigMaps) and again with `--no-cluster` and the same configuration from files, pinned to CPU 0 with the Dockerfile's NODE_OPTIONS, is loaded from CPU 1 by autocannon at that many reviews a second
 * in all over 16 keep-alive connections (after two seconds of the same load, not counted), twice per build in turn, and
 * reports the reviews answered a second, the CPU per admission read from /proc, and the latency's median and 99th
 * percentile. Responses are counted, not checked: bench:server checks them on both paths.
 *
 * Environment: BENCH_RATES (100,400), BENCH_MIXES (rollout,distinct), BENCH_SECONDS (8), BENCH_BASELINE (another
 * build's dist/ inside this repository).
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import { startFakeCluster } from './fake-cluster.mjs';
import { clusterOf, MIXES } from './reviews.mjs';
import { cpuSecondsOf, endsWithThisProcess, imageNodeOptions, listeningUrls, onServerCore, runOnLoadCore, serveArgs, whenThisProcessEnds } from './serve-process.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const rates = (process.env['BENCH_RATES'] ?? '100,400').split(',').map(Number);
const mixes = (process.env['BENCH_MIXES'] ?? 'rollout,distinct').split(',');
const seconds = Number(process.env['BENCH_SECONDS'] ?? '8');
const builds = [join(root, 'dist'), ...(process.env['BENCH_BASELINE'] ? [resolve(process.env['BENCH_BASELINE'])] : [])];
for (const mix of mixes) {
  if (!MIXES[mix]) {
    console.error(`bench: no mix ${JSON.stringify(mix)}; the mixes are ${Object.keys(MIXES).join(', ')}`);
    process.exit(2);
  }
}

runOnLoadCore(import.meta.url);

const dir = mkdtempSync(join(tmpdir(), 'proxy-injector-rate-'));
whenThisProcessEnds(() => rmSync(dir, { recursive: true, force: true }));
const nodeOptions = imageNodeOptions(root);
const kubeconfig = (await startFakeCluster(clusterOf(500))).kubeconfig(dir);

function load(url, bodies, duration, rate) {
  let next = 0;
  return autocannon({
    url,
    connections: 16,
    duration,
    overallRate: rate,
    requests: [{ method: 'POST', headers: { 'content-type': 'application/json' }, setupRequest: (req) => ({ ...req, body: bodies[next++ % bodies.length] }) }],
  });
}

console.log(`bench: fixed rates under Node ${process.versions.node}, NODE_OPTIONS="${nodeOptions}", ${seconds} s per round, 16 connections`);
console.log('| mix | reviews/s asked | build | path | reviews/s answered | CPU µs/admission | p50 ms | p99 ms |');
console.log('|---|---|---|---|---|---|---|---|');
for (const mix of mixes) {
  const bodies = MIXES[mix](500);
  for (const rate of rates) {
    for (let round = 0; round < 2; round++) {
      for (const [build, path] of builds.flatMap((b) => [[b, 'cluster'], [b, 'no-cluster']])) {
        const args = serveArgs(build, join(dir, 'tls'), 0, path === 'cluster' ? kubeconfig : undefined);
        const child = endsWithThisProcess(spawn(...onServerCore(args), { stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env, KUBECONFIG: '', HOME: dir, NODE_OPTIONS: nodeOptions } }));
        const { webhook } = await listeningUrls(child);
        child.stdout.resume();
        const url = `https://127.0.0.1:${webhook.port}/`;
        await load(url, bodies, 2, rate);
        const before = cpuSecondsOf(child.pid);
        const result = await load(url, bodies, seconds, rate);
        const cpu = cpuSecondsOf(child.pid) - before;
        child.kill('SIGTERM');
        await new Promise((r) => child.once('exit', r));
        const name = relative(root, build) || build;
        console.log(`| ${mix} | ${rate} | ${name} | ${path} | ${Math.round(result.requests.average)} | ${Math.round((cpu * 1e6) / result.requests.total)} | ${result.latency.p50} | ${result.latency.p99} |`);
      }
    }
  }
}
process.exit(0);
