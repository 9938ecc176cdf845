/** The development CA and serving certificate generated when the TLS directory holds no pair. */
import { X509Certificate } from 'node:crypto';
import { existsSync, readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { createServer, request } from 'node:https';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { ensureCertificates, loadKeyPair } from '../../src/tls/index.js';
import { beforeAll, describe, expect, it } from 'vitest';
import { DNS_NAMES, YEAR_MS, opensslText, recordingLogger, tbsFields, tempDirs, tlsFixtures, type TlsFixtures } from './support.js';

const tempDir = tempDirs();
let genDir: TlsFixtures['genDir'];
let ca: TlsFixtures['ca'];
let firstRun: TlsFixtures['firstRun'];
let firstRunLog: TlsFixtures['firstRunLog'];
let pairs: TlsFixtures['pairs'];
let rsa: TlsFixtures['rsa'];
beforeAll(async () => {
  ({ genDir, ca, firstRun, firstRunLog, pairs, rsa } = await tlsFixtures(tempDir()));
});

describe('ensureCertificates', () => {
  it('generates a CA and a CA-signed SHA-256 serving certificate into a new directory', () => {
    expect(firstRun).toEqual({
      caPath: join(genDir, 'ca.crt'),
      certPath: join(genDir, 'tls.crt'),
      keyPath: join(genDir, 'tls.key'),
      generated: true,
    });
    // Exactly the four files: no temp files left behind by the atomic writes.
    expect(readdirSync(genDir).sort()).toEqual(['ca.crt', 'ca.key', 'tls.crt', 'tls.key']);
    expect(statSync(join(genDir, 'tls.key')).mode & 0o777).toBe(0o600);
    expect(statSync(join(genDir, 'ca.key')).mode & 0o777).toBe(0o600);
    expect(statSync(join(genDir, 'tls.crt')).mode & 0o777).toBe(0o644);

    const servingPem = readFileSync(firstRun.certPath, 'utf8');
    const serving = new X509Certificate(servingPem);
    const caCert = new X509Certificate(ca.cert);

    const text = opensslText(servingPem);
    expect(text).toContain('Signature Algorithm: ecdsa-with-SHA256');
    expect(text).not.toMatch(/sha1/i);
    expect(text).toMatch(/X509v3 Basic Constraints: critical\s+CA:FALSE/);
    expect(text).toMatch(/X509v3 Extended Key Usage:\s*\n\s+TLS Web Server Authentication\n/);
    expect(text).toContain('NIST CURVE: P-256');

    expect(serving.subject).toBe('CN=proxy-injector.linkerd.svc');
    expect(serving.subjectAltName).toBe(
      'DNS:localhost, DNS:proxy-injector.linkerd.svc, DNS:proxy-injector.linkerd.svc.cluster.local, ' +
        'IP Address:127.0.0.1, IP Address:0:0:0:0:0:0:0:1, IP Address:10.96.0.42',
    );
    expect(serving.ca).toBe(false);
    expect(serving.verify(caCert.publicKey)).toBe(true);
    expect(serving.checkIssued(caCert)).toBe(true);
    // Go chains by comparing raw issuer bytes with the parent's raw subject bytes, not by a normalised name.
    expect(tbsFields(servingPem)[3]!.equals(tbsFields(ca.cert)[5]!)).toBe(true);
    const servingDays = (new Date(serving.validTo).getTime() - Date.now()) / (24 * 3600 * 1000);
    expect(servingDays).toBeGreaterThan(364);
    expect(servingDays).toBeLessThan(367);

    expect(caCert.ca).toBe(true);
    expect(caCert.subject).toBe('CN=proxy-injector development CA');
    expect(caCert.verify(caCert.publicKey)).toBe(true);
    const caText = opensslText(ca.cert);
    expect(caText).toContain('Signature Algorithm: ecdsa-with-SHA256');
    expect(caText).toMatch(/X509v3 Basic Constraints: critical\s+CA:TRUE/);
    expect(caText).toMatch(/X509v3 Key Usage: critical\s+Certificate Sign, CRL Sign/);
    const caYears = (new Date(caCert.validTo).getTime() - Date.now()) / YEAR_MS;
    expect(caYears).toBeGreaterThan(9.9);
    expect(caYears).toBeLessThan(10.1);

    const generatedLog = firstRunLog.entries.find((e) => e.msg.startsWith('generated development TLS certificates'));
    expect(generatedLog?.level).toBe('info');
    expect(generatedLog?.obj).toMatchObject({ caGenerated: true, fingerprint256: serving.fingerprint256 });
  });

  it('reuses an existing pair that covers the names asked for without touching any file', async () => {
    const before = Object.fromEntries(readdirSync(genDir).map((f) => [f, readFileSync(join(genDir, f))]));
    const result = await ensureCertificates(genDir, ['proxy-injector.linkerd.svc', '10.96.0.42', '127.0.0.1'], recordingLogger());
    expect(result.generated).toBe(false);
    for (const [file, bytes] of Object.entries(before)) expect(readFileSync(join(genDir, file)).equals(bytes)).toBe(true);
  });

  it('reissues a generated certificate from the same CA when --tls-san asks for a name it does not cover', async () => {
    const dir = tempDir();
    await ensureCertificates(dir, ['first.svc'], recordingLogger());
    const caBefore = readFileSync(join(dir, 'ca.crt'), 'utf8');
    const log = recordingLogger();
    const result = await ensureCertificates(dir, ['second.svc', '192.0.2.7'], log);
    expect(result.generated).toBe(true);
    expect(readFileSync(join(dir, 'ca.crt'), 'utf8')).toBe(caBefore);
    const serving = new X509Certificate(loadKeyPair(dir).cert);
    expect(serving.subject).toBe('CN=second.svc');
    expect(serving.subjectAltName).toBe(
      'DNS:localhost, DNS:second.svc, DNS:first.svc, IP Address:127.0.0.1, IP Address:0:0:0:0:0:0:0:1, IP Address:192.0.2.7',
    );
    expect(serving.verify(new X509Certificate(caBefore).publicKey)).toBe(true);
    expect(log.entries.find((e) => e.level === 'info' && /does not cover second.svc, 192.0.2.7/.test(e.msg))).toBeDefined();
    expect(readdirSync(dir).sort()).toEqual(['ca.crt', 'ca.key', 'tls.crt', 'tls.key']);
  });

  it('never touches a provided pair that does not cover the names asked for: it warns', async () => {
    const dir = tempDir();
    // Signed by the development CA, but without its key beside it: provided, not generated here.
    writeFileSync(join(dir, 'ca.crt'), ca.cert);
    writeFileSync(join(dir, 'tls.crt'), pairs.B.cert);
    writeFileSync(join(dir, 'tls.key'), pairs.B.key);
    const log = recordingLogger();
    const result = await ensureCertificates(dir, ['proxy-injector.linkerd.svc'], log);
    expect(result.generated).toBe(false);
    expect(readFileSync(join(dir, 'tls.crt'), 'utf8')).toBe(pairs.B.cert);
    expect(readdirSync(dir).sort()).toEqual(['ca.crt', 'tls.crt', 'tls.key']);
    const warning = log.entries.find((e) => e.level === 'warn');
    expect(warning?.msg).toBe(`the TLS key pair in ${dir} was not generated here and does not cover --tls-san proxy-injector.linkerd.svc; using it as it is`);
  });

  it('reuses a provisioned tls.crt/tls.key even when ca.crt is absent', async () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'tls.crt'), pairs.A.cert);
    writeFileSync(join(dir, 'tls.key'), pairs.A.key);
    const result = await ensureCertificates(dir, DNS_NAMES, recordingLogger());
    expect(result).toEqual({ caPath: join(dir, 'ca.crt'), certPath: join(dir, 'tls.crt'), keyPath: join(dir, 'tls.key'), generated: false });
    expect(readdirSync(dir).sort()).toEqual(['tls.crt', 'tls.key']);
    expect(readFileSync(join(dir, 'tls.crt'), 'utf8')).toBe(pairs.A.cert);
  });

  it('regenerates after an interrupted run (tls.key without tls.crt), signing with the CA already there', async () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'ca.crt'), ca.cert);
    writeFileSync(join(dir, 'ca.key'), ca.key, { mode: 0o600 });
    writeFileSync(join(dir, 'tls.key'), 'half a key');
    const result = await ensureCertificates(dir, [], recordingLogger());
    expect(result.generated).toBe(true);
    expect(readFileSync(join(dir, 'ca.crt'), 'utf8')).toBe(ca.cert);
    const pair = loadKeyPair(dir);
    const serving = new X509Certificate(pair.cert);
    expect(serving.subject).toBe('CN=localhost');
    expect(serving.subjectAltName).toBe('DNS:localhost, IP Address:127.0.0.1, IP Address:0:0:0:0:0:0:0:1');
    expect(serving.verify(new X509Certificate(ca.cert).publicKey)).toBe(true);
  });

  it('refuses to generate over a lone tls.crt that someone else put there', async () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'tls.crt'), pairs.A.cert);
    await expect(ensureCertificates(dir, [], recordingLogger())).rejects.toMatchObject({ code: 'TLS_MISSING' });
    expect(readdirSync(dir)).toEqual(['tls.crt']);
    expect(readFileSync(join(dir, 'tls.crt'), 'utf8')).toBe(pairs.A.cert);
  });

  it('rejects names that cannot be put in a certificate', async () => {
    const dir = join(tempDir(), 'never-created');
    await expect(ensureCertificates(dir, ['a,b'], recordingLogger())).rejects.toThrow(TypeError);
    expect(existsSync(dir)).toBe(false);
  });
});

describe('TLS handshake with the generated certificate', () => {
  async function get(port: number, options: { servername?: string; ca: string }): Promise<{ status: number; body: string }> {
    return new Promise((resolve, reject) => {
      const req = request({ host: '127.0.0.1', port, path: '/', method: 'GET', agent: false, ...options }, (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (body += chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      });
      req.on('error', reject);
      req.end();
    });
  }

  it('is trusted by a client that trusts only ca.crt, for every SAN, and rejected for other names', async () => {
    const pair = loadKeyPair(genDir);
    const server = createServer({ key: pair.key, cert: pair.cert }, (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.end('ok');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = server.address() as AddressInfo;
      expect(await get(port, { ca: ca.cert, servername: 'localhost' })).toEqual({ status: 200, body: 'ok' });
      expect(await get(port, { ca: ca.cert, servername: 'proxy-injector.linkerd.svc' })).toEqual({ status: 200, body: 'ok' });
      // No servername: Node checks the IP SAN against the host.
      expect(await get(port, { ca: ca.cert })).toEqual({ status: 200, body: 'ok' });
      await expect(get(port, { ca: ca.cert, servername: 'evil.example' })).rejects.toMatchObject({ code: 'ERR_TLS_CERT_ALTNAME_INVALID' });
      await expect(get(port, { ca: rsa.cert, servername: 'localhost' })).rejects.toMatchObject({
        code: 'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
      });
    } finally {
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });
});

