/**
 * Why an admission could not be evaluated. Operators see each code as the `code` label of
 * `proxy_inject_admission_failures_total` and the `code` field of the log line; docs/operations.md says what to do about each.
 */
import { isEngineError, type EngineErrorCode } from '../engine/index.js';

/** What a source of the handler's inputs (configuration, namespace annotations) reports when it has none to give. */
export type SourceFailureCode =
  /** No Linkerd configuration has loaded since the start: the values or trust anchors are missing or invalid. */
  | 'CONFIG_NOT_LOADED'
  /** The pod's namespace is neither in the cache nor readable through the API within the read timeout. */
  | 'NAMESPACE_UNKNOWN';

export type AdmissionFailureCode =
  | EngineErrorCode
  | SourceFailureCode
  /** Anything else thrown while handling a valid request: a defect in the injector. */
  | 'HANDLER_ERROR';

/** Every code, in the order docs/operations.md lists them (checked by a test). */
export const ADMISSION_FAILURE_CODES = [
  'CONFIG_NOT_LOADED',
  'MISSING_TRUST_ANCHORS',
  'INVALID_VALUES',
  'INVALID_CONFIGURATION',
  'INVALID_OBJECT',
  'NAMESPACE_UNKNOWN',
  'HANDLER_ERROR',
] as const satisfies readonly AdmissionFailureCode[];

// Fails to compile when a code is added to the union but not to the list.
type Missing = Exclude<AdmissionFailureCode, (typeof ADMISSION_FAILURE_CODES)[number]>;
const everyCodeListed: Missing extends never ? true : Missing = true;
void everyCodeListed;

/** Raised by an admission source that cannot give what the handler asked for; the message says why. */
export class SourceUnavailableError extends Error {
  override readonly name = 'SourceUnavailableError';
  constructor(
    readonly code: SourceFailureCode,
    message: string,
  ) {
    super(message);
  }
}

export function isSourceUnavailable(value: unknown): value is SourceUnavailableError {
  return value instanceof SourceUnavailableError;
}

/** An admission that failed: a stable code and the one-line reason given to the API server. */
export interface AdmissionFailure {
  code: AdmissionFailureCode;
  message: string;
  /** For the log only: what went wrong inside the injector, when the message does not say it. */
  detail?: string;
}

/** What the API server is told of a defect in the injector: the log has the rest, which could name its internals. */
const INTERNAL_ERROR = 'an internal error (HANDLER_ERROR); the injector logged what it was';

export function failureOf(err: unknown): AdmissionFailure {
  const message = err instanceof Error ? err.message : String(err);
  if (isEngineError(err) || isSourceUnavailable(err)) return { code: err.code, message };
  return { code: 'HANDLER_ERROR', message: INTERNAL_ERROR, detail: message };
}
