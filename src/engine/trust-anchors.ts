/**
 * Checking a trust anchors bundle when it is loaded (a file, a ConfigMap key, the values' `identityTrustAnchorsPEM`):
 * one or more PEM `CERTIFICATE` blocks that X509 parses, and only whitespace around and between them, as Linkerd's
 * `ca-bundle.crt` is. The injection itself takes any string; the loaders call this once per load, not per pod.
 */
import { X509Certificate } from 'node:crypto';
import { EngineError } from './errors.js';
import { withTrustAnchors, type LinkerdValues } from './values.js';
import { lineAt } from './text.js';

const BEGIN = /-----BEGIN ([A-Z0-9 ]{1,64})-----/g;
const PRIVATE_KEY = /-----BEGIN [A-Z0-9 ]{0,64}PRIVATE KEY-----/;
const WHITESPACE = /^\s*$/;
/** What a certificate block's body may hold: base64 and line breaks (certificates carry no PEM headers). */
const BASE64_BODY = /^[A-Za-z0-9+/=\s]+$/;

/**
 * Throws `EngineError('INVALID_CONFIGURATION')` with a one-line message that starts with `source` when `pem` is not a
 * bundle of certificates; returns how many certificates it holds. Nothing of the content is repeated in the message,
 * as it may be key material. Text that is empty or only whitespace passes with 0: having no anchors is the caller's
 * (and the engine's MISSING_TRUST_ANCHORS) concern.
 */
export function checkTrustAnchors(pem: string, source: string): number {
  const fail = (what: string): never => {
    throw new EngineError('INVALID_CONFIGURATION', `${source}: ${what}`);
  };
  if (PRIVATE_KEY.test(pem)) {
    const label = /-----BEGIN ([A-Z0-9 ]{0,64}PRIVATE KEY)-----/.exec(pem)?.[1] ?? 'PRIVATE KEY';
    fail(`a private key (${label}) was given where the trust anchors' certificates belong; give the root CA certificates only`);
  }
  let at = 0;
  let count = 0;
  BEGIN.lastIndex = 0;
  for (let m = BEGIN.exec(pem); m; m = BEGIN.exec(pem)) {
    if (!WHITESPACE.test(pem.slice(at, m.index))) {
      fail(`unexpected text at line ${lineAt(pem, at + pem.slice(at).search(/\S/))}: trust anchors are PEM CERTIFICATE blocks only`);
    }
    const label = m[1] as string;
    count++;
    if (label !== 'CERTIFICATE') fail(`block ${count} (line ${lineAt(pem, m.index)}) is a ${label}, not a CERTIFICATE`);
    const endLine = `-----END ${label}-----`;
    const end = pem.indexOf(endLine, m.index + m[0].length);
    if (end === -1) fail(`certificate ${count} (line ${lineAt(pem, m.index)}) has no "${endLine}" line: the PEM is truncated`);
    const body = pem.slice(m.index + m[0].length, end);
    if (!BASE64_BODY.test(body)) fail(`certificate ${count} (line ${lineAt(pem, m.index)}) is not base64 between its BEGIN and END lines`);
    try {
      new X509Certificate(pem.slice(m.index, end + endLine.length));
    } catch (err) {
      fail(`certificate ${count} (line ${lineAt(pem, m.index)}) is not a valid X.509 certificate (${(err as Error).message.split('\n')[0]})`);
    }
    at = end + endLine.length;
    BEGIN.lastIndex = at;
  }
  if (!WHITESPACE.test(pem.slice(at))) {
    fail(
      count === 0
        ? 'no PEM CERTIFICATE block: trust anchors are one or more "-----BEGIN CERTIFICATE-----" blocks'
        : `unexpected text at line ${lineAt(pem, at + pem.slice(at).search(/\S/))} after certificate ${count}: trust anchors are PEM CERTIFICATE blocks only`,
    );
  }
  return count;
}

/**
 * The values with the trust anchors the webhook injects, checked: `anchors` when given (a file, a ConfigMap key), else
 * the values' own `identityTrustAnchorsPEM`, described by `valuesSource`. Trimmed, as Linkerd's webhook has them: it
 * reads the bundle its chart writes into linkerd-identity-trust-roots with `| trim`, and hashes it for
 * `linkerd.io/trust-root-sha256`, so a copy of the values (whose PEM ends with a newline) must hash the same. Throws
 * as checkTrustAnchors does.
 */
export function withCheckedTrustAnchors(values: LinkerdValues, anchors: { pem: string; source: string } | undefined, valuesSource: string): LinkerdValues {
  const pem = anchors?.pem ?? values.identityTrustAnchorsPEM;
  checkTrustAnchors(pem, anchors?.source ?? `identityTrustAnchorsPEM in ${valuesSource}`);
  return pem.trim() === values.identityTrustAnchorsPEM ? values : withTrustAnchors(values, pem.trim());
}
