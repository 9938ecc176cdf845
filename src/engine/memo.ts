/**
 * Small bounded memories for work that depends only on a text. Annotation values repeat from pod to pod (the same port
 * list, quantity or duration across a Deployment's pods and across workloads), and parsing them again was a large part
 * of injecting a pod. Whatever is remembered is shared by every pod that asks for it, so it is frozen: a caller that
 * tried to change it would throw instead of changing another pod's answer.
 */
import { LRUCache } from 'lru-cache';

/** Freezes a plain value and everything inside it; returns it. */
export function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const key of Object.keys(value)) deepFreeze((value as Record<string, unknown>)[key]);
  }
  return value;
}

/** Texts longer than this are parsed every time: remembering them would let a hostile annotation hold memory. */
const LONGEST_REMEMBERED = 256;

/**
 * `parse`, remembering its results (frozen) for the `entries` texts of up to 256 characters used most recently. `parse`
 * must depend on its text alone.
 */
export function memoizeText<T>(parse: (text: string) => T, entries = 512): (text: string) => T {
  // Boxed: lru-cache takes an undefined value for a miss, and undefined is a result like any other here.
  const memory = new LRUCache<string, { value: T }>({ max: entries });
  return (text) => {
    if (text.length > LONGEST_REMEMBERED) return parse(text);
    const known = memory.get(text);
    if (known) return known.value;
    const value = deepFreeze(parse(text));
    memory.set(text, { value });
    return value;
  };
}
