/** A fake API server on loopback for the cluster caches: a list of given items, watches that deliver what a test sends, and reads. */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { HttpApiClient, type ApiClient } from '../../src/cluster/client.js';

export interface FakeApi {
  client: ApiClient;
  /** Paths of the direct reads (not lists or watches), in order. */
  reads: string[];
  /** Paths and queries of the lists (not watches), in order. */
  listed: string[];
  /** Sends a watch event to every watch open on the collection at `path`; resolves once one is open. */
  send(path: string, type: 'ADDED' | 'MODIFIED' | 'DELETED', object: unknown): Promise<void>;
  close(): Promise<void>;
}

export interface FakeApiOptions {
  /** Items of the list at each collection path, e.g. /api/v1/namespaces. */
  lists?: Record<string, unknown[]>;
  /** Answers a direct read; the default answers a namespace named by the path's last segment. */
  read?: (path: string, res: ServerResponse, req: IncomingMessage) => void;
}

const json = (res: ServerResponse, status: number, body: unknown): void => {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
};

/** A kubeconfig whose one context talks to `server` with a token, for the commands that read a cluster. */
export const kubeconfigText = (server: string): string =>
  `apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: "${server}"}}]\nusers: [{name: u, user: {token: t}}]\n` +
  'contexts: [{name: x, context: {cluster: c, user: u}}]\ncurrent-context: x\n';

/** Answers as the API server does for an object that does not exist. */
export function notFound(res: ServerResponse): void {
  json(res, 404, { kind: 'Status', apiVersion: 'v1', status: 'Failure', reason: 'NotFound', message: 'not found', code: 404 });
}

export function namespaceFrom(path: string, res: ServerResponse): void {
  const name = path.slice(path.lastIndexOf('/') + 1);
  json(res, 200, { kind: 'Namespace', apiVersion: 'v1', metadata: { name, annotations: { 'linkerd.io/inject': `enabled-${name}` } } });
}

export async function fakeApi(options: FakeApiOptions = {}): Promise<FakeApi> {
  const reads: string[] = [];
  const listed: string[] = [];
  const watches = new Map<string, ServerResponse[]>();
  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? '/', 'http://x');
    const items = options.lists?.[url.pathname];
    if (items !== undefined || url.pathname === '/api/v1/namespaces') {
      if (url.searchParams.get('watch') === 'true') {
        // A watch that stays open and says only what a test sends.
        res.writeHead(200, { 'content-type': 'application/json' });
        res.flushHeaders();
        watches.set(url.pathname, [...(watches.get(url.pathname) ?? []), res]);
        return;
      }
      listed.push(`${url.pathname}${url.search}`);
      // Pages as the API server gives them: `limit` items, and a continue token while more remain.
      const all = items ?? [];
      const from = Number(url.searchParams.get('continue') ?? 0);
      const limit = Number(url.searchParams.get('limit') ?? 0) || all.length;
      const rest = from + limit < all.length ? { continue: String(from + limit) } : {};
      json(res, 200, { kind: 'List', apiVersion: 'v1', metadata: { resourceVersion: '1', ...rest }, items: all.slice(from, from + limit) });
      return;
    }
    reads.push(url.pathname);
    (options.read ?? namespaceFrom)(url.pathname, res, req);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const client = new HttpApiClient(`http://127.0.0.1:${(server.address() as AddressInfo).port}`, async () => {});
  return {
    client,
    reads,
    listed,
    send: async (path, type, object) => {
      while (!watches.get(path)?.some((res) => !res.writableEnded)) await new Promise((resolve) => setTimeout(resolve, 5));
      for (const res of watches.get(path) ?? []) if (!res.writableEnded) res.write(`${JSON.stringify({ type, object })}\n`);
    },
    close: async () => {
      client.close();
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
