/**
 * What the fault suites watch while an attack runs: the server's memory and how long `/live` takes, and a client that
 * posts one review over a connection of its own (from a given local address) and reads whatever comes back.
 */
import { readFileSync } from 'node:fs';
import { get } from 'node:http';
import { request } from 'node:https';
import type { Injector } from './injector.js';

/** The chart's memory limit for the injector's container. */
export const CHART_MEMORY_LIMIT_MIB = 256;

export const rssMiB = (pid: number): number => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) / 1024;

export interface Health {
  maxRssMiB: number;
  /** The longest `/live` took to answer, ms (a failed probe counts the time until it failed). */
  maxLiveMs: number;
  liveFailures: number;
  probes: number;
}

/** Samples the process's RSS and the time `/live` takes to answer, every 50 ms, until stopped. */
export function watchHealth(target: Injector): { stop(): Promise<Health> } {
  const health: Health = { maxRssMiB: 0, maxLiveMs: 0, liveFailures: 0, probes: 0 };
  let running = true;
  const loop = (async () => {
    while (running) {
      health.maxRssMiB = Math.max(health.maxRssMiB, rssMiB(target.child.pid ?? 0));
      const started = performance.now();
      const ok = await new Promise<boolean>((resolve) => {
        const req = get(`${target.adminUrl}/live`, { agent: false, timeout: 9_000 }, (res) => {
          res.resume();
          res.on('end', () => resolve(res.statusCode === 200));
        });
        req.on('timeout', () => req.destroy());
        req.on('error', () => resolve(false));
      });
      health.probes++;
      if (!ok) health.liveFailures++;
      health.maxLiveMs = Math.max(health.maxLiveMs, performance.now() - started);
      await new Promise((r) => setTimeout(r, 50));
    }
  })();
  return {
    async stop() {
      running = false;
      await loop;
      return health;
    },
  };
}

export interface Answer {
  status: number;
  ms: number;
  response: { allowed?: boolean; warnings?: string[]; status?: { message?: string }; patch?: string } | undefined;
  text: string;
}

/** POSTs a body over a connection of its own (or `localAddress`'s) and reads the answer, however it ends. */
export function postTo(target: Injector, ca: string, body: string, options: { localAddress?: string; headers?: Record<string, string> } = {}): Promise<Answer> {
  const url = new URL(target.webhookUrl);
  const started = performance.now();
  return new Promise((resolve) => {
    const req = request(
      {
        hostname: url.hostname,
        port: url.port,
        path: '/',
        method: 'POST',
        ca,
        servername: 'localhost',
        agent: false,
        ...(options.localAddress && { localAddress: options.localAddress }),
        headers: options.headers ?? { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let response: Answer['response'];
          try {
            response = (JSON.parse(text) as { response: Answer['response'] }).response;
          } catch {
            response = undefined;
          }
          resolve({ status: res.statusCode ?? 0, ms: performance.now() - started, response, text });
        });
      },
    );
    req.on('error', (err: NodeJS.ErrnoException) => resolve({ status: 0, ms: performance.now() - started, response: undefined, text: err.code ?? err.message }));
    req.end(body);
  });
}
