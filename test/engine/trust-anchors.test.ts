/** checkTrustAnchors: what the loaders accept as trust anchors (PEM certificates only) and how a refusal reads. */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { checkTrustAnchors, isEngineError } from '../../src/engine/index.js';
import { OTHER_TRUST_ANCHOR, TRUST_ANCHORS } from '../support/engine.js';
import { bodyLines, INVALID_BUNDLES, privateKeys } from '../support/trust-anchors.js';

function refusal(pem: string): Error {
  try {
    checkTrustAnchors(pem, 'the trust anchors file /x/ca.pem');
  } catch (err) {
    expect(isEngineError(err)).toBe(true);
    return err as Error;
  }
  throw new Error('accepted');
}

describe('checkTrustAnchors', () => {
  it('accepts one certificate, a bundle of two, CRLF line ends and the demo root, and counts them', () => {
    expect(checkTrustAnchors(TRUST_ANCHORS, 's')).toBe(1);
    expect(checkTrustAnchors(`${TRUST_ANCHORS}${OTHER_TRUST_ANCHOR}`, 's')).toBe(2);
    expect(checkTrustAnchors(`\n  ${TRUST_ANCHORS.trim()}\n\n${OTHER_TRUST_ANCHOR.trim()}`, 's')).toBe(2);
    expect(checkTrustAnchors(TRUST_ANCHORS.replaceAll('\n', '\r\n'), 's')).toBe(1);
    expect(checkTrustAnchors(readFileSync('examples/trust-anchors.pem', 'utf8'), 's')).toBe(1);
  });

  it('leaves empty anchors to the caller', () => {
    expect(checkTrustAnchors('', 's')).toBe(0);
    expect(checkTrustAnchors(' \n\t\n', 's')).toBe(0);
  });

  it.each(INVALID_BUNDLES)('refuses %s, naming the source in one line', (_name, pem, says) => {
    const err = refusal(pem);
    expect(err.message).toMatch(/^the trust anchors file \/x\/ca\.pem: /);
    expect(err.message).toMatch(says);
    expect(err.message).not.toContain('\n');
  });

  it.each(Object.entries(privateKeys()))('refuses a private key (%s) as one, without repeating it', (label, key) => {
    for (const pem of [key, `${TRUST_ANCHORS}${key}`, `${key}${TRUST_ANCHORS}`]) {
      const err = refusal(pem);
      expect(err.message).toBe(
        `the trust anchors file /x/ca.pem: a private key (${label}) was given where the trust anchors' certificates belong; give the root CA certificates only`,
      );
      for (const line of bodyLines(key)) expect(err.message).not.toContain(line);
    }
  });
});
