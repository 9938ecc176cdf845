/**
 * What the benchmarks share, most of them running `proxy-injector serve` as a process: the image's memory flags, its
 * start, reviews, pinning to a core, a process's CPU time and resident memory, and the median of repeated measures.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { request } from 'node:https';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The image's NODE_OPTIONS, read from the Dockerfile so that the two cannot drift apart. */
export function imageNodeOptions(root) {
  const dockerfile = readFileSync(join(root, 'Dockerfile'), 'utf8');
  const nodeOptions = /^ENV NODE_OPTIONS="([^"]*)"/m.exec(dockerfile)?.[1];
  if (!nodeOptions) throw new Error('no ENV NODE_OPTIONS="..." line in the Dockerfile');
  return nodeOptions;
}

let pinnable;
/** Whether processes can be pinned to a core here (Linux with taskset); asked once. */
export function canPin() {
  pinnable ??= process.platform === 'linux' && spawnSync('taskset', ['-c', '0', 'true']).status === 0;
  return pinnable;
}

/**
 * Where processes can be pinned and this one is not yet: runs the script at `scriptUrl` again on CPU `core`, with this
 * process's Node flags and arguments, and exits with its status. Returns otherwise.
 */
export function runOnCore(scriptUrl, core) {
  if (!canPin() || process.env['BENCH_PINNED'] !== undefined) return;
  const args = [...process.execArgv, fileURLToPath(scriptUrl), ...process.argv.slice(2)];
  const run = spawnSync('taskset', ['-c', String(core), process.execPath, ...args], { stdio: 'inherit', env: { ...process.env, BENCH_PINNED: '1' } });
  process.exit(run.status ?? 1);
}

/** runOnCore on CPU 1, the load's core (servers go on CPU 0, onServerCore). */
export function runOnLoadCore(scriptUrl) {
  runOnCore(scriptUrl, 1);
}

/** The command and its arguments that run Node with `args` on CPU 0, the servers' core (unpinned where it cannot be). */
export function onServerCore(args) {
  return canPin() ? ['taskset', ['-c', '0', process.execPath, ...args]] : [process.execPath, args];
}

let clockTicks;
/** CPU seconds (user and system) the process `pid` has used, from /proc. */
export function cpuSecondsOf(pid) {
  clockTicks ??= Number(spawnSync('getconf', ['CLK_TCK']).stdout?.toString().trim() || '100');
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(fields[11]) + Number(fields[12])) / clockTicks;
}

/** The resident memory of the process `pid`, in MiB, from /proc (0 when it cannot be read there). */
export function rssMiBOf(pid) {
  return Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) / 1024;
}

const atExit = [];
let exitsOnSignals = false;

/**
 * Makes SIGINT and SIGTERM end this process through process.exit (with 130 and 143), so that every 'exit' handler
 * runs: by default a signal ends a Node process without them, and what they would have stopped keeps running.
 */
export function exitOnSignals() {
  if (exitsOnSignals) return;
  exitsOnSignals = true;
  for (const [signal, number] of [['SIGINT', 2], ['SIGTERM', 15]]) process.on(signal, () => process.exit(128 + number));
}

/**
 * Runs `task` when this process ends, however it ends: its last line, process.exit, an uncaught exception, SIGINT or
 * SIGTERM.
 */
export function whenThisProcessEnds(task) {
  if (atExit.length === 0) {
    process.on('exit', () => {
      for (const t of atExit) t();
    });
    exitOnSignals();
  }
  atExit.push(task);
}

/**
 * A spawned server, killed when this process ends if it still runs. Left running, it would keep its port and its
 * memory, and hold the output of whoever piped this process's, which then never ends.
 */
export function endsWithThisProcess(child) {
  whenThisProcessEnds(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
  return child;
}

/** The middle value of repeated measures (the upper of the two middle ones for an even count). */
export const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

const EXAMPLE_TRUST_ANCHORS = fileURLToPath(new URL('../examples/trust-anchors.pem', import.meta.url));

/**
 * The arguments (after node's own) of `serve` from a build's dist/: the webhook on loopback at `port` (0: any free
 * one), the admin port on any, the key pair in `tlsDir` and JSON logs; in the cluster `kubeconfig` names, as in
 * production, or without one `--no-cluster` with the example trust anchors.
 */
export function serveArgs(dist, tlsDir, port = 0, kubeconfig = undefined) {
  const source = kubeconfig ? ['--kubeconfig', kubeconfig] : ['--no-cluster', '--trust-anchors', EXAMPLE_TRUST_ANCHORS];
  return [join(dist, 'cli', 'main.js'), 'serve', ...source, '--addr', `127.0.0.1:${port}`, '--admin-addr', '127.0.0.1:0', '--tls-dir', tlsDir, '--log-format', 'json'];
}

/** The webhook URL and admin base URL from the "proxy-injector listening" line of a server logging JSON to stdout. */
export function listeningUrls(server) {
  return new Promise((resolve, reject) => {
    let seen = '';
    const onData = (chunk) => {
      seen += chunk;
      for (const line of seen.split('\n')) {
        if (!line.includes('proxy-injector listening')) continue;
        const entry = JSON.parse(line);
        server.stdout.off('data', onData);
        resolve({ webhook: new URL(entry.webhook), admin: entry.admin });
      }
    };
    server.stdout.on('data', onData);
    server.on('exit', (code) => reject(new Error(`server exited with ${code}`)));
  });
}

/** POSTs one review body to the webhook (10 s at most) and resolves with the status and the answer's text. */
export function postReview(webhook, agent, body) {
  return new Promise((resolve, reject) => {
    const req = request(
      { hostname: webhook.hostname, port: webhook.port, path: '/', method: 'POST', agent, timeout: 10_000,
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } },
      (res) => {
        const chunks = [];
        res.on('data', (c) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode, text: Buffer.concat(chunks).toString() }));
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(new Error('timed out')));
    req.on('error', reject);
    req.end(body);
  });
}
