/**
 * Answers kept by pod template: the pods of one rollout are the same object but for their identity (uid, the name
 * generated after admission, the time in their managedFields), so one engine run, one patch serialisation and one
 * base64 encoding answer every pod a ReplicaSet creates. The key is everything the answer depends on: the
 * configuration, the object without those fields (PER_POD_METADATA), the kind and namespace, the namespace's
 * annotations, the labels it reads, the version of its quotas and limit ranges, the API server's release, and the
 * owner. The cache is bounded by what its entries hold in bytes, keys included, and forgets the least recently used.
 */
import { LRUCache } from 'lru-cache';
import { isObject, versionText, type InjectionResult, type InjectorConfig, type KubernetesVersion, type Owner } from '../engine/index.js';

/**
 * The engine's record without its patch: what metrics, events and logs read. The patch itself is in the response, as
 * base64; keeping its objects too would make every cached answer many times larger.
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

/** What all entries may hold: the answers of every workload rolling out at once in a large cluster. */
const DEFAULT_MAX_BYTES = 16 * 1024 * 1024;
/** What the controllers remembered may hold: their uids are at most 128 characters (see ownerReferencesOf). */
const CONTROLLERS_MAX_BYTES = 1024 * 1024;
/** An entry larger than this is not kept: such pods are rare, and one would crowd out many ordinary ones. */
const MAX_ENTRY_BYTES = 1024 * 1024;

/**
 * Metadata that differs between the pods of one rollout and that the engine reads only for the name it reports, or not
 * at all: the identity, and managedFields, whose entries carry the second they were written (kube-apiserver fills them
 * in before mutating webhooks see the pod), so that pods created a second apart would otherwise never share an answer.
 */
const PER_POD_METADATA = ['name', 'generateName', 'uid', 'managedFields'] as const;

/** What an answer depends on besides the configuration: the object, where it is created, and by whom. */
export interface AnswerQuestion {
  kind: string;
  namespace: string;
  object: Record<string, unknown>;
  namespaceAnnotations: Record<string, string>;
  /** The namespace's labels that start-up risks read, when known: they change the answer's warnings. */
  namespaceLabels?: Record<string, string> | undefined;
  /** The version of the namespace's ResourceQuotas and LimitRanges, when it has any: they change the warnings too. */
  constraintsVersion?: string | undefined;
  /** The API server's release, when known: it changes the warnings of a pod whose proxy is a native sidecar. */
  kubernetesVersion?: KubernetesVersion | undefined;
  owner: Owner | undefined;
}

/**
 * The object serialised with PER_POD_METADATA set aside. Those fields are set to undefined for the serialisation and
 * put back after it rather than copied around: JSON.stringify leaves undefined out.
 */
function withoutIdentity(object: Record<string, unknown>): string {
  const fields = object['metadata'];
  if (!isObject(fields)) return JSON.stringify(object);
  // Only the fields the metadata has are set aside: a field that was absent stays absent.
  const present = PER_POD_METADATA.filter((field) => field in fields);
  const values = present.map((field) => fields[field]);
  for (const field of present) fields[field] = undefined;
  try {
    return JSON.stringify(object);
  } finally {
    present.forEach((field, i) => {
      fields[field] = values[i];
    });
  }
}

/** What an entry holds, in bytes: its key and record at two bytes a character (V8 may keep either so), and its tail. */
function entryBytes(answer: CachedAnswer, key: string): number {
  return 2 * (key.length + JSON.stringify(answer.result).length + (answer.patch?.length ?? 0) + JSON.stringify(answer.warnings ?? []).length) + answer.responseTail.length;
}

export class TemplateAnswerLru {
  private readonly entries: LRUCache<string, CachedAnswer>;
  /**
   * The controllers (by uid) that made a pod already: a controller's first pod is answered without a key and kept
   * nowhere, since most controllers make a single pod of a template (a Job, a CronJob's run, a Deployment of one
   * replica), and keying and keeping an answer nobody asks for again costs more than it saves.
   */
  private readonly controllers = new LRUCache<string, true>({ maxSize: CONTROLLERS_MAX_BYTES, sizeCalculation: (_, uid) => 2 * uid.length + 64 });
  /** A number for each configuration object seen, part of every key: a new configuration never meets an old answer. */
  private readonly configIds = new WeakMap<InjectorConfig, number>();
  private nextConfigId = 0;
  private hitCount = 0;
  private missCount = 0;

  constructor(maxBytes = DEFAULT_MAX_BYTES) {
    this.entries = new LRUCache<string, CachedAnswer>({ maxSize: maxBytes, maxEntrySize: Math.min(maxBytes, MAX_ENTRY_BYTES), sizeCalculation: entryBytes });
  }

  /**
   * The key of a question under this configuration, or undefined when the object cannot be serialised (nested deeper
   * than the stack allows) or its key alone passes what an entry may hold.
   */
  key(config: InjectorConfig, question: AnswerQuestion): string | undefined {
    let serialized: string;
    try {
      serialized = withoutIdentity(question.object);
    } catch (err) {
      if (err instanceof RangeError) return undefined;
      throw err;
    }
    // Checked before the key is built: a key is counted at two bytes a character.
    if (2 * serialized.length > MAX_ENTRY_BYTES) return undefined;
    let id = this.configIds.get(config);
    if (id === undefined) this.configIds.set(config, (id = this.nextConfigId++));
    const owner = question.owner ? `${question.owner.kind}/${question.owner.name}` : '';
    const labels = question.namespaceLabels ? JSON.stringify(question.namespaceLabels) : '';
    const release = question.kubernetesVersion ? versionText(question.kubernetesVersion) : '';
    return [id, question.kind, question.namespace, owner, JSON.stringify(question.namespaceAnnotations), labels, question.constraintsVersion ?? '', release, serialized].join('\u0000');
  }

  /**
   * Whether a review of this many bytes is worth keying: one larger than an entry may hold nearly always has a key too
   * long to keep, and serialising it for nothing would take as long as answering it.
   */
  mayKeep(bodyBytes: number): boolean {
    return bodyBytes <= MAX_ENTRY_BYTES;
  }

  /** Whether the controller made a pod before this one; from now on it has. */
  seenBefore(controller: string): boolean {
    if (this.controllers.get(controller)) return true;
    this.controllers.set(controller, true);
    return false;
  }

  /** The answer kept under `key`, if any. */
  find(key: string): CachedAnswer | undefined {
    const answer = this.entries.get(key);
    if (answer) this.hitCount++;
    else this.missCount++;
    return answer;
  }

  /** Keeps an answer computed for a question `find` could not answer, as the most recently used. */
  keep(key: string, answer: CachedAnswer): void {
    this.entries.set(key, answer);
  }

  /** Lookups answered from the cache and lookups that were not, since start. */
  get stats(): { hits: number; misses: number } {
    return { hits: this.hitCount, misses: this.missCount };
  }

  /** What the entries and the controllers remembered hold now, in bytes as counted against their bounds. */
  get bytes(): number {
    return this.entries.calculatedSize + this.controllers.calculatedSize;
  }
}
