/** ApiConfigSource: the Linkerd configuration from the two ConfigMaps, listed and watched through the API. */
import { createHash } from 'node:crypto';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { ApiConfigSource } from '../../src/cluster/linkerd-config.js';
import { inject } from '../../src/engine/index.js';
import { OTHER_TRUST_ANCHOR, TRUST_ANCHORS } from '../support/engine.js';
import { bodyLines, privateKeys } from '../support/trust-anchors.js';
import { fakeApi, type FakeApi } from './fake-api.js';

let api: FakeApi | undefined;
let source: ApiConfigSource | undefined;

afterEach(async () => {
  source?.close();
  await api?.close();
  source = undefined;
  api = undefined;
});

/** A logger that keeps the message of every line at info and above. */
function recordingLogger(): { logger: pino.Logger; messages: string[]; lines: string[] } {
  const messages: string[] = [];
  const lines: string[] = [];
  const logger = pino({ level: 'info' }, {
    write: (line: string) => {
      lines.push(line);
      messages.push((JSON.parse(line) as { msg: string }).msg);
    },
  });
  return { logger, messages, lines };
}

const configMap = (name: string, data: Record<string, string>) => ({ metadata: { name, namespace: 'linkerd' }, data });
const CONFIGMAPS = '/api/v1/namespaces/linkerd/configmaps';

async function started(items: unknown[]): Promise<{ source: ApiConfigSource; messages: string[]; lines: string[]; reloads: boolean[] }> {
  api = await fakeApi({ lists: { [CONFIGMAPS]: items } });
  const { logger, messages, lines } = recordingLogger();
  const reloads: boolean[] = [];
  source = new ApiConfigSource({ client: api.client, controlPlaneNamespace: 'linkerd', logger, onReload: (applied) => reloads.push(applied) });
  source.start();
  expect(await source.waitForSync(5000)).toBe(true);
  // The build is scheduled after the list has been delivered.
  await new Promise((resolve) => setImmediate(resolve));
  return { source, messages, lines, reloads };
}

describe('ApiConfigSource', () => {
  it('builds the configuration once from both ConfigMaps of one list', async () => {
    const { source: s, messages, reloads } = await started([
      configMap('linkerd-config', { values: 'proxy:\n  logLevel: debug\n' }),
      configMap('linkerd-identity-trust-roots', { 'ca-bundle.crt': TRUST_ANCHORS }),
      configMap('unrelated', { x: 'y' }),
    ]);
    expect(s.loaded).toBe(true);
    expect(s.current().values.proxy.logLevel).toBe('debug');
    expect(s.current().values.identityTrustAnchorsPEM).toBe(TRUST_ANCHORS.trim());
    expect(messages.filter((m) => /Linkerd configuration/.test(m))).toEqual(['loaded Linkerd configuration']);
    expect(reloads).toEqual([]);
  });

  it('without linkerd-config, nothing loads and current() says why with CONFIG_NOT_LOADED', async () => {
    const { source: s } = await started([configMap('linkerd-identity-trust-roots', { 'ca-bundle.crt': TRUST_ANCHORS })]);
    expect(s.loaded).toBe(false);
    expect(() => s.current()).toThrow(
      expect.objectContaining({ code: 'CONFIG_NOT_LOADED', message: expect.stringContaining('ConfigMap linkerd/linkerd-config has no "values" key') }),
    );
  });

  it('refuses a ca-bundle.crt that is not certificates: CONFIG_NOT_LOADED naming the ConfigMap, the key never logged', async () => {
    const key = privateKeys()['PRIVATE KEY'] as string;
    const { source: s, lines } = await started([
      configMap('linkerd-config', { values: 'proxy:\n  logLevel: debug\n' }),
      configMap('linkerd-identity-trust-roots', { 'ca-bundle.crt': key }),
    ]);
    expect(s.loaded).toBe(false);
    expect(() => s.current()).toThrow(
      expect.objectContaining({
        code: 'CONFIG_NOT_LOADED',
        message:
          'the Linkerd configuration is not loaded: the "ca-bundle.crt" of ConfigMap linkerd/linkerd-identity-trust-roots: ' +
          "a private key (PRIVATE KEY) was given where the trust anchors' certificates belong; give the root CA certificates only",
      }),
    );
    for (const line of [...bodyLines(key), 'BEGIN PRIVATE KEY']) expect(lines.join('')).not.toContain(line);
  });

  it('a live update to bad trust anchors is refused and the last good configuration stays; a good one then applies', async () => {
    const roots = (pem: string, resourceVersion: string) => ({ metadata: { name: 'linkerd-identity-trust-roots', namespace: 'linkerd', resourceVersion }, data: { 'ca-bundle.crt': pem } });
    const { source: s, messages, reloads } = await started([
      configMap('linkerd-config', { values: 'proxy:\n  logLevel: debug\n' }),
      roots(TRUST_ANCHORS, '1'),
    ]);
    expect(s.current().values.identityTrustAnchorsPEM).toBe(TRUST_ANCHORS.trim());
    const settled = async (count: number) => {
      while (reloads.length < count) await new Promise((resolve) => setTimeout(resolve, 5));
    };
    await api?.send(CONFIGMAPS, 'MODIFIED', roots(`${TRUST_ANCHORS}-----BEGIN CERTIFICATE-----\nMIIB\n`, '2'));
    await settled(1);
    expect(s.current().values.identityTrustAnchorsPEM).toBe(TRUST_ANCHORS.trim());
    await api?.send(CONFIGMAPS, 'MODIFIED', roots(`${TRUST_ANCHORS}${OTHER_TRUST_ANCHOR}`, '3'));
    await settled(2);
    expect(s.current().values.identityTrustAnchorsPEM).toBe(`${TRUST_ANCHORS}${OTHER_TRUST_ANCHOR}`.trim());
    expect(reloads).toEqual([false, true]);
    expect(messages).toContain('refusing the new Linkerd configuration; keeping the last good one');
  });

  it("without linkerd-identity-trust-roots, the values' identityTrustAnchorsPEM is checked", async () => {
    const { source: s } = await started([configMap('linkerd-config', { values: 'identityTrustAnchorsPEM: hello\n' })]);
    expect(() => s.current()).toThrowError('identityTrustAnchorsPEM in ConfigMap linkerd/linkerd-config: no PEM CERTIFICATE block');
  });

  it("uses a values copy's trust anchors as Linkerd's webhook does: trimmed, so that pods carry Linkerd's trust-root-sha256", async () => {
    // linkerd-config's values keep the PEM's last newline; Linkerd's webhook hashes linkerd-identity-trust-roots,
    // which its chart writes with `| trim`.
    const values = `identityTrustAnchorsPEM: |\n${TRUST_ANCHORS.trim().replace(/^/gm, '  ')}\n`;
    const { source: s } = await started([configMap('linkerd-config', { values })]);
    expect(s.current().values.identityTrustAnchorsPEM).toBe(TRUST_ANCHORS.trim());
    const pod = { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p', annotations: { 'linkerd.io/inject': 'enabled' } }, spec: { containers: [{ name: 'app', image: 'app' }] } };
    const result = inject({ object: pod, kind: 'Pod', namespace: 'shop', config: s.current() });
    const hash = result.outcome === 'injected' ? result.patch.find((op) => op.path === '/metadata/annotations/linkerd.io~1trust-root-sha256')?.value : undefined;
    expect(hash).toBe(createHash('sha256').update(TRUST_ANCHORS.trim()).digest('hex'));
  });
});

