/** The serving certificate's life: checking a key pair, a development CA when none is provided, and hot reload. */
export {
  CA_CERT_FILE,
  CA_KEY_FILE,
  CERT_FILE,
  KEY_FILE,
  TlsError,
  isTlsError,
  loadKeyPair,
  validateKeyPair,
  type KeyPair,
  type TlsErrorCode,
  type TlsLogger,
  type ValidatedKeyPair,
} from './key-pair.js';
export { ensureCertificates, type GeneratedCertificates } from './dev-ca.js';
export { CertificateReloader, type ReloaderOptions } from './reloader.js';
