/** ApiConfigSource: the Linkerd configuration from the two ConfigMaps, listed and watched through the API. */
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { ApiConfigSource } from '../../src/cluster/linkerd-config.js';
import { TRUST_ANCHORS } from '../support/engine.js';
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
function recordingLogger(): { logger: pino.Logger; messages: string[] } {
  const messages: string[] = [];
  const logger = pino({ level: 'info' }, { write: (line: string) => void messages.push((JSON.parse(line) as { msg: string }).msg) });
  return { logger, messages };
}

const configMap = (name: string, data: Record<string, string>) => ({ metadata: { name, namespace: 'linkerd' }, data });
const CONFIGMAPS = '/api/v1/namespaces/linkerd/configmaps';

async function started(items: unknown[]): Promise<{ source: ApiConfigSource; messages: string[]; reloads: boolean[] }> {
  api = await fakeApi({ lists: { [CONFIGMAPS]: items } });
  const { logger, messages } = recordingLogger();
  const reloads: boolean[] = [];
  source = new ApiConfigSource({ client: api.client, controlPlaneNamespace: 'linkerd', logger, onReload: (applied) => reloads.push(applied) });
  source.start();
  expect(await source.waitForSync(5000)).toBe(true);
  // The build is scheduled after the list has been delivered.
  await new Promise((resolve) => setImmediate(resolve));
  return { source, messages, reloads };
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
    expect(s.current().values.identityTrustAnchorsPEM).toBe(TRUST_ANCHORS);
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
});
