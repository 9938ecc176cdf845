/** The admin listener: Prometheus metrics and the health endpoints kubelet probes. */
import Fastify, { type FastifyInstance, type FastifyReply } from 'fastify';
import type { IncomingMessage, Server } from 'node:http';
import type { Logger } from 'pino';
import { oneLine } from '../engine/index.js';
import { ConnectionTable } from './connections.js';
import { denialText, type DenialSource } from './denial.js';
import { fastifyOptions, nodeServerOptions, TEXT, type ConnectionLimits } from './http.js';
import type { InjectorMetrics } from './metrics.js';
import { DEFAULT_LIMITS, type ServerLimits } from './webhook.js';

export interface Readiness {
  /** Empty when ready; otherwise what is still missing, e.g. "configuration not loaded". */
  notReadyBecause(): string[];
  /** Why every pod that asks for injection is denied, while it is; /ready stays 200 then, and says so. */
  denyingBecause?: DenialSource;
}

/** Plain HTTP: GET (or HEAD) /metrics, /ping, /live and /ready. */
export type AdminApp = FastifyInstance<Server>;

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
/** From one address: kubelet probes over one connection at a time, a scraper keeps one or two. */
const ADMIN_MAX_CONNECTIONS_PER_CLIENT = 8;

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
    maxConnectionsPerClient: ADMIN_MAX_CONNECTIONS_PER_CLIENT,
    maxHeaderBytes: webhook.maxHeaderBytes,
  };
}

export const DEFAULT_ADMIN_LIMITS: AdminLimits = adminLimitsOf();

/** A request that declares a body (no route here takes one): it is answered without being read, and the connection closed. */
function hasBody(request: IncomingMessage): boolean {
  const length = request.headers['content-length'];
  return (length !== undefined && length !== '0') || request.headers['transfer-encoding'] !== undefined;
}

/** A short text answer; any answer but a 200 or a 503 from /ready closes the connection, so that it holds no slot. */
function sendText(reply: FastifyReply, status: number, text: string): FastifyReply {
  if (status !== 200 && status !== 503) reply.header('connection', 'close');
  return reply.code(status).header('content-type', TEXT).send(text);
}

export function buildAdminApp(options: { metrics: InjectorMetrics; readiness: Readiness; logger: Logger; limits?: Partial<AdminLimits> }): AdminApp {
  const { metrics, readiness, logger } = options;
  const limits = { ...DEFAULT_ADMIN_LIMITS, ...options.limits };
  /**
   * A wrong method or path is answered and logged in one short line, as the webhook's refusals are: a scraper or probe
   * pointed at the wrong place shows in the log, and a client gets no more lines from it than from a bad review.
   */
  const refuse = (reply: FastifyReply, status: number, message: string): FastifyReply => {
    logger.warn({ status, reason: message }, 'rejected admin request');
    return sendText(reply, status, `${message}\n`);
  };
  const notFound = (url: string, reply: FastifyReply): FastifyReply =>
    refuse(reply, 404, `no route for ${oneLine(url.split('?')[0] ?? '').slice(0, 256)}: the admin listener serves /metrics, /ping, /live and /ready`);
  const app: AdminApp = Fastify({
    ...fastifyOptions(limits, () => {}),
    http: nodeServerOptions(limits),
    // A path that cannot be decoded (`/%zz`) names no route either; fastify would answer it itself, unlogged.
    frameworkErrors: (_error, request, reply) => notFound(request.raw.url ?? '', reply),
  });
  // The table keeps its caps through the listeners it adds to the server.
  new ConnectionTable(app.server, limits);
  app.removeAllContentTypeParsers();

  // Before any body is read: a GET's body, left unread, would hold the connection until it had all arrived (node:http
  // reads it to reuse the connection), so the connection is closed after the answer instead; other methods get 405.
  app.addHook('onRequest', (request, reply, done) => {
    if (hasBody(request.raw)) reply.header('connection', 'close');
    if (request.method !== 'GET' && request.method !== 'HEAD') {
      refuse(reply, 405, `method ${request.method.slice(0, 16)} not allowed: use GET`);
      return;
    }
    done();
  });

  app.get('/metrics', async (_request, reply) => reply.header('content-type', metrics.contentType).send(await metrics.metrics()));
  app.get('/ping', (_request, reply) => sendText(reply, 200, 'pong\n'));
  // Alive as long as the event loop answers: a hung process fails this and kubelet restarts it.
  app.get('/live', (_request, reply) => sendText(reply, 200, 'ok\n'));
  app.get('/ready', (_request, reply) => {
    const missing = readiness.notReadyBecause();
    if (missing.length > 0) return sendText(reply, 503, `not ready: ${missing.join('; ')}\n`);
    // Ready all the same: out of its Service, the pods it denies would be admitted unmeshed (failurePolicy Ignore) or
    // every pod refused (Fail); the body says what it cannot do.
    const denial = readiness.denyingBecause?.();
    return sendText(reply, 200, denial ? `ready, but denying injection: ${denialText(denial)}\n` : 'ok\n');
  });
  app.setNotFoundHandler((request, reply) => notFound(request.url, reply));
  app.setErrorHandler((err, _request, reply) => {
    logger.error({ err }, 'failed to answer an admin request');
    return sendText(reply, 500, 'internal error\n');
  });
  return app;
}
