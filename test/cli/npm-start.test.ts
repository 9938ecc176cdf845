/**
 * `npm start` as the README's quickstart runs it: a signal to the process it started (npm's) must stop the server, as
 * Ctrl-C does, and free its port for the next start.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { listeningUrls } from '../support/process.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const dirs: string[] = [];
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

/** Whether something accepts connections on the URL's port. */
function listening(url: string): Promise<boolean> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const socket = connect({ host: hostname, port: Number(port) });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

describe('npm start', () => {
  it.skipIf(!existsSync(join(root, 'dist', 'cli', 'main.js')))
    .each(['SIGTERM', 'SIGINT'] as const)('stops the server on %s to its own process, and frees its ports', async (signal) => {
      const dir = mkdtempSync(join(tmpdir(), 'proxy-injector-npm-start-'));
      dirs.push(dir);
      // The prestart build is left out (dist/ is there); the addresses after `--` win over the script's own.
      const npm = spawn('npm', ['run', 'start', '--ignore-scripts', '--', '--addr', '127.0.0.1:0', '--admin-addr', '127.0.0.1:0', '--tls-dir', join(dir, 'tls'), '--log-format', 'json'], {
        cwd: root,
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      const logs: string[] = [];
      const exited = new Promise<number | null>((resolve) => npm.once('exit', (code) => resolve(code)));
      const urls = await listeningUrls(npm, logs, exited);
      expect(await listening(urls.webhook)).toBe(true);
      npm.kill(signal);
      await exited;
      // The server went with npm: both of its ports are free again.
      const deadline = Date.now() + 10_000;
      while ((await listening(urls.webhook)) || (await listening(urls.admin))) {
        if (Date.now() > deadline) throw new Error(`the server still listens after ${signal} to npm:\n${logs.join('\n')}`);
        await new Promise((r) => setTimeout(r, 100));
      }
      expect(logs.some((l) => l.includes('"msg":"proxy-injector stopped"'))).toBe(true);
    });
});
