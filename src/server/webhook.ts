/** The admission webhook: POST / takes an AdmissionReview and answers with the engine's decision. */
import Fastify, { type FastifyError, type FastifyInstance, type FastifyReply, type FastifyRequest, type HookHandlerDoneFunction } from 'fastify';
import type { Server as HttpServer } from 'node:http';
import type { Server as HttpsServer } from 'node:https';
import type { Duplex } from 'node:stream';
import type { Logger } from 'pino';
import secureJson from 'secure-json-parse';
import {
  answerBody,
  boundedWarnings,
  handleAdmission,
  parseReview,
  ReviewError,
  shadowVerdict,
  type AdmissionRequest,
  type AdmissionSources,
  type HandledAdmission,
  type ParsedReview,
  type ShadowInputs,
} from '../admission/index.js';
import { lineAt, objectName, oneLine } from '../engine/index.js';
import { BYTES_PER_VALUE, InFlightBytes, readBody, type BodyCharge, type BodyRefusal } from './body.js';
import { ConnectionTable } from './connections.js';
import { fastifyOptions, nodeServerOptions, TEXT, type ConnectionLimits } from './http.js';
import type { InjectorMetrics, RefusalReason } from './metrics.js';

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
export interface ServerLimits extends ConnectionLimits {
  /** From TCP accept to a finished TLS handshake (Node's default is 120 s). */
  handshakeTimeoutMs: number;
  /** Requests served on one connection before it is closed (`Connection: close`); 0: unlimited. */
  maxRequestsPerSocket: number;
  /** A body larger than this is refused (413), without being read when its Content-Length says so. */
  maxBodyBytes: number;
  /**
   * A body that starts more JSON values than this (each key, value, object and list, counted by the delimiters before
   * them) is refused (413) as they arrive: what one review holds parsed, and the time it takes to parse and answer, grow
   * with them.
   */
  maxJsonValues: number;
  /**
   * What the reviews being read or answered may hold together, counted as their bytes arrive: each byte, and
   * BYTES_PER_VALUE for each JSON value it will parse into. One client's reviews may hold half of it (429 beyond), all
   * together all of it (503 beyond), so that neither the largest bodies nor one client can take the memory the process
   * has.
   */
  maxInFlightBytes: number;
}

export const DEFAULT_LIMITS: ServerLimits = {
  handshakeTimeoutMs: 5_000,
  headersTimeoutMs: 5_000,
  requestTimeoutMs: 8_000,
  keepAliveTimeoutMs: 30_000,
  // Above the longest a review may wait for the API (a namespace read of 2 s, owner reads of 1.5 s each).
  stallTimeoutMs: 10_000,
  maxConnections: 1_000,
  // Half the connections; beyond the table's size a new connection closes one that answers nothing (see ConnectionTable).
  maxConnectionsPerClient: 500,
  maxRequestsPerSocket: 0,
  maxHeaderBytes: 16 * 1024,
  // kube-apiserver refuses request bodies over 3 MiB; its review adds the envelope and the managedFields it fills in.
  maxBodyBytes: 4 * 1024 * 1024,
  // A few times the largest pods seen (thousands of environment variables, with the managedFields the API server adds),
  // and little enough that the largest review is parsed and answered in about a tenth of a second.
  maxJsonValues: 100_000,
  // An eighth of the 128 MiB old space the image gives, counted as the parsed reviews hold it (see InFlightBytes).
  maxInFlightBytes: 16 * 1024 * 1024,
};

/** The share of maxInFlightBytes one client's reviews may hold. */
export const CLIENT_SHARE = 0.5;

/**
 * TLS 1.3's suites and, for TLS 1.2, ECDHE key exchange with AEAD ciphers only (no CBC or SHA-1 suites): what
 * kube-apiserver's Go client offers first, and what the Mozilla intermediate profile allows.
 */
export const TLS_CIPHERS = [
  'TLS_AES_128_GCM_SHA256',
  'TLS_AES_256_GCM_SHA384',
  'TLS_CHACHA20_POLY1305_SHA256',
  'ECDHE-ECDSA-AES128-GCM-SHA256',
  'ECDHE-RSA-AES128-GCM-SHA256',
  'ECDHE-ECDSA-AES256-GCM-SHA384',
  'ECDHE-RSA-AES256-GCM-SHA384',
  'ECDHE-ECDSA-CHACHA20-POLY1305',
  'ECDHE-RSA-CHACHA20-POLY1305',
].join(':');

/** Most characters of a name from a review that a log line or an answer quotes: an object name is at most 253. */
const MAX_NAME_SHOWN = 253;

/** A name from a review as a log line shows it: clipped, and with control characters escaped so that it stays one line. */
function shownName(name: string): string {
  const clipped = name.length > MAX_NAME_SHOWN ? `${name.slice(0, MAX_NAME_SHOWN)}...` : name;
  return clipped.replace(/[\u0000-\u001f\u007f-\u009f\u2028\u2029]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

export function resourceName(request: AdmissionRequest, handled: HandledAdmission): string {
  const result = handled.kind === 'evaluated' ? handled.result : undefined;
  const kind = result?.kind ?? request.kind.kind.toLowerCase();
  const name = result?.name || request.name || '(generated name)';
  return shownName(`${kind}/${request.namespace ?? ''}/${name}`);
}

/** The webhook over HTTPS (plain HTTP only for in-process tests, which go through `inject`), with its connections. */
export type WebhookApp = FastifyInstance<HttpsServer> & { readonly connections: ConnectionTable };

/** A request answered without evaluation: its status, why in words, the reason it is counted under. */
class Refusal extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly reason: RefusalReason,
    /**
     * Refused while its body was still arriving: the rest is read and dropped, and the connection closed once it has
     * all arrived, so that the client reads the refusal rather than a reset. Any other refusal closes the connection
     * at once: the rest of the request is not worth reading.
     */
    readonly midBody = false,
  ) {
    super(message);
  }
}

/** A `__proto__` or `constructor.prototype` key in a body is dropped, never obeyed. */
const PARSE_OPTIONS = { protoAction: 'remove', constructorAction: 'remove' } as const;

/**
 * JSON.parse keeps a `__proto__` key as an ordinary property, which a later assignment could turn into a prototype:
 * such keys are removed. Only a text that contains either word, a \u escape (which could spell one) or a byte-order
 * mark needs secure-json-parse's scan; the others, nearly every review, are parsed directly.
 */
function parseJson(text: string): unknown {
  if (text.charCodeAt(0) !== 0xfeff && !text.includes('\\u') && !text.includes('__proto__') && !text.includes('constructor')) return JSON.parse(text);
  return secureJson.parse(text, undefined, PARSE_OPTIONS);
}

/**
 * Why a body is not JSON, and where, from V8's message: its description and the line and column of its position, never
 * the text V8 quotes from around the error (the body's content). A message without a position says only what it can.
 */
export function jsonSyntaxReason(err: unknown, text: string): string {
  const message = err instanceof Error ? err.message : '';
  const at = /^(.*?) (in|after) JSON at position (\d+)/.exec(message);
  if (at) {
    const position = Math.min(Number(at[3]), text.length);
    const lineStart = text.lastIndexOf('\n', position - 1) + 1;
    const what = (at[1] ?? '').replace(/^./, (c) => c.toLowerCase()) + (at[2] === 'after' ? ' after the JSON' : '');
    return `the body is not valid JSON: ${what} at line ${lineAt(text, lineStart)}, column ${position - lineStart + 1}`;
  }
  if (message.startsWith('Unexpected end of JSON input')) return 'the body is not valid JSON: it ends before its last value does';
  if (message.startsWith('Unexpected token')) return 'the body is not valid JSON: an unexpected character';
  return 'the body is not valid JSON';
}

/** A review's body: not encoded, JSON, an AdmissionReview; a Refusal saying what is wrong otherwise. */
function reviewOf(text: unknown, contentEncoding: string | undefined): ParsedReview {
  // kube-apiserver sends reviews uncompressed; an encoded body would otherwise be read as text and called invalid JSON.
  if (contentEncoding !== undefined && contentEncoding.trim().toLowerCase() !== 'identity') {
    throw new Refusal(415, `the body must not be encoded (Content-Encoding: ${oneLine(contentEncoding).slice(0, 64)})`, 'unsupported_media_type');
  }
  // A request without a body (or whose Content-Type and Content-Length were among headers past node:http's count) has none.
  if (typeof text !== 'string' || text.length === 0) throw new Refusal(400, 'the body is empty: POST an AdmissionReview as application/json', 'empty_body');
  let body: unknown;
  try {
    body = parseJson(text);
  } catch (err) {
    throw new Refusal(400, jsonSyntaxReason(err, text), 'invalid_json');
  }
  try {
    return parseReview(body);
  } catch (err) {
    if (err instanceof ReviewError) throw new Refusal(err.statusCode, err.message, 'invalid_review');
    throw err;
  }
}

/** What fastify refuses before the route runs, as refusals. */
function refusalOf(error: FastifyError | Refusal, maxBodyBytes: number): Refusal | undefined {
  if (error instanceof Refusal) return error;
  switch (error.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new Refusal(413, `the body is larger than ${maxBodyBytes} bytes`, 'body_too_large');
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
    case 'FST_ERR_CTP_EMPTY_TYPE':
      return new Refusal(415, 'the body must be application/json', 'unsupported_media_type');
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return new Refusal(400, 'the Content-Length does not match the body', 'malformed_http');
    default:
      return undefined;
  }
}

/** A request whose client went away before its body ended: there is no one to answer, and nothing to count. */
class Gone extends Error {}

/** A body that met a bound while it arrived, as the refusal its client gets. */
function bodyRefusal(refusal: BodyRefusal, limits: ServerLimits, budget: InFlightBytes): Refusal | Gone {
  switch (refusal.bound) {
    case 'gone':
      return new Gone('the client went away before its body ended');
    case 'body':
      return new Refusal(413, `the body is larger than ${limits.maxBodyBytes} bytes`, 'body_too_large', true);
    case 'values':
      return new Refusal(
        413,
        `the body holds more than ${limits.maxJsonValues} JSON values (keys, values, objects and lists): its first ${refusal.bytes} bytes start ${refusal.values}`,
        'too_many_values',
        true,
      );
    case 'weight':
      return new Refusal(
        413,
        `the body would hold more than one client's reviews may, ${budget.perClient} bytes, once parsed: its first ${refusal.bytes} bytes start ` +
          `${refusal.values} JSON values, each counted ${BYTES_PER_VALUE} bytes`,
        'too_many_values',
        true,
      );
    case 'client':
      return new Refusal(
        429,
        `this client's reviews being read or answered hold ${refusal.held} bytes, and one client's may hold at most ${budget.perClient}: send the review again`,
        'client_bytes_in_flight',
        true,
      );
    case 'all':
      return new Refusal(
        503,
        `the injector's reviews being read or answered hold ${refusal.held} bytes, and it takes at most ${budget.limit} at once: send the review again`,
        'too_many_bytes_in_flight',
        true,
      );
  }
}

const JSON_TYPE = 'application/json; charset=utf-8';

export function buildWebhookApp(options: WebhookOptions): WebhookApp {
  const { logger, metrics, sources } = options;
  const limits = { ...DEFAULT_LIMITS, ...options.limits };
  const node = nodeServerOptions(limits);
  /** Every refusal is counted and logged, once, in a line of bounded size. */
  const refuse = ({ status, reason, message }: Refusal): void => {
    metrics.refused(status, reason);
    logger.warn({ status, reason: message }, 'rejected admission request');
  };
  const notFound = (request: FastifyRequest, reply: FastifyReply): FastifyReply => {
    const refusal = new Refusal(404, `no route for ${request.method.slice(0, 16)} ${oneLine(request.raw.url ?? '').slice(0, 256)}: POST AdmissionReviews to /`, 'not_found');
    refuse(refusal);
    return sendText(reply, 404, `${refusal.message}\n`, true);
  };
  const common = {
    ...fastifyOptions(limits, (code) => {
      const refusal = clientErrorRefusal(code, limits.maxHeaderBytes);
      if (refusal) refuse(refusal);
    }),
    // A path that cannot be decoded (`/%zz`) names no route either; fastify would answer it 400 itself, uncounted and unlogged.
    frameworkErrors: (_error: FastifyError, request: FastifyRequest, reply: FastifyReply) => notFound(request, reply),
    bodyLimit: limits.maxBodyBytes,
    maxRequestsPerSocket: limits.maxRequestsPerSocket,
    // Once closing, a request on a connection that is still open gets 503 and `Connection: close`: it goes elsewhere.
    return503OnClosing: true,
  };
  const fastify: FastifyInstance<HttpsServer> = options.tls
    ? Fastify({ ...common, https: { ...node, handshakeTimeout: limits.handshakeTimeoutMs, key: options.tls.key, cert: options.tls.cert, minVersion: options.tls.minVersion, ciphers: TLS_CIPHERS } })
    : // Plain HTTP serves only in-process tests, which use nothing of the TLS server.
      (Fastify({ ...common, http: node }) as unknown as FastifyInstance<HttpsServer>);
  const app: WebhookApp = Object.assign(fastify, { connections: new ConnectionTable(fastify.server, limits, limits.requestTimeoutMs) });
  refuseConnect(app.server as unknown as HttpServer, refuse);
  // node:https parses a connection's bytes straight from the TLS layer; when a client pipelines requests faster than it
  // reads the answers, pausing that parser fails (HPE_PAUSED) and the connection is cut with answers still queued (Node
  // 20 to 26). A 'data' listener makes node:http parse from the socket's stream instead, which pauses cleanly.
  if (options.tls) app.server.on('secureConnection', (socket: Duplex) => socket.on('data', ignoreData));

  /** What the reviews being read or answered hold, and what each request holds of it (given back when it is done). */
  const inFlight = new InFlightBytes(limits.maxInFlightBytes, Math.floor(limits.maxInFlightBytes * CLIENT_SHARE));
  const charges = new WeakMap<FastifyRequest, BodyCharge>();

  // One parser: JSON bodies, read as text as they arrive (the route parses them); any other type is a 415.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/json', (request, payload, done) => {
    const charge = charges.get(request);
    if (!charge) return done(new Error('a body arrived before its request was counted'), undefined);
    void readBody(payload, { maxBytes: limits.maxBodyBytes, maxValues: limits.maxJsonValues }, inFlight, charge).then((body) =>
      typeof body === 'string' ? done(null, body) : done(bodyRefusal(body, limits, inFlight), undefined),
    );
    return undefined;
  });

  app.setErrorHandler((error: FastifyError | Refusal | Gone, request, reply) => {
    if (error instanceof Gone) return reply.hijack();
    const refusal = refusalOf(error, limits.maxBodyBytes);
    if (refusal) {
      refuse(refusal);
      if (refusal.midBody) closeWhenBodyEnds(request, reply);
      return sendText(reply, refusal.status, `${oneLine(refusal.message)}\n`, !refusal.midBody);
    }
    // A stack overflow or any other internal error stays in the log: the API server is told only that it happened.
    metrics.refused(500, 'internal_error');
    logger.error({ err: error }, 'failed to answer admission request');
    return sendText(reply, 500, 'internal error while answering the request\n', true);
  });

  app.setNotFoundHandler((request, reply) => notFound(request, reply));

  /**
   * Every request is charged what its body holds as it arrives (see readBody), and gives it back when its answer is
   * done or its connection gone. Bodies declared larger than the largest taken are refused before a byte is read.
   */
  const countBody = (request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction): void => {
    const declared = Number(request.headers['content-length']);
    if (declared > limits.maxBodyBytes) {
      done(new Refusal(413, `the body is larger than ${limits.maxBodyBytes} bytes`, 'body_too_large'));
      return;
    }
    const charge: BodyCharge = { client: request.socket.remoteAddress ?? '', bytes: 0 };
    charges.set(request, charge);
    reply.raw.once('close', () => inFlight.give(charge.client, charge.bytes));
    done();
  };

  /** Writes the answer to an admission the handler has dealt with, and says what was done. */
  const send = (reply: FastifyReply, { apiVersion, request: admission }: ParsedReview, handled: HandledAdmission, started: number, debug: boolean, bodyBytes: number): FastifyReply => {
    const body = answerBody(apiVersion, admission.uid, handled);
    metrics.record(handled, admission.namespace ?? '', (performance.now() - started) / 1e3);
    logAdmission(logger, debug, admission, handled);
    options.onAdmitted?.(handled, admission);
    const sent = reply.code(200).header('content-type', JSON_TYPE).send(body);
    // Once the answer is on its way: the verdict is a report beside it, and must not delay or change it.
    if (handled.kind === 'evaluated' && handled.shadow) {
      reportShadow(logger, metrics, admission, handled, handled.shadow, bodyBytes);
    }
    return sent;
  };

  app.post('/', { onRequest: countBody }, async (request, reply) => {
    const started = performance.now();
    const review = reviewOf(request.body, request.headers['content-encoding']);
    const admission = review.request;
    const debug = logger.isLevelEnabled('debug');
    // At info the line that says what was done carries the review's identity too: one line per admission, not two.
    if (debug) {
      logger.debug(
        { uid: admission.uid, operation: admission.operation, dryRun: admission.dryRun === true },
        `received admission review request "${shownName(admission.uid)}" for ${shownName(`${admission.kind.kind.toLowerCase()}/${admission.namespace ?? ''}/${admission.name || objectName(admission.object) || '(generated name)'}`)}`,
      );
    }
    const bodyBytes = (request.body as string).length;
    const handled = await handleAdmission(admission, sources, { client: request.socket.remoteAddress ?? '', bodyBytes });
    return send(reply, review, handled, started, debug, bodyBytes);
  });

  return app;
}

/**
 * A short text answer; `close` asks the client not to reuse the connection. Every refusal closes it: a client that
 * sends what the webhook refuses gets no connection to hold.
 */
function sendText(reply: FastifyReply, status: number, text: string, close: boolean): FastifyReply {
  if (close) reply.header('connection', 'close');
  return reply.code(status).header('content-type', TEXT).send(text);
}

/** Ends a request's connection once its answer is sent and the rest of its body (dropped by readBody) has arrived. */
function closeWhenBodyEnds(request: FastifyRequest, reply: FastifyReply): void {
  let arrived = request.raw.complete;
  let sent = false;
  const end = (): void => {
    if (arrived && sent) request.socket.end();
  };
  if (!arrived) {
    request.raw.once('end', () => {
      arrived = true;
      end();
    });
  }
  reply.raw.once('finish', () => {
    sent = true;
    end();
  });
}

/** node:http reads the data itself; the listener only moves its parsing onto the stream (see buildWebhookApp). */
function ignoreData(): void {}

/** What node:http refused before a request existed, as a refusal; undefined for a client that went away. */
function clientErrorRefusal(code: string | undefined, maxHeaderBytes: number): Refusal | undefined {
  if (code === 'ERR_HTTP_REQUEST_TIMEOUT') return new Refusal(408, 'the request did not arrive within the request timeout', 'request_timeout');
  if (code === 'HPE_HEADER_OVERFLOW') return new Refusal(431, `the request line and headers are larger than ${maxHeaderBytes} bytes`, 'headers_too_large');
  if (code === 'HPE_CHUNK_EXTENSIONS_OVERFLOW') return new Refusal(413, 'the chunk extensions of the body are too large', 'body_too_large');
  if (code === 'ECONNRESET') return undefined;
  return new Refusal(400, `the request is not HTTP/1.1 the injector can read (${oneLine(code ?? 'unknown').slice(0, 64)})`, 'malformed_http');
}

/** node:http hands a CONNECT to this event alone, and without a listener drops the connection unanswered. */
function refuseConnect(server: HttpServer, refuse: (refusal: Refusal) => void): void {
  server.on('connect', (request, socket) => {
    const text = `no route for CONNECT ${oneLine(request.url ?? '').slice(0, 256)}: POST AdmissionReviews to /\n`;
    refuse(new Refusal(404, text.trimEnd(), 'not_found'));
    socket.end(`HTTP/1.1 404 Not Found\r\nConnection: close\r\nContent-Type: ${TEXT}\r\n\r\n${text}`, () => socket.destroy());
  });
}

/**
 * The shadow verdict on a pod that arrived with a proxy: counted, and when this injector would have made another pod,
 * one line naming the pod's owner and the difference to look at first. Dry runs count: theirs is the same pod.
 */
function reportShadow(
  log: Logger,
  metrics: InjectorMetrics,
  request: AdmissionRequest,
  handled: HandledAdmission,
  inputs: ShadowInputs,
  reviewBytes: number,
): void {
  const shadow = shadowVerdict(request.object, inputs, reviewBytes);
  metrics.shadowVerdicts.inc({ verdict: shadow.verdict });
  if (shadow.verdict === 'same') return;
  const resource = resourceName(request, handled);
  const review = { uid: request.uid, dryRun: request.dryRun === true };
  if (shadow.verdict === 'unreadable') {
    log.info({ ...review, reason: shadow.reason }, `no shadow verdict for ${resource}: ${shownName(shadow.reason)}`);
    return;
  }
  const { first, count } = shadow;
  const owner = inputs.owner ? shownName(`${inputs.owner.kind}/${inputs.owner.name}`) : resource;
  const details: Record<string, unknown> = { ...review, owner, path: first.path, kind: first.kind, differences: count };
  if (first.documented) details['documented'] = first.documented;
  if (first.expected !== undefined) details['expected'] = first.expected;
  if (first.actual !== undefined) details['actual'] = first.actual;
  const where = `${shownName(first.path)} (${first.kind})`;
  log.warn(details, `shadow verdict for ${resource} of ${owner}: differs from this injector's answer at ${where}`);
}

/**
 * One line per admission, in Linkerd's words, with the review's identity and the structured details beside them. A pod
 * that nobody asked to mesh (the most common review in a cluster where few namespaces are meshed) gets its line at
 * debug only: at info it would be most of the log, and the responses counter carries it
 * (skip_reason="injection_enable_annotation_absent", by namespace and owner kind).
 */
function logAdmission(log: Logger, debug: boolean, request: AdmissionRequest, handled: HandledAdmission): void {
  if (handled.kind === 'failed') {
    log.error(
      { uid: request.uid, operation: request.operation, dryRun: request.dryRun === true, code: handled.failure.code, allowed: handled.response.allowed },
      `failed to run webhook handler for ${resourceName(request, handled)}. Reason: ${handled.failure.detail ?? handled.failure.message}`,
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
  const details: Record<string, unknown> = {
    uid: request.uid,
    operation: request.operation,
    dryRun: request.dryRun === true,
    outcome: result.outcome,
    reasons: result.reasons.map((r) => r.code),
  };
  if (result.proxy) details['placement'] = result.proxy.placement;
  // What the API server or the pod's start may refuse: a controller drops the answer's warnings, the log keeps them.
  if (result.risks.length > 0) details['risks'] = result.risks.map((r) => r.code);
  // Clipped as the answer's warnings are: an invalid value is quoted, never more of it than kubectl shows.
  if (result.warnings.length > 0) details['warnings'] = boundedWarnings(result.warnings) ?? [];
  const resource = resourceName(request, handled);
  const reasons = result.reasons.map((r) => r.text).join(', ');
  if (unasked) log.debug(details, `skipped ${resource}: ${reasons}`);
  else if (result.outcome === 'injected') log.info(details, `injection patch generated for: ${resource}`);
  else if (result.outcome === 'annotated') log.info(details, `annotation patch generated for: ${resource} (skipped: ${reasons})`);
  else log.info(details, `skipped ${resource}: ${reasons}`);
}
