/**
 * The admin listener's answers: a wrong path or method is logged in one short line, as the webhook's refusals are,
 * and /ready says when the injector is ready but denies every pod that asks for injection.
 */
import { connect } from 'node:net';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildAdminApp, type AdminApp } from '../../src/server/admin.js';
import { closeNow } from '../../src/server/http.js';
import { InjectorMetrics } from '../../src/server/metrics.js';

/** Sends `text` on a connection of its own and returns the status line it got back. */
function statusOf(port: number, text: string): Promise<string> {
  return new Promise((resolve) => {
    let seen = '';
    const socket = connect({ host: '127.0.0.1', port }, () => socket.write(text));
    socket.on('data', (c: Buffer) => (seen += c.toString('latin1')));
    socket.on('error', () => {});
    socket.on('close', () => resolve(seen.split('\r\n')[0] ?? ''));
  });
}

describe('the admin listener, asked for what it does not serve', () => {
  const lines: string[] = [];
  let app: AdminApp;
  let port: number;

  beforeAll(async () => {
    const logger = pino({ level: 'info' }, new Writable({ write: (chunk: Buffer, _encoding, done) => (lines.push(chunk.toString()), done()) }));
    app = buildAdminApp({ metrics: new InjectorMetrics({ processMetrics: false }), readiness: { notReadyBecause: () => [] }, logger });
    await app.listen({ host: '127.0.0.1', port: 0 });
    port = (app.server.address() as { port: number }).port;
  });
  afterAll(() => closeNow(app));

  it('logs each wrong path or method in one short line, and nothing for the routes it serves', async () => {
    const request = (line: string) => statusOf(port, `${line} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`);
    expect(await request('GET /ready')).toBe('HTTP/1.1 200 OK');
    expect(await request('GET /metrics')).toBe('HTTP/1.1 200 OK');
    expect(await request('GET /nowhere')).toBe('HTTP/1.1 404 Not Found');
    expect(await request('POST /ready')).toBe('HTTP/1.1 405 Method Not Allowed');
    expect(await request('GET /%zz')).toBe('HTTP/1.1 404 Not Found');
    expect(await request(`GET /${'x'.repeat(8_000)}`)).toBe('HTTP/1.1 404 Not Found');
    const rejected = lines.filter((l) => l.includes('rejected admin request')).map((l) => JSON.parse(l) as { level: number; status: number; reason: string });
    expect(rejected.map((l) => l.status)).toEqual([404, 405, 404, 404]);
    expect(rejected.every((l) => l.level === 40)).toBe(true);
    expect(rejected[0]?.reason).toBe('no route for /nowhere: the admin listener serves /metrics, /ping, /live and /ready');
    expect(rejected[1]?.reason).toBe('method POST not allowed: use GET');
    // What the client sent is quoted clipped: an 8,000-character path gives a line of a few hundred bytes.
    expect(lines.every((l) => l.length < 512)).toBe(true);
    expect(lines).toHaveLength(4);
  });
});
