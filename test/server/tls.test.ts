// Tests for serving-certificate generation, validation and kubelet-style hot reload in src/server/tls.ts.
import { execFileSync } from 'node:child_process';
import { X509Certificate, createPrivateKey } from 'node:crypto';
import {
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  readlinkSync,
  renameSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { createServer, request } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { generate } from 'selfsigned';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  CertificateReloader,
  TlsError,
  ensureCertificates,
  loadKeyPair,
  validateKeyPair,
} from '../../src/server/tls.js';
import type { KeyPair, TlsLogger, ValidatedKeyPair } from '../../src/server/tls.js';

interface LogEntry {
  level: 'info' | 'warn' | 'error';
  obj: object;
  msg: string;
}

function recordingLogger(): TlsLogger & { entries: LogEntry[] } {
  const entries: LogEntry[] = [];
  return {
    entries,
    info: (obj, msg) => entries.push({ level: 'info', obj, msg }),
    warn: (obj, msg) => entries.push({ level: 'warn', obj, msg }),
    error: (obj, msg) => entries.push({ level: 'error', obj, msg }),
  };
}

/** Polls instead of sleeping a fixed time, so slow machines only make the test slower, never red. */
async function waitFor(condition: () => boolean, timeoutMs = 5_000, what = 'condition'): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const tempDirs: string[] = [];
function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'proxy-injector-tls-'));
  tempDirs.push(dir);
  return dir;
}

afterAll(() => {
  for (const dir of tempDirs) rmSync(dir, { recursive: true, force: true });
});

/** The DER elements of tbsCertificate: [version, serial, signature, issuer, validity, subject, ...]. */
function tbsFields(pem: string): Buffer[] {
  const der = new X509Certificate(pem).raw;
  const tlv = (at: number) => {
    let length = der[at + 1]!;
    let p = at + 2;
    if (length & 0x80) {
      const octets = length & 0x7f;
      length = 0;
      for (let i = 0; i < octets; i++) length = length * 256 + der[p++]!;
    }
    return { contentStart: p, end: p + length };
  };
  const tbs = tlv(tlv(0).contentStart);
  const fields: Buffer[] = [];
  for (let p = tbs.contentStart; p < tbs.end; ) {
    const end = tlv(p).end;
    fields.push(der.subarray(p, end));
    p = end;
  }
  return fields;
}

function opensslText(pem: string): string {
  return execFileSync('openssl', ['x509', '-noout', '-text'], { input: pem, encoding: 'utf8' });
}

const DNS_NAMES = ['proxy-injector.linkerd.svc', 'proxy-injector.linkerd.svc.cluster.local', '10.96.0.42'];
const YEAR_MS = 365 * 24 * 60 * 60 * 1000;

let genDir: string;
let ca: KeyPair;
let firstRun: Awaited<ReturnType<typeof ensureCertificates>>;
let firstRunLog: ReturnType<typeof recordingLogger>;
const pairs: Record<'A' | 'B' | 'C' | 'D' | 'E', ValidatedKeyPair> = {} as never;
let rsa: KeyPair;

/** A serving pair signed by the generated development CA, as a rotated Secret would carry. */
async function issue(commonName: string): Promise<ValidatedKeyPair> {
  const pems = await generate([{ name: 'commonName', value: commonName }], {
    keyType: 'ec',
    algorithm: 'sha256',
    ca,
    extensions: [
      { name: 'basicConstraints', cA: false, critical: true },
      { name: 'keyUsage', digitalSignature: true, critical: true },
      { name: 'extKeyUsage', serverAuth: true },
      { name: 'subjectAltName', altNames: [{ type: 2, value: 'localhost' }] },
    ],
  });
  return validateKeyPair(pems.cert, pems.private);
}

beforeAll(async () => {
  genDir = join(tempDir(), 'nested', 'certs');
  firstRunLog = recordingLogger();
  firstRun = await ensureCertificates(genDir, DNS_NAMES, firstRunLog);
  ca = { cert: readFileSync(join(genDir, 'ca.crt'), 'utf8'), key: readFileSync(join(genDir, 'ca.key'), 'utf8') };
  for (const name of ['A', 'B', 'C', 'D', 'E'] as const) pairs[name] = await issue(`pair-${name.toLowerCase()}`);
  const rsaPems = await generate([{ name: 'commonName', value: 'rsa' }], { keyType: 'rsa', keySize: 2048, algorithm: 'sha256' });
  rsa = { cert: rsaPems.cert, key: rsaPems.private };
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

describe('loadKeyPair', () => {
  function dirWith(files: Record<string, string>): string {
    const dir = tempDir();
    for (const [name, content] of Object.entries(files)) writeFileSync(join(dir, name), content);
    return dir;
  }

  function caught(fn: () => unknown): TlsError {
    try {
      fn();
    } catch (err) {
      expect(err).toBeInstanceOf(TlsError);
      return err as TlsError;
    }
    throw new Error('expected a TlsError');
  }

  it('returns the pair with notAfter and the SHA-256 fingerprint', () => {
    const loaded = loadKeyPair(dirWith({ 'tls.crt': pairs.A.cert, 'tls.key': pairs.A.key }));
    const x509 = new X509Certificate(pairs.A.cert);
    expect(loaded.cert).toBe(pairs.A.cert);
    expect(loaded.key).toBe(pairs.A.key);
    expect(loaded.fingerprint256).toBe(x509.fingerprint256);
    expect(loaded.fingerprint256).toMatch(/^([0-9A-F]{2}:){31}[0-9A-F]{2}$/);
    expect(loaded.notAfter.getTime()).toBe(new Date(x509.validTo).getTime());
  });

  it('accepts RSA PKCS#1, RSA PKCS#8 and EC SEC1 keys', () => {
    const pkcs1 = createPrivateKey(rsa.key).export({ type: 'pkcs1', format: 'pem' }) as string;
    expect(pkcs1).toContain('BEGIN RSA PRIVATE KEY');
    expect(rsa.key).toContain('BEGIN PRIVATE KEY');
    const sec1 = createPrivateKey(pairs.A.key).export({ type: 'sec1', format: 'pem' }) as string;
    expect(sec1).toContain('BEGIN EC PRIVATE KEY');
    for (const [cert, key] of [
      [rsa.cert, pkcs1],
      [rsa.cert, rsa.key],
      [pairs.A.cert, sec1],
    ] as const) {
      expect(loadKeyPair(dirWith({ 'tls.crt': cert, 'tls.key': key })).fingerprint256).toBe(new X509Certificate(cert).fingerprint256);
    }
  });

  it('reports absent files as TLS_MISSING', () => {
    const none = caught(() => loadKeyPair(tempDir()));
    expect(none.code).toBe('TLS_MISSING');
    expect(none.message).toMatch(/^tls\.crt not found in /);
    const noKey = caught(() => loadKeyPair(dirWith({ 'tls.crt': pairs.A.cert })));
    expect(noKey.code).toBe('TLS_MISSING');
    expect(noKey.message).toMatch(/^tls\.key not found in /);
    expect(caught(() => loadKeyPair(join(tempDir(), 'does-not-exist'))).code).toBe('TLS_MISSING');
  });

  it('reports the key of another pair as TLS_INVALID naming the mismatch', () => {
    const err = caught(() => loadKeyPair(dirWith({ 'tls.crt': pairs.A.cert, 'tls.key': pairs.B.key })));
    expect(err.code).toBe('TLS_INVALID');
    expect(err.message).toBe(
      "tls.key does not match the certificate in tls.crt (key mismatch: the key is not the certificate's private key)",
    );
  });

  it('reports garbage as TLS_INVALID with a one-line reason naming the file', () => {
    const garbageCert = caught(() =>
      loadKeyPair(dirWith({ 'tls.crt': '-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydA==\n-----END CERTIFICATE-----\n', 'tls.key': pairs.A.key })),
    );
    expect(garbageCert.code).toBe('TLS_INVALID');
    expect(garbageCert.message).toMatch(/^tls\.crt is not a PEM certificate: /);
    expect(garbageCert.message).not.toContain('\n');

    const garbageKey = caught(() => loadKeyPair(dirWith({ 'tls.crt': pairs.A.cert, 'tls.key': 'hello\nworld\n' })));
    expect(garbageKey.code).toBe('TLS_INVALID');
    expect(garbageKey.message).toMatch(/^tls\.key is not a readable unencrypted private key: /);
    expect(garbageKey.message).not.toContain('\n');

    const empty = caught(() => loadKeyPair(dirWith({ 'tls.crt': '', 'tls.key': pairs.A.key })));
    expect(empty).toMatchObject({ code: 'TLS_INVALID', message: 'tls.crt is empty' });

    // A public key where the private key belongs.
    const publicKey = new X509Certificate(pairs.A.cert).publicKey.export({ type: 'spki', format: 'pem' }) as string;
    expect(caught(() => loadKeyPair(dirWith({ 'tls.crt': pairs.A.cert, 'tls.key': publicKey }))).code).toBe('TLS_INVALID');
  });
});

describe('CertificateReloader', () => {
  const reloaders: CertificateReloader[] = [];
  afterEach(() => {
    for (const reloader of reloaders.splice(0)) reloader.stop();
  });

  function track(reloader: CertificateReloader): CertificateReloader {
    reloaders.push(reloader);
    return reloader;
  }

  let stamp = 0;
  /** Publishes a pair the way kubelet's atomic writer updates a Secret volume. */
  function publishLikeKubelet(dir: string, pair: KeyPair): void {
    const version = `..2026_11_21_18_00_00.${String(++stamp).padStart(9, '0')}`;
    mkdirSync(join(dir, version));
    writeFileSync(join(dir, version, 'tls.crt'), pair.cert);
    writeFileSync(join(dir, version, 'tls.key'), pair.key);
    const dataLink = join(dir, '..data');
    const previous = existsSync(dataLink) ? readlinkSync(dataLink) : undefined;
    symlinkSync(version, join(dir, '..data_tmp'));
    renameSync(join(dir, '..data_tmp'), dataLink);
    for (const file of ['tls.crt', 'tls.key']) {
      const link = join(dir, file);
      if (!existsSyncNoFollow(link)) symlinkSync(`..data/${file}`, link);
    }
    if (previous !== undefined) rmSync(join(dir, previous), { recursive: true });
  }

  function existsSyncNoFollow(path: string): boolean {
    try {
      lstatSync(path);
      return true;
    } catch {
      return false;
    }
  }

  /** Replaces plain files by rename, as an operator or a test would. */
  function publishPlain(dir: string, pair: KeyPair): void {
    writeFileSync(join(dir, 'tls.key.new'), pair.key);
    writeFileSync(join(dir, 'tls.crt.new'), pair.cert);
    renameSync(join(dir, 'tls.key.new'), join(dir, 'tls.key'));
    renameSync(join(dir, 'tls.crt.new'), join(dir, 'tls.crt'));
  }

  it('follows repeated kubelet symlink swaps through a directory watch and refuses a mismatched pair', async () => {
    const dir = tempDir();
    publishLikeKubelet(dir, pairs.A);
    expect(readlinkSync(join(dir, 'tls.crt'))).toBe('..data/tls.crt');
    expect(loadKeyPair(dir).fingerprint256).toBe(pairs.A.fingerprint256);

    const logger = recordingLogger();
    const updates: ValidatedKeyPair[] = [];
    const reloader = track(
      new CertificateReloader(pairs.A, { dir, logger, onUpdate: (pair) => updates.push(pair), pollIntervalMs: 0 }),
    );
    reloader.start();

    expect(new X509Certificate(pairs.B.cert).serialNumber).not.toBe(new X509Certificate(pairs.A.cert).serialNumber);
    publishLikeKubelet(dir, pairs.B);
    await waitFor(() => updates.length === 1, 2_000, 'the first update');
    expect(updates[0]!.fingerprint256).toBe(pairs.B.fingerprint256);
    expect(updates[0]!.notAfter.getTime()).toBe(pairs.B.notAfter.getTime());
    expect(reloader.current).toEqual({ cert: pairs.B.cert, key: pairs.B.key });
    const infoLog = logger.entries.find((e) => e.level === 'info' && e.msg === 'reloaded TLS key pair');
    expect(infoLog?.obj).toMatchObject({ fingerprint256: pairs.B.fingerprint256, notAfter: pairs.B.notAfter.toISOString() });

    // A watch on the tls.crt file itself would stay silent from here on.
    publishLikeKubelet(dir, pairs.C);
    await waitFor(() => updates.length === 2, 2_000, 'the second update');
    expect(updates[1]!.fingerprint256).toBe(pairs.C.fingerprint256);

    publishLikeKubelet(dir, { cert: pairs.D.cert, key: pairs.E.key });
    await waitFor(() => logger.entries.some((e) => e.level === 'error'), 2_000, 'the refusal');
    const refusal = logger.entries.filter((e) => e.level === 'error');
    expect(refusal).toHaveLength(1);
    expect(refusal[0]!.msg).toContain('refusing');
    expect(refusal[0]!.obj).toMatchObject({ code: 'TLS_INVALID', reason: expect.stringContaining('does not match') });
    expect(updates).toHaveLength(2);
    expect(reloader.current).toEqual({ cert: pairs.C.cert, key: pairs.C.key });
    // The refused content is still on disk; asking again neither applies it nor repeats the error.
    expect(await reloader.check()).toBe(false);
    expect(logger.entries.filter((e) => e.level === 'error')).toHaveLength(1);

    // A fixed Secret is picked up after a refusal.
    publishLikeKubelet(dir, pairs.D);
    await waitFor(() => updates.length === 3, 2_000, 'the update after the refusal');
    expect(updates[2]!.fingerprint256).toBe(pairs.D.fingerprint256);
  });

  it('picks up replaced plain files by polling alone', async () => {
    const dir = tempDir();
    publishPlain(dir, pairs.A);
    const logger = recordingLogger();
    const updates: ValidatedKeyPair[] = [];
    const reloader = track(
      new CertificateReloader(pairs.A, { dir, logger, onUpdate: (pair) => updates.push(pair), watch: false, pollIntervalMs: 100 }),
    );
    reloader.start();
    publishPlain(dir, pairs.B);
    await waitFor(() => updates.length === 1, 3_000, 'the polled update');
    expect(updates[0]!.fingerprint256).toBe(pairs.B.fingerprint256);
    expect(reloader.current).toEqual({ cert: pairs.B.cert, key: pairs.B.key });
    expect(logger.entries.filter((e) => e.level !== 'info')).toEqual([]);
  });

  it('check() reports whether it applied a pair, and never rejects', async () => {
    const dir = tempDir();
    publishPlain(dir, pairs.A);
    const logger = recordingLogger();
    const updates: string[] = [];
    const reloader = new CertificateReloader(pairs.A, {
      dir,
      logger,
      onUpdate: (pair) => {
        updates.push(pair.fingerprint256);
        throw new Error('callback bug');
      },
      watch: false,
      pollIntervalMs: 0,
    });
    expect(await reloader.check()).toBe(false);

    publishPlain(dir, pairs.B);
    expect(await reloader.check()).toBe(true);
    expect(await reloader.check()).toBe(false);
    expect(updates).toEqual([pairs.B.fingerprint256]);
    expect(logger.entries.find((e) => e.msg === 'TLS key pair update callback threw')?.obj).toMatchObject({ err: 'callback bug' });

    writeFileSync(join(dir, 'tls.crt'), 'garbage');
    expect(await reloader.check()).toBe(false);
    rmSync(dir, { recursive: true });
    expect(await reloader.check()).toBe(false);
    expect(reloader.current).toEqual({ cert: pairs.B.cert, key: pairs.B.key });
    const refusals = logger.entries.filter((e) => e.msg.includes('refusing'));
    expect(refusals.map((e) => [e.level, (e.obj as { code?: string }).code])).toEqual([
      ['error', 'TLS_INVALID'],
      ['warn', 'TLS_MISSING'],
    ]);
  });

  it('re-arms the watch after the directory is removed and recreated', async () => {
    const dir = join(tempDir(), 'certs');
    mkdirSync(dir);
    publishPlain(dir, pairs.A);
    const logger = recordingLogger();
    const updates: ValidatedKeyPair[] = [];
    const reloader = track(
      new CertificateReloader(pairs.A, {
        dir,
        logger,
        onUpdate: (pair) => updates.push(pair),
        pollIntervalMs: 0,
        rewatchDelayMs: 100,
      }),
    );
    reloader.start();
    rmSync(dir, { recursive: true });
    await waitFor(() => logger.entries.some((e) => e.msg.includes('re-arm')), 2_000, 'the watch to notice the removal');
    mkdirSync(dir);
    publishPlain(dir, pairs.C);
    await waitFor(() => updates.length === 1, 3_000, 'the update in the recreated directory');
    expect(updates[0]!.fingerprint256).toBe(pairs.C.fingerprint256);
    // The re-armed watch keeps working.
    publishPlain(dir, pairs.D);
    await waitFor(() => updates.length === 2, 3_000, 'an update through the re-armed watch');
    expect(updates[1]!.fingerprint256).toBe(pairs.D.fingerprint256);
  });

  it('makes no further callbacks after stop()', async () => {
    const dir = tempDir();
    publishLikeKubelet(dir, pairs.A);
    const logger = recordingLogger();
    const updates: ValidatedKeyPair[] = [];
    const reloader = new CertificateReloader(pairs.A, {
      dir,
      logger,
      onUpdate: (pair) => updates.push(pair),
      pollIntervalMs: 50,
      debounceMs: 10,
    });
    reloader.start();
    publishLikeKubelet(dir, pairs.B);
    await waitFor(() => updates.length === 1, 2_000, 'the update before stop');

    reloader.stop();
    reloader.stop();
    reloader.start();
    publishLikeKubelet(dir, pairs.C);
    // Proving an absence needs a wait: several poll periods and debounce windows.
    await sleep(400);
    expect(await reloader.check()).toBe(false);
    expect(updates.map((p) => p.fingerprint256)).toEqual([pairs.B.fingerprint256]);
    expect(reloader.current).toEqual({ cert: pairs.B.cert, key: pairs.B.key });
  });
});
