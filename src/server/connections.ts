/**
 * The open connections of a listener, by client address: the caps on them, which connection gives way when the table is
 * full, and what a shutdown ends. A connection that carries no request being answered gives way to a new one, so that
 * connections a client holds idle (or trickling a request) never lock out kube-apiserver or kubelet's probes.
 */
import type { IncomingMessage, Server } from 'node:http';
import type { Socket } from 'node:net';

/** One TCP connection (under its TLS layer, when there is one). */
interface Connection {
  socket: Socket;
  key: string;
  client: string;
  /** Requests whose answer has not been sent yet. */
  answering: number;
  /** The latest request; until it has all arrived (`complete`), its connection answers nothing yet. */
  latest: IncomingMessage | undefined;
  /** When the latest request started. */
  since: number;
}

export interface ConnectionCaps {
  /** Open connections beyond this make room by closing one that answers nothing (0: unlimited). */
  maxConnections: number;
  /** Open connections from one address beyond this are closed as they arrive (0: unlimited). */
  maxConnectionsPerClient: number;
}

/** The key that finds a connection from its request's socket, which is the TLS socket on top of the TCP one. */
const keyOf = (socket: { remoteAddress?: string | undefined; remotePort?: number | undefined }): string => `${socket.remoteAddress ?? ''}\u0000${socket.remotePort ?? ''}`;

export class ConnectionTable {
  private readonly byKey = new Map<string, Connection>();
  /** Each client's connections, oldest first. */
  private readonly byClient = new Map<string, Set<Connection>>();
  /** Responses say `Connection: close` (set when the shutdown starts, before the delay). */
  private draining = false;
  /** The listener is closed: idle connections were ended and new handshakes are not served. */
  private closed = false;

  /**
   * `requestTimeoutMs`: the listener's request timeout, which node:http stops enforcing once the listener is closed; the
   * table enforces it from then on for a request still arriving, so that a client trickling a body cannot hold a shutdown.
   */
  constructor(
    server: Server,
    private readonly caps: ConnectionCaps,
    private readonly requestTimeoutMs = Infinity,
  ) {
    // Before a TLS layer takes the connection: one that cannot be kept is closed before its handshake costs anything.
    server.prependListener('connection', (socket: Socket) => this.admit(socket));
    // A handshake that finishes after the listener closed carries no request: it is ended rather than waited for.
    server.on('secureConnection', (socket: Socket) => {
      if (this.closed) socket.destroy();
    });
    server.on('request', (request: IncomingMessage, response) => {
      const connection = this.byKey.get(keyOf(request.socket));
      if (this.draining) response.setHeader('connection', 'close');
      if (!connection) return;
      connection.answering++;
      connection.latest = request;
      connection.since = Date.now();
      response.once('close', () => {
        connection.answering = Math.max(0, connection.answering - 1);
      });
      if (this.closed) this.bound(connection);
    });
  }

  /** Open connections, and how many of them have a request being answered. */
  get counts(): { open: number; busy: number } {
    let busy = 0;
    for (const connection of this.byKey.values()) if (!this.idle(connection)) busy++;
    return { open: this.byKey.size, busy };
  }

  /** From now on responses say `Connection: close`, so each client opens its next connection elsewhere. */
  drain(): void {
    this.draining = true;
  }

  /** Drains, and ends now every connection with no request being answered; returns how many were ended. */
  closeIdle(): number {
    this.drain();
    this.closed = true;
    let ended = 0;
    for (const connection of [...this.byKey.values()]) {
      if (connection.answering === 0) {
        connection.socket.destroy();
        ended++;
      } else {
        this.bound(connection);
      }
    }
    return ended;
  }

  /** A connection that answers nothing: no request, or one whose body is still arriving. */
  private idle(connection: Connection): boolean {
    return connection.answering === 0 || connection.latest?.complete === false;
  }

  private admit(socket: Socket): void {
    const client = socket.remoteAddress ?? '';
    const own = this.byClient.get(client);
    const { maxConnections, maxConnectionsPerClient } = this.caps;
    if (maxConnectionsPerClient > 0 && (own?.size ?? 0) >= maxConnectionsPerClient) {
      socket.destroy();
      return;
    }
    if (maxConnections > 0 && this.byKey.size >= maxConnections && !this.makeRoom()) {
      socket.destroy();
      return;
    }
    const key = keyOf(socket);
    const connection: Connection = { socket, key, client, answering: 0, latest: undefined, since: 0 };
    this.byKey.set(key, connection);
    const set = own ?? new Set<Connection>();
    if (!own) this.byClient.set(client, set);
    set.add(connection);
    socket.once('close', () => {
      if (this.byKey.get(key) === connection) this.byKey.delete(key);
      set.delete(connection);
      if (set.size === 0 && this.byClient.get(client) === set) this.byClient.delete(client);
    });
  }

  /**
   * Closes the oldest connection that answers nothing of the client that holds the most connections, and says whether
   * there was one: whoever holds the table pays for the room a newcomer needs.
   */
  private makeRoom(): boolean {
    const clients = [...this.byClient.values()].sort((a, b) => b.size - a.size);
    for (const set of clients) {
      for (const connection of set) {
        if (!this.idle(connection)) continue;
        connection.socket.destroy();
        // Forgotten now rather than at its close event, so that the newcomer's count is right.
        this.byKey.delete(connection.key);
        set.delete(connection);
        if (set.size === 0) this.byClient.delete(connection.client);
        return true;
      }
    }
    return false;
  }

  /** Ends the connection of a request whose body has not all arrived by the request timeout. */
  private bound({ socket, latest: request, since }: Connection): void {
    // 0 means none, as it does to node:http.
    if (!request || request.complete || !(this.requestTimeoutMs > 0) || !Number.isFinite(this.requestTimeoutMs)) return;
    setTimeout(() => {
      if (!request.complete) socket.destroy();
    }, Math.max(0, since + this.requestTimeoutMs - Date.now())).unref();
  }
}
