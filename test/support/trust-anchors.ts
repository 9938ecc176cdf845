/** Trust anchors the loaders must refuse, each with what the refusal must say; private keys are made fresh, never stored. */
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { OTHER_TRUST_ANCHOR, TRUST_ANCHORS } from './engine.js';

export function privateKeys(): Record<string, string> {
  const ec = generateKeyPairSync('ec', { namedCurve: 'prime256v1' }).privateKey;
  const rsa = generateKeyPairSync('rsa', { modulusLength: 1024 }).privateKey;
  return {
    'EC PRIVATE KEY': ec.export({ format: 'pem', type: 'sec1' }).toString(),
    'PRIVATE KEY': ec.export({ format: 'pem', type: 'pkcs8' }).toString(),
    'RSA PRIVATE KEY': rsa.export({ format: 'pem', type: 'pkcs1' }).toString(),
  };
}

/** The base64 lines of a PEM block, which must never be repeated in a message or a log. */
export const bodyLines = (pem: string): string[] => pem.split('\n').filter((l) => l !== '' && !l.startsWith('-----'));

const lines = TRUST_ANCHORS.trimEnd().split('\n');

/** Bundles that are not trust anchors, each with a pattern of what the refusal says after the source. */
export const INVALID_BUNDLES: Array<[name: string, pem: string, says: RegExp]> = [
  ['the text hello', 'hello\n', /no PEM CERTIFICATE block/],
  ['random bytes', randomBytes(512).toString('latin1'), /no PEM CERTIFICATE block|unexpected text at line/],
  ['a certificate without its END line', `${lines.slice(0, -1).join('\n')}\n`, /certificate 1 \(line 1\) has no "-----END CERTIFICATE-----" line: the PEM is truncated/],
  ['a certificate cut short', `${lines.slice(0, 4).join('\n')}\n${lines.at(-1)}\n`, /certificate 1 \(line 1\) is not a valid X\.509 certificate/],
  ['a certificate whose body is not base64', '-----BEGIN CERTIFICATE-----\nTEST ROOT!\n-----END CERTIFICATE-----\n', /certificate 1 \(line 1\) is not base64/],
  ['a certificate followed by junk', `${TRUST_ANCHORS}junk\n`, /unexpected text at line 13 after certificate 1: trust anchors are PEM CERTIFICATE blocks only/],
  ['junk before a certificate', `# roots\n${TRUST_ANCHORS}`, /unexpected text at line 1: trust anchors are PEM CERTIFICATE blocks only/],
  ['junk between two certificates', `${TRUST_ANCHORS}and\n${OTHER_TRUST_ANCHOR}`, /unexpected text at line 13: trust anchors/],
  ['a public key', generateKeyPairSync('ec', { namedCurve: 'prime256v1' }).publicKey.export({ format: 'pem', type: 'spki' }).toString(), /block 1 \(line 1\) is a PUBLIC KEY, not a CERTIFICATE/],
];
