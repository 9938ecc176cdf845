/** Hot reload of the serving pair: kubelet-style Secret updates, files replaced in place, bad pairs refused. */
import { X509Certificate } from 'node:crypto';
import { existsSync, lstatSync, mkdirSync, readlinkSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { CertificateReloader, loadKeyPair } from '../../src/tls/index.js';
import type { KeyPair, ValidatedKeyPair } from '../../src/tls/index.js';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { recordingLogger, sleep, tempDirs, tlsFixtures, waitFor, type TlsFixtures } from './support.js';

const tempDir = tempDirs();
let pairs: TlsFixtures['pairs'];
beforeAll(async () => {
  ({ pairs } = await tlsFixtures(tempDir()));
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
