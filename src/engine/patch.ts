/** RFC 6902 patch operations, JSON-pointer escaping, and the annotation-only opaque-ports patch. */
import { memoizeText } from './memo.js';
import { ANNOTATIONS } from './names.js';
import type { Json } from './k8s.js';

export interface AddOperation {
  op: 'add';
  path: string;
  value: Json;
}

/** Escapes one JSON-pointer reference token (RFC 6901): "~" as "~0", then "/" as "~1". */
export function escapePointer(token: string): string {
  // Most tokens need neither escape; string patterns, not regexes: this runs for every annotation and label added.
  const tilde = token.includes('~') ? token.replaceAll('~', '~0') : token;
  return tilde.includes('/') ? tilde.replaceAll('/', '~1') : tilde;
}

/** Map keys as pointer tokens, remembered: the same annotation and label keys are added to pod after pod. */
const escapedKey = memoizeText(escapePointer);

export const add = (path: string, value: Json): AddOperation => ({ op: 'add', path, value });

/** Keys in Linkerd's byte order. */
export function sortedKeys(map: Record<string, string>): string[] {
  return sortDistinct(Object.keys(map));
}

/**
 * Sorts distinct strings in place by code unit (as `sort()` and `compareCodeUnits` order them) and returns them. Short
 * lists by insertion: the lists sorted for every pod (annotation and label keys, the pod's ports) are short, and
 * `Array.prototype.sort` allocated more for them than the rest of their work. Long ones by `sort()`, which stays
 * O(n log n) whatever the order.
 */
export function sortDistinct(list: string[]): string[] {
  if (list.length > 16) return list.sort();
  for (let i = 1; i < list.length; i++) {
    const item = list[i] as string;
    let j = i;
    for (; j > 0 && (list[j - 1] as string) > item; j--) list[j] = list[j - 1] as string;
    list[j] = item;
  }
  return list;
}

/**
 * One `add` per entry under `<base>/<key>`, in key order, preceded by `add <base> {}` when the map does not exist;
 * appended to `ops` when given.
 */
export function addMapEntries(base: string, entries: Record<string, string>, mapExists: boolean, ops: AddOperation[] = []): AddOperation[] {
  if (!mapExists) ops.push(add(base, {}));
  for (const key of sortedKeys(entries)) ops.push(add(`${base}/${escapedKey(key)}`, entries[key] ?? ''));
  return ops;
}

/**
 * The patch that sets `config.linkerd.io/opaque-ports` on an object that is not injected (a Service, or a skipped
 * Pod), adding the annotations map (and metadata) first when the object has none. The object is the admitted Pod or
 * Service itself, so paths have no prefix.
 */
export function opaquePortsAnnotationPatch(ports: string, has: { metadata: boolean; annotations: boolean }): AddOperation[] {
  const ops = has.metadata ? [] : [add('/metadata', {})];
  ops.push(...addMapEntries('/metadata/annotations', { [ANNOTATIONS.opaquePorts]: ports }, has.annotations));
  return ops;
}
