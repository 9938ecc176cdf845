/**
 * What serve's options make of the cluster context: the Pod Security level kube-apiserver's own configuration enforces,
 * as the injector is told it and applies it, and kubectl's default container.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { join } from 'node:path';
import pino from 'pino';
import { createContext, type InjectorContext } from '../../src/cluster/context.js';
import { podSecurityLabels } from '../../src/engine/index.js';
import { InjectorMetrics } from '../../src/server/metrics.js';
import { clusterContext } from './cluster-context.js';
import { fakeApi, namespaceFrom, type FakeApi } from './fake-api.js';

const ENFORCE = 'pod-security.kubernetes.io/enforce';

describe('podSecurityLabels', () => {
  it('gives a namespace without an enforce label the default level, and keeps a label that says otherwise', () => {
    expect(podSecurityLabels(undefined, 'shop', { enforce: 'baseline' })).toEqual({ [ENFORCE]: 'baseline' });
    expect(podSecurityLabels({ [ENFORCE]: 'privileged' }, 'shop', { enforce: 'restricted' })).toEqual({ [ENFORCE]: 'privileged' });
    expect(podSecurityLabels({ [ENFORCE]: 'baseline' }, 'shop', {})).toEqual({ [ENFORCE]: 'baseline' });
    expect(podSecurityLabels(undefined, 'shop', {})).toBeUndefined();
  });

  it('enforces nothing in an exempt namespace, whatever its label or the default', () => {
    expect(podSecurityLabels({ [ENFORCE]: 'restricted' }, 'ops', { enforce: 'baseline', exemptNamespaces: ['ops'] })).toBeUndefined();
    expect(podSecurityLabels(undefined, 'ops', { enforce: 'baseline', exemptNamespaces: ['ops'] })).toBeUndefined();
    expect(podSecurityLabels(undefined, 'shop', { enforce: 'baseline', exemptNamespaces: ['ops'] })).toEqual({ [ENFORCE]: 'baseline' });
  });
});

describe('a cluster context told the default level (and to keep kubectl`s default container)', () => {
  let api: FakeApi | undefined;
  let context: InjectorContext | undefined;
  afterEach(async () => {
    await context?.stop();
    await api?.close();
    context = api = undefined;
  });

  it('answers namespace labels with it, as the namespace watch sees them', async () => {
    const ns = (name: string, labels?: Record<string, string>) => ({ kind: 'Namespace', apiVersion: 'v1', metadata: { name, ...(labels && { labels }) } });
    const { context } = await clusterContext(
      { lists: { '/api/v1/namespaces': [ns('shop'), ns('legacy', { [ENFORCE]: 'privileged' }), ns('ops')] } },
      { podSecurity: { enforce: 'baseline', exemptNamespaces: ['ops'] }, kubectlDefaultContainer: true },
    );
    const labels = context.sources.namespaceLabels;
    expect(labels?.('shop')).toEqual({ [ENFORCE]: 'baseline' });
    expect(labels?.('legacy')).toEqual({ [ENFORCE]: 'privileged' });
    expect(labels?.('ops')).toBeUndefined();
    expect(context.sources.kubectlDefaultContainer).toBe(true);
  });

  it("answers the API server's release once read, and none without a cluster", async () => {
    api = await fakeApi({
      lists: { '/api/v1/resourcequotas': [], '/api/v1/limitranges': [] },
      read: (path, res) => {
        if (path === '/version') {
          res.writeHead(200, { 'content-type': 'application/json' });
          res.end(JSON.stringify({ major: '1', minor: '28', gitVersion: 'v1.28.15' }));
        } else namespaceFrom(path, res);
      },
    });
    const root = join(import.meta.dirname, '..', '..');
    const options = {
      controlPlaneNamespace: 'linkerd',
      trustAnchorsPath: join(root, 'examples', 'trust-anchors.pem'),
      logger: pino({ level: 'silent' }),
      metrics: new InjectorMetrics(),
      events: 'none' as const,
    };
    context = await createContext({ ...options, cluster: { client: api.client, source: 'test', server: 'fake' } });
    while (context.sources.kubernetesVersion?.() === undefined) await new Promise((resolve) => setTimeout(resolve, 10));
    expect(context.sources.kubernetesVersion?.()).toEqual({ major: 1, minor: 28 });
    const offline = await createContext({ ...options, cluster: undefined });
    expect(offline.sources.kubernetesVersion).toBeUndefined();
    await offline.stop();
  });

  it('is said to be ignored without a cluster, where namespaces are unknown', async () => {
    const lines: string[] = [];
    const logger = pino({ level: 'info' }, { write: (line: string) => lines.push(line) });
    const root = join(import.meta.dirname, '..', '..');
    context = await createContext({
      cluster: undefined,
      controlPlaneNamespace: 'linkerd',
      trustAnchorsPath: join(root, 'examples', 'trust-anchors.pem'),
      logger,
      metrics: new InjectorMetrics(),
      events: 'none',
      podSecurity: { enforce: 'restricted' },
    });
    expect(context.sources.namespaceLabels).toBeUndefined();
    expect(lines.map((l) => JSON.parse(l) as { level: number; msg: string }).filter((l) => l.level === 40).map((l) => l.msg)).toEqual([
      'the Pod Security default and exemptions apply to namespaces, which are unknown without a cluster: ignored',
    ]);
  });
});

describe('kubectl default container', () => {
  it('reaches the admission sources with or without a cluster, when asked', async () => {
    const root = join(import.meta.dirname, '..', '..');
    const options = {
      cluster: undefined,
      controlPlaneNamespace: 'linkerd',
      trustAnchorsPath: join(root, 'examples', 'trust-anchors.pem'),
      logger: pino({ level: 'silent' }),
      metrics: new InjectorMetrics(),
      events: 'none' as const,
    };
    const asked = await createContext({ ...options, kubectlDefaultContainer: true });
    const not = await createContext(options);
    try {
      expect(asked.sources.kubectlDefaultContainer).toBe(true);
      expect(not.sources.kubectlDefaultContainer).toBeUndefined();
    } finally {
      await asked.stop();
      await not.stop();
    }
  });
});
