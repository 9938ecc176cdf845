/** Hot reload of the serving pair: kubelet-rotated Secrets and files replaced in place, validated before they are used. */
import { createHash } from 'node:crypto';
import { watch } from 'node:fs';
import type { FSWatcher } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { basename, join, resolve } from 'node:path';
import {
  CERT_FILE,
  KEY_FILE,
  KUBELET_DATA_LINK,
  isTlsError,
  readFailure,
  validateKeyPair,
  type KeyPair,
  type TlsLogger,
  type ValidatedKeyPair,
} from './key-pair.js';
import { oneLine } from '../engine/index.js';

export interface ReloaderOptions {
  dir: string;
  logger: TlsLogger;
  /** Called with a validated new pair whenever the bytes on disk change to a valid pair. */
  onUpdate: (pair: ValidatedKeyPair) => void;
  /** Called once for each pair on disk that is refused (it is logged once too). */
  onRefused?: () => void;
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
  private readonly onRefused: (() => void) | undefined;
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
    this.onRefused = options.onRefused;
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
    this.onRefused?.();
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
