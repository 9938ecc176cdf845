/**
 * A development CA and a serving certificate signed by it, generated into the TLS directory when it holds no pair, so
 * the server can start with nothing provisioned; a pair someone else provided is never touched.
 */
import { X509Certificate, createPrivateKey, randomBytes } from 'node:crypto';
import { existsSync, lstatSync, readFileSync } from 'node:fs';
import { mkdir, open, rename, unlink } from 'node:fs/promises';
import { isIP } from 'node:net';
import { join } from 'node:path';
import { CA_CERT_FILE, CA_KEY_FILE, CERT_FILE, KEY_FILE, TlsError, parseValidTo, type KeyPair, type TlsLogger } from './key-pair.js';
import { oneLine } from '../engine/index.js';

export interface GeneratedCertificates {
  /** Path of ca.crt. When generated is false this file may not exist (the pair was provisioned by someone else). */
  caPath: string;
  certPath: string;
  keyPath: string;
  generated: boolean;
}

const CA_COMMON_NAME = 'proxy-injector development CA';
const CA_VALIDITY_YEARS = 10;
const SERVING_VALIDITY_YEARS = 1;
/** Back-dating notBefore tolerates a cluster whose clock runs slightly behind the machine that generated the cert. */
const CLOCK_SKEW_MS = 5 * 60 * 1000;
/** A reused CA must outlive the serving certificate it is about to sign. */
const CA_MIN_REMAINING_MS = 366 * 24 * 60 * 60 * 1000;

/**
 * ECDSA P-256 with SHA-256: accepted by Go's crypto/tls (kube-apiserver) and every current client, and key
 * generation takes milliseconds instead of RSA's hundreds.
 */
const KEY_TYPE = 'ec' as const;
const CURVE = 'P-256' as const;
const SIGNATURE_HASH = 'sha256';

function addYears(date: Date, years: number): Date {
  const result = new Date(date.getTime());
  result.setUTCFullYear(result.getUTCFullYear() + years);
  return result;
}

/** Rejects names that would corrupt the subject string selfsigned builds ("CN=<name>", comma-separated). */
function checkSanEntry(entry: string): void {
  if (entry === '' || /[\s,=+;"<>\\]/.test(entry)) throw new TypeError(`invalid DNS name for the serving certificate: ${JSON.stringify(entry)}`);
}

interface SanPlan {
  commonName: string;
  dns: string[];
  ips: string[];
}

function planSans(dnsNames: readonly string[]): SanPlan {
  const dns = ['localhost'];
  const ips = ['127.0.0.1', '::1'];
  for (const raw of dnsNames) {
    const entry = raw.trim();
    checkSanEntry(entry);
    const target = isIP(entry) === 0 ? dns : ips;
    if (!target.includes(entry)) target.push(entry);
  }
  const firstDns = dnsNames.map((n) => n.trim()).find((n) => isIP(n) === 0);
  return { commonName: firstDns ?? 'localhost', dns, ips };
}

/** Writes via a same-directory temp file and rename, so readers and crashes never observe a partial file. */
async function writeFileAtomic(path: string, data: string, mode: number): Promise<void> {
  const temp = `${path}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`;
  const handle = await open(temp, 'wx', mode);
  try {
    try {
      await handle.writeFile(data, 'utf8');
      // open()'s mode is filtered by the umask; the key must end up exactly owner-only.
      await handle.chmod(mode);
      await handle.sync();
    } finally {
      await handle.close();
    }
    await rename(temp, path);
  } catch (err) {
    await unlink(temp).catch(() => undefined);
    throw err;
  }
}

function entryExists(path: string): boolean {
  try {
    // lstat, not stat: a dangling symlink is someone else's file too, and we must not replace it.
    lstatSync(path);
    return true;
  } catch {
    return false;
  }
}

/** Returns the CA in `dir` when it can sign one more serving certificate, so a caBundle already registered keeps working. */
function reusableCa(dir: string, logger: TlsLogger): KeyPair | undefined {
  const caPath = join(dir, CA_CERT_FILE);
  const caKeyPath = join(dir, CA_KEY_FILE);
  if (!existsSync(caPath) || !existsSync(caKeyPath)) return undefined;
  try {
    const cert = readFileSync(caPath, 'utf8');
    const key = readFileSync(caKeyPath, 'utf8');
    const x509 = new X509Certificate(cert);
    const privateKey = createPrivateKey(key);
    const usable =
      x509.ca &&
      x509.checkPrivateKey(privateKey) &&
      privateKey.asymmetricKeyType === KEY_TYPE &&
      parseValidTo(x509).getTime() - Date.now() > CA_MIN_REMAINING_MS;
    if (usable) return { cert, key };
    logger.warn({ dir }, 'existing development CA is unusable (not a CA, expiring, mismatched or not EC); generating a new CA');
  } catch (err) {
    logger.warn({ dir, err: oneLine(err) }, 'existing development CA cannot be read; generating a new CA');
  }
  return undefined;
}

/**
 * The serving certificate in `dir`, and whether it was generated here: signed by the development CA whose key sits
 * beside it. Anything else is a pair someone provided.
 */
function existingPair(dir: string, certPath: string): { serving: X509Certificate; generated: boolean } | undefined {
  try {
    const serving = new X509Certificate(readFileSync(certPath, 'utf8'));
    if (!existsSync(join(dir, CA_KEY_FILE))) return { serving, generated: false };
    const ca = new X509Certificate(readFileSync(join(dir, CA_CERT_FILE), 'utf8'));
    const generated = ca.subject === `CN=${CA_COMMON_NAME}` && serving.checkIssued(ca) && serving.verify(ca.publicKey);
    return { serving, generated };
  } catch {
    // Unreadable files are reported by loadKeyPair, which comes next, with the reason.
    return undefined;
  }
}

/** The requested names (DNS names or IP addresses) the certificate does not cover. */
function uncovered(cert: X509Certificate, names: readonly string[]): string[] {
  return names.map((n) => n.trim()).filter((n) => (isIP(n) === 0 ? cert.checkHost(n, { wildcards: false }) === undefined : cert.checkIP(n) === undefined));
}

/** The DNS names and IPv4 addresses of a certificate (IPv6 ones come back expanded; the defaults cover ::1). */
function namesOf(cert: X509Certificate): string[] {
  return (cert.subjectAltName ?? '')
    .split(', ')
    .map((entry) => /^(?:DNS:(.+)|IP Address:(\d+\.\d+\.\d+\.\d+))$/.exec(entry))
    .flatMap((m) => (m ? [m[1] ?? m[2] ?? ''] : []))
    .filter((n) => n !== '' && n !== 'localhost' && n !== '127.0.0.1');
}

/**
 * Embedded default for development: when `dir` has no tls.crt/tls.key, generates a CA and a serving certificate
 * signed by it (ECDSA P-256, SHA-256). A generated pair that does not cover the requested names is reissued from the
 * same CA (so a registered caBundle keeps working); a provided pair is never touched.
 */
export async function ensureCertificates(dir: string, dnsNames: string[], logger: TlsLogger): Promise<GeneratedCertificates> {
  const paths = {
    caPath: join(dir, CA_CERT_FILE),
    certPath: join(dir, CERT_FILE),
    keyPath: join(dir, KEY_FILE),
  };
  const caKeyPath = join(dir, CA_KEY_FILE);
  planSans(dnsNames);

  await mkdir(dir, { recursive: true });

  const haveCert = entryExists(paths.certPath);
  const haveKey = entryExists(paths.keyPath);
  let existingNames: string[] = [];
  if (haveCert && haveKey) {
    const existing = existingPair(dir, paths.certPath);
    const missing = existing ? uncovered(existing.serving, dnsNames) : [];
    if (missing.length === 0) {
      logger.info({ dir }, 'using existing TLS key pair');
      return { ...paths, generated: false };
    }
    if (!existing?.generated) {
      // Someone else's pair (a Secret, cert-manager, a file of their own): theirs to reissue, never ours.
      logger.warn({ dir, missing }, `the TLS key pair in ${dir} was not generated here and does not cover --tls-san ${missing.join(', ')}; using it as it is`);
      return { ...paths, generated: false };
    }
    logger.info({ dir, missing }, `the development certificate does not cover ${missing.join(', ')}; issuing a new one from the same CA`);
    existingNames = namesOf(existing.serving);
  }
  if (haveCert && !haveKey) {
    // We write tls.crt last, so a lone tls.crt was put there by someone else; replacing it would destroy their work.
    throw new TlsError('TLS_MISSING', `${CERT_FILE} exists in ${dir} but ${KEY_FILE} does not; refusing to generate over it`);
  }
  if (haveKey && !haveCert) {
    logger.warn({ dir }, `${KEY_FILE} exists without ${CERT_FILE} (an interrupted generation); regenerating`);
  }

  // A reissued certificate keeps the names it had, so earlier --tls-san values keep working.
  const sans = planSans([...dnsNames, ...existingNames.filter((n) => !dnsNames.includes(n))]);
  const now = Date.now();
  const notBeforeDate = new Date(now - CLOCK_SKEW_MS);

  // Loaded only to generate: it is slow to load, and a provided or reused pair does not need it.
  const { generate } = await import('selfsigned');
  let ca = reusableCa(dir, logger);
  const caGenerated = ca === undefined;
  if (ca === undefined) {
    const generatedCa = await generate([{ name: 'commonName', value: CA_COMMON_NAME }], {
      keyType: KEY_TYPE,
      curve: CURVE,
      algorithm: SIGNATURE_HASH,
      notBeforeDate,
      notAfterDate: addYears(new Date(now), CA_VALIDITY_YEARS),
      extensions: [
        { name: 'basicConstraints', cA: true, critical: true },
        { name: 'keyUsage', keyCertSign: true, cRLSign: true, critical: true },
      ],
    });
    ca = { cert: generatedCa.cert, key: generatedCa.private };
  }

  const serving = await generate([{ name: 'commonName', value: sans.commonName }], {
    keyType: KEY_TYPE,
    curve: CURVE,
    algorithm: SIGNATURE_HASH,
    notBeforeDate,
    notAfterDate: addYears(new Date(now), SERVING_VALIDITY_YEARS),
    ca,
    extensions: [
      { name: 'basicConstraints', cA: false, critical: true },
      // ECDSA keys sign the handshake; keyEncipherment only applies to RSA key transport.
      { name: 'keyUsage', digitalSignature: true, critical: true },
      { name: 'extKeyUsage', serverAuth: true },
      {
        name: 'subjectAltName',
        altNames: [...sans.dns.map((value) => ({ type: 2 as const, value })), ...sans.ips.map((ip) => ({ type: 7 as const, ip }))],
      },
    ],
  });

  // Order matters: tls.crt is written last and marks the set as complete (see the lone-file checks above).
  if (caGenerated) {
    await writeFileAtomic(caKeyPath, ca.key, 0o600);
    await writeFileAtomic(paths.caPath, ca.cert, 0o644);
  }
  await writeFileAtomic(paths.keyPath, serving.private, 0o600);
  await writeFileAtomic(paths.certPath, serving.cert, 0o644);

  const x509 = new X509Certificate(serving.cert);
  logger.info(
    {
      dir,
      caGenerated,
      commonName: sans.commonName,
      subjectAltName: x509.subjectAltName,
      notAfter: parseValidTo(x509).toISOString(),
      fingerprint256: x509.fingerprint256,
    },
    `generated development TLS certificates (ECDSA P-256); register ${paths.caPath} as the webhook caBundle`,
  );
  return { ...paths, generated: true };
}

