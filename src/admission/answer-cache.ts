/**
 * Answers already computed, for the pods of one rollout. kube-apiserver sends a review for every pod a ReplicaSet
 * creates, and those pods are the same object but for their identity (uid, and the name it generates after admission)
 * and the time in their managedFields, so one engine run, one patch serialisation and one base64 encoding can answer
 * them all. The key is everything the answer depends on: the object without those (PER_POD_METADATA), the kind and
 * namespace, the namespace's annotations and the owner; entries live per configuration object, so a configuration
 * change (a new object) never meets an answer computed for the old one. Bounded: the least recently used entry goes
 * first.
 */
import type { InjectionResult, InjectorConfig, Owner } from '../engine/index.js';

/**
 * The engine's record without its patch: what metrics, events and logs read. The patch itself is in the response, as
 * base64; keeping its objects too made every cached answer a hundred kilobytes that the garbage collector had to move
 * out of the young generation, which cost more than computing the answer.
 */
export type AdmissionRecord = InjectionResult extends infer R ? (R extends unknown ? Omit<R, 'patch'> : never) : never;

/** The record without its patch, for keeping. */
export function recordOf(result: InjectionResult): AdmissionRecord {
  const { patch: _patch, ...record } = result;
  return record;
}

export interface CachedAnswer {
  /** The engine's record for the first object seen with this key; its `name` is that object's. */
  result: AdmissionRecord;
  /** Base64 of the patch, when there is one. */
  patch: string | undefined;
  warnings: string[] | undefined;
  /** The response's JSON after its uid (see encodeResponseTail): what every answer from this entry sends. */
  responseTail: Buffer;
}

/** Entries per configuration: enough for every workload rolling out at once in a large cluster, a few MiB at most. */
const DEFAULT_MAX_ENTRIES = 64;
/** Objects whose key is longer than this are not cached: they are rare, and would crowd out many ordinary ones. */
const MAX_KEY_LENGTH = 256 * 1024;

/**
 * Metadata that differs between the pods of one rollout and that the engine reads only for the name it reports, or not
 * at all: the identity, and managedFields, whose entries carry the second they were written (kube-apiserver fills them
 * in before mutating webhooks see the pod), so that pods created a second apart would otherwise never share an answer.
 */
const PER_POD_METADATA = ['name', 'generateName', 'uid', 'managedFields'] as const;

/**
 * The cache key, or undefined when the object is not worth caching. The object is serialised with PER_POD_METADATA
 * set aside. Those fields are set to undefined for the serialisation and put back after it rather than copied around:
 * JSON.stringify leaves undefined out, and copying the metadata and the object cost as much as serialising them.
 */
export function answerKey(kind: string, namespace: string, object: Record<string, unknown>, namespaceAnnotations: Record<string, string>, owner: Owner | undefined): string | undefined {
  const metadata = object['metadata'];
  let serialized: string;
  if (typeof metadata === 'object' && metadata !== null && !Array.isArray(metadata)) {
    const fields = metadata as Record<string, unknown>;
    // Only the fields the metadata has are set aside: a field that was absent stays absent.
    const present = PER_POD_METADATA.filter((field) => field in fields);
    const values = present.map((field) => fields[field]);
    for (const field of present) fields[field] = undefined;
    try {
      serialized = JSON.stringify(object);
    } finally {
      present.forEach((field, i) => {
        fields[field] = values[i];
      });
    }
  } else {
    serialized = JSON.stringify(object);
  }
  const key = `${kind}\u0000${namespace}\u0000${owner ? `${owner.kind}/${owner.name}` : ''}\u0000${JSON.stringify(namespaceAnnotations)}\u0000${serialized}`;
  return key.length <= MAX_KEY_LENGTH ? key : undefined;
}

export class AnswerCache {
  private readonly byConfig = new WeakMap<InjectorConfig, Map<string, CachedAnswer>>();
  private hitCount = 0;
  private missCount = 0;

  constructor(private readonly maxEntries = DEFAULT_MAX_ENTRIES) {}

  get(config: InjectorConfig, key: string): CachedAnswer | undefined {
    const entries = this.byConfig.get(config);
    const found = entries?.get(key);
    if (found && entries) {
      // Most recently used last: Map keeps insertion order.
      entries.delete(key);
      entries.set(key, found);
      this.hitCount++;
    } else {
      this.missCount++;
    }
    return found;
  }

  set(config: InjectorConfig, key: string, answer: CachedAnswer): void {
    let entries = this.byConfig.get(config);
    if (!entries) {
      entries = new Map();
      this.byConfig.set(config, entries);
    }
    entries.set(key, answer);
    if (entries.size > this.maxEntries) entries.delete(entries.keys().next().value as string);
  }

  /** Lookups answered from the cache and lookups that were not, since start. */
  get stats(): { hits: number; misses: number } {
    return { hits: this.hitCount, misses: this.missCount };
  }
}
