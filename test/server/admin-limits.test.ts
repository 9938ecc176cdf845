/**
 * The admin listener's own limits, on a real socket with the limits set short: an idle or slow client is cut off at the
 * header timeout, a body on its GET routes is never waited for, an idle keep-alive connection ends, a client that does
 * not read its answers is cut off at the stall timeout, and a connection beyond the cap closes one that answers
 * nothing; a kubelet-style probe is answered throughout.
 */
import { get } from 'node:http';
import { connect, type Socket } from 'node:net';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminLimitsOf, buildAdminApp, DEFAULT_ADMIN_LIMITS, type AdminApp } from '../../src/server/admin.js';
import { closeNow } from '../../src/server/http.js';
import { InjectorMetrics } from '../../src/server/metrics.js';
import { DEFAULT_LIMITS } from '../../src/server/webhook.js';

/** What a loaded machine may add to a timeout before the close is seen: generous, and far below Node's defaults (60 s and more). */
const SLACK_MS = 3_000;

let app: AdminApp;
let port: number;

beforeAll(async () => {
  app = buildAdminApp({
    metrics: new InjectorMetrics(),
    readiness: { notReadyBecause: () => [] },
    logger: pino({ level: 'silent' }),
    limits: { headersTimeoutMs: 1_000, requestTimeoutMs: 2_000, keepAliveTimeoutMs: 1_000, maxConnections: 4 },
  });
  await app.listen({ host: '127.0.0.1', port: 0 });
  port = (app.server.address() as { port: number }).port;
});

afterAll(async () => {
  const closed = app.close();
  app.server.closeAllConnections();
  await closed;
});

interface Seen {
  /** Everything the server wrote. */
  text: string;
  /** From the connection to its close, ms; Infinity when it was still open after `limitMs`. */
  lifetimeMs: number;
}

/** Opens a connection, lets `act` write on it, and waits up to `limitMs` for the server to close it. */
function watch(act: (socket: Socket) => void, limitMs: number): Promise<Seen> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    let text = '';
    let started = 0;
    const timer = setTimeout(() => {
      socket.destroy();
      resolve({ text, lifetimeMs: Infinity });
    }, limitMs);
    socket.on('data', (c: Buffer) => (text += c.toString('latin1')));
    socket.on('error', () => {});
    socket.once('connect', () => {
      started = performance.now();
      act(socket);
    });
    socket.once('close', () => {
      clearTimeout(timer);
      resolve({ text, lifetimeMs: performance.now() - started });
    });
  });
}

/** Writes `text` a byte every `everyMs` while the socket is open. */
function trickle(socket: Socket, text: string, everyMs: number): void {
  let i = 0;
  const timer = setInterval(() => {
    if (socket.destroyed || i >= text.length) clearInterval(timer);
    else socket.write(text[i++] ?? '');
  }, everyMs);
  socket.once('close', () => clearInterval(timer));
}

/** A kubelet-style probe: a new connection, one GET, the answer read. */
function probe(path: string): Promise<number> {
  return new Promise((resolve, reject) => {
    get({ host: '127.0.0.1', port, path, agent: false }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    }).on('error', reject);
  });
}

describe('the admin listener, limits set short', () => {
  it('a connection that sends nothing gets 408 at the header timeout', async () => {
    const seen = await watch(() => {}, 1_000 + SLACK_MS);
    expect(seen.text).toMatch(/^HTTP\/1\.1 408 /);
    expect(seen.lifetimeMs).toBeGreaterThan(900);
    expect(seen.lifetimeMs).toBeLessThan(1_000 + SLACK_MS);
  });

  it('headers sent a byte at a time get 408 at the header timeout', async () => {
    const seen = await watch((s) => trickle(s, 'GET /ready HTTP/1.1\r\nHost: localhost\r\nX-Pad: aaaaaaaaaaaaaaaaaaaa\r\n\r\n', 100), 1_000 + SLACK_MS);
    expect(seen.text).toMatch(/^HTTP\/1\.1 408 /);
    expect(seen.lifetimeMs).toBeLessThan(1_000 + SLACK_MS);
  });

  it('a GET that declares a body is answered without waiting for it, and the connection closed', async () => {
    const seen = await watch((s) => {
      s.write('GET /ping HTTP/1.1\r\nHost: localhost\r\nContent-Length: 100000\r\n\r\n');
      trickle(s, 'x'.repeat(1_000), 200);
    }, SLACK_MS);
    expect(seen.text).toMatch(/^HTTP\/1\.1 200 /);
    expect(seen.text.toLowerCase()).toContain('connection: close');
    expect(seen.text).toMatch(/pong\n$/);
    expect(seen.lifetimeMs).toBeLessThan(SLACK_MS);
  });

  it('so is a chunked body, and a method with a body on a route that takes none', async () => {
    const chunked = await watch((s) => s.write('GET /metrics HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nx\r\n'), SLACK_MS);
    expect(chunked.text.toLowerCase()).toContain('connection: close');
    expect(chunked.lifetimeMs).toBeLessThan(SLACK_MS);
    const post = await watch((s) => s.write('POST /ready HTTP/1.1\r\nHost: localhost\r\nContent-Length: 50\r\n\r\nabc'), SLACK_MS);
    expect(post.text).toMatch(/^HTTP\/1\.1 405 /);
    expect(post.lifetimeMs).toBeLessThan(SLACK_MS);
  });

  it('an idle keep-alive connection is closed at the keep-alive timeout after its last response', async () => {
    let answered = 0;
    const seen = await watch((s) => {
      s.write('GET /live HTTP/1.1\r\nHost: localhost\r\n\r\n');
      s.once('data', () => (answered = performance.now()));
    }, 1_000 + 2 * SLACK_MS);
    expect(seen.text).toMatch(/^HTTP\/1\.1 200 /);
    expect(seen.text.toLowerCase()).toContain('keep-alive: timeout=1');
    expect(seen.lifetimeMs).toBeLessThan(1_000 + 2 * SLACK_MS);
    expect(answered).toBeGreaterThan(0);
  });

  it('a client that asks for /metrics and never reads the answers is closed at the stall timeout', async () => {
    // Answers far larger than the socket buffers on both ends hold, so that the server's writes stop: no other timeout
    // applies then (the requests have all arrived, and no answer has finished).
    const big = '# padding\n'.repeat(200_000);
    const stalled = buildAdminApp({
      metrics: { contentType: 'text/plain', metrics: () => Promise.resolve(big) } as unknown as InjectorMetrics,
      readiness: { notReadyBecause: () => [] },
      logger: pino({ level: 'silent' }),
      limits: { headersTimeoutMs: 1_000, requestTimeoutMs: 2_000, keepAliveTimeoutMs: 1_000, stallTimeoutMs: 2_000 },
    });
    await stalled.listen({ host: '127.0.0.1', port: 0 });
    const openConnections = (): Promise<number> => new Promise((resolve) => stalled.server.getConnections((_err, n) => resolve(n)));
    const socket = connect((stalled.server.address() as { port: number }).port, '127.0.0.1').on('error', () => {});
    try {
      await new Promise((r) => socket.once('connect', r));
      socket.pause();
      socket.write('GET /metrics HTTP/1.1\r\nHost: localhost\r\n\r\n'.repeat(10));
      const started = performance.now();
      let open = await openConnections();
      expect(open).toBe(1);
      while (open > 0 && performance.now() - started < 2_000 + 2 * SLACK_MS) {
        await new Promise((r) => setTimeout(r, 100));
        open = await openConnections();
      }
      expect(open).toBe(0);
    } finally {
      socket.destroy();
      await closeNow(stalled);
    }
  });

  it('a probe beyond the cap is answered: it closes the oldest connection that answers nothing, here one still sending', async () => {
    const open = (): Socket => connect(port, '127.0.0.1').on('error', () => {});
    const sending = open();
    await new Promise((r) => sending.once('connect', r));
    sending.write('GET /metrics HTTP/1.1\r\nHost: loc');
    const idle = Array.from({ length: 3 }, open);
    await Promise.all(idle.map((s) => new Promise((r) => s.once('connect', r))));
    // The server counts a connection once it has accepted it; give it a moment to accept all four.
    await new Promise((r) => setTimeout(r, 200));
    const closed = (s: Socket) =>
      new Promise<boolean>((resolve) => {
        if (s.destroyed) resolve(true);
        s.once('close', () => resolve(true));
        setTimeout(() => resolve(false), 500);
      });
    expect(await probe('/ping')).toBe(200);
    expect(await closed(sending)).toBe(true);
    expect(await closed(idle[0] as Socket)).toBe(false);
    for (const s of idle) s.destroy();
  });

  it('a request for no route is answered 404 and its connection closed, so that it holds no slot', async () => {
    const seen = await watch((s) => s.write('GET / HTTP/1.1\r\nHost: localhost\r\n\r\n'), SLACK_MS);
    expect(seen.text).toMatch(/^HTTP\/1\.1 404 /);
    expect(seen.text.toLowerCase()).toContain('connection: close');
    expect(seen.lifetimeMs).toBeLessThan(SLACK_MS);
  });

  it('connections from one address beyond its share are closed as they arrive; another address is still served', async () => {
    const shared = buildAdminApp({
      metrics: new InjectorMetrics(),
      readiness: { notReadyBecause: () => [] },
      logger: pino({ level: 'silent' }),
      limits: { maxConnections: 10, maxConnectionsPerClient: 2 },
    });
    await shared.listen({ host: '0.0.0.0', port: 0 });
    const sharedPort = (shared.server.address() as { port: number }).port;
    const from = (localAddress: string) => connect({ host: '127.0.0.1', port: sharedPort, localAddress }).on('error', () => {});
    const held = [from('127.0.0.1'), from('127.0.0.1')];
    try {
      await Promise.all(held.map((s) => new Promise((r) => s.once('connect', r))));
      const third = from('127.0.0.1');
      const closed = await new Promise<boolean>((resolve) => {
        third.once('close', () => resolve(true));
        setTimeout(() => resolve(false), SLACK_MS);
      });
      expect(closed).toBe(true);
      const status = await new Promise<number>((resolve, reject) => {
        get({ host: '127.0.0.1', port: sharedPort, path: '/live', agent: false, localAddress: '127.0.0.2' }, (res) => {
          res.resume();
          res.on('end', () => resolve(res.statusCode ?? 0));
        }).on('error', reject);
      });
      expect(status).toBe(200);
    } finally {
      for (const s of held) s.destroy();
      await closeNow(shared);
    }
  });

  it('kubelet-style probes are answered one after another', async () => {
    for (const path of ['/ping', '/live', '/ready', '/metrics']) expect(await probe(path)).toBe(200);
  });
});

describe('the admin listener limits serve gives', () => {
  it('follow the webhook header, request and stall timeouts and header size, with a keep-alive of at most 5 s and 64 connections, 8 from one address', () => {
    expect(adminLimitsOf()).toEqual({
      headersTimeoutMs: DEFAULT_LIMITS.headersTimeoutMs,
      requestTimeoutMs: DEFAULT_LIMITS.requestTimeoutMs,
      keepAliveTimeoutMs: 5_000,
      stallTimeoutMs: DEFAULT_LIMITS.stallTimeoutMs,
      maxConnections: 64,
      maxConnectionsPerClient: 8,
      maxHeaderBytes: DEFAULT_LIMITS.maxHeaderBytes,
    });
    expect(adminLimitsOf({ headersTimeoutMs: 1_000, requestTimeoutMs: 2_000, keepAliveTimeoutMs: 2_000, maxConnections: 0 })).toMatchObject({
      headersTimeoutMs: 1_000,
      requestTimeoutMs: 2_000,
      keepAliveTimeoutMs: 2_000,
      maxConnections: DEFAULT_ADMIN_LIMITS.maxConnections,
    });
  });
});
