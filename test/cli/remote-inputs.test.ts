/** Manifests named by HTTPS URL, served by a server this test starts on 127.0.0.1. */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runInject } from '../../src/cli/inject.js';
import { isUrl } from '../../src/cli/remote-inputs.js';
import { runUninject } from '../../src/cli/uninject.js';
import { ensureCertificates } from '../../src/tls/index.js';

const quiet = { info: () => undefined, warn: () => undefined, error: () => undefined };
const DEPLOYMENT = readFileSync('test/fixtures/cli/in/deployment.yaml', 'utf8');
const POD = 'apiVersion: v1\nkind: Pod\nmetadata:\n  name: from-stdin\nspec:\n  containers:\n    - name: app\n      image: app:1\n';

let dir: string;
let server: Server;
let base: string;
let ca: string;
const requested: string[] = [];

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'proxy-injector-url-'));
  const certs = await ensureCertificates(dir, [], quiet);
  ca = readFileSync(certs.caPath, 'utf8');
  server = createServer({ cert: readFileSync(certs.certPath), key: readFileSync(certs.keyPath) }, (req, res) => {
    requested.push(req.url ?? '');
    if (req.url === '/deployment.yaml') res.end(DEPLOYMENT);
    else if (req.url === '/moved') res.writeHead(302, { location: '/deployment.yaml' }).end();
    else if (req.url === '/to-http') res.writeHead(302, { location: 'http://127.0.0.1:1/x.yaml' }).end();
    else if (req.url === '/trickle.yaml') {
      // A byte every 50 ms for ever: never idle, never done.
      res.writeHead(200);
      const timer = setInterval(() => res.write('#'), 50);
      res.on('close', () => clearInterval(timer));
    } else if (req.url === '/slow-moved') setTimeout(() => res.writeHead(302, { location: '/trickle.yaml' }).end(), 200);
    else res.writeHead(404).end('not here');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
  rmSync(dir, { recursive: true, force: true });
});

describe('URL inputs', () => {
  it('are read in the order given, between files and stdin', async () => {
    const result = await runInject(['test/fixtures/cli/in/pod.json', `${base}/deployment.yaml`, '-'], { stdin: POD, url: { ca } });
    expect(result.code, result.stderr).toBe(0);
    const kinds = [...result.stderr.matchAll(/: (\w+) "([^"]+)" annotated/gm)].map((m) => `${m[1]}/${m[2]}`);
    expect(kinds).toEqual(['pod/worker', 'deployment/api', 'pod/from-stdin']);
    expect(result.stdout.match(/linkerd.io\/inject: enabled/g)).toHaveLength(3);
  });

  it('follow redirects, and uninject reads them too', async () => {
    const result = await runUninject([`${base}/moved`], { url: { ca } });
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toBe(DEPLOYMENT);
    expect(requested).toContain('/moved');
  });

  it.each([
    ['/missing.yaml', ': the server answered 404 Not Found'],
    ['/to-http', ': only HTTPS URLs are allowed (redirected to http://127.0.0.1:1/x.yaml)'],
  ])('%s is one clear error and nothing on stdout', async (path, message) => {
    const result = await runInject([`${base}${path}`], { url: { ca } });
    expect(result).toEqual({ code: 1, stdout: '', stderr: `proxy-injector inject: ${base}${path}${message}\n` });
  });

  it.each(['/trickle.yaml', '/slow-moved'])('%s: a server that keeps sending meets one deadline for the URL, redirects included', async (path) => {
    const started = Date.now();
    const result = await runInject([`${base}${path}`], { url: { ca, timeoutMs: 600 } });
    expect(result).toEqual({ code: 1, stdout: '', stderr: `proxy-injector inject: ${base}${path}: no complete answer within 600 ms\n` });
    expect(Date.now() - started).toBeLessThan(3_000);
  });

  it('refuse plain HTTP, as linkerd inject does, without a request', async () => {
    const result = await runInject(['http://127.0.0.1:1/deployment.yaml']);
    expect(result).toEqual({ code: 1, stdout: '', stderr: 'proxy-injector inject: http://127.0.0.1:1/deployment.yaml: only HTTPS URLs are allowed\n' });
  });

  it('refuse a server whose certificate is not trusted', async () => {
    const result = await runInject([`${base}/deployment.yaml`]);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(new RegExp(`^proxy-injector inject: ${base}/deployment.yaml: .*certificate`));
  });

  it('are told from file names', () => {
    expect(isUrl('https://example.test/a.yaml')).toBe(true);
    expect(isUrl('http://127.0.0.1:8080/')).toBe(true);
    expect(isUrl('manifests/https-app.yaml')).toBe(false);
    expect(isUrl('-')).toBe(false);
    expect(isUrl('C:/x.yaml')).toBe(false);
  });
});
