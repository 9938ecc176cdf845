/** Reading and checking a serving key pair the way the HTTPS server will use it. */
import { X509Certificate, createPrivateKey } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { TlsError, loadKeyPair } from '../../src/tls/index.js';
import { beforeAll, describe, expect, it } from 'vitest';
import { tempDirs, tlsFixtures, type TlsFixtures } from './support.js';

const tempDir = tempDirs();
let pairs: TlsFixtures['pairs'];
let rsa: TlsFixtures['rsa'];
beforeAll(async () => {
  ({ pairs, rsa } = await tlsFixtures(tempDir()));
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

