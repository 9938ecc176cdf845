/** HTTPS client and certificate helpers that behave like kube-apiserver calling a webhook. */
import { readFileSync, renameSync, writeFileSync } from 'node:fs';
import { get } from 'node:http';
import { request, type Agent } from 'node:https';
import { join } from 'node:path';
import type { TLSSocket } from 'node:tls';
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

/** GETs a plain-HTTP URL (the admin port) and reads the whole answer. */
export function httpGet(url: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    get(url, (res) => {
      let body = '';
      res.on('data', (c: Buffer) => (body += c.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    }).on('error', reject);
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
