/** One-shot reads of whole collections, page by page, for the command line. */
import type { ApiClient } from './client.js';

interface Page<T> {
  metadata?: { continue?: string };
  items?: T[];
}

/** Objects asked for per page, as the caches ask. */
const PAGE_SIZE = 500;
/** Most pages read: a server that keeps answering "continue" cannot keep the command listing for ever. */
const MAX_PAGES = 2000;

/**
 * Every object of the collection at `path` (e.g. /api/v1/pods), read in pages of 500; each page must arrive within
 * `timeoutMs`. Throws what the client throws (an ApiError with the server's status) or when the pages do not end.
 */
export async function listAll<T>(client: ApiClient, path: string, what: string, timeoutMs = 60_000): Promise<T[]> {
  const items: T[] = [];
  let next: string | undefined;
  let pages = 0;
  do {
    if (++pages > MAX_PAGES) throw new Error(`listing ${what}: more than ${MAX_PAGES} pages`);
    const query = new URLSearchParams({ limit: String(PAGE_SIZE) });
    if (next) query.set('continue', next);
    const page = await client.request<Page<T>>('GET', `${path}?${query.toString()}`, { what: `listing ${what}`, timeoutMs });
    items.push(...(page.items ?? []));
    next = page.metadata?.continue || undefined;
  } while (next);
  return items;
}
