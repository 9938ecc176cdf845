/** Errors the engine raises, each with a stable code and a message a cluster operator can act on. */

export type EngineErrorCode =
  /** The Linkerd values document is not YAML, not a map, or has a value of the wrong type. */
  | 'INVALID_VALUES'
  /** No identity trust anchors are configured, so an injected proxy could never obtain an identity. */
  | 'MISSING_TRUST_ANCHORS'
  /** The configuration asks for something the proxy templates refuse to render (Linkerd's template `fail`s). */
  | 'INVALID_CONFIGURATION'
  /** The object handed to the engine is not a Kubernetes object the engine can read. */
  | 'INVALID_OBJECT';

export class EngineError extends Error {
  override readonly name = 'EngineError';
  constructor(
    readonly code: EngineErrorCode,
    message: string,
  ) {
    super(message);
  }
}

export function isEngineError(value: unknown): value is EngineError {
  return value instanceof EngineError;
}
