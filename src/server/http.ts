/**
 * What the two fastify listeners share: the limits that bound one client, as node:http and fastify options, and the
 * answer to a request node:http cannot parse. Both speak HTTP/1.1 only: kube-apiserver calls a webhook that is not on
 * a loopback address over HTTP/1.1 with a pool of keep-alive connections, and kubelet probes and scrapers do too.
 */
import type { FastifyServerOptions } from 'fastify';
import type { Duplex } from 'node:stream';
import type { ConnectionCaps } from './connections.js';

export const TEXT = 'text/plain; charset=utf-8';

/** What bounds one client on either listener. */
export interface ConnectionLimits extends ConnectionCaps {
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
  /** Request line and headers together, bytes; more gets 431. */
  maxHeaderBytes: number;
}

/** Node checks header and request timeouts on a timer; this often, so a timeout is enforced within about a second. */
const CONNECTIONS_CHECKING_INTERVAL_MS = 500;

/** The limits node:http reads when its server is created (the checking interval is fixed then). */
export function nodeServerOptions(limits: ConnectionLimits) {
  return {
    requestTimeout: limits.requestTimeoutMs,
    headersTimeout: limits.headersTimeoutMs,
    keepAliveTimeout: limits.keepAliveTimeoutMs,
    connectionsCheckingInterval: CONNECTIONS_CHECKING_INTERVAL_MS,
    maxHeaderSize: limits.maxHeaderBytes,
  };
}

/**
 * The fastify options both listeners use: no logger of fastify's own (each route logs what it did through the
 * injector's pino logger, never a line per request), no schemas, the limits that fastify sets on the server it creates,
 * and `clientError` counted and answered as node:http answers it.
 */
export function fastifyOptions(limits: ConnectionLimits, counted: (code: string | undefined) => void) {
  return {
    logger: false,
    // node:http arms this inactivity timer on every connection and destroys the connection when it fires; between
    // requests it arms the keep-alive timeout in its place.
    connectionTimeout: limits.stallTimeoutMs,
    keepAliveTimeout: limits.keepAliveTimeoutMs,
    requestTimeout: limits.requestTimeoutMs,
    clientErrorHandler: answerClientError(counted),
  } satisfies FastifyServerOptions;
}

/** The status lines node:http itself writes for a request it cannot take, by error code. */
const CLIENT_ERROR_LINES: Record<string, string> = {
  ERR_HTTP_REQUEST_TIMEOUT: '408 Request Timeout',
  HPE_HEADER_OVERFLOW: '431 Request Header Fields Too Large',
  HPE_CHUNK_EXTENSIONS_OVERFLOW: '413 Payload Too Large',
};

/**
 * Answers a request node:http could not take (a header or request timeout, headers too large, bytes that are not
 * HTTP) with a bare status line and closes the connection, after telling `counted`, so that such clients show in the
 * metrics.
 */
function answerClientError(counted: (code: string | undefined) => void): (err: NodeJS.ErrnoException, socket: Duplex) => void {
  return (err, socket) => {
    counted(err.code);
    if (err.code !== 'ECONNRESET' && socket.writable) {
      socket.write(`HTTP/1.1 ${CLIENT_ERROR_LINES[err.code ?? ''] ?? '400 Bad Request'}\r\nConnection: close\r\n\r\n`);
    }
    socket.destroy(err);
  };
}

/** Closes an app's listener and ends every connection on it now, busy or not. */
export async function closeNow(app: { close(): Promise<unknown>; server: { closeAllConnections(): void } }): Promise<void> {
  const closed = app.close();
  app.server.closeAllConnections();
  await closed;
}
