/**
 * What an entry of a cache costs the heap, so that the caches a review can fill are bounded in bytes rather than in
 * entries: one entry's key or record can be any size a review or the API server gives it.
 *
 * The count is an estimate from above of V8's layout: each string two bytes a character plus a header, each object or
 * array a header plus a slot for each element or property (and the property's name, as a string), anything else a
 * slot, and each entry a fixed overhead for the cache's own bookkeeping (its map entry, list links, size and times).
 */

export const MiB = 1024 * 1024;

const HEADER = 16;
const SLOT = 8;
const ENTRY = 128;

/** What `value` retains, as counted above; for the plain data caches keep (strings, arrays, records, dates). */
export function retainedBytes(value: unknown): number {
  if (typeof value === 'string') return HEADER + 2 * value.length;
  if (typeof value !== 'object' || value === null) return SLOT;
  let bytes = HEADER;
  if (Array.isArray(value)) {
    for (const item of value as unknown[]) bytes += SLOT + retainedBytes(item);
  } else {
    for (const [name, item] of Object.entries(value)) bytes += SLOT + retainedBytes(name) + retainedBytes(item);
  }
  return bytes;
}

/** What one cache entry costs: its key, its value, and the cache's bookkeeping for it. */
export const entryBytes = (key: string, value: unknown): number => ENTRY + retainedBytes(key) + retainedBytes(value);
