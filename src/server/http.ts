/**
 * What the two listeners share, on node:http directly: each serves a handful of fixed routes, so a framework's router,
 * hooks, schema compiler and per-request logger would cost more start-up time, memory and CPU per request than they
 * save in code.
 */
import type { IncomingMessage, Server as HttpServer, ServerResponse } from 'node:http';
import type { Server as HttpsServer } from 'node:https';
import type { Duplex } from 'node:stream';

/** Handles one request; never throws (errors are answered or logged by the handler itself). */
export type RequestHandler = (request: IncomingMessage, response: ServerResponse) => void;

/** A listener and the handler behind it (the handler alone serves in-process tests). */
export interface HttpApp<S extends HttpServer | HttpsServer> {
  readonly server: S;
  readonly handle: RequestHandler;
  listen(host: string, port: number): Promise<void>;
  /** Stops accepting, ends idle connections and resolves once every connection has ended. */
  close(): Promise<void>;
}

export const TEXT = 'text/plain; charset=utf-8';

/** What bounds one client on either listener. */
export interface ConnectionLimits {
  /** From the connection (or the previous response) to the end of a request's headers; a stalled client gets 408. */
  headersTimeoutMs: number;
  /** From the start of a request to the end of its body; a stalled client gets 408. */
  requestTimeoutMs: number;
  /** How long an idle keep-alive connection is kept between requests. */
  keepAliveTimeoutMs: number;
  /**
   * While a request is answered: how long no byte may move either way before the connection is closed. A client that
   * sends requests and never reads their answers would otherwise hold its connection for good, since node:http's
   * other timeouts cover only the request's arrival and the idle time after a response.
   */
  stallTimeoutMs: number;
  /** Open connections beyond this are closed as they arrive (0: unlimited). */
  maxConnections: number;
  /** Request line and headers together, bytes; more gets 431. */
  maxHeaderBytes: number;
}

/** Node checks header and request timeouts on a timer; this often, so a timeout is enforced within about a second. */
const CONNECTIONS_CHECKING_INTERVAL_MS = 500;

/** The limits node:http reads at construction (the checking interval is fixed then): for createServer itself. */
export function serverOptionsOf(limits: ConnectionLimits) {
  return {
    requestTimeout: limits.requestTimeoutMs,
    headersTimeout: limits.headersTimeoutMs,
    keepAliveTimeout: limits.keepAliveTimeoutMs,
    connectionsCheckingInterval: CONNECTIONS_CHECKING_INTERVAL_MS,
    maxHeaderSize: limits.maxHeaderBytes,
  };
}

/** The limits set on the server once it exists. */
export function applyLimits(server: HttpServer | HttpsServer, limits: ConnectionLimits): void {
  server.headersTimeout = limits.headersTimeoutMs;
  server.keepAliveTimeout = limits.keepAliveTimeoutMs;
  // node:http arms this inactivity timer on every connection, and with no 'timeout' listener destroys a connection
  // when it fires; between requests it arms the keep-alive timeout in its place.
  server.timeout = limits.stallTimeoutMs;
  if (limits.maxConnections > 0) server.maxConnections = limits.maxConnections;
}

/** Answers with a short text; `close` asks the client not to reuse the connection. */
export function sendText(response: ServerResponse, status: number, text: string, close = false): void {
  const headers: Record<string, string | number> = { 'content-type': TEXT, 'content-length': Buffer.byteLength(text) };
  if (close) headers['connection'] = 'close';
  response.writeHead(status, headers);
  response.end(text);
}

/** The request's path without its query string. */
export function pathOf(request: IncomingMessage): string {
  const url = request.url ?? '/';
  const query = url.indexOf('?');
  return query === -1 ? url : url.slice(0, query);
}

export function listen(server: HttpServer | HttpsServer, host: string, port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const failed = (err: Error) => reject(err);
    server.once('error', failed);
    server.listen({ host, port }, () => {
      server.off('error', failed);
      resolve();
    });
  });
}

/** Closes an app's listener and ends every connection on it now, busy or not. */
export async function closeNow(app: HttpApp<HttpServer | HttpsServer>): Promise<void> {
  const closed = app.close();
  app.server.closeAllConnections();
  await closed;
}

/** Closes the listener; node:http ends idle keep-alive connections itself and waits for busy ones. */
export function closeServer(server: HttpServer | HttpsServer): Promise<void> {
  return new Promise((resolve) => {
    if (!server.listening) {
      resolve();
      return;
    }
    server.close(() => resolve());
  });
}

/** node:http's own answers to a request it cannot parse, by error code (the same status lines it writes itself). */
const CLIENT_ERROR_LINES: Record<string, string> = {
  ERR_HTTP_REQUEST_TIMEOUT: '408 Request Timeout',
  HPE_HEADER_OVERFLOW: '431 Request Header Fields Too Large',
  HPE_CHUNK_EXTENSIONS_OVERFLOW: '413 Payload Too Large',
};

/**
 * Answers a request node:http could not take (a header or request timeout, headers too large, bytes that are not
 * HTTP) as node:http does when nobody listens for it, and tells `counted` first, so that such clients show in the
 * metrics. An answer is written only when no response is under way on the connection.
 */
export function answerClientErrors(server: HttpServer | HttpsServer, counted: (code: string | undefined) => void): void {
  server.on('clientError', (err: NodeJS.ErrnoException, socket: Duplex) => {
    counted(err.code);
    const inFlight = (socket as Duplex & { _httpMessage?: { headersSent?: boolean } | null })._httpMessage;
    if (err.code !== 'ECONNRESET' && socket.writable && (!inFlight || !inFlight.headersSent)) {
      socket.write(`HTTP/1.1 ${CLIENT_ERROR_LINES[err.code ?? ''] ?? '400 Bad Request'}\r\nConnection: close\r\n\r\n`);
    }
    socket.destroy(err);
  });
}
