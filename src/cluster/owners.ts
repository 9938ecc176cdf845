/**
 * The workload that owns a pod, as Linkerd names it: pod → ReplicaSet → Deployment, Job → CronJob, others by kind.
 * ReplicaSets and Jobs are read once and remembered (all pods of one share it), with a bounded wait for each read.
 */
import type { V1OwnerReference } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { objectName, type Owner } from '../engine/index.js';
import { apiErrorMessage, apiStatus } from './api.js';
import type { ApiClient } from './client.js';

/** An owner with what an Event needs to point at it. */
export interface ResolvedOwner extends Owner {
  /** The kind as the API spells it, e.g. "Deployment". */
  apiKind: string;
  apiVersion: string;
  namespace: string;
  uid?: string;
}

/** Reads a ReplicaSet's or Job's owner references. */
export interface OwnerLookup {
  ownersOf(kind: 'ReplicaSet' | 'Job', namespace: string, name: string): Promise<V1OwnerReference[]>;
}

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
  /** Most entries remembered (default 4096). */
  maxEntries?: number;
}

export class OwnerResolver {
  /** Owner references by ReplicaSet or Job; undefined for one the API server said does not exist. */
  private readonly cache = new Map<string, { owners: V1OwnerReference[] | undefined; at: number }>();
  /** Reads in progress, so that a burst of pods of one new ReplicaSet reads it once. */
  private readonly reading = new Map<string, Promise<V1OwnerReference[] | undefined>>();

  constructor(
    private readonly lookup: OwnerLookup,
    private readonly logger: Logger,
    private readonly options: OwnerResolverOptions = {},
  ) {}

  async resolve(pod: PodLike, namespace: string): Promise<ResolvedOwner> {
    const meta = pod.metadata ?? {};
    const refs = meta.ownerReferences ?? [];
    const self: ResolvedOwner = {
      kind: 'pod',
      name: objectName(pod),
      apiKind: 'Pod',
      apiVersion: 'v1',
      namespace,
    };
    const [ref] = refs;
    if (refs.length !== 1 || !ref) return self;
    const direct = fromRef(ref, namespace);
    if (ref.kind !== 'ReplicaSet' && ref.kind !== 'Job') return direct;
    let parents: V1OwnerReference[] | undefined;
    try {
      parents = await this.ownersOf(ref.kind, namespace, ref.name, ref.uid);
    } catch (err) {
      this.logger.warn({ owner: `${ref.kind}/${namespace}/${ref.name}`, err: apiErrorMessage(err) }, 'could not read the pod owner; using it as the workload');
      return direct;
    }
    // Known to be missing: said when it was found so, not again for every pod that names it.
    if (!parents) return direct;
    const [parent] = parents;
    if (parents.length !== 1 || !parent) return direct;
    if (ref.kind === 'ReplicaSet' && !RS_PARENTS.has(parent.kind.toLowerCase())) return direct;
    return fromRef(parent, namespace);
  }

  /** The owner references of a ReplicaSet or Job, undefined if it was recently found missing; throws if unreadable. */
  private ownersOf(kind: 'ReplicaSet' | 'Job', namespace: string, name: string, uid: string): Promise<V1OwnerReference[] | undefined> {
    const key = `${kind}/${namespace}/${name}/${uid}`;
    const hit = this.cache.get(key);
    const ttl = hit?.owners ? (this.options.ttlMs ?? 600_000) : (this.options.missingTtlMs ?? 10_000);
    if (hit && Date.now() - hit.at < ttl) return Promise.resolve(hit.owners);
    let pending = this.reading.get(key);
    if (!pending) {
      pending = this.lookup
        .ownersOf(kind, namespace, name)
        .then(
          (owners) => {
            this.remember(key, owners);
            return owners;
          },
          (err: unknown) => {
            // A pod naming an owner that does not exist is a mistake that repeats: one read per pod would only load
            // the API server. Other failures may pass, so they are read again.
            if (apiStatus(err) === 404) this.remember(key, undefined);
            throw err;
          },
        )
        .finally(() => this.reading.delete(key));
      this.reading.set(key, pending);
    }
    return pending;
  }

  private remember(key: string, owners: V1OwnerReference[] | undefined): void {
    // Re-inserted at the end, so that the oldest entry is always first; the oldest go when the cache is full.
    this.cache.delete(key);
    const max = this.options.maxEntries ?? 4096;
    for (let oldest = this.cache.keys().next(); this.cache.size >= max && !oldest.done; oldest = this.cache.keys().next()) {
      this.cache.delete(oldest.value);
    }
    this.cache.set(key, { owners, at: Date.now() });
  }

  /** Owners remembered now, for tests of the bound. */
  get size(): number {
    return this.cache.size;
  }
}

function fromRef(ref: V1OwnerReference, namespace: string): ResolvedOwner {
  return { kind: ref.kind.toLowerCase(), name: ref.name, apiKind: ref.kind, apiVersion: ref.apiVersion, namespace, uid: ref.uid };
}

/** Reads owners through the API, each read bounded by `timeoutMs`. */
export function apiOwnerLookup(client: ApiClient, timeoutMs = 1500): OwnerLookup {
  return {
    async ownersOf(kind, namespace, name) {
      const collection = kind === 'ReplicaSet' ? '/apis/apps/v1/namespaces/%s/replicasets' : '/apis/batch/v1/namespaces/%s/jobs';
      const path = `${collection.replace('%s', encodeURIComponent(namespace))}/${encodeURIComponent(name)}`;
      const object = await client.request<{ metadata?: { ownerReferences?: V1OwnerReference[] } } | undefined>('GET', path, {
        what: `reading ${kind} ${namespace}/${name}`,
        timeoutMs,
      });
      return object?.metadata?.ownerReferences ?? [];
    },
  };
}
