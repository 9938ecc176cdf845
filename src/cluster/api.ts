/** Helpers for calls to the Kubernetes API: a bound on how long one may take, and its errors as one line. */

/** Resolves like `promise`, or rejects after `ms` saying what took too long. */
export function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not answer within ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/** The HTTP status of a client-node ApiException, if that is what `err` is. */
export function apiStatus(err: unknown): number | undefined {
  const code = (err as { code?: unknown })?.code;
  return typeof code === 'number' ? code : undefined;
}

/** A one-line description of a client-node error (ApiException bodies are raw JSON text in 1.x). */
export function apiErrorMessage(err: unknown): string {
  const e = err as { code?: number; body?: unknown; message?: string };
  if (typeof e?.body === 'string') {
    try {
      const status = JSON.parse(e.body) as { message?: string };
      if (status.message) return `HTTP ${e.code}: ${status.message}`;
    } catch {
      // not JSON: fall through to the message
    }
  }
  return (e?.message ?? String(err)).split('\n')[0] ?? String(err);
}
