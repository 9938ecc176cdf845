/**
 * Graceful shutdown of a real `proxy-injector serve` process: on SIGTERM, readiness fails first, in-flight requests
 * complete, new connections are refused, and the process exits within its bound.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { get } from 'node:http';
import { Agent, request } from 'node:https';
import { tmpdir } from 'node:os';
import { connect } from 'node:tls';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { admissionReview } from '../support/admission.js';
import { pod, TRUST_ANCHORS } from '../support/engine.js';
import { httpsPost } from '../support/https.js';
import { listeningUrls } from '../support/process.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

interface Served {
  child: ChildProcess;
  webhookUrl: string;
  adminUrl: string;
  ca: string;
  exited: Promise<number | null>;
  logs: string[];
}

const running: ChildProcess[] = [];
const dirs: string[] = [];

afterEach(() => {
  for (const child of running.splice(0)) child.kill('SIGKILL');
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

async function serve(extra: string[]): Promise<Served> {
  const dir = mkdtempSync(join(tmpdir(), 'proxy-injector-shutdown-'));
  dirs.push(dir);
  writeFileSync(join(dir, 'anchors.pem'), TRUST_ANCHORS);
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', join(root, 'src', 'cli', 'main.ts'), 'serve', '--addr', '127.0.0.1:0', '--admin-addr', '127.0.0.1:0',
      '--tls-dir', join(dir, 'tls'), '--trust-anchors', join(dir, 'anchors.pem'), '--log-format', 'json', ...extra],
    { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  running.push(child);
  const logs: string[] = [];
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  const urls = await listeningUrls(child, logs, exited);
  return { child, webhookUrl: urls.webhook, adminUrl: urls.admin, ca: readFileSync(join(dir, 'tls', 'ca.crt'), 'utf8'), exited, logs };
}

function ready(adminUrl: string): Promise<number> {
  return new Promise((resolve, reject) => {
    get(`${adminUrl}/ready`, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    }).on('error', reject);
  });
}

const body = JSON.stringify(admissionReview(pod({ annotations: { 'linkerd.io/inject': 'enabled' } })));

describe('SIGTERM', () => {
  it('fails readiness, finishes every in-flight request, refuses new ones, exits 0', async () => {
    const served = await serve(['--shutdown-delay', '400ms', '--shutdown-timeout', '5s']);
    expect(await ready(served.adminUrl)).toBe(200);

    let halves = 0;
    const allHalves = new Promise<void>((resolve) => {
      const inFlight = 5;
      (served as { onHalf?: () => void }).onHalf = () => {
        if (++halves === inFlight) resolve();
      };
    });
    const requests = Array.from({ length: 5 }, () =>
      httpsPost(served.webhookUrl, {
        ca: served.ca,
        body,
        splitBodyMs: 900,
        onFirstHalf: () => (served as { onHalf?: () => void }).onHalf?.(),
      }),
    );
    await allHalves;
    served.child.kill('SIGTERM');
    await new Promise((r) => setTimeout(r, 150));
    expect(await ready(served.adminUrl)).toBe(503);

    const results = await Promise.all(requests);
    expect(results.map((r) => r.status)).toEqual([200, 200, 200, 200, 200]);
    expect(results.every((r) => JSON.parse(r.body).response.patchType === 'JSONPatch')).toBe(true);

    await expect(httpsPost(served.webhookUrl, { ca: served.ca, body })).rejects.toThrow(/ECONNREFUSED|ECONNRESET|socket hang up/);
    expect(await served.exited).toBe(0);
    expect(served.logs.some((l) => l.includes('"clean":true'))).toBe(true);
  }, 60_000);

  it('connections with no request in flight are ended at once: idle keep-alive, and handshaken but never used', async () => {
    const served = await serve(['--shutdown-timeout', '30s']);
    const target = new URL(served.webhookUrl);
    // A keep-alive connection that carried one review, and one that finished its handshake and sent nothing (as Go's
    // HTTP client leaves in its pool): neither may keep the process waiting for the shutdown timeout.
    const agent = new Agent({ keepAlive: true });
    expect((await httpsPost(served.webhookUrl, { ca: served.ca, body, agent })).status).toBe(200);
    const unused = connect({ host: target.hostname, port: Number(target.port), ca: served.ca, servername: 'localhost' });
    await new Promise((resolve, reject) => unused.once('secureConnect', resolve).once('error', reject));
    const unusedClosed = new Promise((resolve) => unused.once('close', resolve));
    served.child.kill('SIGTERM');
    expect(await served.exited).toBe(0);
    await unusedClosed;
    expect(served.logs.some((l) => l.includes('"clean":true'))).toBe(true);
    agent.destroy();
  }, 60_000);

  it('while the shutdown delay runs, requests are still served but each response says Connection: close', async () => {
    const served = await serve(['--shutdown-delay', '3s', '--shutdown-timeout', '5s']);
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    const post = (): Promise<{ status: number; connection: string | undefined }> =>
      new Promise((resolve, reject) => {
        const target = new URL(served.webhookUrl);
        const req = request(
          { host: target.hostname, port: target.port, method: 'POST', path: '/', ca: served.ca, servername: 'localhost', agent,
            headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } },
          (res) => {
            res.resume();
            res.on('end', () => resolve({ status: res.statusCode ?? 0, connection: res.headers.connection }));
          },
        );
        req.on('error', reject);
        req.end(body);
      });
    expect(await post()).toEqual({ status: 200, connection: 'keep-alive' });
    served.child.kill('SIGTERM');
    await new Promise((r) => setTimeout(r, 500));
    expect(await ready(served.adminUrl)).toBe(503);
    // A keep-alive client reusing its connection during the delay is told to open its next one elsewhere.
    expect(await post()).toEqual({ status: 200, connection: 'close' });
    expect(await served.exited).toBe(0);
    agent.destroy();
  }, 60_000);

  it('a request that never finishes cannot hold the process past the timeout', async () => {
    const served = await serve(['--shutdown-timeout', '500ms']);
    const started = Date.now();
    const stuck = httpsPost(served.webhookUrl, { ca: served.ca, body, splitBodyMs: 60_000 }).catch((err: Error) => err);
    await new Promise((r) => setTimeout(r, 300));
    served.child.kill('SIGTERM');
    expect(await served.exited).toBe(1);
    expect(Date.now() - started).toBeLessThan(5000);
    expect(await stuck).toBeInstanceOf(Error);
    expect(served.logs.some((l) => l.includes('did not finish in time'))).toBe(true);
  }, 60_000);

  it('a request still arriving when the listener closes is held to the request timeout, not the shutdown timeout', async () => {
    // node:http stops enforcing its request timeout once the listener is closed: the trickling client used to hold the
    // process for the whole shutdown timeout, which then ended unclean (exit 1).
    const served = await serve(['--header-timeout', '1s', '--request-timeout', '2s', '--shutdown-timeout', '50s']);
    const stuck = httpsPost(served.webhookUrl, { ca: served.ca, body, splitBodyMs: 60_000 }).catch((err: Error) => err);
    await new Promise((r) => setTimeout(r, 300));
    served.child.kill('SIGTERM');
    expect(await served.exited).toBe(0);
    expect(await stuck).toBeInstanceOf(Error);
    expect(served.logs.some((l) => l.includes('"clean":true'))).toBe(true);
    expect(served.logs.some((l) => l.includes('did not finish in time'))).toBe(false);
  }, 60_000);

  it('refuses bad flags with a clear message, the usage line and exit code 2', async () => {
    const child = spawn(process.execPath, ['--import', 'tsx', join(root, 'src', 'cli', 'main.ts'), 'serve', '--tls-min-version', '1.1'], {
      cwd: root,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    running.push(child);
    let stderr = '';
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
    expect(code).toBe(2);
    expect(stderr).toBe(
      'proxy-injector serve: --tls-min-version "1.1": expected 1.2 or 1.3\nUsage: proxy-injector serve [options]\n' +
        "Run 'proxy-injector serve --help' for all options.\n",
    );
  }, 60_000);
});
