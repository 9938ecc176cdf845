/**
 * The faults suite's pieces: `proxy-injector serve` from dist/ as a real process, the answer the engine gives for a
 * review (what every response must equal), and a well-behaved client that sends reviews as kube-apiserver does and
 * keeps count of what it saw.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { get } from 'node:http';
import { Agent, request } from 'node:https';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { isDeepStrictEqual } from 'node:util';
import { handleAdmission } from '../../../src/admission/handler.js';
import { defaultValues, withCheckedTrustAnchors } from '../../../src/engine/index.js';
import { admissionReview, reviewResponse } from '../../support/admission.js';
import type { AttackPlan, AttackReport } from './attack-process.js';
import { pod } from '../../support/engine.js';
import { listeningUrls } from '../../support/process.js';

export const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
const anchorsPath = join(root, 'examples', 'trust-anchors.pem');

/** FAULTS_LONG=1 runs each scenario for minutes instead of seconds. */
export const LONG = /^(1|true|yes)$/i.test(process.env['FAULTS_LONG'] ?? '');

export interface Injector {
  child: ChildProcess;
  host: string;
  port: number;
  adminUrl: string;
  webhookUrl: string;
  /** Every line the process wrote, stdout and stderr. */
  logs: string[];
  exited: Promise<number | null>;
}

const children = new Set<ChildProcess>();
const dirs: string[] = [];

/** Kills what is still running and removes the temporary directories; for afterAll. */
export function cleanUp(): void {
  for (const child of children) child.kill('SIGKILL');
  children.clear();
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
}

/** A directory with a generated CA and serving certificate, shared by the injectors of one test. */
export function tlsDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'proxy-injector-faults-'));
  dirs.push(dir);
  return join(dir, 'tls');
}

export const caOf = (dir: string): string => readFileSync(join(dir, 'ca.crt'), 'utf8');

/**
 * Starts `serve --no-cluster` (or with `kubeconfig`'s cluster) on loopback from the built dist/ and resolves once it
 * listens; `nodeOptions` as the image's, when the memory it may take matters.
 */
export async function startInjector(tls: string, extra: string[] = [], options: { nodeOptions?: string; addr?: string; kubeconfig?: string } = {}): Promise<Injector> {
  const cluster = options.kubeconfig === undefined ? ['--no-cluster'] : ['--kubeconfig', options.kubeconfig];
  const child = spawn(
    process.execPath,
    [join(root, 'dist', 'cli', 'main.js'), 'serve', ...cluster, '--addr', options.addr ?? '127.0.0.1:0', '--admin-addr', '127.0.0.1:0',
      '--tls-dir', tls, '--trust-anchors', anchorsPath, '--log-format', 'json', ...extra],
    { cwd: root, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, KUBECONFIG: '', ...(options.nodeOptions !== undefined && { NODE_OPTIONS: options.nodeOptions }) } },
  );
  children.add(child);
  const logs: string[] = [];
  const exited = new Promise<number | null>((resolve) =>
    child.on('exit', (code) => {
      children.delete(child);
      resolve(code);
    }),
  );
  const urls = await listeningUrls(child, logs, exited);
  const webhook = new URL(urls.webhook);
  return { child, host: webhook.hostname, port: Number(webhook.port), adminUrl: urls.admin, webhookUrl: urls.webhook, logs, exited };
}

/** GET /ready on the admin port: its status code, or 0 when nothing answers. */
export function readyStatus(adminUrl: string): Promise<number> {
  return new Promise((resolve) => {
    const req = get(`${adminUrl}/ready`, { timeout: 1000 }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on('timeout', () => req.destroy());
    req.on('error', () => resolve(0));
  });
}

// As serve reads its --trust-anchors: checked and trimmed.
const values = withCheckedTrustAnchors(defaultValues(), { pem: readFileSync(anchorsPath, 'utf8'), source: anchorsPath }, 'the embedded defaults');
const config = { values, controlPlaneNamespace: 'linkerd' };

/** A review of a pod that asks for injection, and the exact response body (parsed) the engine gives for it. */
export async function reviewWithAnswer(name: string): Promise<{ body: string; expected: unknown }> {
  const review = admissionReview(pod({ annotations: { 'linkerd.io/inject': 'enabled' } }), { uid: name });
  const handled = await handleAdmission(review['request'], { config: () => config, namespaceAnnotations: () => undefined });
  if (handled.response.patchType !== 'JSONPatch') throw new Error('the reference review is not injected');
  return { body: JSON.stringify(review), expected: JSON.parse(JSON.stringify(reviewResponse(review['apiVersion'] as Parameters<typeof reviewResponse>[0], handled.response))) };
}

export interface ClientTally {
  sent: number;
  /** Responses that said `Connection: close` (the server asking not to reuse the connection). */
  closes: number;
  failures: string[];
  latenciesMs: number[];
}

export function percentile(values: number[], p: number): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? NaN;
}

/** One POST of `body`; resolves with the status and body, rejects on any connection error or after 10 s. */
function post(host: string, port: number, ca: string, body: string, agent: Agent | false): Promise<{ status: number; text: string; close: boolean }> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host,
        port,
        path: '/',
        method: 'POST',
        ca,
        servername: 'localhost',
        agent,
        // kube-apiserver's own deadline for a webhook call.
        timeout: 10_000,
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8'), close: res.headers.connection === 'close' }));
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(new Error('no answer within 10 s')));
    req.on('error', reject);
    req.end(body);
  });
}

export interface ClientOptions {
  host: string;
  port: number;
  ca: string;
  /** Concurrent senders; each sends its next review as soon as the previous one is answered. */
  workers: number;
  /** Reuse connections (as kube-apiserver does) or open one per review. */
  keepAlive: boolean;
  /** Pause between one worker's reviews, ms. */
  pauseMs: number;
  until: () => boolean;
}

/**
 * Sends real AdmissionReviews until `until()` says stop, checking every answer against the engine's: a connection
 * error, a status other than 200 or a body that differs from the expected one is a failure, recorded with its reason.
 */
export async function wellBehavedClient(options: ClientOptions, tally: ClientTally): Promise<void> {
  const agent = options.keepAlive ? new Agent({ keepAlive: true, maxSockets: options.workers }) : false;
  const worker = async (w: number): Promise<void> => {
    for (let i = 0; !options.until(); i++) {
      const { body, expected } = await reviewWithAnswer(`good-${options.keepAlive ? 'ka' : 'new'}-${w}-${i}`);
      const started = performance.now();
      tally.sent++;
      try {
        const res = await post(options.host, options.port, options.ca, body, agent);
        tally.latenciesMs.push(performance.now() - started);
        if (res.close && options.keepAlive) tally.closes++;
        if (res.status !== 200) tally.failures.push(`status ${res.status}: ${res.text.slice(0, 200)}`);
        else if (!isDeepStrictEqual(JSON.parse(res.text), expected)) tally.failures.push(`unexpected answer: ${res.text.slice(0, 200)}`);
      } catch (err) {
        tally.failures.push(`${(err as Error).message}`);
      }
      if (options.pauseMs > 0) await new Promise((r) => setTimeout(r, options.pauseMs));
    }
  };
  await Promise.all(Array.from({ length: options.workers }, (_, w) => worker(w)));
  if (agent) agent.destroy();
}

/** Runs the attackers in a child process for `plan.durationMs`; resolves with their report once they all stopped. */
export async function runAttackers(plan: AttackPlan): Promise<AttackReport> {
  const child = spawn(process.execPath, ['--import', 'tsx', join(root, 'test', 'faults', 'support', 'attack-process.ts'), JSON.stringify(plan)], {
    cwd: root,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  children.add(child);
  let out = '';
  child.stdout?.on('data', (c: Buffer) => (out += c.toString()));
  const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
  children.delete(child);
  if (code !== 0) throw new Error(`the attackers exited with ${code}`);
  return JSON.parse(out) as AttackReport;
}
