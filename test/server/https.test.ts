/**
 * The server over real HTTPS, verified as kube-apiserver verifies a webhook: against the generated CA, for the
 * service name. Covers the admin endpoints, certificate rotation on disk while requests flow, and TLS versions.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect } from 'node:tls';
import { X509Certificate } from 'node:crypto';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FileConfigSource } from '../../src/cluster/config-files.js';
import { startServer, type RunningServer } from '../../src/server/start.js';
import { admissionReview, decodedPatch } from '../support/admission.js';
import { applied, names, OTHER_TRUST_ANCHOR, pod, TRUST_ANCHORS } from '../support/engine.js';
import { httpGet, httpsPost, leafSignedBy, pipelineReviews, reviewRequest, writePair } from '../support/https.js';

const silent = pino({ level: 'silent' });
/** What the server of 'over HTTPS' logs, at warn and above. */
const logged: string[] = [];
const watching = pino({ level: 'warn' }, { write: (line: string) => logged.push(line) });

async function until(condition: () => boolean | Promise<boolean>, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

async function start(dir: string, tlsMinVersion: 'TLSv1.2' | 'TLSv1.3' = 'TLSv1.3', logger = silent): Promise<RunningServer> {
  writeFileSync(join(dir, 'trust-anchors.pem'), TRUST_ANCHORS);
  // Polling is off, so the source holds no timer and needs no closing.
  const config = new FileConfigSource({ trustAnchorsPath: join(dir, 'trust-anchors.pem'), controlPlaneNamespace: 'linkerd', logger: silent, pollMs: 0 });
  return startServer({
    addr: '127.0.0.1:0',
    adminAddr: '127.0.0.1:0',
    tlsDir: join(dir, 'tls'),
    tlsSans: ['proxy-injector.linkerd.svc'],
    tlsMinVersion,
    sources: { config: () => config.current(), namespaceAnnotations: () => undefined },
    logger,
    shutdownDelayMs: 0,
    shutdownTimeoutMs: 5000,
    tlsPollMs: 200,
  });
}

describe('over HTTPS', () => {
  let dir: string;
  let server: RunningServer;
  let ca: string;
  const enabled = JSON.stringify(admissionReview(pod({ annotations: { 'linkerd.io/inject': 'enabled' } })));

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'proxy-injector-https-'));
    server = await start(dir, 'TLSv1.3', watching);
    ca = readFileSync(join(dir, 'tls', 'ca.crt'), 'utf8');
  });

  afterAll(async () => {
    await server?.shutdown('test done');
    rmSync(dir, { recursive: true, force: true });
  });

  it('generates a CA on first start and reports where it is', () => {
    expect(server.caPath).toBe(join(dir, 'tls', 'ca.crt'));
    const cert = new X509Certificate(readFileSync(join(dir, 'tls', 'tls.crt')));
    expect(cert.subjectAltName).toContain('DNS:proxy-injector.linkerd.svc');
    expect(cert.verify(new X509Certificate(ca).publicKey)).toBe(true);
  });

  it('answers an AdmissionReview to a client that verifies the CA; the patch applies', async () => {
    const res = await httpsPost(server.webhookUrl, { ca, body: enabled });
    expect(res.status).toBe(200);
    const review = JSON.parse(res.body) as Record<string, any>;
    const object = JSON.parse(enabled).request.object;
    expect(names((applied(object, decodedPatch(review)) as any).spec.containers)).toEqual(['linkerd-proxy', 'app']);
  });

  it('refuses a client that does not trust the CA', async () => {
    await expect(httpsPost(server.webhookUrl, { ca: OTHER_TRUST_ANCHOR, body: enabled })).rejects.toThrow();
    const other = mkdtempSync(join(tmpdir(), 'proxy-injector-otherca-'));
    try {
      const otherServer = await start(other);
      const otherCa = readFileSync(join(other, 'tls', 'ca.crt'), 'utf8');
      await otherServer.shutdown('done');
      await expect(httpsPost(server.webhookUrl, { ca: otherCa, body: enabled })).rejects.toThrow(/self.signed|unable to verify|certificate/i);
    } finally {
      rmSync(other, { recursive: true, force: true });
    }
  });

  it('requires TLS 1.3 by default', async () => {
    await expect(httpsPost(server.webhookUrl, { ca, body: enabled, maxVersion: 'TLSv1.2' })).rejects.toThrow(/protocol|version|alert/i);
  });

  it('serves bad input the one-line reason over the wire too', async () => {
    const res = await httpsPost(server.webhookUrl, { ca, body: 'not json' });
    expect(res.status).toBe(400);
    expect(res.body).toMatch(/^the body is not valid JSON/);
  });

  it('answers every review a client pipelines on one connection, in order, however fast they come', async () => {
    // Each answer carries an 11 KB patch, so the answers back up and node:http stops reading: the bytes the TLS layer
    // had already decrypted used to reach its paused parser and cut the connection after a few dozen answers.
    // test/faults/pipelining.faults.test.ts sends them in other ways to a real process.
    const count = 300;
    const requests = Array.from({ length: count }, (_, i) =>
      reviewRequest(JSON.stringify(admissionReview(pod({ annotations: { 'linkerd.io/inject': 'enabled' } }), { uid: `pipelined-${i}` }))),
    );
    const answers = await pipelineReviews({ url: server.webhookUrl, ca }, requests, async (socket, all) => {
      socket.write(all.join(''));
    });
    expect(answers.map((a) => a.uid)).toEqual(Array.from({ length: count }, (_, i) => `pipelined-${i}`));
    expect(answers.every((a) => a.status === 200 && a.patched)).toBe(true);
  });

  it('admin: /ping, /live, /ready and /metrics', async () => {
    expect(await httpGet(`${server.adminUrl}/ping`)).toEqual({ status: 200, body: 'pong\n' });
    expect(await httpGet(`${server.adminUrl}/live`)).toEqual({ status: 200, body: 'ok\n' });
    expect(await httpGet(`${server.adminUrl}/ready`)).toEqual({ status: 200, body: 'ok\n' });
    const metrics = await httpGet(`${server.adminUrl}/metrics`);
    expect(metrics.status).toBe(200);
    expect(metrics.body).toMatch(/^process_cpu_user_seconds_total \d/m);
    expect(metrics.body).toMatch(/^nodejs_eventloop_lag_seconds \d/m);
    expect(metrics.body).toMatch(/^proxy_inject_admission_requests_total\{owner_kind="",namespace="shop"/m);
  });

  it('rotates the certificate on disk while requests flow: none fails, new connections get the new one', async () => {
    const before = (await httpsPost(server.webhookUrl, { ca, body: enabled })).fingerprint;
    const next = await leafSignedBy(join(dir, 'tls'));
    const nextFingerprint = new X509Certificate(next.cert).fingerprint256;
    const seen = new Set<string>();
    let failures = 0;
    let requests = 0;
    let stop = false;
    const load = (async () => {
      while (!stop) {
        try {
          const res = await httpsPost(server.webhookUrl, { ca, body: enabled });
          requests++;
          if (res.status !== 200) failures++;
          seen.add(res.fingerprint);
        } catch {
          failures++;
        }
      }
    })();
    await new Promise((r) => setTimeout(r, 100));
    writePair(join(dir, 'tls'), next);
    await until(() => seen.has(nextFingerprint), 5000);
    await new Promise((r) => setTimeout(r, 100));

    // A broken pair (a third certificate with an unrelated key) must be refused: the server keeps the last good one.
    const third = await leafSignedBy(join(dir, 'tls'));
    const unrelated = await leafSignedBy(join(dir, 'tls'));
    const refused = async () => /^proxy_inject_certificate_reloads_total\{result="refused"\} 1$/m.test((await httpGet(`${server.adminUrl}/metrics`)).body);
    expect(await refused()).toBe(false);
    writePair(join(dir, 'tls'), { cert: third.cert, key: unrelated.key });
    // Seen and counted (and logged, with it), not merely left unread.
    await until(refused, 5000);
    expect(logged.some((l) => l.includes('refusing to reload TLS key pair'))).toBe(true);
    seen.clear();
    await new Promise((r) => setTimeout(r, 300));
    stop = true;
    await load;
    expect(before).not.toBe(nextFingerprint);
    expect(failures).toBe(0);
    expect(requests).toBeGreaterThan(10);
    expect([...seen]).toEqual([nextFingerprint]);
    expect((await httpGet(`${server.adminUrl}/metrics`)).body).toMatch(/^proxy_inject_certificate_reloads_total\{result="applied"\} 1$/m);
  });
});

describe('TLS 1.2 when configured', () => {
  it('accepts a TLS 1.2 client with an AEAD suite, and refuses one that offers only CBC suites', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'proxy-injector-tls12-'));
    const server = await start(dir, 'TLSv1.2');
    try {
      const ca = readFileSync(join(dir, 'tls', 'ca.crt'), 'utf8');
      const res = await httpsPost(server.webhookUrl, { ca, body: JSON.stringify(admissionReview(pod())), maxVersion: 'TLSv1.2' });
      expect(res.status).toBe(200);
      const url = new URL(server.webhookUrl);
      const handshake = (ciphers: string) =>
        new Promise<string>((resolve) => {
          const socket = connect({ host: url.hostname, port: Number(url.port), ca, servername: 'localhost', maxVersion: 'TLSv1.2', ciphers }, () => {
            resolve(`ok ${socket.getCipher().name}`);
            socket.destroy();
          });
          socket.on('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? err.message));
        });
      expect(await handshake('ECDHE-ECDSA-AES128-GCM-SHA256')).toBe('ok ECDHE-ECDSA-AES128-GCM-SHA256');
      expect(await handshake('ECDHE-ECDSA-AES128-SHA:ECDHE-ECDSA-AES256-SHA:ECDHE-ECDSA-AES128-SHA256')).toMatch(/HANDSHAKE_FAILURE|NO_SHARED_CIPHER|ECONNRESET/);
    } finally {
      await server.shutdown('done');
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
