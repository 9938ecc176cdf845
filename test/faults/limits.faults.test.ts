/**
 * What node:https actually enforces for each of `serve`'s limits, measured on a real process with the limits
 * set short so that each shows within seconds: one connection per fault, on an otherwise idle server.
 */
import { connect as tcpConnect, type Socket } from 'node:net';
import { connect as tlsConnect, type TLSSocket } from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { reviewRequest } from '../support/https.js';
import { FAULTS, newTally, type FaultName, type Target } from './support/attackers.js';
import { caOf, cleanUp, reviewWithAnswer, startInjector, tlsDir, type Injector } from './support/injector.js';

afterAll(cleanUp);

/** What a loaded machine may add to a timeout before the close is seen: generous, and far below Node's defaults. */
const SLACK_MS = 3_000;

let injector: Injector;
let target: Target;
let body: string;

beforeAll(async () => {
  const dir = tlsDir();
  injector = await startInjector(dir, [
    '--tls-handshake-timeout', '1s', '--header-timeout', '1s', '--request-timeout', '2s', '--keep-alive-timeout', '2s',
    '--max-connections', '20', '--max-header-bytes', '4096', '--max-requests-per-connection', '3',
  ]);
  target = { host: injector.host, port: injector.port, ca: caOf(dir) };
  body = (await reviewWithAnswer('limits')).body;
});

async function once(fault: FaultName): Promise<{ lifetimeMs: number; answer: string }> {
  const tally = newTally();
  await FAULTS[fault](target, tally, body);
  return { lifetimeMs: tally.lifetimesMs[0] ?? NaN, answer: [...tally.answers.keys()][0] ?? '' };
}

function openTls(): Promise<TLSSocket> {
  return new Promise((resolve, reject) => {
    const socket = tlsConnect({ host: target.host, port: target.port, ca: target.ca, servername: 'localhost' });
    socket.once('secureConnect', () => resolve(socket)).once('error', reject);
  });
}

interface RawResponse {
  status: number;
  headers: string;
}

/** Writes one request on `socket` and reads its whole response (by Content-Length). */
function exchange(socket: TLSSocket, extraHeaders = ''): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    let buffer = '';
    const onData = (c: Buffer): void => {
      buffer += c.toString('latin1');
      const end = buffer.indexOf('\r\n\r\n');
      if (end < 0) return;
      const headers = buffer.slice(0, end);
      const length = Number(/content-length: (\d+)/i.exec(headers)?.[1] ?? 0);
      if (buffer.length - end - 4 < length) return;
      socket.off('data', onData);
      resolve({ status: Number(headers.slice(9, 12)), headers: headers.toLowerCase() });
    };
    socket.on('data', onData);
    socket.once('close', () => reject(new Error(`closed before a whole response: ${JSON.stringify(buffer.slice(0, 200))}`)));
    socket.write(reviewRequest(body, extraHeaders));
  });
}

const closedAfter = (socket: TLSSocket): Promise<number> => {
  const started = performance.now();
  return new Promise((resolve) => socket.once('close', () => resolve(performance.now() - started)));
};

describe('the limits of serve, set short', () => {
  it('a connection that never starts its TLS handshake is closed at --tls-handshake-timeout', async () => {
    const { lifetimeMs, answer } = await once('no handshake');
    expect(answer).toBe('closed without an answer');
    expect(lifetimeMs).toBeGreaterThan(900);
    expect(lifetimeMs).toBeLessThan(1000 + SLACK_MS);
  });

  it('a handshake abandoned midway is closed at --tls-handshake-timeout', async () => {
    const { lifetimeMs } = await once('handshake abandoned midway');
    expect(lifetimeMs).toBeGreaterThan(900);
    expect(lifetimeMs).toBeLessThan(1000 + SLACK_MS);
  });

  it('a handshaken connection that sends nothing gets 408 at --header-timeout', async () => {
    const { lifetimeMs, answer } = await once('idle after handshake');
    expect(answer).toBe('408');
    expect(lifetimeMs).toBeGreaterThan(900);
    expect(lifetimeMs).toBeLessThan(1000 + SLACK_MS);
  });

  it('headers sent a byte at a time get 408 at --header-timeout', async () => {
    const { lifetimeMs, answer } = await once('slow headers');
    expect(answer).toBe('408');
    expect(lifetimeMs).toBeLessThan(1000 + SLACK_MS);
  });

  it('a body sent a byte at a time gets 408 at --request-timeout', async () => {
    const { lifetimeMs, answer } = await once('slow body');
    expect(answer).toBe('408');
    expect(lifetimeMs).toBeGreaterThan(1800);
    expect(lifetimeMs).toBeLessThan(2000 + SLACK_MS);
  });

  it('each 408 is counted as a refusal with reason request_timeout', async () => {
    // The three tests above each ended a connection with a 408 (they run in order, in this one process).
    const text = await (await fetch(`${injector.adminUrl}/metrics`)).text();
    const count = Number(/^proxy_inject_admission_refusals_total\{status="408",reason="request_timeout"\} (\d+)$/m.exec(text)?.[1]);
    expect(count).toBeGreaterThanOrEqual(3);
  });

  it('an idle keep-alive connection is closed at --keep-alive-timeout after its last response', async () => {
    const socket = await openTls();
    const response = await exchange(socket);
    expect(response.status).toBe(200);
    expect(response.headers).toMatch(/keep-alive: timeout=2/);
    const idleMs = await closedAfter(socket);
    expect(idleMs).toBeGreaterThan(1500);
    expect(idleMs).toBeLessThan(2000 + SLACK_MS);
  });

  it('headers over --max-header-bytes get 431; under it they are served', async () => {
    const small = await openTls();
    expect((await exchange(small, `X-Pad: ${'p'.repeat(3000)}\r\n`)).status).toBe(200);
    small.destroy();
    const { answer } = await once('oversized headers');
    expect(answer).toBe('431');
  });

  it('the response that reaches --max-requests-per-connection says Connection: close and the connection ends', async () => {
    const socket = await openTls();
    const closed = closedAfter(socket);
    const first = await exchange(socket);
    const second = await exchange(socket);
    const third = await exchange(socket);
    expect([first.status, second.status, third.status]).toEqual([200, 200, 200]);
    expect(second.headers).toMatch(/connection: keep-alive/);
    expect(third.headers).toMatch(/connection: close/);
    await closed;
  });

  it('a connection beyond --max-connections closes the oldest that answers nothing, and is served', async () => {
    // A process of its own with the default timeouts, so that no held connection is closed by one meanwhile.
    const dir = tlsDir();
    const own = await startInjector(dir, ['--max-connections', '20']);
    const held: Socket[] = [];
    for (let i = 0; i < 20; i++) {
      const s = tcpConnect({ host: own.host, port: own.port }).on('error', () => {});
      await new Promise((r) => s.once('connect', r));
      held.push(s);
    }
    // The server counts a connection once it has accepted it; give it a moment to accept all twenty.
    await new Promise((r) => setTimeout(r, 200));
    const closed = (s: Socket) => new Promise<boolean>((resolve) => (s.destroyed ? resolve(true) : (s.once('close', () => resolve(true)), setTimeout(() => resolve(false), 1_000))));
    const socket = await new Promise<TLSSocket>((resolve, reject) => {
      const s = tlsConnect({ host: own.host, port: own.port, ca: caOf(dir), servername: 'localhost' });
      s.once('secureConnect', () => resolve(s)).once('error', reject);
    });
    expect((await exchange(socket)).status).toBe(200);
    socket.destroy();
    expect(await closed(held[0] as Socket)).toBe(true);
    expect(await closed(held[1] as Socket)).toBe(false);
    for (const s of held) s.destroy();
    own.child.kill('SIGKILL');
  });

  it('plain HTTP on the TLS port is closed without an HTTP answer', async () => {
    const { answer } = await once('plain HTTP');
    expect(answer).toBe('closed without an answer');
  });

  it('the admin port: a connection that sends nothing gets 408 at --header-timeout, a GET with a body is answered and closed', async () => {
    const admin = new URL(injector.adminUrl);
    const watch = (write: string): Promise<{ text: string; lifetimeMs: number }> =>
      new Promise((resolve) => {
        const socket = tcpConnect({ host: admin.hostname, port: Number(admin.port) }).on('error', () => {});
        const started = performance.now();
        let text = '';
        socket.on('data', (c: Buffer) => (text += c.toString('latin1')));
        socket.once('connect', () => {
          if (write) socket.write(write);
        });
        socket.once('close', () => resolve({ text, lifetimeMs: performance.now() - started }));
      });
    const idle = await watch('');
    expect(idle.text).toMatch(/^HTTP\/1\.1 408 /);
    expect(idle.lifetimeMs).toBeGreaterThan(900);
    expect(idle.lifetimeMs).toBeLessThan(1000 + SLACK_MS);
    const withBody = await watch('GET /ready HTTP/1.1\r\nHost: localhost\r\nContent-Length: 1000000\r\n\r\nx');
    expect(withBody.text).toMatch(/^HTTP\/1\.1 200 /);
    expect(withBody.lifetimeMs).toBeLessThan(SLACK_MS);
    expect((await fetch(`${injector.adminUrl}/ready`)).status).toBe(200);
  });

  it('refuses limits that make no sense with a clear message', async () => {
    await expect(startInjector(tlsDir(), ['--header-timeout', '9s', '--request-timeout', '8s'])).rejects.toThrow(
      /--header-timeout 9s is longer than --request-timeout 8s/,
    );
    await expect(startInjector(tlsDir(), ['--request-timeout', '0s'])).rejects.toThrow(/--request-timeout "0s": must be longer than 0s/);
    await expect(startInjector(tlsDir(), ['--stall-timeout', '5s'])).rejects.toThrow(/--stall-timeout 5s is shorter than --request-timeout 8s/);
    await expect(startInjector(tlsDir(), ['--max-header-bytes', '10'])).rejects.toThrow(/--max-header-bytes "10": expected a whole number of at least 1024/);
  });
});
