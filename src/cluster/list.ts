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
 * The objects of the collection at `path` (e.g. /api/v1/pods), a page of up to 500 at a time, so that a caller can be
 * done with each page before the next is read: a large cluster's pods, managed fields and all, are hundreds of
 * megabytes at once. Each page must arrive within `timeoutMs`. Throws what the client throws (an ApiError with the
 * server's status) or when the pages do not end.
 */
export async function* listPages<T>(client: ApiClient, path: string, what: string, timeoutMs = 60_000): AsyncGenerator<T[]> {
  let next: string | undefined;
  let pages = 0;
  do {
    if (++pages > MAX_PAGES) throw new Error(`listing ${what}: more than ${MAX_PAGES} pages`);
    const query = new URLSearchParams({ limit: String(PAGE_SIZE) });
    if (next) query.set('continue', next);
    const page = await client.request<Page<T>>('GET', `${path}?${query.toString()}`, { what: `listing ${what}`, timeoutMs });
    yield page.items ?? [];
    next = page.metadata?.continue || undefined;
  } while (next);
}

/** Every object of the collection at `path`, read as listPages reads it. */
export async function listAll<T>(client: ApiClient, path: string, what: string, timeoutMs = 60_000): Promise<T[]> {
  const items: T[] = [];
  for await (const page of listPages<T>(client, path, what, timeoutMs)) items.push(...page);
  return items;
}
