/**
 * A listen address that is taken: the server stops what it started and fails with the listener and address named,
 * and `serve` exits 1 with one line, whichever of its two listeners could not listen.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ListenError, startServer } from '../../src/server/start.js';
import { TRUST_ANCHORS } from '../support/engine.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

let dir: string;
/** Holds a port on loopback, as another process would. */
let blocker: Server;
let busyPort: number;

function listening(port = 0): Promise<Server> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject).listen(port, '127.0.0.1', () => resolve(server));
  });
}

const portOf = (server: Server): number => (server.address() as { port: number }).port;

/** A port nothing listens on now (the kernel's choice, released at once). */
async function freePort(): Promise<number> {
  const server = await listening();
  const port = portOf(server);
  await new Promise((r) => server.close(r));
  return port;
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'proxy-injector-listen-'));
  writeFileSync(join(dir, 'anchors.pem'), TRUST_ANCHORS);
  blocker = await listening();
  busyPort = portOf(blocker);
});

afterAll(async () => {
  await new Promise((r) => blocker.close(r));
  rmSync(dir, { recursive: true, force: true });
});

describe('startServer with a taken admin address', () => {
  it('fails with a ListenError naming the admin listener, and the webhook listener it opened is closed again', async () => {
    const webhookPort = await freePort();
    const started = startServer({
      addr: `127.0.0.1:${webhookPort}`,
      adminAddr: `127.0.0.1:${busyPort}`,
      tlsDir: join(dir, 'tls'),
      tlsSans: [],
      tlsMinVersion: 'TLSv1.3',
      sources: {
        config: () => {
          throw new Error('no review is sent in this test');
        },
        namespaceAnnotations: () => undefined,
      },
      logger: pino({ level: 'silent' }),
      shutdownDelayMs: 0,
      shutdownTimeoutMs: 1000,
    });
    const err = await started.catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ListenError);
    expect(err).toMatchObject({ listener: 'admin', address: `127.0.0.1:${busyPort}`, reason: 'address already in use' });
    // The webhook's port is free again: nothing of the failed start still listens.
    const again = await listening(webhookPort);
    await new Promise((r) => again.close(r));
  });
});

/** Runs `serve` until it exits (at most 20 s): its exit code, or 'still running', and what it wrote to stderr. */
async function serveExit(args: string[]): Promise<{ code: number | null | 'still running'; stderr: string }> {
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', join(root, 'src', 'cli', 'main.ts'), 'serve', '--no-cluster', '--tls-dir', join(dir, 'tls'),
      '--trust-anchors', join(dir, 'anchors.pem'), '--log-format', 'json', ...args],
    { cwd: root, stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, KUBECONFIG: '' } },
  );
  let stderr = '';
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  let timer: NodeJS.Timeout | undefined;
  const code = await Promise.race([
    new Promise<number | null>((resolve) => child.on('exit', resolve)),
    new Promise<'still running'>((resolve) => (timer = setTimeout(() => resolve('still running'), 20_000))),
  ]);
  clearTimeout(timer);
  child.kill('SIGKILL');
  return { code, stderr };
}

describe('serve with a taken address', () => {
  it('--admin-addr taken: one line naming the flag and address, exit 1', async () => {
    const { code, stderr } = await serveExit(['--addr', `127.0.0.1:${await freePort()}`, '--admin-addr', `127.0.0.1:${busyPort}`]);
    expect(code).toBe(1);
    expect(stderr).toBe(`proxy-injector serve: --admin-addr 127.0.0.1:${busyPort}: address already in use\n`);
  }, 60_000);

  it('--admin-addr the same as --addr: says the webhook listener has it, exit 1', async () => {
    const port = await freePort();
    const { code, stderr } = await serveExit(['--addr', `127.0.0.1:${port}`, '--admin-addr', `127.0.0.1:${port}`]);
    expect(code).toBe(1);
    expect(stderr).toBe(`proxy-injector serve: --admin-addr 127.0.0.1:${port}: address already in use (the webhook listener is on that port)\n`);
  }, 60_000);

  it('--addr taken: the same, naming --addr', async () => {
    const { code, stderr } = await serveExit(['--addr', `127.0.0.1:${busyPort}`, '--admin-addr', '127.0.0.1:0']);
    expect(code).toBe(1);
    expect(stderr).toBe(`proxy-injector serve: --addr 127.0.0.1:${busyPort}: address already in use\n`);
  }, 60_000);
});
