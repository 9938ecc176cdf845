/**
 * Each namespace's ResourceQuotas and LimitRanges, from two watch-fed caches: the API server refuses an injected pod
 * whose added containers a quota obliges to state resources they do not state, or whose resources a LimitRange bounds
 * (see quotaRisks), and the webhook says so before it does. Only their names and specs are kept, indexed by namespace,
 * each namespace with a version that changes when what quotaRisks reads does, for the cache of answers: a quota's
 * usage, which its controller updates with every pod created, changes no answer and no version.
 */
import type { Logger } from 'pino';
import type { ResourceConstraints } from '../engine/index.js';
import type { ApiClient } from './client.js';
import { ResilientInformer, type KubeObject } from './informer.js';

/** A ResourceQuota or LimitRange as kept: its name, namespace and spec. */
interface Constraint extends KubeObject {
  spec?: unknown;
}

/** A namespace's constraints, with the version its answers are cached under. */
export interface VersionedConstraints extends ResourceConstraints {
  version: string;
}

export interface ResourceConstraintCacheOptions {
  client: ApiClient;
  logger: Logger;
  onRestart?: (informer: string, reason: 'error' | 'watchdog') => void;
  watchdogMs?: number;
}

type Kind = 'resourceQuotas' | 'limitRanges';

export class ResourceConstraintCache {
  private readonly informers: Array<ResilientInformer<Constraint>>;
  /** Per namespace, its objects of each kind by name; a namespace with none is absent. */
  private readonly byNamespace = new Map<string, { resourceQuotas: Map<string, Constraint>; limitRanges: Map<string, Constraint> }>();
  /** Per namespace, its constraints as last handed out, until one of them changes. */
  private readonly answered = new Map<string, VersionedConstraints>();
  /** Counts every change, so that a namespace's version is never used twice, even after it had none. */
  private changes = 0;

  constructor(options: ResourceConstraintCacheOptions) {
    const informer = (kind: Kind, resource: string): ResilientInformer<Constraint> =>
      new ResilientInformer<Constraint>({
        name: resource,
        client: options.client,
        path: `/api/v1/${resource}`,
        logger: options.logger,
        // The name and spec are all quotaRisks reads.
        transform: ({ metadata: m = {}, spec }) => ({
          metadata: { ...(m.name !== undefined && { name: m.name }), ...(m.namespace !== undefined && { namespace: m.namespace }) },
          spec,
        }),
        onChange: (type, object) => this.changed(kind, type, object),
        ...(options.onRestart && { onRestart: (reason: 'error' | 'watchdog') => options.onRestart?.(resource, reason) }),
        ...(options.watchdogMs !== undefined && { watchdogMs: options.watchdogMs }),
      });
    this.informers = [informer('resourceQuotas', 'resourcequotas'), informer('limitRanges', 'limitranges')];
  }

  start(): void {
    for (const informer of this.informers) informer.start();
  }

  /** Whether both kinds have been listed once. */
  get hasSynced(): boolean {
    return this.informers.every((i) => i.hasSynced);
  }

  async waitForSync(timeoutMs: number): Promise<boolean> {
    const synced = await Promise.all(this.informers.map((i) => i.waitForSync(timeoutMs)));
    return synced.every(Boolean);
  }

  async stop(): Promise<void> {
    await Promise.all(this.informers.map((i) => i.stop()));
  }

  /** The namespace's ResourceQuotas and LimitRanges, or undefined when it has none (or they are not listed yet). */
  of(namespace: string): VersionedConstraints | undefined {
    const answered = this.answered.get(namespace);
    if (answered) return answered;
    const held = this.byNamespace.get(namespace);
    if (!held) return undefined;
    const constraints: VersionedConstraints = {
      resourceQuotas: [...held.resourceQuotas.values()],
      limitRanges: [...held.limitRanges.values()],
      version: String(this.changes),
    };
    this.answered.set(namespace, constraints);
    return constraints;
  }

  private changed(kind: Kind, type: 'add' | 'update' | 'delete', object: Constraint): void {
    const namespace = object.metadata?.namespace ?? '';
    const name = object.metadata?.name ?? '';
    let held = this.byNamespace.get(namespace);
    const before = held?.[kind].get(name);
    // A re-list, or an update of the status alone, hands over the same spec: nothing quotaRisks reads has changed.
    if (type !== 'delete' && before !== undefined && JSON.stringify(before.spec) === JSON.stringify(object.spec)) return;
    this.changes++;
    this.answered.delete(namespace);
    if (type === 'delete') {
      held?.[kind].delete(name);
      if (held && held.resourceQuotas.size === 0 && held.limitRanges.size === 0) this.byNamespace.delete(namespace);
      return;
    }
    if (!held) {
      held = { resourceQuotas: new Map(), limitRanges: new Map() };
      this.byNamespace.set(namespace, held);
    }
    held[kind].set(name, object);
  }
}
