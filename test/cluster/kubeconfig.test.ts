import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { apiErrorMessage, withTimeout } from '../../src/cluster/api.js';
import { connectToCluster } from '../../src/cluster/kubeconfig.js';

const dirs: string[] = [];
afterEach(() => dirs.splice(0).forEach((d) => rmSync(d, { recursive: true, force: true })));

const KUBECONFIG = `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:6443", insecure-skip-tls-verify: true}}]
users: [{name: u, user: {token: abc}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
`;

describe('connectToCluster', () => {
  it('returns nothing without credentials, rather than guessing localhost:8080', async () => {
    const home = mkdtempSync(join(tmpdir(), 'pi-home-'));
    dirs.push(home);
    const saved = process.env['HOME'];
    process.env['HOME'] = home;
    try {
      expect(await connectToCluster({ env: {} })).toBeUndefined();
    } finally {
      process.env['HOME'] = saved;
    }
  });

  it('uses $KUBECONFIG', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'pi-kc-'));
    dirs.push(dir);
    writeFileSync(join(dir, 'config'), KUBECONFIG);
    const saved = process.env['KUBECONFIG'];
    process.env['KUBECONFIG'] = join(dir, 'config');
    try {
      const c = await connectToCluster({ env: { KUBECONFIG: join(dir, 'config') } });
      expect(c?.server).toBe('https://127.0.0.1:6443');
      expect(c?.source).toBe(join(dir, 'config'));
    } finally {
      if (saved === undefined) delete process.env['KUBECONFIG'];
      else process.env['KUBECONFIG'] = saved;
    }
  });

  it('an explicit --kubeconfig that does not exist is an error', async () => {
    await expect(connectToCluster({ kubeconfig: '/nonexistent/kubeconfig' })).rejects.toThrowError(/no such file/);
  });
});

describe('helpers', () => {
  it('withTimeout rejects saying what was slow', async () => {
    await expect(withTimeout(new Promise(() => {}), 10, 'reading namespace shop')).rejects.toThrow(
      'reading namespace shop did not answer within 10 ms',
    );
    await expect(withTimeout(Promise.resolve(7), 10, 'x')).resolves.toBe(7);
  });

  it('apiErrorMessage reads the Status inside an ApiException body', () => {
    expect(apiErrorMessage({ code: 403, body: '{"kind":"Status","message":"namespaces \\"x\\" is forbidden"}' })).toBe(
      'HTTP 403: namespaces "x" is forbidden',
    );
    expect(apiErrorMessage(new Error('connect ECONNREFUSED\nstack'))).toBe('connect ECONNREFUSED');
  });
});
