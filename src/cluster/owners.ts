/**
 * The workload that owns a pod, as Linkerd names it: pod → ReplicaSet → Deployment, Job → CronJob, others by kind.
 * ReplicaSets and Jobs are read once and remembered (all pods of one share it), with a bounded wait for each read;
 * StatefulSets and DaemonSets only for the events of their pods, after those are answered (see withOwnMetadata). What
 * is remembered is bounded in bytes, since a review can put anything in an owner reference.
 */
import type { V1OwnerReference } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { names, objectName, type Owner } from '../engine/index.js';
import { apiErrorMessage, apiStatus } from './api.js';
import { MiB } from './bytes.js';
import type { ApiClient } from './client.js';
import { ReadBudget, type Clock } from './rate.js';
import { MISSING, ReadCache, ReadRefused, type Found } from './read-cache.js';

/** An owner with what an Event needs to point at it. */
export interface ResolvedOwner extends Owner {
  /** The kind as the API spells it, e.g. "Deployment". */
  apiKind: string;
  apiVersion: string;
  namespace: string;
  uid?: string;
  /**
   * Whether the API server was seen to hold this workload: read (a ReplicaSet, Job, StatefulSet or DaemonSet), or named
   * by one that was read (a Deployment, a CronJob). Only such a workload gets events: anyone who can reach the webhook
   * can send a review that names any owner.
   */
  exists: boolean;
  /**
   * `linkerd.io/inject` as the workload carries it outside its pod template, where the injector never reads it: on a
   * Deployment's own metadata (copied to its ReplicaSets), a CronJob's jobTemplate metadata, a Job's or ReplicaSet's,
   * and (once withOwnMetadata has read it) a StatefulSet's or DaemonSet's.
   */
  misplacedInject?: string;
  /**
   * The proxy's configuration annotations (`config.linkerd.io/*` and the alpha ones) that the workload carries where
   * `misplacedInject` would be found, sorted; undefined when there are none. The Injected event names them.
   */
  misplacedConfig?: string[];
}

/** What the injector reads of a workload: its owner references and its own `linkerd.io/inject` and proxy annotations. */
export interface OwnerRecord {
  owners: V1OwnerReference[];
  inject?: string;
  /** The names of the proxy's configuration annotations it carries, sorted; absent when none. */
  config?: string[];
}

/** The proxy's configuration annotations, which a pod or its namespace may carry. */
const CONFIG_ANNOTATIONS: ReadonlySet<string> = new Set(names.NAMESPACE_INHERITED_ANNOTATIONS.filter((key) => key !== names.INJECT_ANNOTATION));

/** The workloads the injector reads, each through the API group and version it is served at. */
const COLLECTIONS = {
  ReplicaSet: '/apis/apps/v1/namespaces/%s/replicasets',
  Job: '/apis/batch/v1/namespaces/%s/jobs',
  StatefulSet: '/apis/apps/v1/namespaces/%s/statefulsets',
  DaemonSet: '/apis/apps/v1/namespaces/%s/daemonsets',
} as const;

export type ReadKind = keyof typeof COLLECTIONS;

/** Reads a workload. */
export interface OwnerLookup {
  ownersOf(kind: ReadKind, namespace: string, name: string): Promise<OwnerRecord>;
}

/** Workloads that own their pods directly, whose own metadata the pods never show (read only for their events). */
const DIRECT_OWNERS: ReadonlyMap<string, ReadKind> = new Map([
  ['apps/v1 StatefulSet', 'StatefulSet'],
  ['apps/v1 DaemonSet', 'DaemonSet'],
]);

/** Kinds a ReplicaSet may be named after (Linkerd ignores other owners of a ReplicaSet, e.g. Argo Rollouts). */
const RS_PARENTS = new Set(['job', 'statefulset', 'daemonset', 'deployment']);

interface PodLike {
  metadata?: { name?: string; generateName?: string; ownerReferences?: V1OwnerReference[] };
}

export interface OwnerResolverOptions {
  /** How long an owner read is remembered (default 10 minutes). */
  ttlMs?: number;
  /** How long a ReplicaSet or Job found missing (404) is remembered as missing (default 10 s). */
  missingTtlMs?: number;
  /** Most bytes remembered, reads in progress included (default OWNER_CACHE_BYTES); least recently used out first. */
  maxBytes?: number;
  /** Reads allowed, by the address of the review causing them: reviews can name any owner. */
  reads?: ReadBudget;
  /** The clock of the time to live, in milliseconds; tests pass one they move. */
  now?: Clock;
}

/** Room for the ReplicaSets and Jobs that a large cluster's rollouts and Jobs start within the time to live. */
export const OWNER_CACHE_BYTES = 4 * MiB;

/** The longest name an object can have (a DNS subdomain). */
const MAX_OBJECT_NAME = 253;

/** What a read of an owner needs besides its key, and what to say if it is missing. */
interface OwnerRead {
  kind: ReadKind;
  namespace: string;
  name: string;
  consequence: string;
}

export class OwnerResolver {
  /**
   * What was read of each ReplicaSet, Job, StatefulSet or DaemonSet, by kind, namespace, name and uid (a workload made
   * again under its name is another), or MISSING for one the API server said does not exist.
   */
  private readonly cache: ReadCache<OwnerRecord, OwnerRead>;

  constructor(
    private readonly lookup: OwnerLookup,
    private readonly logger: Logger,
    options: OwnerResolverOptions = {},
  ) {
    this.cache = new ReadCache({
      maxBytes: options.maxBytes ?? OWNER_CACHE_BYTES,
      ttlMs: options.ttlMs ?? 600_000,
      missingTtlMs: options.missingTtlMs ?? 10_000,
      reads: options.reads ?? new ReadBudget(),
      now: options.now,
      read: (_key, read) => this.read(read),
    });
  }

  /** The pod's workload; `client` is the address of the review, whose read budget pays for any read. */
  async resolve(pod: PodLike, namespace: string, client = ''): Promise<ResolvedOwner> {
    const meta = pod.metadata ?? {};
    const refs = meta.ownerReferences ?? [];
    // A pod is not stored yet while it is admitted.
    const self: ResolvedOwner = {
      kind: 'pod',
      name: objectName(pod),
      apiKind: 'Pod',
      apiVersion: 'v1',
      namespace,
      exists: false,
    };
    const [ref] = refs;
    if (refs.length !== 1 || !ref) return self;
    const direct = fromRef(ref, namespace, false);
    // A name longer than any object can have names nothing there is to read.
    if ((ref.kind !== 'ReplicaSet' && ref.kind !== 'Job') || ref.name.length > MAX_OBJECT_NAME) return direct;
    const read = { kind: ref.kind, namespace, name: ref.name, consequence: 'using it as the workload' } as const;
    let record: Found<OwnerRecord>;
    try {
      record = await this.ownersOf(read, ref.uid, client);
    } catch (err) {
      this.warnUnread(read, err);
      return direct;
    }
    // Known to be missing: said when it was found so, not again for every pod that names it.
    if (record === MISSING) return direct;
    const found = { ...direct, exists: true };
    const parents = record.owners;
    const [parent] = parents;
    const single = parents.length === 1 && parent !== undefined;
    if (!single || (ref.kind === 'ReplicaSet' && !RS_PARENTS.has(parent.kind.toLowerCase()))) {
      return parents.length === 0 ? withMisplaced(found, record) : found;
    }
    // A Deployment's annotations are copied to its ReplicaSets, a CronJob's jobTemplate metadata to its Jobs.
    const copied = (ref.kind === 'ReplicaSet' && parent.kind === 'Deployment') || (ref.kind === 'Job' && parent.kind === 'CronJob');
    return copied ? withMisplaced(fromRef(parent, namespace, true), record) : fromRef(parent, namespace, true);
  }

  /**
   * A StatefulSet or DaemonSet owner with its own `linkerd.io/inject` and proxy annotations (`misplacedInject`,
   * `misplacedConfig`), read through the same cache as ReplicaSets and Jobs; any other owner, or one that cannot be
   * read, as it is. Such a workload owns its pods directly, so resolving their owner needs no read, and admission does
   * not wait for this one: it is made only for the events of its pods, after they were answered.
   */
  async withOwnMetadata(owner: ResolvedOwner, client = ''): Promise<ResolvedOwner> {
    const kind = DIRECT_OWNERS.get(`${owner.apiVersion} ${owner.apiKind}`);
    if (kind === undefined || owner.exists || owner.name.length > MAX_OBJECT_NAME) return owner;
    const read = { kind, namespace: owner.namespace, name: owner.name, consequence: 'its event says nothing of its own annotations' };
    try {
      const record = await this.ownersOf(read, owner.uid ?? '', client);
      return record === MISSING ? owner : withMisplaced({ ...owner, exists: true }, record);
    } catch (err) {
      this.warnUnread(read, err);
      return owner;
    }
  }

  /** Says why an owner was not read; not for a read the budget refused, which would be said for each pod of a flood. */
  private warnUnread({ kind, namespace, name, consequence }: OwnerRead, err: unknown): void {
    if (err instanceof ReadRefused) return;
    this.logger.warn({ owner: `${kind}/${namespace}/${name.slice(0, MAX_OBJECT_NAME)}`, err: apiErrorMessage(err) }, `could not read the pod owner; ${consequence}`);
  }

  /** What was read of a workload, MISSING if it was recently found so; throws if it cannot be read. */
  private async ownersOf(read: OwnerRead, uid: string, client: string): Promise<Found<OwnerRecord>> {
    return this.cache.lookup(`${read.kind}/${read.namespace}/${read.name}/${uid}`, client, read);
  }

  private async read(read: OwnerRead): Promise<Found<OwnerRecord>> {
    try {
      return await this.lookup.ownersOf(read.kind, read.namespace, read.name);
    } catch (err) {
      // A pod naming an owner that does not exist is a mistake that repeats: one read per pod would only load the API
      // server. Other failures may pass, so they are read again.
      if (apiStatus(err) !== 404) throw err;
      this.warnUnread(read, err);
      return MISSING;
    }
  }

  /** What the cache holds, reads in progress included, as counted for its bound. */
  get bytes(): number {
    return this.cache.bytes;
  }
}

/** The owner, with the `linkerd.io/inject` and proxy annotations it carries where the injector never reads them. */
function withMisplaced(owner: ResolvedOwner, record: OwnerRecord): ResolvedOwner {
  if (record.inject === undefined && record.config === undefined) return owner;
  return { ...owner, ...(record.inject !== undefined && { misplacedInject: record.inject }), ...(record.config && { misplacedConfig: record.config }) };
}

function fromRef(ref: V1OwnerReference, namespace: string, exists: boolean): ResolvedOwner {
  return { kind: ref.kind.toLowerCase(), name: ref.name, apiKind: ref.kind, apiVersion: ref.apiVersion, namespace, uid: ref.uid, exists };
}

/** Reads owners through the API, each read bounded by `timeoutMs`. */
export function apiOwnerLookup(client: ApiClient, timeoutMs = 1500): OwnerLookup {
  return {
    async ownersOf(kind, namespace, name) {
      const path = `${COLLECTIONS[kind].replace('%s', encodeURIComponent(namespace))}/${encodeURIComponent(name)}`;
      const object = await client.request<{ metadata?: { ownerReferences?: V1OwnerReference[]; annotations?: Record<string, unknown> } } | undefined>(
        'GET',
        path,
        { what: `reading ${kind} ${namespace}/${name}`, timeoutMs },
      );
      const annotations = object?.metadata?.annotations ?? {};
      const inject = annotations[names.INJECT_ANNOTATION];
      const config = Object.keys(annotations).filter((key) => CONFIG_ANNOTATIONS.has(key)).sort();
      return { owners: object?.metadata?.ownerReferences ?? [], ...(typeof inject === 'string' && { inject }), ...(config.length > 0 && { config }) };
    },
  };
}
