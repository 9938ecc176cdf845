/** Whole collections read page by page: the caches' lists, and the command line's. */
import type { ApiClient } from './client.js';

interface ObjectList<T> {
  metadata?: { resourceVersion?: string; continue?: string };
  items?: T[];
}

/** One page of a list: its objects, and the list's resourceVersion as that page gives it. */
export interface ListPage<T> {
  items: T[];
  resourceVersion: string;
}

export interface ListOptions {
  /** Longest one page may take (default 60 s). */
  timeoutMs?: number;
  /** Further query parameters, e.g. a fieldSelector. */
  params?: Record<string, string>;
  /** Objects per page (default 500). */
  pageSize?: number;
}

/** Objects per page: a large cluster's namespaces or pods arrive in parts rather than as one huge answer. */
const PAGE_SIZE = 500;
/** Most pages of one list, so that a server that keeps answering "continue" cannot keep us listing for ever. */
const MAX_PAGES = 2000;

/**
 * The objects of the collection at `path` (e.g. /api/v1/pods), a page of up to 500 at a time, so that a caller can be
 * done with each page before the next is read: a large cluster's pods, managed fields and all, are hundreds of
 * megabytes at once. Each page must arrive within `timeoutMs`. Throws what the client throws (an ApiError with the
 * server's status) or when the pages do not end.
 */
export async function* listPages<T>(client: ApiClient, path: string, what: string, options: ListOptions = {}): AsyncGenerator<ListPage<T>> {
  let next: string | undefined;
  let pages = 0;
  do {
    if (++pages > MAX_PAGES) throw new Error(`listing ${what}: more than ${MAX_PAGES} pages`);
    const query = new URLSearchParams(options.params);
    query.set('limit', String(options.pageSize ?? PAGE_SIZE));
    if (next) query.set('continue', next);
    const page = await client.request<ObjectList<T>>('GET', `${path}?${query.toString()}`, { what: `listing ${what}`, timeoutMs: options.timeoutMs ?? 60_000 });
    yield { items: page.items ?? [], resourceVersion: page.metadata?.resourceVersion ?? '' };
    next = page.metadata?.continue || undefined;
  } while (next);
}

/** Every object of the collection at `path`, read as listPages reads it. */
export async function listAll<T>(client: ApiClient, path: string, what: string, options: ListOptions = {}): Promise<T[]> {
  const items: T[] = [];
  for await (const page of listPages<T>(client, path, what, options)) items.push(...page.items);
  return items;
}
