/**
 * A fake Kubernetes API on loopback for a `serve` process in cluster mode: the reads and watches the injector makes
 * (namespaces, quotas and limit ranges, Linkerd's ConfigMaps, the API server's release, owners by kind) and the Events
 * it writes, answered from what the caller gives, with a count of every read. Plain HTTP with a bearer token, which the
 * kubeconfig it writes names.
 */
import { writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { join } from 'node:path';

const json = (res, status, body) => {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
};

const notFound = (res, what) => json(res, 404, { kind: 'Status', apiVersion: 'v1', status: 'Failure', reason: 'NotFound', code: 404, message: `${what} not found` });

/** The owners the injector reads, by the collection in their path. */
const OWNER_COLLECTIONS = { replicasets: 'ReplicaSet', jobs: 'Job', statefulsets: 'StatefulSet', daemonsets: 'DaemonSet' };

/**
 * Starts the fake API. `namespaces`: name → annotations, listed and readable; `unlisted`: the same, readable only (a
 * namespace created after the injector listed them); `owners`: "<collection>/<namespace>/<name>" → metadata (its
 * ownerReferences and annotations); `configMaps`: namespace → the ConfigMaps listed there (Linkerd's, for the
 * injector's watch of its configuration, and readable one by one); `pods`: { count, make(index) }, listed at
 * /api/v1/pods a page at a time as `limit` and `continue` ask, each made when its page is; `delayMs`: how long each
 * direct read waits before it is answered.
 */
export async function startFakeCluster({ namespaces = {}, unlisted = {}, owners = {}, configMaps = {}, pods, delayMs = 0 } = {}) {
  const readable = { ...namespaces, ...unlisted };
  /** Direct reads (not lists or watches), by path. */
  const reads = new Map();
  const events = [];
  const watches = new Set();
  const server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://fake');
    const path = url.pathname;
    if (req.method === 'POST' || req.method === 'PATCH') {
      let body = '';
      req.setEncoding('utf8');
      req.on('data', (c) => (body += c));
      req.on('end', () => {
        events.push({ method: req.method, path, body });
        json(res, req.method === 'POST' ? 201 : 200, body ? JSON.parse(body) : {});
      });
      return;
    }
    if (path === '/version') return json(res, 200, { major: '1', minor: '34', gitVersion: 'v1.34.0' });
    const list = (items) => {
      if (url.searchParams.get('watch') === 'true') {
        // A watch that stays open and says nothing: the list is all there is.
        res.writeHead(200, { 'content-type': 'application/json' });
        res.flushHeaders();
        watches.add(res);
        res.on('close', () => watches.delete(res));
        return;
      }
      json(res, 200, { kind: 'List', apiVersion: 'v1', metadata: { resourceVersion: '1' }, items });
    };
    const namespace = (name) => ({ apiVersion: 'v1', kind: 'Namespace', metadata: { name, resourceVersion: '1', annotations: readable[name] } });
    if (path === '/api/v1/namespaces') return list(Object.keys(namespaces).map(namespace));
    if (path === '/api/v1/resourcequotas' || path === '/api/v1/limitranges') return list([]);
    if (path === '/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations') return list([]);
    if (path === '/api/v1/pods' && pods) {
      const from = Number(url.searchParams.get('continue') ?? 0);
      const to = Math.min(pods.count, from + (Number(url.searchParams.get('limit')) || pods.count));
      const items = Array.from({ length: to - from }, (_, i) => pods.make(from + i));
      const more = to < pods.count ? { continue: String(to) } : {};
      return json(res, 200, { kind: 'PodList', apiVersion: 'v1', metadata: { resourceVersion: '1', ...more }, items });
    }
    const maps = /^\/api\/v1\/namespaces\/([^/]+)\/configmaps$/.exec(path);
    if (maps) return list(configMaps[decodeURIComponent(maps[1])] ?? []);
    const map = /^\/api\/v1\/namespaces\/([^/]+)\/configmaps\/([^/]+)$/.exec(path);
    if (map) {
      const found = (configMaps[decodeURIComponent(map[1])] ?? []).find((cm) => cm.metadata?.name === decodeURIComponent(map[2]));
      return found ? json(res, 200, found) : notFound(res, 'configmap');
    }
    reads.set(path, (reads.get(path) ?? 0) + 1);
    setTimeout(() => {
      const ns = /^\/api\/v1\/namespaces\/([^/]+)$/.exec(path);
      if (ns) return Object.hasOwn(readable, decodeURIComponent(ns[1])) ? json(res, 200, namespace(decodeURIComponent(ns[1]))) : notFound(res, 'namespace');
      const owner = /^\/apis\/(?:apps|batch)\/v1\/namespaces\/([^/]+)\/([a-z]+)\/([^/]+)$/.exec(path);
      const kind = owner && OWNER_COLLECTIONS[owner[2]];
      if (kind) {
        const key = `${owner[2]}/${decodeURIComponent(owner[1])}/${decodeURIComponent(owner[3])}`;
        const metadata = owners[key];
        return metadata ? json(res, 200, { kind, metadata: { name: decodeURIComponent(owner[3]), namespace: decodeURIComponent(owner[1]), ...metadata } }) : notFound(res, kind);
      }
      notFound(res, path);
    }, delayMs);
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${server.address().port}`;
  return {
    url,
    reads,
    events,
    /** Writes a kubeconfig for this API into `dir` and returns its path. */
    kubeconfig(dir) {
      const path = join(dir, 'kubeconfig');
      writeFileSync(
        path,
        [
          'apiVersion: v1',
          'kind: Config',
          `clusters: [{name: fake, cluster: {server: "${url}"}}]`,
          'users: [{name: fake, user: {token: fake-token}}]',
          'contexts: [{name: fake, context: {cluster: fake, user: fake, namespace: proxy-injector}}]',
          'current-context: fake',
          '',
        ].join('\n'),
      );
      return path;
    },
    async close() {
      for (const res of watches) res.destroy();
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
