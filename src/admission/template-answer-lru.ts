/**
 * An LRU of answers keyed by pod template: the pods of one rollout are the same object but for their identity (uid, the
 * name generated after admission, the time in their managedFields), so one engine run, one patch serialisation and one
 * base64 encoding answer every pod a ReplicaSet creates. The key is everything the answer depends on: the object
 * without those fields (PER_POD_METADATA), the kind and namespace, the namespace's annotations, the labels it reads and
 * the version of its quotas and limit ranges, and the owner. Entries live per configuration object, so a configuration
 * change (a new object) never meets an answer computed for the old one; the least recently used entry goes first.
 *
 * Two shortcuts keep the cache from costing more than it saves. A pod is first compared, value by value, with the entry
 * last answered for its controller, which spares serialising a key of a kilobyte or more for each pod of a rollout. And
 * a controller's first pod gets no key and no entry: most controllers make a single pod of a template (a Job, a
 * CronJob's run, a Deployment of one replica), and keeping an answer nobody asks for again costs about as much as
 * computing it.
 */
import { isObject, versionText, type InjectionResult, type InjectorConfig, type KubernetesVersion, type Owner } from '../engine/index.js';

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
/**
 * Controllers remembered per entry allowed: each holds the key last answered for it, or SEEN. A controller forgotten
 * meanwhile only has its next pod answered without the cache again.
 */
const CONTROLLERS_PER_ENTRY = 4;
/** What is remembered for a controller whose first pod was answered without a key: no key is empty. */
const SEEN = '';
/** Objects whose key is longer than this are not cached: they are rare, and would crowd out many ordinary ones. */
const MAX_KEY_LENGTH = 256 * 1024;

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
  /**
   * Which controller made the object (its controller reference's uid): the cache first compares the object with the
   * answer last given for that controller, which for the pods of a rollout spares serialising and hashing the key, and
   * does not key a controller's first pod at all.
   */
  controller: string;
}

/** A question made into its key, with the texts the key was made of. */
export interface KeyedQuestion {
  key: string;
  kind: string;
  namespace: string;
  owner: string;
  /** The namespace's annotations as JSON. */
  annotations: string;
  /** The namespace's labels as JSON, the version of its constraints and the API server's release; empty when none is known. */
  namespaceState: string;
  /** The object as JSON without PER_POD_METADATA. */
  serialized: string;
}

/**
 * A kept question's parts as values: the next object of the same controller is compared with them instead of being
 * serialised.
 */
interface KeptQuestion {
  kind: string;
  namespace: string;
  owner: string;
  namespaceAnnotations: Kept;
  namespaceState: string;
  object: Kept;
}

/**
 * A JSON value kept for comparison: a primitive as itself, an array as an array of kept values, an object as its keys
 * in order and their values, so that comparing does not list the keys again. `skip` names keys that the compared object
 * may have and that the serialisation left out.
 */
type Kept = string | number | boolean | null | Kept[] | KeptObject;

class KeptObject {
  constructor(
    readonly keys: string[],
    readonly values: Kept[],
    readonly skip?: ReadonlySet<string>,
  ) {}
}

/** A value parsed from JSON, kept. */
function keptValue(value: unknown): Kept {
  if (Array.isArray(value)) return value.map(keptValue);
  return isObject(value) ? keptObject(value) : (value as Kept);
}

function keptObject(fields: Record<string, unknown>, skip?: ReadonlySet<string>): KeptObject {
  const keys = Object.keys(fields);
  return new KeptObject(
    keys,
    keys.map((key) => keptValue(fields[key])),
    skip,
  );
}

const IDENTITY: ReadonlySet<string> = new Set(PER_POD_METADATA);

/** The object of a question, kept: its metadata skips PER_POD_METADATA, which its serialisation left out. */
function keptSubject(object: unknown): Kept {
  if (!isObject(object)) return keptValue(object);
  const keys = Object.keys(object);
  return new KeptObject(
    keys,
    keys.map((key) => {
      const value = object[key];
      return key === 'metadata' && isObject(value) ? keptObject(value, IDENTITY) : keptValue(value);
    }),
  );
}

/**
 * Whether `value` serialises as the value kept did: the same keys in the same order, the same items, equal strings,
 * finite numbers, booleans and nulls. Anything JSON.stringify would drop or change (undefined, a function, a
 * non-finite number, an inherited key) makes them differ, which at worst sends the question the long way, through its
 * key.
 */
function sameJson(kept: Kept, value: unknown): boolean {
  if (kept === value) return typeof kept !== 'number' || Number.isFinite(kept);
  if (typeof kept !== 'object' || kept === null || typeof value !== 'object' || value === null) return false;
  if (Array.isArray(kept)) {
    if (!Array.isArray(value) || value.length !== kept.length) return false;
    for (let i = 0; i < kept.length; i++) if (!sameJson(kept[i] as Kept, value[i])) return false;
    return true;
  }
  if (Array.isArray(value)) return false;
  const { keys, values, skip } = kept;
  const fields = value as Record<string, unknown>;
  let at = 0;
  for (const key in fields) {
    if (skip?.has(key)) continue;
    if (key !== keys[at] || !sameJson(values[at] as Kept, fields[key])) return false;
    at++;
  }
  return at === keys.length;
}

const ownerText = (owner: Owner | undefined): string => (owner ? `${owner.kind}/${owner.name}` : '');
/** The namespace's labels, the version of its constraints and the API server's release, as one text. */
const namespaceText = (question: Pick<AnswerQuestion, 'namespaceLabels' | 'constraintsVersion' | 'kubernetesVersion'>): string =>
  question.namespaceLabels === undefined && question.constraintsVersion === undefined && question.kubernetesVersion === undefined
    ? ''
    : `${question.namespaceLabels ? JSON.stringify(question.namespaceLabels) : ''}\u0000${question.constraintsVersion ?? ''}\u0000${question.kubernetesVersion ? versionText(question.kubernetesVersion) : ''}`;

/**
 * The object serialised with PER_POD_METADATA set aside. Those fields are set to undefined for the serialisation and
 * put back after it rather than copied around: JSON.stringify leaves undefined out, and copying the metadata and the
 * object cost as much as serialising them.
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

/** The question's key and its parts, or undefined when the object is too large to be worth caching. */
export function keyedQuestion(question: Omit<AnswerQuestion, 'controller'>): KeyedQuestion | undefined {
  const serialized = withoutIdentity(question.object);
  const annotations = JSON.stringify(question.namespaceAnnotations);
  const namespaceState = namespaceText(question);
  const owner = ownerText(question.owner);
  const key = `${question.kind}\u0000${question.namespace}\u0000${owner}\u0000${annotations}\u0000${namespaceState}\u0000${serialized}`;
  if (key.length > MAX_KEY_LENGTH) return undefined;
  return { key, kind: question.kind, namespace: question.namespace, owner, annotations, namespaceState, serialized };
}

/** The cache key, or undefined when the object is not worth caching (see keyedQuestion). */
export function answerKey(
  kind: string,
  namespace: string,
  object: Record<string, unknown>,
  namespaceAnnotations: Record<string, string>,
  owner: Owner | undefined,
  namespaceLabels?: Record<string, string>,
): string | undefined {
  return keyedQuestion({ kind, namespace, object, namespaceAnnotations, namespaceLabels, owner })?.key;
}

/** Whether the question has the key `kept` was made from, compared part by part: nothing is serialised or hashed. */
function asks(kept: KeptQuestion, question: AnswerQuestion): boolean {
  return (
    kept.kind === question.kind &&
    kept.namespace === question.namespace &&
    kept.owner === ownerText(question.owner) &&
    sameJson(kept.namespaceAnnotations, question.namespaceAnnotations) &&
    kept.namespaceState === namespaceText(question) &&
    sameJson(kept.object, question.object)
  );
}

interface Entry {
  key: string;
  question: KeptQuestion;
  answer: CachedAnswer;
}

/**
 * What the cache holds for one configuration: entries by key, and for each controller seen the key last answered for
 * it, or SEEN.
 */
interface Entries {
  byKey: Map<string, Entry>;
  byController: Map<string, string>;
}

/** What `find` says: the answer, or the question's key to `keep` the computed answer under (none: not worth it). */
export type Found = { answer: CachedAnswer; keyed?: undefined } | { answer?: undefined; keyed: KeyedQuestion | undefined };

export class TemplateAnswerLru {
  private readonly byConfig = new WeakMap<InjectorConfig, Entries>();
  private hitCount = 0;
  private missCount = 0;

  constructor(private readonly maxEntries = DEFAULT_MAX_ENTRIES) {}

  /**
   * The answer to the question under this configuration, if one was kept. A controller not seen before under it is
   * only noted: its pod is answered without a key (`keyed` undefined), since most controllers make no second. Otherwise
   * the entry last answered for the controller is tried first, by comparing the object with it; only when that fails
   * is the question's key made.
   */
  find(config: InjectorConfig, question: AnswerQuestion): Found {
    try {
      return this.lookUp(config, question);
    } catch (err) {
      // Comparing and keying walk the object recursively: one nested deeper than the stack allows is answered without
      // the cache, as it would be without an owner, rather than failing.
      if (err instanceof RangeError) return { keyed: undefined };
      throw err;
    }
  }

  private lookUp(config: InjectorConfig, question: AnswerQuestion): Found {
    const entries = this.entriesFor(config);
    const recent = entries.byController.get(question.controller);
    if (recent === undefined) {
      this.remember(entries, question.controller, SEEN);
      this.missCount++;
      return { keyed: undefined };
    }
    const known = recent !== SEEN ? entries.byKey.get(recent) : undefined;
    if (known && asks(known.question, question)) return { answer: this.hit(entries, known) };
    const keyed = keyedQuestion(question);
    const found = keyed && entries.byKey.get(keyed.key);
    if (!found) {
      this.missCount++;
      return { keyed };
    }
    this.remember(entries, question.controller, found.key);
    return { answer: this.hit(entries, found) };
  }

  /** Keeps the answer computed for a question `find` could not answer, as the newest entry. */
  keep(config: InjectorConfig, question: KeyedQuestion, controller: string, answer: CachedAnswer): void {
    const entries = this.entriesFor(config);
    const { key, kind, namespace, owner, namespaceState } = question;
    let kept: KeptQuestion;
    try {
      kept = { kind, namespace, owner, namespaceAnnotations: keptValue(JSON.parse(question.annotations)), namespaceState, object: keptSubject(JSON.parse(question.serialized)) };
    } catch (err) {
      if (err instanceof RangeError) return; // nested deeper than the stack allows: not kept (see find)
      throw err;
    }
    entries.byKey.set(key, { key, question: kept, answer });
    if (entries.byKey.size > this.maxEntries) entries.byKey.delete(entries.byKey.keys().next().value as string);
    this.remember(entries, controller, question.key);
  }

  /** Lookups answered from the cache and lookups that were not, since start. */
  get stats(): { hits: number; misses: number } {
    return { hits: this.hitCount, misses: this.missCount };
  }

  /** Most recently used last: Map keeps insertion order. */
  private hit(entries: Entries, entry: Entry): CachedAnswer {
    entries.byKey.delete(entry.key);
    entries.byKey.set(entry.key, entry);
    this.hitCount++;
    return entry.answer;
  }

  private entriesFor(config: InjectorConfig): Entries {
    let entries = this.byConfig.get(config);
    if (!entries) {
      entries = { byKey: new Map(), byController: new Map() };
      this.byConfig.set(config, entries);
    }
    return entries;
  }

  /**
   * Notes the controller's latest key, or SEEN; bounded (a key whose entry went is simply not found), the controller
   * least recently noted forgotten first.
   */
  private remember(entries: Entries, controller: string, key: string): void {
    const map = entries.byController;
    if (map.get(controller) === key) return;
    map.delete(controller);
    map.set(controller, key);
    if (map.size > this.maxEntries * CONTROLLERS_PER_ENTRY) map.delete(map.keys().next().value as string);
  }
}
