/** The admission webhook: POST / takes an AdmissionReview and answers with the engine's decision. */
import { createServer as createHttpServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { createServer as createHttpsServer, type Server as HttpsServer } from 'node:https';
import type { Logger } from 'pino';
import secureJson from 'secure-json-parse';
import {
  answerPieces,
  boundedWarnings,
  handleAdmission,
  parseReview,
  ReviewError,
  type AdmissionApiVersion,
  type AdmissionRequest,
  type AdmissionSources,
  type HandledAdmission,
} from '../admission/index.js';
import { lineAt, objectName } from '../engine/index.js';
import { oneLine } from '../tls/index.js';
import { answerClientErrors, applyLimits, closeServer, listen, pathOf, sendText, serverOptionsOf, type ConnectionLimits, type HttpApp, type RequestHandler } from './http.js';
import { infoLineOf, type InfoLine, type LineValue } from './logger.js';
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
export interface ServerLimits extends ConnectionLimits {
  /** From TCP accept to a finished TLS handshake (Node's default is 120 s). */
  handshakeTimeoutMs: number;
  /** Requests served on one connection before it is closed (`Connection: close`); 0: unlimited. */
  maxRequestsPerSocket: number;
}

export const DEFAULT_LIMITS: ServerLimits = {
  handshakeTimeoutMs: 5_000,
  headersTimeoutMs: 5_000,
  requestTimeoutMs: 8_000,
  keepAliveTimeoutMs: 30_000,
  // Above the longest a review may wait for the API (a namespace read of 2 s, owner reads of 1.5 s each).
  stallTimeoutMs: 10_000,
  maxConnections: 1_000,
  maxRequestsPerSocket: 0,
  maxHeaderBytes: 16 * 1024,
};

export function resourceName(request: AdmissionRequest, handled: HandledAdmission): string {
  const result = handled.kind === 'evaluated' ? handled.result : undefined;
  const kind = result?.kind ?? request.kind.kind.toLowerCase();
  const name = result?.name || request.name || '(generated name)';
  return `${kind}/${request.namespace ?? ''}/${name}`;
}

/** The webhook over HTTPS (plain HTTP only for in-process tests), with the handler alone for those tests. */
export type WebhookApp = HttpApp<HttpsServer>;

/** JSON bodies only: anything else is 415 rather than a guess at what the caller meant. */
function isJson(contentType: string | undefined): boolean {
  if (contentType === undefined) return false;
  const semicolon = contentType.indexOf(';');
  return (semicolon === -1 ? contentType : contentType.slice(0, semicolon)).trim().toLowerCase() === 'application/json';
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

const JSON_TYPE = 'application/json; charset=utf-8';

/** A review's body, read and waiting for the rest of its turn's reviews. */
interface Arrival {
  response: ServerResponse;
  text: string;
  /** When its body was read (performance.now()): its answer's duration is counted from here. */
  read: number;
}

/** A review that parsed, waiting to be handled. */
interface ParsedArrival extends Omit<Arrival, 'text'> {
  apiVersion: AdmissionApiVersion;
  admission: AdmissionRequest;
}

/** Body text answered in one group, in characters (see answerArrived): dozens of ordinary pods, or five with 40 containers. */
const GROUP_BYTES = 64 * 1024;

export function buildWebhookApp(options: WebhookOptions): WebhookApp {
  const { logger, metrics, sources } = options;
  const infoLine = infoLineOf(logger);
  const limits = { ...DEFAULT_LIMITS, ...options.limits };
  let closing = false;

  /** A request answered without evaluation: counted by reason, logged, and told why in one line. */
  const refuse = (response: ServerResponse, status: number, message: string, reason: RefusalReason, close = false): void => {
    metrics.refused(status, reason);
    logger.warn({ status, reason: message }, 'rejected admission request');
    sendText(response, status, `${oneLine(message)}\n`, close);
  };

  /** Writes the answer to an admission the handler has dealt with, and says what was done. */
  const send = (response: ServerResponse, apiVersion: AdmissionApiVersion, admission: AdmissionRequest, handled: HandledAdmission, started: number, debug: boolean): void => {
    // node:http corks the socket at the first write until the next tick, so the pieces still leave in one TLS write.
    const { pieces, bytes } = answerPieces(apiVersion, admission.uid, handled);
    metrics.record(handled, admission.namespace ?? '', (performance.now() - started) / 1e3);
    logAdmission(logger, infoLine, debug, admission, handled);
    options.onAdmitted?.(handled, admission);
    response.writeHead(200, { 'content-type': JSON_TYPE, 'content-length': bytes });
    const last = pieces.length - 1;
    for (let i = 0; i < last; i++) response.write(pieces[i]);
    response.end(pieces[last]);
  };

  /** An answer that could not be written: logged, and a 500 when nothing was sent yet. */
  const failedToAnswer = (response: ServerResponse, err: unknown): void => {
    logger.error({ err }, 'failed to answer admission request');
    if (!response.headersSent) sendText(response, 500, 'internal error while answering the request\n');
    else response.destroy();
  };

  /** A review's text, parsed and checked; undefined when it was refused instead (and the refusal sent). */
  const parse = ({ response, text, read }: Arrival, debug: boolean): ParsedArrival | undefined => {
    if (text.length === 0) return void refuse(response, 400, 'the body is empty', 'empty_body');
    let body: unknown;
    try {
      body = parseJson(text);
    } catch (err) {
      return void refuse(response, 400, jsonSyntaxReason(err, text), 'invalid_json');
    }
    let parsed;
    try {
      parsed = parseReview(body);
    } catch (err) {
      if (err instanceof ReviewError) return void refuse(response, err.statusCode, err.message, 'invalid_review');
      throw err;
    }
    const { apiVersion, request: admission } = parsed;
    // At info the line that says what was done carries the review's identity too: one line per admission, not two.
    if (debug) {
      logger.debug(
        { uid: admission.uid, operation: admission.operation, dryRun: admission.dryRun === true },
        `received admission review request "${admission.uid}" for ${admission.kind.kind.toLowerCase()}/${admission.namespace ?? ''}/${admission.name || objectName(admission.object) || '(generated name)'}`,
      );
    }
    return { response, apiVersion, admission, read };
  };

  /**
   * Answers a group of reviews: every one parsed, then every one handled, then every answer sent (each step of one
   * review on its own, so that one that fails is answered with its error and the others as usual). Sends the answer at
   * once when the handler answers at once, after it otherwise.
   */
  const answerGroup = (group: Arrival[]): void => {
    const debug = logger.isLevelEnabled('debug');
    const parsed: ParsedArrival[] = [];
    for (const arrival of group) {
      try {
        const one = parse(arrival, debug);
        if (one !== undefined) parsed.push(one);
      } catch (err) {
        failedToAnswer(arrival.response, err);
      }
    }
    const handled: Array<{ review: ParsedArrival; answer: HandledAdmission | Promise<HandledAdmission> }> = [];
    for (const review of parsed) {
      try {
        handled.push({ review, answer: handleAdmission(review.admission, sources) });
      } catch (err) {
        failedToAnswer(review.response, err);
      }
    }
    for (const { review, answer } of handled) {
      const { response, apiVersion, admission, read } = review;
      if (answer instanceof Promise) {
        answer.then((done) => send(response, apiVersion, admission, done, read, debug)).catch((err: unknown) => failedToAnswer(response, err));
        continue;
      }
      try {
        send(response, apiVersion, admission, answer, read, debug);
      } catch (err) {
        failedToAnswer(response, err);
      }
    }
  };

  /**
   * Reviews whose bodies were read in this turn of the event loop, answered together once the turn's reading is done.
   * Under load many connections have a review ready in one turn. Answered one at a time, each review's parsing, engine
   * run and TLS write came right after the previous review's, and each step found the processor's caches holding the
   * other steps' code and data: an engine run cost about four times what it costs in a loop, the patch's serialisation
   * nearly three times. Taken step by step over a group, the steps follow their own kind; for pods that differ
   * (`distinct` in bench:server, Node 24) an admission took 120 µs of CPU instead of 154. A group holds at most
   * GROUP_BYTES of body text (and at least one review), so that the parsed reviews it holds at once stay a small part of
   * the young generation. A lone review waits for one setImmediate.
   */
  let arrived: Arrival[] = [];
  const answerArrived = (): void => {
    const reviews = arrived;
    arrived = [];
    let group: Arrival[] = [];
    let bytes = 0;
    for (const review of reviews) {
      if (group.length > 0 && bytes + review.text.length > GROUP_BYTES) {
        answerGroup(group);
        group = [];
        bytes = 0;
      }
      group.push(review);
      bytes += review.text.length;
    }
    answerGroup(group);
  };
  const arrive = (response: ServerResponse, text: string): void => {
    arrived.push({ response, text, read: performance.now() });
    if (arrived.length === 1) setImmediate(answerArrived);
  };

  /** Each connection's latest response, to tell a client that pipelines from one that is merely quick (pipelines). */
  const latest = new WeakMap<Duplex, ServerResponse>();
  const handle: RequestHandler = (request, response) => {
    const socket = request.socket;
    if (response.socket === null && pipelines(socket, latest.get(socket))) parseFromStream(socket);
    latest.set(socket, response);
    // Once closing, a request on a connection that is still open is told to go elsewhere.
    if (closing) return sendText(response, 503, 'the injector is shutting down: send the review again\n', true);
    if (request.method !== 'POST' || pathOf(request) !== '/') {
      metrics.refused(404, 'not_found');
      return sendText(response, 404, `no route for ${request.method ?? ''} ${oneLine(request.url ?? '')}: POST AdmissionReviews to /\n`);
    }
    if (!isJson(request.headers['content-type'])) return refuse(response, 415, 'the body must be application/json', 'unsupported_media_type');
    // kube-apiserver sends reviews uncompressed; an encoded body would otherwise be read as text and called invalid JSON.
    const encoding = request.headers['content-encoding'];
    if (encoding !== undefined && encoding.trim().toLowerCase() !== 'identity') {
      return refuse(response, 415, `the body must not be encoded (Content-Encoding: ${oneLine(encoding).slice(0, 64)})`, 'unsupported_media_type', true);
    }
    const tooLarge = `the body is larger than ${MAX_BODY_BYTES} bytes`;
    // The client is told at once, and the connection is not kept: the rest of its body is not worth reading.
    if (Number(request.headers['content-length'] ?? 0) > MAX_BODY_BYTES) return refuse(response, 413, tooLarge, 'body_too_large', true);
    readBody(request, MAX_BODY_BYTES, (text) => {
      if (text === undefined) return refuse(response, 413, tooLarge, 'body_too_large', true);
      arrive(response, text);
    });
  };

  const serverOptions = serverOptionsOf(limits);
  const server: HttpsServer = options.tls
    ? createHttpsServer({ ...serverOptions, handshakeTimeout: limits.handshakeTimeoutMs, key: options.tls.key, cert: options.tls.cert, minVersion: options.tls.minVersion }, handle)
    : // Plain HTTP serves only in-process tests, which use nothing of the TLS server.
      (createHttpServer(serverOptions, handle) as unknown as HttpsServer);
  applyLimits(server, limits);
  server.maxRequestsPerSocket = limits.maxRequestsPerSocket;
  answerClientErrors(server, (code) => {
    if (code === 'ERR_HTTP_REQUEST_TIMEOUT') metrics.refused(408, 'request_timeout');
    else if (code === 'HPE_HEADER_OVERFLOW') metrics.refused(431, 'headers_too_large');
    else if (code === 'HPE_CHUNK_EXTENSIONS_OVERFLOW') metrics.refused(413, 'body_too_large');
    // A client that went away is no refusal; anything else node:http could not parse got a 400.
    else if (code !== 'ECONNRESET') metrics.refused(400, 'malformed_http');
  });
  // node:http hands a CONNECT to this event alone, and without a listener drops the connection unanswered.
  server.on('connect', (request: IncomingMessage, socket: Duplex) => {
    metrics.refused(404, 'not_found');
    const text = `no route for CONNECT ${oneLine(request.url ?? '')}: POST AdmissionReviews to /\n`;
    socket.end(`HTTP/1.1 404 Not Found\r\nConnection: close\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n${text}`, () => socket.destroy());
  });

  return {
    server,
    handle,
    listen: (host, port) => listen(server, host, port),
    close: () => {
      closing = true;
      return closeServer(server);
    },
  };
}

/**
 * Whether answers are backing up on a connection whose latest request has no socket for its response yet (kube-apiserver
 * never pipelines). That alone does not tell: with a client that waits for each answer, the answer before may be out
 * and read while node:http has not yet seen its write complete (a third of the requests of the benchmark's load, which
 * waits, came so, on every connection). Answers back up when the one before is not ended, is itself queued behind
 * another, or the connection's writes have passed their high-water mark: what can make node:http pause reading.
 */
function pipelines(socket: Duplex, previous: ServerResponse | undefined): boolean {
  return previous !== undefined && (!previous.writableEnded || previous.socket !== socket || socket.writableNeedDrain);
}

/**
 * node:http parses a TLS connection's bytes in native code, straight from the TLS layer. When it stops reading because a
 * client pipelines requests faster than it reads their answers, the TLS layer still hands the parser the records it has
 * already decrypted, and the paused parser fails (HPE_PAUSED): the connection was cut with answers still queued (Node
 * 20, 24 and 26 alike). A 'data' listener makes node:http parse that connection from the socket's stream instead, which
 * holds what arrives while reading is paused. Only a connection that pipelines gets one: for the others, parsing from
 * the stream cost `distinct` admissions about 5% more CPU in bench:server, and `skip` more.
 */
function parseFromStream(socket: Duplex): void {
  if (!socket.listeners('data').includes(ignoreData)) socket.on('data', ignoreData);
}

/** node:http reads the data itself; see parseFromStream. */
function ignoreData(): void {}

/**
 * Reads a request's body as UTF-8 text, up to `limit` bytes; past that, tells `done` once with undefined and drops
 * the rest. A client that goes away mid-body gets nothing (there is nobody to answer).
 */
function readBody(request: IncomingMessage, limit: number, done: (text: string | undefined) => void): void {
  const chunks: Buffer[] = [];
  let size = 0;
  let over = false;
  request.on('data', (chunk: Buffer) => {
    if (over) return;
    size += chunk.length;
    if (size > limit) {
      over = true;
      chunks.length = 0;
      done(undefined);
    } else {
      chunks.push(chunk);
    }
  });
  request.on('end', () => {
    if (!over) done(chunks.length === 1 ? (chunks[0] as Buffer).toString('utf8') : Buffer.concat(chunks, size).toString('utf8'));
  });
  request.on('error', () => {
    over = true;
  });
}

/**
 * One line per admission, in Linkerd's words, with the review's identity and the structured details beside them. A pod
 * that nobody asked to mesh (the most common review in a cluster where few namespaces are meshed) gets its line at
 * debug only: at info it would be most of the log and a tenth of the server's work, and the responses counter carries
 * it (skip_reason="injection_enable_annotation_absent", by namespace and owner kind).
 */
function logAdmission(log: Logger, infoLine: InfoLine, debug: boolean, request: AdmissionRequest, handled: HandledAdmission): void {
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
  const details: Record<string, LineValue> = {
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
  else if (result.outcome === 'injected') infoLine(details, `injection patch generated for: ${resource}`);
  else if (result.outcome === 'annotated') infoLine(details, `annotation patch generated for: ${resource} (skipped: ${reasons})`);
  else infoLine(details, `skipped ${resource}: ${reasons}`);
}
