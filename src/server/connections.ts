/**
 * The webhook's TLS connections and how many requests each has in flight, so that a shutdown can end the connections
 * that carry none. Node's server.close() ends idle keep-alive connections, but not one that finished its TLS handshake
 * and never sent a request: Go's HTTP client (kube-apiserver's webhook client) leaves such connections in its pool
 * when a dial it started loses the race to a connection freed meanwhile. Without this, every SIGTERM waited the whole
 * shutdown timeout for them and exited as if requests had been cut off.
 */
import type { IncomingMessage } from 'node:http';
import type { Server as HttpsServer } from 'node:https';
import type { TLSSocket } from 'node:tls';

/** The latest request on a connection, and when it started. */
interface Latest {
  request: IncomingMessage;
  started: number;
}

export class ConnectionTracker {
  private readonly inFlight = new Map<TLSSocket, number>();
  /**
   * Each connection's latest request. node:http stops enforcing its request timeout once the listener is closed, so from
   * then on the tracker does it for a request whose body has not all arrived (`complete` false): a client trickling its
   * body would otherwise hold the shutdown for its whole timeout.
   */
  private readonly latest = new Map<TLSSocket, Latest>();
  /** Responses say `Connection: close` (set when the shutdown starts, before the delay). */
  private draining = false;
  /** The listener is closed and idle connections were ended (after the delay). */
  private closed = false;

  /** `requestTimeoutMs`: the listener's request timeout, enforced by the tracker after the listener closes. */
  constructor(
    server: HttpsServer,
    private readonly requestTimeoutMs = Infinity,
  ) {
    server.on('secureConnection', (socket: TLSSocket) => {
      // A handshake that was under way when closing started finishes after closeIdle() looked: it carries no request,
      // so it is ended now rather than holding the shutdown for its whole timeout (Node stops checking header
      // timeouts once the listener is closed).
      if (this.closed) {
        socket.destroy();
        return;
      }
      this.inFlight.set(socket, 0);
      socket.once('close', () => {
        this.inFlight.delete(socket);
        this.latest.delete(socket);
      });
    });
    server.on('request', (request, response) => {
      const socket = request.socket as TLSSocket;
      this.inFlight.set(socket, (this.inFlight.get(socket) ?? 0) + 1);
      const latest: Latest = { request, started: Date.now() };
      this.latest.set(socket, latest);
      if (this.closed) this.bound(socket, latest);
      // Once closing, the client must not reuse this connection for its next review: it is about to go away.
      if (this.draining) response.setHeader('connection', 'close');
      response.once('close', () => {
        if (this.inFlight.has(socket)) this.inFlight.set(socket, Math.max(0, (this.inFlight.get(socket) ?? 1) - 1));
      });
    });
  }

  /** Open connections, and how many of them have a request in flight. */
  get counts(): { open: number; busy: number } {
    let busy = 0;
    for (const n of this.inFlight.values()) if (n > 0) busy++;
    return { open: this.inFlight.size, busy };
  }

  /**
   * From now on responses say `Connection: close`, so each client opens its next connection elsewhere (the balancer no
   * longer routes new ones here once readiness fails) instead of reusing one that is about to be ended.
   */
  drain(): void {
    this.draining = true;
  }

  /** Drains, and ends now the connections with no request in flight. */
  closeIdle(): number {
    this.drain();
    this.closed = true;
    let ended = 0;
    for (const [socket, n] of this.inFlight) {
      if (n === 0) {
        socket.destroy();
        ended++;
      }
    }
    for (const [socket, latest] of this.latest) this.bound(socket, latest);
    return ended;
  }

  /** Ends the connection of a request whose body has not all arrived by the request timeout. */
  private bound(socket: TLSSocket, { request, started }: Latest): void {
    // 0 means none, as it does to node:http.
    if (request.complete || !(this.requestTimeoutMs > 0) || !Number.isFinite(this.requestTimeoutMs)) return;
    const left = Math.max(0, started + this.requestTimeoutMs - Date.now());
    setTimeout(() => {
      if (!request.complete) socket.destroy();
    }, left).unref();
  }
}
