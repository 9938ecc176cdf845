// Serving-certificate lifecycle for the webhook: validate a key pair, generate a development default, and hot-reload kubelet-rotated Secrets.
import { X509Certificate, createHash, createPrivateKey, randomBytes } from 'node:crypto';
import type { KeyObject } from 'node:crypto';
import { existsSync, lstatSync, readFileSync, watch } from 'node:fs';
import type { FSWatcher } from 'node:fs';
import { mkdir, open, readFile, rename, unlink } from 'node:fs/promises';
import { isIP } from 'node:net';
import { basename, join, resolve } from 'node:path';
import { createSecureContext } from 'node:tls';

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
const KUBELET_DATA_LINK = '..data';

/** Error text from OpenSSL can span lines; our messages must stay one line for log readers. */
function oneLine(err: unknown): string {
  const text = err instanceof Error ? err.message : String(err);
  return text.replace(/\s+/g, ' ').trim();
}

function errnoCode(err: unknown): string | undefined {
  return typeof err === 'object' && err !== null && 'code' in err && typeof err.code === 'string' ? err.code : undefined;
}

function readFailure(file: string, dir: string, err: unknown): TlsError {
  // ENOENT also covers a dangling kubelet symlink, which is "absent" from the operator's point of view.
  if (errnoCode(err) === 'ENOENT') return new TlsError('TLS_MISSING', `${file} not found in ${dir}`, { cause: err });
  return new TlsError('TLS_INVALID', `${file} in ${dir} cannot be read: ${oneLine(err)}`, { cause: err });
}

function parseValidTo(cert: X509Certificate): Date {
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

// ---------------------------------------------------------------------------------------------------------------
// Development default certificates
// ---------------------------------------------------------------------------------------------------------------

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

  // Loaded only to generate: it takes a third of a second, and a provided or reused pair does not need it.
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

// ---------------------------------------------------------------------------------------------------------------
// Hot reload
// ---------------------------------------------------------------------------------------------------------------

export interface ReloaderOptions {
  dir: string;
  logger: TlsLogger;
  /** Called with a validated new pair whenever the bytes on disk change to a valid pair. */
  onUpdate: (pair: ValidatedKeyPair) => void;
  /** Polling interval as a safety net, ms (default 10_000). 0 disables polling. */
  pollIntervalMs?: number;
  /** Debounce for watch events, ms (default 100). */
  debounceMs?: number;
  /** Set false to disable fs.watch (tests of the polling path). Default true. */
  watch?: boolean;
  /** Delay before re-arming a watcher that failed, ms (default 1_000). */
  rewatchDelayMs?: number;
}

/** Directory entries whose change can mean a new pair: kubelet's symlink swap, or plain files replaced in place. */
const RELEVANT_ENTRIES: ReadonlySet<string> = new Set([KUBELET_DATA_LINK, CERT_FILE, KEY_FILE]);

/**
 * Watches a certificate directory and hands every new valid pair to onUpdate. The directory, not the files, is
 * watched: kubelet publishes a Secret by swapping the `..data` symlink, after which a watch on the old tls.crt
 * inode never fires again. A polling timer backs the watcher up. Invalid pairs are refused and the current one kept.
 */
export class CertificateReloader {
  private readonly dir: string;
  private readonly logger: TlsLogger;
  private readonly onUpdate: (pair: ValidatedKeyPair) => void;
  private readonly pollIntervalMs: number;
  private readonly debounceMs: number;
  private readonly useWatch: boolean;
  private readonly rewatchDelayMs: number;

  private pair: KeyPair;
  private currentCertBytes: Buffer;
  private currentKeyBytes: Buffer;
  /** Remembers the last refused content so a bad Secret is reported once, not on every poll. */
  private lastRefusal: string | undefined;

  private started = false;
  private stopped = false;
  private watcher: FSWatcher | undefined;
  private pollTimer: NodeJS.Timeout | undefined;
  private debounceTimer: NodeJS.Timeout | undefined;
  private rewatchTimer: NodeJS.Timeout | undefined;
  /** Set while re-arming keeps failing, so a missing directory is reported once rather than every second. */
  private watchFailing = false;
  /** Serialises checks so two overlapping reads can never apply pairs out of order. */
  private queue: Promise<unknown> = Promise.resolve();

  constructor(initial: KeyPair, options: ReloaderOptions) {
    this.dir = options.dir;
    this.logger = options.logger;
    this.onUpdate = options.onUpdate;
    this.pollIntervalMs = options.pollIntervalMs ?? 10_000;
    this.debounceMs = options.debounceMs ?? 100;
    this.useWatch = options.watch ?? true;
    this.rewatchDelayMs = options.rewatchDelayMs ?? 1_000;
    this.pair = { cert: initial.cert, key: initial.key };
    this.currentCertBytes = Buffer.from(initial.cert, 'utf8');
    this.currentKeyBytes = Buffer.from(initial.key, 'utf8');
  }

  get current(): KeyPair {
    return { cert: this.pair.cert, key: this.pair.key };
  }

  /** Begins watching and polling. A stopped reloader stays stopped. */
  start(): void {
    if (this.started || this.stopped) return;
    this.started = true;
    if (this.useWatch) this.armWatcher(false);
    if (this.pollIntervalMs > 0) {
      this.pollTimer = setInterval(() => void this.check(), this.pollIntervalMs);
      this.pollTimer.unref();
    }
  }

  /** Closes the watcher and all timers; no callback fires afterwards. Idempotent. */
  stop(): void {
    this.stopped = true;
    this.closeWatcher();
    for (const timer of [this.pollTimer, this.debounceTimer, this.rewatchTimer]) {
      if (timer !== undefined) clearTimeout(timer);
    }
    this.pollTimer = undefined;
    this.debounceTimer = undefined;
    this.rewatchTimer = undefined;
  }

  /**
   * Re-reads the files now. Resolves true if a new valid pair was applied, false if unchanged, invalid, or the
   * reloader is stopped. Never rejects.
   */
  check(): Promise<boolean> {
    const run = this.queue.then(
      () => this.checkNow(),
      () => this.checkNow(),
    );
    this.queue = run;
    return run;
  }

  private async checkNow(): Promise<boolean> {
    try {
      if (this.stopped) return false;

      let certBytes: Buffer;
      let keyBytes: Buffer;
      try {
        // Through the kubelet symlinks: tls.crt -> ..data/tls.crt -> <timestamped dir>/tls.crt.
        [certBytes, keyBytes] = await Promise.all([
          readFile(join(this.dir, CERT_FILE)).catch((err: unknown) => {
            throw readFailure(CERT_FILE, this.dir, err);
          }),
          readFile(join(this.dir, KEY_FILE)).catch((err: unknown) => {
            throw readFailure(KEY_FILE, this.dir, err);
          }),
        ]);
      } catch (err) {
        this.refuse(`read:${oneLine(err)}`, err, 'warn');
        return false;
      }

      if (certBytes.equals(this.currentCertBytes) && keyBytes.equals(this.currentKeyBytes)) {
        // Back to the pair in use (e.g. a bad update was reverted): a later bad update deserves a fresh report.
        this.lastRefusal = undefined;
        return false;
      }

      let pair: ValidatedKeyPair;
      try {
        pair = validateKeyPair(certBytes.toString('utf8'), keyBytes.toString('utf8'));
      } catch (err) {
        this.refuse(`content:${createHash('sha256').update(certBytes).update('\0').update(keyBytes).digest('hex')}`, err, 'error');
        return false;
      }

      // stop() may have run while we were reading; its promise is "no further callbacks".
      if (this.stopped) return false;

      this.pair = { cert: pair.cert, key: pair.key };
      this.currentCertBytes = certBytes;
      this.currentKeyBytes = keyBytes;
      this.lastRefusal = undefined;

      const expired = pair.notAfter.getTime() <= Date.now();
      const details = { dir: this.dir, fingerprint256: pair.fingerprint256, notAfter: pair.notAfter.toISOString() };
      if (expired) this.logger.warn(details, 'reloaded TLS key pair has already expired; clients will reject it');
      else this.logger.info(details, 'reloaded TLS key pair');

      try {
        this.onUpdate(pair);
      } catch (err) {
        this.logger.error({ dir: this.dir, err: oneLine(err) }, 'TLS key pair update callback threw');
      }
      return true;
    } catch (err) {
      this.logger.error({ dir: this.dir, err: oneLine(err) }, 'unexpected failure while checking the TLS key pair');
      return false;
    }
  }

  private refuse(signature: string, err: unknown, level: 'warn' | 'error'): void {
    if (signature === this.lastRefusal) return;
    this.lastRefusal = signature;
    const details = { dir: this.dir, code: isTlsError(err) ? err.code : undefined, reason: oneLine(err) };
    this.logger[level](details, 'refusing to reload TLS key pair; keeping the current one');
  }

  private armWatcher(recheck: boolean): void {
    if (this.stopped) return;
    // inotify reports the deletion of the watched directory itself as a 'rename' of its own name, and the watch is
    // dead afterwards without an 'error' event; treat that like an error.
    const ownName = basename(resolve(this.dir));
    try {
      const watcher = watch(this.dir, { persistent: false }, (_event, filename) => {
        if (this.watcher !== watcher) return;
        if (filename === ownName && !RELEVANT_ENTRIES.has(filename)) {
          this.logger.warn({ dir: this.dir }, 'certificate directory was removed or replaced; re-arming its watch');
          this.rearm();
        } else if (filename === null || RELEVANT_ENTRIES.has(filename)) {
          // Some platforms omit the name; then any change might be ours.
          this.scheduleCheck();
        }
      });
      watcher.on('error', (err: unknown) => {
        if (this.watcher !== watcher) return;
        this.logger.warn({ dir: this.dir, err: oneLine(err) }, 'certificate directory watch failed; re-arming');
        this.rearm();
      });
      this.watcher = watcher;
      if (this.watchFailing) this.logger.info({ dir: this.dir }, 'watching certificate directory again');
      this.watchFailing = false;
      // Changes made while we were not watching would otherwise wait for the poll (or forever, without one).
      if (recheck) this.scheduleCheck();
    } catch (err) {
      if (!this.watchFailing) {
        this.logger.warn({ dir: this.dir, err: oneLine(err) }, 'cannot watch certificate directory; retrying until it can be watched');
      }
      this.watchFailing = true;
      this.scheduleRewatch();
    }
  }

  private rearm(): void {
    this.closeWatcher();
    this.scheduleRewatch();
  }

  private closeWatcher(): void {
    const watcher = this.watcher;
    this.watcher = undefined;
    if (watcher === undefined) return;
    try {
      watcher.close();
    } catch {
      // Closing a watcher whose directory vanished may throw; it is gone either way.
    }
  }

  private scheduleRewatch(): void {
    if (this.stopped || this.rewatchTimer !== undefined) return;
    this.rewatchTimer = setTimeout(() => {
      this.rewatchTimer = undefined;
      this.armWatcher(true);
    }, this.rewatchDelayMs);
    this.rewatchTimer.unref();
  }

  private scheduleCheck(): void {
    if (this.stopped) return;
    if (this.debounceTimer !== undefined) clearTimeout(this.debounceTimer);
    this.debounceTimer = setTimeout(() => {
      this.debounceTimer = undefined;
      void this.check();
    }, this.debounceMs);
    this.debounceTimer.unref();
  }
}
