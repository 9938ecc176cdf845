/** The admission webhook application: POST / takes an AdmissionReview and answers with the engine's decision. */
import Fastify, { LogController, type FastifyError, type FastifyInstance, type FastifyServerOptions } from 'fastify';
import type { IncomingMessage, ServerOptions as HttpServerOptions, ServerResponse } from 'node:http';
import type { Server as HttpsServer } from 'node:https';
import type { Logger } from 'pino';
import {
  handleAdmission,
  parseReview,
  ReviewError,
  serializeReview,
  type AdmissionRequest,
  type AdmissionSources,
  type HandledAdmission,
} from '../admission/index.js';
import { objectName } from '../engine/index.js';
import { oneLine } from '../tls/index.js';
import type { InjectorMetrics, RefusalReason } from './metrics.js';

export const MAX_BODY_BYTES = 10 * 1024 * 1024;

export interface WebhookTls {
  key: string;
  cert: string;
  minVersion: 'TLSv1.2' | 'TLSv1.3';
}

export interface WebhookOptions {
  sources: AdmissionSources;
  metrics: InjectorMetrics;
  logger: Logger;
  /** Serve HTTPS with this pair; plain HTTP when absent (in-process tests only). */
  tls?: WebhookTls;
  /** Called after each handled admission (events are recorded here; `request.dryRun` says whether they may be). */
  onAdmitted?: (handled: HandledAdmission, request: AdmissionRequest) => void;
  /** Timeouts and sizes that bound what one client can hold; DEFAULT_LIMITS where not given. */
  limits?: Partial<ServerLimits>;
}

/**
 * What a client may hold on the webhook listener. Every timeout is well inside kube-apiserver's 10 s webhook timeout
 * (after which the answer is useless anyway), so a slow or stalled client is cut off long before it matters.
 */
export interface ServerLimits {
  /** From TCP accept to a finished TLS handshake (Node's default is 120 s). */
  handshakeTimeoutMs: number;
  /** From the connection (or the previous response) to the end of a request's headers; a stalled client gets 408. */
  headersTimeoutMs: number;
  /** From the start of a request to the end of its body; a stalled client gets 408. */
  requestTimeoutMs: number;
  /** How long an idle keep-alive connection is kept between requests. */
  keepAliveTimeoutMs: number;
  /** Open connections beyond this are closed as they arrive (0: unlimited). */
  maxConnections: number;
  /** Requests served on one connection before it is closed (`Connection: close`); 0: unlimited. */
  maxRequestsPerSocket: number;
  /** Request line and headers together, bytes; more gets 431. */
  maxHeaderBytes: number;
}

export const DEFAULT_LIMITS: ServerLimits = {
  handshakeTimeoutMs: 5_000,
  headersTimeoutMs: 5_000,
  requestTimeoutMs: 8_000,
  keepAliveTimeoutMs: 30_000,
  maxConnections: 1_000,
  maxRequestsPerSocket: 0,
  maxHeaderBytes: 16 * 1024,
};

/** Node checks header and request timeouts on a timer; this often, so a timeout is enforced within about a second. */
const CONNECTIONS_CHECKING_INTERVAL_MS = 500;

/** Fastify's body errors, mapped to the status and one-line reason the API server will log. */
function bodyError(error: FastifyError): { status: number; message: string; reason: RefusalReason } | undefined {
  switch (error.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return { status: 413, message: `the body is larger than ${MAX_BODY_BYTES} bytes`, reason: 'body_too_large' };
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return { status: 415, message: 'the body must be application/json', reason: 'unsupported_media_type' };
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return { status: 400, message: 'the body is empty', reason: 'empty_body' };
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      // Fastify's own text ("Body is not valid JSON but content-type is set to ...") would say it a second time.
      return { status: 400, message: 'the body is not valid JSON', reason: 'invalid_json' };
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return { status: 400, message: 'the Content-Length does not match the body', reason: 'content_length_mismatch' };
    default:
      return error.statusCode === 408 ? { status: 408, message: 'the request took too long to arrive', reason: 'request_timeout' } : undefined;
  }
}

export function resourceName(request: AdmissionRequest, handled: HandledAdmission): string {
  const result = handled.kind === 'evaluated' ? handled.result : undefined;
  const kind = result?.kind ?? request.kind.kind.toLowerCase();
  const name = result?.name || request.name || '(generated name)';
  return `${kind}/${request.namespace ?? ''}/${name}`;
}

/** The webhook over HTTPS, with the injector's pino logger. */
export type WebhookApp = FastifyInstance<HttpsServer, IncomingMessage, ServerResponse, Logger>;

export function buildWebhookApp(options: WebhookOptions): WebhookApp {
  const { logger, metrics, sources } = options;
  const limits = { ...DEFAULT_LIMITS, ...options.limits };
  // node:http reads these at construction (the checking interval is fixed then), so they go to createServer itself.
  const serverOptions = {
    handshakeTimeout: limits.handshakeTimeoutMs,
    headersTimeout: limits.headersTimeoutMs,
    requestTimeout: limits.requestTimeoutMs,
    keepAliveTimeout: limits.keepAliveTimeoutMs,
    connectionsCheckingInterval: CONNECTIONS_CHECKING_INTERVAL_MS,
    maxHeaderSize: limits.maxHeaderBytes,
  };
  const common = {
    loggerInstance: logger,
    logController: new LogController({ disableRequestLogging: true }),
    bodyLimit: MAX_BODY_BYTES,
    requestTimeout: limits.requestTimeoutMs,
    keepAliveTimeout: limits.keepAliveTimeoutMs,
    maxRequestsPerSocket: limits.maxRequestsPerSocket,
    onProtoPoisoning: 'remove',
    onConstructorPoisoning: 'remove',
    return503OnClosing: true,
  } satisfies FastifyServerOptions;
  const app: WebhookApp = options.tls
    ? Fastify({ ...common, https: { ...serverOptions, key: options.tls.key, cert: options.tls.cert, minVersion: options.tls.minVersion } })
    : // Plain HTTP serves only in-process tests (fastify's inject), which use nothing of the TLS server.
      (Fastify({ ...common, http: serverOptions as HttpServerOptions }) as unknown as WebhookApp);
  app.server.headersTimeout = limits.headersTimeoutMs;
  if (limits.maxConnections > 0) app.server.maxConnections = limits.maxConnections;

  // JSON only: anything else is 415 rather than a guess at what the caller meant.
  app.removeContentTypeParser('text/plain');

  app.setErrorHandler((error: FastifyError, request, reply) => {
    const known =
      error instanceof ReviewError ? { status: error.statusCode, message: error.message, reason: 'invalid_review' as const } : bodyError(error);
    if (known) {
      metrics.refused(known.status, known.reason);
      request.log.warn({ status: known.status, reason: known.message }, 'rejected admission request');
      return reply.code(known.status).type('text/plain; charset=utf-8').send(`${oneLine(known.message)}\n`);
    }
    request.log.error({ err: error }, 'failed to answer admission request');
    return reply.code(500).type('text/plain; charset=utf-8').send('internal error while answering the request\n');
  });

  app.setNotFoundHandler((request, reply) => {
    metrics.refused(404, 'not_found');
    return reply.code(404).type('text/plain; charset=utf-8').send(`no route for ${request.method} ${request.url}: POST AdmissionReviews to /\n`);
  });

  app.post('/', async (request, reply) => {
    const { apiVersion, request: admission } = parseReview(request.body);
    // At info the line that says what was done carries the review's identity too: one line per admission, not two.
    const debug = logger.isLevelEnabled('debug');
    if (debug) {
      request.log.debug(
        { uid: admission.uid, operation: admission.operation, dryRun: admission.dryRun === true },
        `received admission review request "${admission.uid}" for ${admission.kind.kind.toLowerCase()}/${admission.namespace ?? ''}/${admission.name || objectName(admission.object) || '(generated name)'}`,
      );
    }
    const started = performance.now();
    const handled = await handleAdmission(admission, sources);
    const body = serializeReview(apiVersion, handled.response);
    metrics.record(handled, admission.namespace ?? '', (performance.now() - started) / 1e3);
    logAdmission(request.log, debug, admission, handled);
    options.onAdmitted?.(handled, admission);
    return reply.code(200).type('application/json; charset=utf-8').send(body);
  });

  return app;
}

/**
 * One line per admission, in Linkerd's words, with the review's identity and the structured details beside them. A pod
 * that nobody asked to mesh (the most common review in a cluster where few namespaces are meshed) gets its line at
 * debug only: at info it would be most of the log and a tenth of the server's work, and the responses counter carries
 * it (skip_reason="injection_enable_annotation_absent", by namespace and owner kind).
 */
function logAdmission(log: Logger, debug: boolean, request: AdmissionRequest, handled: HandledAdmission): void {
  if (handled.kind === 'failed') {
    log.error(
      { uid: request.uid, operation: request.operation, dryRun: request.dryRun === true, code: handled.failure.code, allowed: handled.response.allowed },
      `failed to run webhook handler for ${resourceName(request, handled)}. Reason: ${handled.failure.message}`,
    );
    return;
  }
  if (handled.kind === 'ignored') {
    log.info({ uid: request.uid, operation: request.operation, dryRun: request.dryRun === true }, `ignored ${request.operation} of ${resourceName(request, handled)}`);
    return;
  }
  const result = handled.result;
  const unasked = result.outcome === 'skipped' && result.reasons.every((r) => r.code === 'injection_enable_annotation_absent');
  if (unasked && !debug) return;
  // Written out, not spread from a shared part: spreading cost more than the rest of the line.
  const details: Record<string, unknown> = {
    uid: request.uid,
    operation: request.operation,
    dryRun: request.dryRun === true,
    outcome: result.outcome,
    reasons: result.reasons.map((r) => r.code),
  };
  if (result.proxy) details['placement'] = result.proxy.placement;
  if (result.warnings.length > 0) details['warnings'] = result.warnings;
  const resource = resourceName(request, handled);
  const reasons = result.reasons.map((r) => r.text).join(', ');
  if (result.outcome === 'injected') log.info(details, `injection patch generated for: ${resource}`);
  else if (result.outcome === 'annotated') log.info(details, `annotation patch generated for: ${resource} (skipped: ${reasons})`);
  else if (unasked) log.debug(details, `skipped ${resource}: ${reasons}`);
  else log.info(details, `skipped ${resource}: ${reasons}`);
}
