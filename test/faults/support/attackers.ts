/**
 * Hostile clients on loopback. Each one opens a connection, misbehaves in one way, and records how long the server
 * kept the connection and what (if anything) it answered; a loop of them reconnects until told to stop.
 */
import { connect as tcpConnect, type Socket } from 'node:net';
import { connect as tlsConnect } from 'node:tls';
import { reviewRequest } from '../../support/https.js';

export interface Target {
  host: string;
  port: number;
  ca: string;
  /** The address the attacker's connections come from (loopback has every 127.x address). */
  localAddress?: string;
}

export interface FaultTally {
  /** Connections opened that carried the fault. */
  injected: number;
  /** How long the server kept each one, ms (from connect to close). */
  lifetimesMs: number[];
  /** What the server answered: the status line of its first response, or "closed without an answer". */
  answers: Map<string, number>;
}

export const newTally = (): FaultTally => ({ injected: 0, lifetimesMs: [], answers: new Map() });

/** A connection and what it received, with a promise for its close. */
interface Watched {
  socket: Socket;
  opened: number;
  received: () => string;
  closed: Promise<void>;
}

function watch(socket: Socket): Watched {
  let received = '';
  socket.on('data', (c: Buffer) => {
    // Only the start matters (status lines); bound what a long answer can take here.
    if (received.length < 4096) received += c.toString('latin1');
  });
  socket.on('error', () => {});
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  return { socket, opened: performance.now(), received: () => received, closed };
}

const tcp = (t: Target): Watched => watch(tcpConnect({ host: t.host, port: t.port, ...(t.localAddress && { localAddress: t.localAddress }) }));

async function tls(t: Target): Promise<Watched> {
  const socket = tlsConnect({ host: t.host, port: t.port, ca: t.ca, servername: 'localhost', ...(t.localAddress && { localAddress: t.localAddress }) });
  const watched = watch(socket);
  await Promise.race([new Promise((resolve) => socket.once('secureConnect', resolve)), watched.closed]);
  return watched;
}

function record(tally: FaultTally, w: Watched): void {
  tally.lifetimesMs.push(performance.now() - w.opened);
  const statuses = [...w.received().matchAll(/HTTP\/1\.1 (\d{3})/g)].map((m) => m[1]);
  const answer = statuses.length > 0 ? statuses.join(' then ') : 'closed without an answer';
  tally.answers.set(answer, (tally.answers.get(answer) ?? 0) + 1);
}

/** Writes `bytes` one at a time, `everyMs` apart, until the socket closes. */
async function trickle(w: Watched, bytes: string, everyMs: number): Promise<void> {
  let open = true;
  void w.closed.then(() => (open = false));
  for (let i = 0; open; i = (i + 1) % bytes.length) {
    w.socket.write(bytes[i] ?? 'a');
    await Promise.race([new Promise((r) => setTimeout(r, everyMs)), w.closed]);
  }
}

/** A TLS ClientHello's record header announcing 512 bytes, and only the first few of them. */
const PARTIAL_CLIENT_HELLO = Buffer.concat([Buffer.from([0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xfc, 0x03, 0x03]), Buffer.alloc(32, 7)]);

export type Fault = (t: Target, tally: FaultTally, body: string) => Promise<void>;

export const FAULTS = {
  /** TCP connected, not a byte of TLS. */
  'no handshake': async (t, tally) => {
    const w = tcp(t);
    tally.injected++;
    await w.closed;
    record(tally, w);
  },
  /** A ClientHello that stops a few bytes in. */
  'handshake abandoned midway': async (t, tally) => {
    const w = tcp(t);
    w.socket.write(PARTIAL_CLIENT_HELLO);
    tally.injected++;
    await w.closed;
    record(tally, w);
  },
  /** Handshake finished, then no request at all. */
  'idle after handshake': async (t, tally) => {
    const w = await tls(t);
    tally.injected++;
    await w.closed;
    record(tally, w);
  },
  /** A request line, then a header byte every 2 s. */
  'slow headers': async (t, tally) => {
    const w = await tls(t);
    w.socket.write('POST / HTTP/1.1\r\nHost: localhost\r\nX-Slow: ');
    tally.injected++;
    await trickle(w, 'abcdefghij', 2000);
    record(tally, w);
  },
  /** Complete headers announcing a body, then a body byte every 2 s. */
  'slow body': async (t, tally, body) => {
    const w = await tls(t);
    w.socket.write(`POST / HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`);
    tally.injected++;
    await trickle(w, body, 2000);
    record(tally, w);
  },
  /** Headers declaring a body of the largest size the webhook takes, then a byte of it a second. */
  'large body trickled': async (t, tally) => {
    const w = await tls(t);
    w.socket.write(`POST / HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: ${4 * 1024 * 1024}\r\n\r\n`);
    tally.injected++;
    await trickle(w, ' ', 1000);
    record(tally, w);
  },
  /** One 64 KiB header. */
  'oversized headers': async (t, tally) => {
    const w = await tls(t);
    w.socket.write(`POST / HTTP/1.1\r\nHost: localhost\r\nX-Big: ${'b'.repeat(64 * 1024)}\r\nContent-Length: 2\r\n\r\n{}`);
    tally.injected++;
    await w.closed;
    record(tally, w);
  },
  /** A real review immediately followed, on the same connection, by bytes that are not HTTP. */
  'pipelined garbage': async (t, tally, body) => {
    const w = await tls(t);
    w.socket.write(reviewRequest(body) + '\x00\x01\x02 GARBAGE \xff\r\nnot: http\r\n\r\n');
    tally.injected++;
    await w.closed;
    record(tally, w);
  },
  /** Plain HTTP to the TLS port. */
  'plain HTTP': async (t, tally) => {
    const w = tcp(t);
    w.socket.write(reviewRequest('{}'));
    tally.injected++;
    await w.closed;
    record(tally, w);
  },
} satisfies Record<string, Fault>;

export type FaultName = keyof typeof FAULTS;

/** `count` loops of one fault, each reconnecting (after `pauseMs`) until `until()`; resolves when all have stopped. */
export async function attack(fault: Fault, t: Target, tally: FaultTally, body: string, count: number, pauseMs: number, until: () => boolean): Promise<void> {
  const loop = async (): Promise<void> => {
    while (!until()) {
      await fault(t, tally, body);
      await new Promise((r) => setTimeout(r, pauseMs));
    }
  };
  await Promise.all(Array.from({ length: count }, loop));
}
