/**
 * connectToCluster: which credentials it finds, and that each kind reaches a fake API server on loopback as the API
 * server expects it (a bearer token, a token file, basic auth, a CA and a TLS server name, an exec plugin).
 */
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer as createHttpServer, type IncomingMessage, type Server } from 'node:http';
import { X509Certificate } from 'node:crypto';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import type { TLSSocket } from 'node:tls';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { apiErrorMessage } from '../../src/cluster/api.js';
import { connectToCluster, type ClusterConnection } from '../../src/cluster/kubeconfig.js';
import { ensureCertificates } from '../../src/tls/index.js';

const dirs: string[] = [];
const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
  dirs.splice(0).forEach((d) => rmSync(d, { recursive: true, force: true }));
});

const tempDir = (prefix: string): string => {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  dirs.push(dir);
  return dir;
};

const kubeconfig = (server: string, user: string, cluster = '', current = 'x') => `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "${server}"${cluster}}}]
users: [{name: u, user: {${user}}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: ${current}
`;

/** An API server that answers every GET with a namespace and remembers the Authorization header of each request. */
async function recordingApi(tls?: { key: Buffer; cert: Buffer }): Promise<{ url: string; authorizations: Array<string | undefined> }> {
  const authorizations: Array<string | undefined> = [];
  const handler = (req: IncomingMessage, res: import('node:http').ServerResponse) => {
    authorizations.push(req.headers.authorization);
    res.writeHead(200, { 'content-type': 'application/json' }).end('{"kind":"Namespace","metadata":{"name":"shop"}}');
  };
  const server: Server = tls ? createHttpsServer(tls, handler) : createHttpServer(handler);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  cleanups.push(() => {
    server.closeAllConnections();
    return new Promise((r) => server.close(() => r()));
  });
  return { url: `${tls ? 'https' : 'http'}://127.0.0.1:${(server.address() as AddressInfo).port}`, authorizations };
}

/** Writes an exec plugin at `path`: an executable shell script that prints an ExecCredential carrying `token`. */
function writePlugin(path: string, token: string): void {
  writeFileSync(path, `#!/bin/sh\necho '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"${token}"}}'\n`);
  chmodSync(path, 0o755);
}

async function connect(path: string): Promise<ClusterConnection> {
  const c = await connectToCluster({ kubeconfig: path });
  if (!c) throw new Error('no cluster');
  cleanups.push(() => c.client.close());
  return c;
}

const readNamespace = (c: ClusterConnection) => c.client.request<{ metadata: { name: string } }>('GET', '/api/v1/namespaces/shop', { what: 'reading namespace shop', timeoutMs: 5000 });

describe('connectToCluster', () => {
  it('returns nothing without credentials, rather than guessing localhost:8080', async () => {
    const home = tempDir('pi-home-');
    const saved = process.env['HOME'];
    process.env['HOME'] = home;
    try {
      expect(await connectToCluster({ env: {}, serviceAccountDir: join(home, 'none') })).toBeUndefined();
    } finally {
      process.env['HOME'] = saved;
    }
  });

  it('uses $KUBECONFIG, and of several files the first to name the current context, as kubectl does', async () => {
    const dir = tempDir('pi-kc-');
    writeFileSync(join(dir, 'first'), kubeconfig('https://127.0.0.1:6443', 'token: abc', ', insecure-skip-tls-verify: true'));
    writeFileSync(join(dir, 'second'), kubeconfig('https://127.0.0.1:7443', 'token: def', '', 'y'));
    const files = `${join(dir, 'first')}${delimiter}${join(dir, 'missing')}${delimiter}${join(dir, 'second')}`;
    const c = await connectToCluster({ env: { KUBECONFIG: files } });
    c?.client.close();
    expect(c?.server).toBe('https://127.0.0.1:6443');
    expect(c?.source).toBe(`${join(dir, 'first')}${delimiter}${join(dir, 'second')}`);
  });

  it('an explicit --kubeconfig that does not exist is an error', async () => {
    await expect(connectToCluster({ kubeconfig: '/nonexistent/kubeconfig' })).rejects.toThrowError(/no such file/);
  });

  it('a kubeconfig whose current context names no cluster is an error saying so', async () => {
    const dir = tempDir('pi-kc-');
    writeFileSync(join(dir, 'config'), kubeconfig('https://127.0.0.1:6443', 'token: abc', '', 'nowhere'));
    await expect(connectToCluster({ kubeconfig: join(dir, 'config') })).rejects.toThrowError(/has no current cluster/);
  });

  it('a client certificate without its key is an error saying so', async () => {
    const dir = tempDir('pi-kc-');
    writeFileSync(join(dir, 'config'), kubeconfig('https://127.0.0.1:6443', 'client-certificate-data: Zm9v'));
    await expect(connectToCluster({ kubeconfig: join(dir, 'config') })).rejects.toThrowError(/needs its key/);
  });

  it('inside a pod: the service host and port (an IPv6 address in brackets) and the service account', async () => {
    const sa = tempDir('pi-sa-');
    writeFileSync(join(sa, 'token'), 'sa-token\n');
    const c = await connectToCluster({ env: { KUBERNETES_SERVICE_HOST: 'fd00::1', KUBERNETES_SERVICE_PORT: '6443' }, serviceAccountDir: sa });
    c?.client.close();
    expect(c).toMatchObject({ server: 'https://[fd00::1]:6443', source: 'in-cluster service account' });
  });

  it('sends a bearer token, and basic auth for a user name and password', async () => {
    const api = await recordingApi();
    const dir = tempDir('pi-kc-');
    writeFileSync(join(dir, 'token'), kubeconfig(api.url, 'token: abc'));
    writeFileSync(join(dir, 'basic'), kubeconfig(api.url, 'username: admin, password: s3cret'));
    await readNamespace(await connect(join(dir, 'token')));
    await readNamespace(await connect(join(dir, 'basic')));
    expect(api.authorizations).toEqual(['Bearer abc', `Basic ${Buffer.from('admin:s3cret').toString('base64')}`]);
  });

  it('trusts the CA of a file named relative to the kubeconfig, checks the TLS server name, and reads a token file', async () => {
    const dir = tempDir('pi-kc-');
    const certs = await ensureCertificates(join(dir, 'tls'), ['api.example.test'], { info: () => {}, warn: () => {} } as never);
    const api = await recordingApi({ key: readFileSync(certs.keyPath), cert: readFileSync(certs.certPath) });
    writeFileSync(join(dir, 'token'), 'from-file\n');
    writeFileSync(join(dir, 'config'), kubeconfig(api.url, 'tokenFile: token', ', certificate-authority: tls/ca.crt, tls-server-name: api.example.test'));
    expect((await readNamespace(await connect(join(dir, 'config')))).metadata.name).toBe('shop');
    expect(api.authorizations).toEqual(['Bearer from-file']);
    // A server name the certificate does not cover fails, and the error says so.
    writeFileSync(join(dir, 'wrong'), kubeconfig(api.url, 'tokenFile: token', ', certificate-authority: tls/ca.crt, tls-server-name: other.example.test'));
    const err = await readNamespace(await connect(join(dir, 'wrong'))).catch((e: unknown) => e);
    expect(apiErrorMessage(err)).toMatch(/^reading namespace shop failed: .*other\.example\.test/);
    expect(api.authorizations).toHaveLength(1);
  });

  it('runs an exec plugin through the Kubernetes client and sends the token it returns', async () => {
    const api = await recordingApi();
    const dir = tempDir('pi-kc-');
    const plugin = join(dir, 'plugin.sh');
    writePlugin(plugin, 'from-exec');
    writeFileSync(join(dir, 'config'), kubeconfig(api.url, `exec: {apiVersion: client.authentication.k8s.io/v1, command: "${plugin}", interactiveMode: Never}`, ', insecure-skip-tls-verify: true'));
    await readNamespace(await connect(join(dir, 'config')));
    expect(api.authorizations).toEqual(['Bearer from-exec']);
  });

  it('runs an exec plugin named relative to the kubeconfig from its directory, wherever the injector was started', async () => {
    const api = await recordingApi();
    const dir = tempDir('pi-kc-');
    mkdirSync(join(dir, 'bin'));
    writePlugin(join(dir, 'bin', 'auth'), 'beside-kubeconfig');
    // The same relative path from the working directory would give another token: the test fails if it is used.
    const elsewhere = tempDir('pi-cwd-');
    mkdirSync(join(elsewhere, 'bin'));
    writePlugin(join(elsewhere, 'bin', 'auth'), 'from-working-directory');
    const exec = (command: string) => `exec: {apiVersion: client.authentication.k8s.io/v1, command: "${command}", interactiveMode: Never}`;
    writeFileSync(join(dir, 'dotted'), kubeconfig(api.url, exec('./bin/auth'), ', insecure-skip-tls-verify: true'));
    writeFileSync(join(dir, 'plain'), kubeconfig(api.url, exec('bin/auth'), ', insecure-skip-tls-verify: true'));
    const cwd = process.cwd();
    process.chdir(elsewhere);
    try {
      await readNamespace(await connect(join(dir, 'dotted')));
      await readNamespace(await connect(join(dir, 'plain')));
    } finally {
      process.chdir(cwd);
    }
    expect(api.authorizations).toEqual(['Bearer beside-kubeconfig', 'Bearer beside-kubeconfig']);
  });

  it('looks a bare exec command up on PATH, not in the kubeconfig directory', async () => {
    const api = await recordingApi();
    const dir = tempDir('pi-kc-');
    const onPath = tempDir('pi-path-');
    writePlugin(join(dir, 'pi-test-auth'), 'beside-kubeconfig');
    writePlugin(join(onPath, 'pi-test-auth'), 'on-path');
    writeFileSync(join(dir, 'config'), kubeconfig(api.url, 'exec: {apiVersion: client.authentication.k8s.io/v1, command: pi-test-auth, interactiveMode: Never}', ', insecure-skip-tls-verify: true'));
    const path = process.env['PATH'];
    process.env['PATH'] = `${onPath}${delimiter}${path ?? ''}`;
    try {
      await readNamespace(await connect(join(dir, 'config')));
    } finally {
      process.env['PATH'] = path;
    }
    expect(api.authorizations).toEqual(['Bearer on-path']);
  });
});

/** An HTTPS API server that asks for a client certificate and records, per request, the token and the certificate sent. */
async function rotatingApi(pair: { key: Buffer; cert: Buffer }) {
  const seen: Array<{ authorization: string | undefined; client: string | undefined }> = [];
  const server = createHttpsServer({ ...pair, requestCert: true, rejectUnauthorized: false }, (req, res) => {
    seen.push({ authorization: req.headers.authorization, client: (req.socket as TLSSocket).getPeerCertificate().fingerprint256 });
    res.writeHead(200, { 'content-type': 'application/json' }).end('{"kind":"Namespace","metadata":{"name":"shop"}}');
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  cleanups.push(() => {
    server.closeAllConnections();
    return new Promise((r) => server.close(() => r()));
  });
  /** Serves a renewed certificate from now on, to new connections: the open ones are ended. */
  const renew = (next: { key: Buffer; cert: Buffer }): void => {
    server.setSecureContext(next);
    server.closeAllConnections();
  };
  return { port: (server.address() as AddressInfo).port, seen, renew };
}

/** Two development CAs, each with a certificate for 127.0.0.1 signed by it. */
async function twoAuthorities(dir: string) {
  const quiet = { info: () => {}, warn: () => {} } as never;
  const read = async (name: string) => {
    const certs = await ensureCertificates(join(dir, name), [], quiet);
    return { ca: readFileSync(certs.caPath), cert: readFileSync(certs.certPath), key: readFileSync(certs.keyPath) };
  };
  return { one: await read('one'), two: await read('two') };
}

const fingerprint = (pem: Buffer): string => new X509Certificate(pem).fingerprint256;

/** Runs `act` with the clock moved on by `ms`: files are read again once a minute. */
async function later<T>(ms: number, act: () => Promise<T>): Promise<T> {
  vi.useFakeTimers({ toFake: ['Date'], now: Date.now() + ms });
  try {
    return await act();
  } finally {
    vi.useRealTimers();
  }
}

describe('credential files that rotate', () => {
  it('inside a pod: the service account CA is read again as the token is, so a renewed CA needs no restart', async () => {
    const sa = tempDir('pi-sa-');
    const { one, two } = await twoAuthorities(sa);
    const api = await rotatingApi(one);
    writeFileSync(join(sa, 'token'), 'first\n');
    writeFileSync(join(sa, 'ca.crt'), one.ca);
    const c = await connectToCluster({ env: { KUBERNETES_SERVICE_HOST: '127.0.0.1', KUBERNETES_SERVICE_PORT: String(api.port) }, serviceAccountDir: sa });
    if (!c) throw new Error('no cluster');
    cleanups.push(() => c.client.close());
    await readNamespace(c);
    // The API server's certificate is renewed from a new CA; the kubelet updates ca.crt and the token.
    api.renew(two);
    writeFileSync(join(sa, 'ca.crt'), two.ca);
    writeFileSync(join(sa, 'token'), 'second\n');
    await expect(readNamespace(c)).rejects.toThrow(/certificate/);
    await later(61_000, () => readNamespace(c));
    expect(api.seen.map((s) => s.authorization)).toEqual(['Bearer first', 'Bearer second']);
  });

  it("a kubeconfig's CA and client certificate files are read again; a pair renewed halfway is not sent", async () => {
    const dir = tempDir('pi-kc-');
    const { one, two } = await twoAuthorities(dir);
    const api = await rotatingApi(one);
    writeFileSync(join(dir, 'ca.crt'), one.ca);
    writeFileSync(join(dir, 'client.crt'), one.cert);
    writeFileSync(join(dir, 'client.key'), one.key);
    writeFileSync(join(dir, 'config'), kubeconfig(`https://127.0.0.1:${api.port}`, 'client-certificate: client.crt, client-key: client.key', ', certificate-authority: ca.crt'));
    const c = await connect(join(dir, 'config'));
    await readNamespace(c);
    api.renew(two);
    writeFileSync(join(dir, 'ca.crt'), two.ca);
    await expect(readNamespace(c)).rejects.toThrow(/certificate/);
    // The new certificate is written, its key not yet: the pair before is still the one sent.
    writeFileSync(join(dir, 'client.crt'), two.cert);
    await later(61_000, () => readNamespace(c));
    writeFileSync(join(dir, 'client.key'), two.key);
    await later(122_000, () => readNamespace(c));
    expect(api.seen.map((s) => s.client)).toEqual([fingerprint(one.cert), fingerprint(one.cert), fingerprint(two.cert)]);
  });
});

describe('apiErrorMessage', () => {
  it('reads the Status inside an API error body', () => {
    expect(apiErrorMessage({ code: 403, body: '{"kind":"Status","message":"namespaces \\"x\\" is forbidden"}' })).toBe(
      'HTTP 403: namespaces "x" is forbidden',
    );
    expect(apiErrorMessage(new Error('connect ECONNREFUSED\nstack'))).toBe('connect ECONNREFUSED');
  });
});
