/**
 * A real `proxy-injector serve --no-cluster` given trust anchors that are not certificates (here a private key): the
 * configuration does not load, /ready fails, pods are denied with CONFIG_NOT_LOADED, and the key is never logged.
 */
import { spawn } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { admissionReview } from '../support/admission.js';
import { pod } from '../support/engine.js';
import { httpGet, httpsPost } from '../support/https.js';
import { listeningUrls } from '../support/process.js';
import { bodyLines } from '../support/trust-anchors.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const dir = mkdtempSync(join(tmpdir(), 'proxy-injector-bad-anchors-'));
const cleanup: Array<() => void> = [() => rmSync(dir, { recursive: true, force: true })];
afterAll(() => cleanup.splice(0).reverse().forEach((f) => f()));

describe('serve with a private key as --trust-anchors', () => {
  it('does not load the configuration: /ready fails, pods are denied CONFIG_NOT_LOADED, the key is not logged', async () => {
    const key = generateKeyPairSync('ec', { namedCurve: 'prime256v1' }).privateKey.export({ format: 'pem', type: 'sec1' }).toString();
    const anchors = join(dir, 'anchors.pem');
    writeFileSync(anchors, key);
    const child = spawn(
      process.execPath,
      ['--import', 'tsx', join(root, 'src', 'cli', 'main.ts'), 'serve', '--no-cluster', '--addr', '127.0.0.1:0', '--admin-addr', '127.0.0.1:0',
        '--tls-dir', join(dir, 'tls'), '--trust-anchors', anchors, '--log-format', 'json'],
      { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    cleanup.push(() => child.kill('SIGKILL'));
    const logs: string[] = [];
    const exited = new Promise<number | null>((resolve) => child.on('exit', resolve));
    const urls = await listeningUrls(child, logs, exited);

    const ready = await httpGet(`${urls.admin}/ready`);
    expect(ready.status).toBe(503);
    const res = await httpsPost(urls.webhook, {
      ca: readFileSync(join(dir, 'tls', 'ca.crt'), 'utf8'),
      body: JSON.stringify(admissionReview(pod({ annotations: { 'linkerd.io/inject': 'enabled' } }))),
    });
    const response = (JSON.parse(res.body) as { response: { allowed: boolean; status: { message: string } } }).response;
    expect(response.allowed).toBe(false);
    expect(response.status.message).toContain(
      `the Linkerd configuration is not loaded: the trust anchors file ${anchors}: a private key (EC PRIVATE KEY) was given where the trust anchors' certificates belong`,
    );

    const log = logs.join('\n');
    expect(log).toContain('cannot load the Linkerd configuration');
    expect(log).not.toContain('loaded Linkerd configuration');
    for (const line of [...bodyLines(key), 'BEGIN EC PRIVATE KEY']) {
      expect(log).not.toContain(line);
      expect(res.body).not.toContain(line);
    }
  });
});
