/**
 * Small bounded memories for work that depends only on a text. Annotation values repeat from pod to pod (the same port
 * list, quantity or duration across a Deployment's pods and across workloads), and parsing them again was a large part
 * of injecting a pod. Whatever is remembered is shared by every pod that asks for it, so it is frozen: a caller that
 * tried to change it would throw instead of changing another pod's answer.
 */

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
 * `parse`, remembering its results (frozen) for up to `entries` texts of up to 256 characters. When full, the memory is
 * emptied rather than evicted entry by entry: the bound is what matters, and the texts in use come back at once.
 * `parse` must depend on its text alone.
 */
export function memoizeText<T>(parse: (text: string) => T, entries = 512): (text: string) => T {
  const memory = new Map<string, T>();
  return (text) => {
    if (text.length > LONGEST_REMEMBERED) return parse(text);
    const known = memory.get(text);
    if (known !== undefined || memory.has(text)) return known as T;
    const parsed = deepFreeze(parse(text));
    if (memory.size >= entries) memory.clear();
    memory.set(text, parsed);
    return parsed;
  };
}
