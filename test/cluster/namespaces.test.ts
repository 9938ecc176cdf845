/** NamespaceCache's direct reads for namespaces its watch has not delivered, against a fake API server. */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { KubeConfig } from '@kubernetes/client-node';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { NamespaceCache } from '../../src/cluster/namespaces.js';

const silent = pino({ level: 'silent' });
const BOUND = 40;
let server: Server | undefined;
let cache: NamespaceCache | undefined;

afterEach(async () => {
  await cache?.stop();
  server?.closeAllConnections();
  await new Promise((r) => server?.close(r));
});

/** An API server whose list is empty and whose watch never delivers: every namespace must be read directly. */
async function silentWatchServer(reads: string[]): Promise<string> {
  server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    res.setHeader('content-type', 'application/json');
    if (url.pathname === '/api/v1/namespaces') {
      if (url.searchParams.get('watch') === 'true') {
        res.writeHead(200);
        res.flushHeaders();
        return;
      }
      res.end(JSON.stringify({ kind: 'NamespaceList', apiVersion: 'v1', metadata: { resourceVersion: '1' }, items: [] }));
      return;
    }
    const name = url.pathname.slice('/api/v1/namespaces/'.length);
    reads.push(name);
    res.end(JSON.stringify({ kind: 'Namespace', apiVersion: 'v1', metadata: { name, annotations: { 'linkerd.io/inject': `enabled-${name}` } } }));
  });
  await new Promise<void>((r) => server?.listen(0, '127.0.0.1', r));
  return `http://127.0.0.1:${(server?.address() as AddressInfo).port}`;
}

describe('NamespaceCache', () => {
  it('remembers directly read namespaces only up to its bound under a churn of namespaces the watch never delivers', async () => {
    const reads: string[] = [];
    const kc = new KubeConfig();
    kc.loadFromOptions({
      clusters: [{ name: 'fake', server: await silentWatchServer(reads), skipTLSVerify: true }],
      users: [{ name: 'u' }],
      contexts: [{ name: 'c', cluster: 'fake', user: 'u' }],
      currentContext: 'c',
    });
    cache = new NamespaceCache({ kubeConfig: kc, logger: silent, readThroughMax: BOUND });
    cache.start();
    expect(await cache.waitForSync(5000)).toBe(true);
    let largest = 0;
    for (let i = 0; i < 3 * BOUND; i++) {
      expect(await cache.annotations(`ns-${i}`)).toEqual({ 'linkerd.io/inject': `enabled-ns-${i}` });
      largest = Math.max(largest, cache.readThroughSize);
    }
    expect(largest).toBe(BOUND);
    // The most recent are still remembered; the oldest were forgotten and are read again.
    reads.length = 0;
    await cache.annotations(`ns-${3 * BOUND - 1}`);
    await cache.annotations('ns-0');
    expect(reads).toEqual(['ns-0']);
  });
});
