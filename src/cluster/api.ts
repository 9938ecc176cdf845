/** Helpers for calls to the Kubernetes API: their errors as a status and as one line. */

/** The HTTP status of an ApiError (or of any error with a numeric `code`), if that is what `err` is. */
export function apiStatus(err: unknown): number | undefined {
  const code = (err as { code?: unknown })?.code;
  return typeof code === 'number' ? code : undefined;
}

/** A one-line description of an API error: the message of the Status the server answered with, else the error's first line. */
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
