/** HTTPS client and certificate helpers that behave like kube-apiserver calling a webhook. */
import { readFileSync, renameSync, writeFileSync } from 'node:fs';
import { get } from 'node:http';
import { request, type Agent } from 'node:https';
import { join } from 'node:path';
import { connect as tlsConnect, type TLSSocket } from 'node:tls';
import { generate } from 'selfsigned';

export interface HttpsResult {
  status: number;
  body: string;
  /** SHA-256 fingerprint of the certificate the server presented. */
  fingerprint: string;
}

export interface PostOptions {
  ca: string;
  body: string;
  contentType?: string;
  maxVersion?: 'TLSv1.2' | 'TLSv1.3';
  /** Milliseconds to wait between the first and the second half of the body (a request kept in flight). */
  splitBodyMs?: number;
  /** Called once the first half of a split body is written. */
  onFirstHalf?: () => void;
  path?: string;
  method?: string;
  /** A keep-alive agent to reuse connections; by default each request has a connection of its own. */
  agent?: Agent;
}

/**
 * GETs a plain-HTTP URL (an admin port, a proxy's) over a connection of its own and reads the whole answer; fails after
 * `timeoutMs` without one.
 */
export function httpGet(url: string, timeoutMs = 5_000): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = get(url, { timeout: timeoutMs, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('error', reject);
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
    });
    req.on('timeout', () => req.destroy(new Error(`GET ${url} timed out`)));
    req.on('error', reject);
  });
}

/** POSTs over a new TLS connection that verifies the server against `ca` for the name "localhost". */
export function httpsPost(url: string, options: PostOptions): Promise<HttpsResult> {
  const target = new URL(options.path ?? '/', url);
  return new Promise((resolve, reject) => {
    const req = request(
      {
        hostname: target.hostname,
        port: target.port,
        path: target.pathname,
        method: options.method ?? 'POST',
        ca: options.ca,
        servername: 'localhost',
        agent: options.agent ?? false,
        ...(options.maxVersion && { maxVersion: options.maxVersion }),
        headers: {
          'content-type': options.contentType ?? 'application/json',
          'content-length': Buffer.byteLength(options.body),
        },
      },
      (res) => {
        const fingerprint = (res.socket as TLSSocket).getPeerCertificate().fingerprint256;
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8'), fingerprint }));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    if (options.splitBodyMs === undefined) {
      req.end(options.body);
      return;
    }
    const half = Math.floor(options.body.length / 2);
    req.write(options.body.slice(0, half), () => options.onFirstHalf?.());
    setTimeout(() => req.end(options.body.slice(half)), options.splitBodyMs);
  });
}

/** A serving certificate for localhost signed by the CA in `dir` (ca.crt, ca.key). */
export async function leafSignedBy(dir: string): Promise<{ cert: string; key: string }> {
  const ca = { cert: readFileSync(join(dir, 'ca.crt'), 'utf8'), key: readFileSync(join(dir, 'ca.key'), 'utf8') };
  const pems = await generate([{ name: 'commonName', value: 'localhost' }], {
    algorithm: 'sha256',
    keyType: 'ec',
    curve: 'P-256',
    ca,
    extensions: [
      { name: 'basicConstraints', cA: false },
      { name: 'extKeyUsage', serverAuth: true },
      { name: 'subjectAltName', altNames: [{ type: 2, value: 'localhost' }, { type: 7, ip: '127.0.0.1' }] },
    ],
  } as Parameters<typeof generate>[1]);
  return { cert: pems.cert, key: pems.private };
}

/** Replaces tls.crt and tls.key the way a careful tool does: each written beside and renamed into place. */
export function writePair(dir: string, pair: { cert: string; key: string }): void {
  for (const [name, pem] of [['tls.key', pair.key], ['tls.crt', pair.cert]] as const) {
    writeFileSync(join(dir, `.${name}.tmp`), pem, { mode: 0o600 });
    renameSync(join(dir, `.${name}.tmp`), join(dir, name));
  }
}

export interface PipelinedAnswer {
  status: number;
  uid: string;
  /** Allowed with a JSON patch. */
  patched: boolean;
}

/**
 * Sends AdmissionReviews on one TLS connection without waiting for answers, as `send` writes them (`requests` are whole
 * HTTP/1.1 requests), and collects every answer in the order it comes; rejects when the connection closes first.
 */
export function pipelineReviews(
  target: { url: string; ca: string },
  requests: string[],
  send: (socket: TLSSocket, requests: string[]) => Promise<void>,
): Promise<PipelinedAnswer[]> {
  const url = new URL(target.url);
  return new Promise((resolve, reject) => {
    const got: PipelinedAnswer[] = [];
    let pending = Buffer.alloc(0);
    const socket = tlsConnect({ host: url.hostname, port: Number(url.port), ca: target.ca, servername: 'localhost' }, () => {
      send(socket, requests).catch(reject);
    });
    socket.on('data', (chunk: Buffer) => {
      pending = Buffer.concat([pending, chunk]);
      for (;;) {
        const headEnd = pending.indexOf('\r\n\r\n');
        if (headEnd === -1) return;
        const head = pending.subarray(0, headEnd).toString('latin1');
        const length = Number(/\r\ncontent-length: (\d+)/i.exec(head)?.[1] ?? NaN);
        if (pending.length < headEnd + 4 + length) return;
        const review = JSON.parse(pending.subarray(headEnd + 4, headEnd + 4 + length).toString('utf8')) as { response: Record<string, unknown> };
        got.push({ status: Number(head.split(' ')[1]), uid: String(review.response['uid']), patched: review.response['allowed'] === true && typeof review.response['patch'] === 'string' });
        pending = pending.subarray(headEnd + 4 + length);
        if (got.length === requests.length) {
          socket.end();
          resolve(got);
        }
      }
    });
    socket.on('error', reject);
    socket.on('close', () => reject(new Error(`the connection closed after ${got.length} of ${requests.length} answers`)));
  });
}

/** An AdmissionReview as an HTTP/1.1 POST to the webhook's path; `extraHeaders` are whole lines, each ending in CRLF. */
export function reviewRequest(body: string, extraHeaders = ''): string {
  return `POST / HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n${extraHeaders}\r\n${body}`;
}
