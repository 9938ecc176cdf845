import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FileConfigSource } from '../../src/cluster/config-files.js';
import { OTHER_TRUST_ANCHOR, TRUST_ANCHORS } from '../support/engine.js';
import { bodyLines, INVALID_BUNDLES, privateKeys } from '../support/trust-anchors.js';

const silent = pino({ level: 'silent' });
let dir: string;
const sources: FileConfigSource[] = [];

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'proxy-injector-config-'));
});
afterEach(() => {
  sources.splice(0).forEach((s) => s.close());
  rmSync(dir, { recursive: true, force: true });
});

function source(files: { values?: string; anchors?: string }, logger = silent) {
  const valuesPath = join(dir, 'values.yaml');
  const anchorsPath = join(dir, 'ca-bundle.crt');
  if (files.values !== undefined) writeFileSync(valuesPath, files.values);
  if (files.anchors !== undefined) writeFileSync(anchorsPath, files.anchors);
  const reloads: boolean[] = [];
  const s = new FileConfigSource({
    valuesPath,
    trustAnchorsPath: anchorsPath,
    controlPlaneNamespace: 'linkerd',
    logger,
    pollMs: 0,
    onReload: (applied) => reloads.push(applied),
  });
  sources.push(s);
  return { s, valuesPath, anchorsPath, reloads };
}

describe('FileConfigSource', () => {
  it('loads values over the defaults and puts the trust anchors file in place', () => {
    const { s } = source({ values: 'cniEnabled: true\n', anchors: TRUST_ANCHORS });
    expect(s.loaded).toBe(true);
    expect(s.current().values.cniEnabled).toBe(true);
    expect(s.current().values.identityTrustAnchorsPEM).toBe(TRUST_ANCHORS.trim());
    expect(s.current().controlPlaneNamespace).toBe('linkerd');
  });

  it('applies a change on the next poll, without a restart', () => {
    const { s, valuesPath, reloads } = source({ values: 'cniEnabled: false\n', anchors: TRUST_ANCHORS });
    writeFileSync(valuesPath, 'cniEnabled: true\nproxy:\n  logLevel: debug\n');
    s.poll();
    expect(s.current().values.cniEnabled).toBe(true);
    expect(s.current().values.proxy.logLevel).toBe('debug');
    expect(reloads).toEqual([true]);
  });

  it('does nothing when the files did not change', () => {
    const { s, reloads } = source({ values: 'cniEnabled: false\n', anchors: TRUST_ANCHORS });
    s.poll();
    s.poll();
    expect(reloads).toEqual([]);
  });

  it('keeps the last good configuration when a change is invalid, and reports it', () => {
    const { s, valuesPath, reloads } = source({ values: 'cniEnabled: true\n', anchors: TRUST_ANCHORS });
    writeFileSync(valuesPath, 'proxy:\n  ports:\n    admin: "not a port"\n');
    s.poll();
    expect(s.current().values.cniEnabled).toBe(true);
    expect(reloads).toEqual([false]);
  });

  it('an unreadable file at start leaves it unloaded, with the reason in the error', () => {
    const { s } = source({ anchors: TRUST_ANCHORS });
    expect(s.loaded).toBe(false);
    expect(() => s.current()).toThrowError(/the Linkerd configuration is not loaded: cannot read the values file .*values\.yaml: ENOENT/);
  });

  it('recovers once the file appears; neither the failed first load nor the first success counts as a reload', () => {
    const { s, valuesPath, reloads } = source({ anchors: TRUST_ANCHORS });
    writeFileSync(valuesPath, 'clusterDomain: example.org\n');
    s.poll();
    expect(s.current().values.clusterDomain).toBe('example.org');
    expect(reloads).toEqual([]);
  });

  it('warns, with the version, when the values name another Linkerd version than the one followed', () => {
    const lines: string[] = [];
    const logger = pino({ level: 'info' }, { write: (line: string) => void lines.push(line) });
    source({ values: 'linkerdVersion: edge-26.11.2\n', anchors: TRUST_ANCHORS }, logger);
    const parsed = lines.map((l) => JSON.parse(l) as { level: number; msg: string; linkerdVersion?: string });
    expect(parsed.find((l) => l.msg === 'loaded Linkerd configuration')).toMatchObject({ linkerdVersion: 'edge-26.11.2' });
    expect(parsed.find((l) => l.level === 40)).toMatchObject({
      linkerdVersion: 'edge-26.11.2',
      msg: expect.stringMatching(/^linkerd-config names Linkerd edge-26\.11\.2, but this injector follows Linkerd /),
    });
    lines.length = 0;
    source({ values: '', anchors: TRUST_ANCHORS }, logger);
    expect(lines.filter((l) => l.includes('"level":40'))).toEqual([]);
  });

  describe('trust anchors', () => {
    it('takes a bundle of two certificates', () => {
      const { s } = source({ values: '', anchors: `${TRUST_ANCHORS}${OTHER_TRUST_ANCHOR}` });
      expect(s.current().values.identityTrustAnchorsPEM).toBe(`${TRUST_ANCHORS}${OTHER_TRUST_ANCHOR}`.trim());
    });

    it.each(INVALID_BUNDLES)('refuses %s: not loaded, CONFIG_NOT_LOADED naming the file', (_name, pem, says) => {
      const { s, anchorsPath } = source({ values: '', anchors: pem });
      expect(s.loaded).toBe(false);
      expect(() => s.current()).toThrow(expect.objectContaining({ code: 'CONFIG_NOT_LOADED' }));
      expect(() => s.current()).toThrowError(`the Linkerd configuration is not loaded: the trust anchors file ${anchorsPath}: `);
      expect(() => s.current()).toThrowError(says);
    });

    it('refuses a private key as one, and neither the error nor the log repeats it', () => {
      const key = privateKeys()['EC PRIVATE KEY'] as string;
      const lines: string[] = [];
      const logger = pino({ level: 'info' }, { write: (line: string) => void lines.push(line) });
      const { s, anchorsPath } = source({ values: '', anchors: key }, logger);
      expect(() => s.current()).toThrowError(
        `the Linkerd configuration is not loaded: the trust anchors file ${anchorsPath}: a private key (EC PRIVATE KEY) was given where the trust anchors' certificates belong`,
      );
      const log = lines.join('');
      expect(log).toContain('a private key (EC PRIVATE KEY) was given');
      expect(log).not.toContain('loaded Linkerd configuration');
      for (const line of [...bodyLines(key), 'BEGIN EC PRIVATE KEY']) {
        expect(log).not.toContain(line);
        expect(() => s.current()).not.toThrowError(line);
      }
    });

    it('a change to bad anchors is refused and the last good configuration stays; good anchors then apply', () => {
      const { s, anchorsPath, reloads } = source({ values: '', anchors: TRUST_ANCHORS });
      writeFileSync(anchorsPath, privateKeys()['PRIVATE KEY'] as string);
      s.poll();
      expect(s.current().values.identityTrustAnchorsPEM).toBe(TRUST_ANCHORS.trim());
      writeFileSync(anchorsPath, `${TRUST_ANCHORS}junk`);
      s.poll();
      expect(s.current().values.identityTrustAnchorsPEM).toBe(TRUST_ANCHORS.trim());
      writeFileSync(anchorsPath, OTHER_TRUST_ANCHOR);
      s.poll();
      expect(s.current().values.identityTrustAnchorsPEM).toBe(OTHER_TRUST_ANCHOR.trim());
      expect(reloads).toEqual([false, false, true]);
    });

    it('an empty file is still left to the engine (MISSING_TRUST_ANCHORS at admission)', () => {
      const { s } = source({ values: '', anchors: '' });
      expect(s.loaded).toBe(true);
    });

    it("without a trust anchors file, the values' own identityTrustAnchorsPEM is checked", () => {
      const valuesPath = join(dir, 'values.yaml');
      const values = (pem: string) => `identityTrustAnchorsPEM: ${JSON.stringify(pem)}\n`;
      writeFileSync(valuesPath, values('hello'));
      const bad = new FileConfigSource({ valuesPath, controlPlaneNamespace: 'linkerd', logger: silent, pollMs: 0 });
      sources.push(bad);
      expect(() => bad.current()).toThrowError(`identityTrustAnchorsPEM in the values file ${valuesPath}: no PEM CERTIFICATE block`);
      writeFileSync(valuesPath, values(OTHER_TRUST_ANCHOR));
      const good = new FileConfigSource({ valuesPath, controlPlaneNamespace: 'linkerd', logger: silent, pollMs: 0 });
      sources.push(good);
      expect(good.current().values.identityTrustAnchorsPEM).toBe(OTHER_TRUST_ANCHOR.trim());
    });
  });
});
