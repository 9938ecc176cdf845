import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FileConfigSource } from '../../src/cluster/config-files.js';
import { TRUST_ANCHORS } from '../support/engine.js';

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

function source(files: { values?: string; anchors?: string }) {
  const valuesPath = join(dir, 'values.yaml');
  const anchorsPath = join(dir, 'ca-bundle.crt');
  if (files.values !== undefined) writeFileSync(valuesPath, files.values);
  if (files.anchors !== undefined) writeFileSync(anchorsPath, files.anchors);
  const reloads: boolean[] = [];
  const s = new FileConfigSource({
    valuesPath,
    trustAnchorsPath: anchorsPath,
    controlPlaneNamespace: 'linkerd',
    logger: silent,
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
    expect(s.current().values.identityTrustAnchorsPEM).toBe(TRUST_ANCHORS);
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
});
