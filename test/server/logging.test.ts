/**
 * What the server writes to its log about an admission: at info, the review's identity and outcome, never the pod's
 * contents, the patch or certificate material. A pod with distinctive values is admitted at each level and the log is
 * searched for them.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { pino, type LevelWithSilent } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { FileConfigSource } from '../../src/cluster/config-files.js';
import { startServer } from '../../src/server/start.js';
import { admissionReview, decodedPatch } from '../support/admission.js';
import { TRUST_ANCHORS } from '../support/engine.js';
import { httpsPost } from '../support/https.js';

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** Values that appear only in the admitted pod, and so in the patch, never in anything the server says by itself. */
const ENV_VALUE = 'env-canary-7f3a91';
const LOG_LEVEL_VALUE = 'warn,canary_b62e=debug';

const distinctivePod = {
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: {
    name: 'web',
    namespace: 'shop',
    annotations: { 'linkerd.io/inject': 'enabled', 'config.linkerd.io/proxy-log-level': LOG_LEVEL_VALUE },
  },
  spec: { containers: [{ name: 'app', image: 'app:1', env: [{ name: 'SECRET', value: ENV_VALUE }] }] },
};

/** Starts a server logging at `level` into memory, admits the distinctive pod, stops; returns the log, patch and key. */
async function admitAt(level: LevelWithSilent): Promise<{ log: string; patch: string; key: string }> {
  const dir = mkdtempSync(join(tmpdir(), 'proxy-injector-logging-'));
  dirs.push(dir);
  writeFileSync(join(dir, 'trust-anchors.pem'), TRUST_ANCHORS);
  let log = '';
  const logger = pino(
    { level },
    new Writable({
      write(chunk: Buffer, _encoding, done) {
        log += chunk.toString();
        done();
      },
    }),
  );
  const config = new FileConfigSource({ trustAnchorsPath: join(dir, 'trust-anchors.pem'), controlPlaneNamespace: 'linkerd', logger, pollMs: 0 });
  const server = await startServer({
    addr: '127.0.0.1:0',
    adminAddr: '127.0.0.1:0',
    tlsDir: join(dir, 'tls'),
    tlsSans: [],
    tlsMinVersion: 'TLSv1.3',
    sources: { config: () => config.current(), namespaceAnnotations: () => undefined },
    logger,
    shutdownDelayMs: 0,
    shutdownTimeoutMs: 5000,
  });
  let patch = '';
  let key = '';
  try {
    const ca = readFileSync(join(dir, 'tls', 'ca.crt'), 'utf8');
    const response = await httpsPost(server.webhookUrl, { ca, body: JSON.stringify(admissionReview(distinctivePod)) });
    expect(response.status).toBe(200);
    patch = JSON.stringify(decodedPatch(JSON.parse(response.body) as Record<string, unknown>));
    // Garbled bodies too: the rejection is logged and answered with its reason, never with the body around the error
    // (V8's own message quotes it).
    for (const garbled of [`{"kind":"AdmissionReview","garbled":"${ENV_VALUE}"`, `{"kind":"AdmissionReview","x":${ENV_VALUE}}`]) {
      const rejected = await httpsPost(server.webhookUrl, { ca, body: garbled });
      expect(rejected.status).toBe(400);
      expect(rejected.body).toMatch(/^the body is not valid JSON/);
      expect(rejected.body).not.toContain('canary');
    }
    // The private key's base64 body, which must never be logged.
    key = readFileSync(join(dir, 'tls', 'tls.key'), 'utf8').split('\n')[1] ?? '';
  } finally {
    await server.shutdown('test');
  }
  // After the shutdown, so that its lines are searched too.
  return { log, patch, key };
}

describe('the log', () => {
  it('at info names each review and its outcome but carries no pod contents, patch or key material', async () => {
    const { log, patch, key } = await admitAt('info');
    // The values did reach the patch, so their absence from the log means something.
    expect(patch).toContain(LOG_LEVEL_VALUE);
    expect(log).toContain('injection patch generated for: pod/shop/web');
    expect(log).toContain('rejected admission request');
    expect(log).not.toContain(ENV_VALUE);
    expect(log).not.toContain('canary_b62e');
    expect(log).not.toContain('"patch"');
    expect(key.length).toBeGreaterThan(20);
    expect(log).not.toContain(key);
    expect(log).not.toMatch(/BEGIN (EC |RSA )?(PRIVATE KEY|CERTIFICATE)/);
  });

  it('at debug and trace it says more, and still carries no pod contents or key material', async () => {
    const info = await admitAt('info');
    for (const level of ['debug', 'trace'] as const) {
      const { log, key } = await admitAt(level);
      expect(log.split('\n').length, level).toBeGreaterThan(info.log.split('\n').length);
      expect(log, level).not.toContain(ENV_VALUE);
      expect(log, level).not.toContain('canary_b62e');
      expect(log, level).not.toContain(key);
    }
  });
});
