/**
 * What the benchmarks that run `proxy-injector serve` as a process share: the image's memory flags, its start, reviews,
 * and the median of repeated measures.
 */
import { readFileSync } from 'node:fs';
import { request } from 'node:https';
import { join } from 'node:path';

/** The image's NODE_OPTIONS, read from the Dockerfile so that the two cannot drift apart. */
export function imageNodeOptions(root) {
  const dockerfile = readFileSync(join(root, 'Dockerfile'), 'utf8');
  const nodeOptions = /^ENV NODE_OPTIONS="([^"]*)"/m.exec(dockerfile)?.[1];
  if (!nodeOptions) throw new Error('no ENV NODE_OPTIONS="..." line in the Dockerfile');
  return nodeOptions;
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
