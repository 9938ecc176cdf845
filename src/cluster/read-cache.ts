/**
 * Objects read directly from the API server because a review named them (owners, namespaces the watch has not
 * delivered), remembered in an LRU bounded in bytes (see bytes.ts), reads in progress included. One read serves every
 * lookup of a key while it is in progress, a read is made only when the review's client may still read (see
 * ReadBudget), and an object the API server says does not exist is remembered as missing, for less time.
 */
import { LRUCache } from 'lru-cache';
import { entryBytes } from './bytes.js';
import type { Clock, ReadBudget } from './rate.js';

/** What is remembered of an object the API server said does not exist. */
export const MISSING = Symbol('missing');
export type Found<V> = V | typeof MISSING;

/** A read not made because the client's read budget, or everyone's, is spent. */
export class ReadRefused extends Error {}

/**
 * A cache holds at least this many of its largest entries: a larger one, which no real object makes, is read but not
 * kept, so that one review pushes out little of the rest.
 */
const ENTRY_SHARE = 16;

export interface ReadCacheOptions<V, C> {
  maxBytes: number;
  ttlMs: number;
  /** How long MISSING is remembered. */
  missingTtlMs: number;
  reads: ReadBudget;
  /** Reads the object at `key`; MISSING when the API server says it does not exist (404), logged there if need be. */
  read(key: string, context: C): Promise<Found<V>>;
  now?: Clock | undefined;
}

/** What a read in progress knows: who caused it, and what the reader needs. */
interface Reading<C> {
  client: string;
  context: C;
}

export class ReadCache<V extends object, C> {
  private readonly cache: LRUCache<string, Found<V>, Reading<C>>;

  constructor(private readonly options: ReadCacheOptions<V, C>) {
    this.cache = new LRUCache<string, Found<V>, Reading<C>>({
      maxSize: options.maxBytes,
      maxEntrySize: Math.floor(options.maxBytes / ENTRY_SHARE),
      sizeCalculation: (found, key) => entryBytes(key, found),
      ttl: options.ttlMs,
      // Checked against the clock each time, so that a test's clock is obeyed at once.
      ttlResolution: 0,
      // A read pushed out while in progress still answers those waiting for it.
      ignoreFetchAbort: true,
      ...(options.now && { perf: { now: options.now } }),
      fetchMethod: async (key, _stale, { options: entry, context }) => {
        const found = await this.options.read(key, context.context);
        // The read in progress was counted by its key; what it found is counted by sizeCalculation. Only now, since the
        // entry for the read in progress is made after this method starts.
        delete entry.size;
        if (found === MISSING) {
          entry.ttl = this.options.missingTtlMs;
          this.options.reads.notFound(context.client);
        }
        return found;
      },
    });
  }

  /** What is remembered of `key`, or undefined when it is not (or is still being read). */
  cached(key: string): Found<V> | undefined {
    return this.cache.get(key);
  }

  /**
   * What is known of `key`: at once when it is remembered, else the read of it (the one in progress, or a new one that
   * `client` pays for). Throws ReadRefused when a read is needed and `client` may not make it.
   */
  lookup(key: string, client: string, context: C): Found<V> | Promise<Found<V>> {
    const status: LRUCache.Status<string, Found<V>, Reading<C>> = {};
    const known = this.cache.get(key, { status });
    if (known !== undefined) return known;
    const inProgress = status.get === 'fetching' || status.get === 'stale-fetching';
    if (!inProgress && !this.options.reads.take(client)) throw new ReadRefused(`too many reads for ${client || 'this client'}`);
    return this.cache.forceFetch(key, { context: { client, context }, size: entryBytes(key, undefined) });
  }

  /** Forgets `key`, and what a read of it in progress will find. */
  delete(key: string): void {
    this.cache.delete(key);
  }

  /** What the cache holds, as counted for its bound. */
  get bytes(): number {
    return this.cache.calculatedSize;
  }
}
