/**
 * While every pod that asks for injection is denied (here: no trust anchors), the webhook stays ready and says so: on
 * /ready, in the gauge proxy_inject_denying_injection, and in a log line repeated on an interval.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import type { AdmissionFailure } from '../../src/admission/index.js';
import type { InjectorConfig } from '../../src/engine/index.js';
import { DenialLog } from '../../src/server/denial.js';
import { startServer, type RunningServer } from '../../src/server/start.js';
import { admissionReview } from '../support/admission.js';
import { pod, testConfig } from '../support/engine.js';
import { httpGet, httpsPost } from '../support/https.js';
import { samples } from '../support/metrics.js';

/** A logger whose lines are kept, parsed. */
function recording(): { logger: pino.Logger; lines: Array<{ level: number; msg: string; code?: string }> } {
  const lines: Array<{ level: number; msg: string; code?: string }> = [];
  const logger = pino({ level: 'info' }, new Writable({ write: (chunk: Buffer, _encoding, done) => (lines.push(JSON.parse(chunk.toString())), done()) }));
  return { logger, lines };
}

const anchorless = testConfig((v) => (v.identityTrustAnchorsPEM = ''));

describe('a server whose configuration has no trust anchors', () => {
  let dir: string;
  let server: RunningServer;
  let current: InjectorConfig = anchorless;
  const { logger, lines } = recording();

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'proxy-injector-denial-'));
    server = await startServer({
      addr: '127.0.0.1:0',
      adminAddr: '127.0.0.1:0',
      tlsDir: join(dir, 'tls'),
      tlsSans: [],
      tlsMinVersion: 'TLSv1.3',
      sources: { config: () => current, namespaceAnnotations: () => undefined },
      logger,
      shutdownDelayMs: 0,
      shutdownTimeoutMs: 5_000,
      denialLog: { checkMs: 50, repeatMs: 60_000 },
    });
  });
  afterAll(async () => {
    await server?.shutdown('test done');
    rmSync(dir, { recursive: true, force: true });
  });

  const denying = async () => samples((await httpGet(`${server.adminUrl}/metrics`)).body, 'proxy_inject_denying_injection');

  it('denies a pod that asks for injection, stays ready, and says why on /ready, /metrics and in the log', async () => {
    const answer = await httpsPost(server.webhookUrl, {
      ca: readFileSync(join(dir, 'tls', 'ca.crt'), 'utf8'),
      body: JSON.stringify(admissionReview(pod({ annotations: { 'linkerd.io/inject': 'enabled' } }))),
    });
    const response = (JSON.parse(answer.body) as { response: { allowed: boolean; status: { message: string } } }).response;
    expect(response.allowed).toBe(false);
    expect(response.status.message).toContain('no identity trust anchors are configured');

    const ready = await httpGet(`${server.adminUrl}/ready`);
    expect(ready.status).toBe(200);
    expect(ready.body).toBe(
      'ready, but denying injection: MISSING_TRUST_ANCHORS: no identity trust anchors are configured (the ca-bundle.crt of ConfigMap linkerd-identity-trust-roots)\n',
    );
    const gauge = await denying();
    expect(gauge.filter((s) => s.value === 1).map((s) => s.labels['code'])).toEqual(['MISSING_TRUST_ANCHORS']);
    expect(gauge.length).toBeGreaterThan(1);

    await vi.waitFor(() => expect(lines.some((l) => l.msg.startsWith('denying injection'))).toBe(true), { timeout: 5_000 });
    const line = lines.find((l) => l.msg.startsWith('denying injection'));
    expect(line).toMatchObject({ level: 40, code: 'MISSING_TRUST_ANCHORS' });
    expect(line?.msg).toContain('MISSING_TRUST_ANCHORS: no identity trust anchors are configured');
  });

  it('says nothing of it once a configuration with trust anchors is in force', async () => {
    current = testConfig();
    const ready = await httpGet(`${server.adminUrl}/ready`);
    expect(ready).toEqual({ status: 200, body: 'ok\n' });
    const gauge = await denying();
    expect(gauge.every((s) => s.value === 0)).toBe(true);
    await vi.waitFor(() => expect(lines.some((l) => l.msg.startsWith('injecting again'))).toBe(true), { timeout: 5_000 });
  });
});

describe('DenialLog', () => {
  afterEach(() => vi.useRealTimers());

  it('logs when denying starts, every repeat interval while it holds, and once when it stops', () => {
    vi.useFakeTimers();
    const { logger, lines } = recording();
    let denial: AdmissionFailure | undefined = { code: 'MISSING_TRUST_ANCHORS', message: 'no identity trust anchors are configured' };
    const log = new DenialLog({ denial: () => denial, logger, checkMs: 5_000, repeatMs: 60_000 });
    log.start();
    const said = () => lines.map((l) => `${l.level} ${l.msg.split(':')[0]}`);

    vi.advanceTimersByTime(5_000);
    expect(said()).toEqual(['40 denying injection']);
    vi.advanceTimersByTime(55_000);
    expect(said()).toHaveLength(1);
    vi.advanceTimersByTime(5_000);
    expect(said()).toEqual(['40 denying injection', '40 denying injection']);
    vi.advanceTimersByTime(120_000);
    expect(said()).toHaveLength(4);

    // Another reason is a new denial, logged at once.
    denial = { code: 'CONFIG_NOT_LOADED', message: 'the Linkerd configuration is not loaded' };
    vi.advanceTimersByTime(5_000);
    expect(lines.at(-1)).toMatchObject({ level: 40, code: 'CONFIG_NOT_LOADED' });
    expect(said()).toHaveLength(5);

    denial = undefined;
    vi.advanceTimersByTime(5_000);
    expect(lines.at(-1)).toMatchObject({ level: 30, code: 'CONFIG_NOT_LOADED', msg: 'injecting again: pods that ask for injection are no longer denied' });
    vi.advanceTimersByTime(300_000);
    expect(said()).toHaveLength(6);

    log.stop();
    denial = { code: 'MISSING_TRUST_ANCHORS', message: 'no identity trust anchors are configured' };
    vi.advanceTimersByTime(300_000);
    expect(said()).toHaveLength(6);
  });

  it('logs nothing while pods are injected', () => {
    vi.useFakeTimers();
    const { logger, lines } = recording();
    const log = new DenialLog({ denial: () => undefined, logger });
    log.start();
    vi.advanceTimersByTime(600_000);
    log.stop();
    expect(lines).toEqual([]);
  });
});
