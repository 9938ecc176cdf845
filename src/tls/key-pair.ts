/** Serving key pairs: reading tls.crt and tls.key and checking them the way the HTTPS server will use them. */
import { X509Certificate, createPrivateKey } from 'node:crypto';
import type { KeyObject } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createSecureContext } from 'node:tls';
import { oneLine } from '../engine/index.js';

/** Minimal pino-compatible logger so this module does not depend on the logger's construction. */
export interface TlsLogger {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

/** A certificate (chain) and its private key, both PEM text. */
export interface KeyPair {
  cert: string;
  key: string;
}

/** A key pair that passed validation, with the facts operators ask about when rotating. */
export type ValidatedKeyPair = KeyPair & { notAfter: Date; fingerprint256: string };

export type TlsErrorCode =
  /** tls.crt or tls.key does not exist. */
  | 'TLS_MISSING'
  /** The files exist but cannot be read, do not parse, or do not belong together. */
  | 'TLS_INVALID';

export class TlsError extends Error {
  override readonly name = 'TlsError';
  constructor(
    readonly code: TlsErrorCode,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

export function isTlsError(value: unknown): value is TlsError {
  return value instanceof TlsError;
}

export const CERT_FILE = 'tls.crt';
export const KEY_FILE = 'tls.key';
export const CA_CERT_FILE = 'ca.crt';
export const CA_KEY_FILE = 'ca.key';

/** kubelet's atomic-writer swaps this symlink to publish a new Secret version. */
export const KUBELET_DATA_LINK = '..data';

function errnoCode(err: unknown): string | undefined {
  return typeof err === 'object' && err !== null && 'code' in err && typeof err.code === 'string' ? err.code : undefined;
}

export function readFailure(file: string, dir: string, err: unknown): TlsError {
  // ENOENT also covers a dangling kubelet symlink, which is "absent" from the operator's point of view.
  if (errnoCode(err) === 'ENOENT') return new TlsError('TLS_MISSING', `${file} not found in ${dir}`, { cause: err });
  return new TlsError('TLS_INVALID', `${file} in ${dir} cannot be read: ${oneLine(err)}`, { cause: err });
}

export function parseValidTo(cert: X509Certificate): Date {
  const date = new Date(cert.validTo);
  if (Number.isNaN(date.getTime())) throw new TlsError('TLS_INVALID', `${CERT_FILE}: cannot parse notAfter ${JSON.stringify(cert.validTo)}`);
  return date;
}

/**
 * Validates PEM text the way the HTTPS server will consume it. Throws TlsError('TLS_INVALID') with a
 * one-line reason naming the offending file.
 */
export function validateKeyPair(cert: string, key: string): ValidatedKeyPair {
  if (cert.trim() === '') throw new TlsError('TLS_INVALID', `${CERT_FILE} is empty`);
  if (key.trim() === '') throw new TlsError('TLS_INVALID', `${KEY_FILE} is empty`);

  let x509: X509Certificate;
  try {
    x509 = new X509Certificate(cert);
  } catch (err) {
    throw new TlsError('TLS_INVALID', `${CERT_FILE} is not a PEM certificate: ${oneLine(err)}`, { cause: err });
  }

  let privateKey: KeyObject;
  try {
    privateKey = createPrivateKey(key);
  } catch (err) {
    throw new TlsError('TLS_INVALID', `${KEY_FILE} is not a readable unencrypted private key: ${oneLine(err)}`, { cause: err });
  }

  if (!x509.checkPrivateKey(privateKey)) {
    throw new TlsError(
      'TLS_INVALID',
      `${KEY_FILE} does not match the certificate in ${CERT_FILE} (key mismatch: the key is not the certificate's private key)`,
    );
  }

  try {
    // The parsers above accept some inputs OpenSSL's TLS stack still rejects (e.g. trailing junk in the chain).
    createSecureContext({ cert, key });
  } catch (err) {
    throw new TlsError('TLS_INVALID', `${CERT_FILE}/${KEY_FILE} rejected by the TLS stack: ${oneLine(err)}`, { cause: err });
  }

  return { cert, key, notAfter: parseValidTo(x509), fingerprint256: x509.fingerprint256 };
}

/** Reads <dir>/tls.crt and <dir>/tls.key and validates them; see validateKeyPair for what "valid" means. */
export function loadKeyPair(dir: string): ValidatedKeyPair {
  const read = (file: string): string => {
    try {
      return readFileSync(join(dir, file), 'utf8');
    } catch (err) {
      throw readFailure(file, dir, err);
    }
  };
  // Read both before judging either, so a missing key is reported as missing even when the cert is garbage.
  const cert = read(CERT_FILE);
  const key = read(KEY_FILE);
  return validateKeyPair(cert, key);
}
