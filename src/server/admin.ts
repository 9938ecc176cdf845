/** The admin listener: Prometheus metrics and the health endpoints kubelet probes. */
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { Logger } from 'pino';
import { answerClientErrors, applyLimits, closeServer, listen, pathOf, sendText, serverOptionsOf, TEXT, type ConnectionLimits, type HttpApp, type RequestHandler } from './http.js';
import type { InjectorMetrics } from './metrics.js';
import { DEFAULT_LIMITS, type ServerLimits } from './webhook.js';

export interface Readiness {
  /** Empty when ready; otherwise what is still missing, e.g. "configuration not loaded". */
  notReadyBecause(): string[];
}

/** Plain HTTP: GET (or HEAD) /metrics, /ping, /live and /ready. */
export type AdminApp = HttpApp<Server>;

/**
 * What a client may hold on the admin listener. Its clients are kubelet, whose probes open a connection, send one GET
 * and read the answer, and a Prometheus scraper or two, which keep a connection between scrapes: a few connections, each
 * sending a few hundred bytes of headers at once.
 */
export type AdminLimits = ConnectionLimits;

/** A scraper's GET that loses the race with a closing connection is simply retried: keep-alive can be short here. */
const ADMIN_KEEP_ALIVE_MS = 5_000;
/** Far more than kubelet's probes and a scraper open. */
const ADMIN_MAX_CONNECTIONS = 64;

/**
 * The admin listener's limits from the webhook's: the same header, request and stall timeouts and header size, a keep-alive of
 * at most 5 s, and room for 64 connections.
 */
export function adminLimitsOf(limits: Partial<ServerLimits> = {}): AdminLimits {
  const webhook = { ...DEFAULT_LIMITS, ...limits };
  return {
    headersTimeoutMs: webhook.headersTimeoutMs,
    requestTimeoutMs: webhook.requestTimeoutMs,
    keepAliveTimeoutMs: Math.min(webhook.keepAliveTimeoutMs, ADMIN_KEEP_ALIVE_MS),
    stallTimeoutMs: webhook.stallTimeoutMs,
    maxConnections: ADMIN_MAX_CONNECTIONS,
    maxHeaderBytes: webhook.maxHeaderBytes,
  };
}

export const DEFAULT_ADMIN_LIMITS: AdminLimits = adminLimitsOf();

/** A request that declares a body (no route here takes one): it is answered without being read, and the connection closed. */
function hasBody(request: IncomingMessage): boolean {
  const length = request.headers['content-length'];
  return (length !== undefined && length !== '0') || request.headers['transfer-encoding'] !== undefined;
}

export function buildAdminApp(options: { metrics: InjectorMetrics; readiness: Readiness; logger: Logger; limits?: Partial<AdminLimits> }): AdminApp {
  const { metrics, readiness, logger } = options;
  const limits = { ...DEFAULT_ADMIN_LIMITS, ...options.limits };

  const route = async (path: string): Promise<{ status: number; type?: string; body: string }> => {
    switch (path) {
      case '/metrics':
        return { status: 200, type: metrics.contentType, body: await metrics.metrics() };
      case '/ping':
        return { status: 200, body: 'pong\n' };
      // Alive as long as the event loop answers: a hung process fails this and kubelet restarts it.
      case '/live':
        return { status: 200, body: 'ok\n' };
      case '/ready': {
        const missing = readiness.notReadyBecause();
        return missing.length === 0 ? { status: 200, body: 'ok\n' } : { status: 503, body: `not ready: ${missing.join('; ')}\n` };
      }
      default:
        return { status: 404, body: `no route for ${path}: the admin listener serves /metrics, /ping, /live and /ready\n` };
    }
  };

  const handle: RequestHandler = (request, response) => {
    const method = request.method ?? '';
    // Left unread, a body would hold the connection until it had all arrived (node:http reads it to reuse the
    // connection): the connection is closed after the answer instead.
    const close = hasBody(request);
    if (method !== 'GET' && method !== 'HEAD') {
      sendText(response, 405, `method ${method} not allowed: use GET\n`, close);
      return;
    }
    route(pathOf(request)).then(
      ({ status, type = TEXT, body }) => {
        const headers: Record<string, string | number> = { 'content-type': type, 'content-length': Buffer.byteLength(body) };
        if (close) headers['connection'] = 'close';
        response.writeHead(status, headers);
        response.end(method === 'HEAD' ? undefined : body);
      },
      (err: unknown) => {
        logger.error({ err }, 'failed to answer an admin request');
        if (!response.headersSent) sendText(response, 500, 'internal error\n', close);
        else response.destroy();
      },
    );
  };

  const server = createServer(serverOptionsOf(limits), handle);
  applyLimits(server, limits);
  answerClientErrors(server, () => {});
  return { server, handle, listen: (host, port) => listen(server, host, port), close: () => closeServer(server) };
}
