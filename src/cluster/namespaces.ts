/**
 * Namespace annotations (and the one label the injector reads) from a watch-fed cache, with a bounded direct read for a
 * namespace the cache has not seen. What direct reads found is remembered in a cache bounded in bytes, since reviews
 * can name any namespace.
 */
import type { V1Namespace } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { SourceUnavailableError } from '../admission/index.js';
import { names } from '../engine/index.js';
import { apiErrorMessage, apiStatus } from './api.js';
import { MiB } from './bytes.js';
import type { ApiClient } from './client.js';
import { ResilientInformer } from './informer.js';
import { ReadBudget, type Clock } from './rate.js';
import { MISSING, ReadCache, ReadRefused, type Found } from './read-cache.js';

export interface NamespaceCacheOptions {
  client: ApiClient;
  logger: Logger;
  /** Longest a direct read may take when the cache misses (default 2000 ms). */
  readTimeoutMs?: number;
  onRestart?: (reason: 'error' | 'watchdog') => void;
  /**
   * Most bytes remembered of namespaces read directly and found missing, reads in progress included (default
   * NAMESPACE_READS_BYTES): bounds memory under a churn of short-lived namespaces while the watch is broken, and under
   * reviews that name namespaces that do not exist. The least recently used go first.
   */
  maxBytes?: number;
  /** Told whether each lookup was served by the cache, by a direct read, or failed. */
  onLookup?: (result: 'cache' | 'read' | 'failed') => void;
  /** Direct reads allowed, by the address of the review causing them: reviews can name any namespace. */
  reads?: ReadBudget;
  /** How long a namespace the API server said does not exist is remembered so (default 10 s). */
  missingTtlMs?: number;
  watchdogMs?: number;
  /** The clock of the direct reads' time to live, in milliseconds; tests pass one they move. */
  now?: Clock;
}

/** How long a direct read stands for a namespace the watch has not delivered: a broken watch must not pin it. */
const READ_THROUGH_TTL_MS = 60_000;
/** Room for the namespaces made while a watch is broken for a minute, and for reviews naming missing ones. */
export const NAMESPACE_READS_BYTES = 2 * MiB;

/** What the injector keeps of a namespace read directly. */
interface ReadNamespace {
  annotations: Record<string, string>;
  labels?: Record<string, string>;
}

const annotationsOf = (ns: V1Namespace | undefined): Record<string, string> => ({ ...(ns?.metadata?.annotations ?? {}) });

/**
 * The labels the injector reads: the Pod Security level the namespace enforces, which refuses linkerd-init at baseline
 * and above. The others are not kept.
 */
function readLabels(labels: Record<string, string> | undefined): Record<string, string> | undefined {
  const level = labels?.[names.POD_SECURITY_ENFORCE_LABEL];
  return typeof level === 'string' ? { [names.POD_SECURITY_ENFORCE_LABEL]: level } : undefined;
}

export class NamespaceCache {
  private readonly informer: ResilientInformer<V1Namespace>;
  /**
   * Namespaces read directly, until the watch delivers them or their time passes, and those the API server said do not
   * exist, so that reviews naming one are not each a read; one read for a burst of pods in a new namespace.
   */
  private readonly direct: ReadCache<ReadNamespace, undefined>;

  constructor(private readonly options: NamespaceCacheOptions) {
    this.direct = new ReadCache({
      maxBytes: options.maxBytes ?? NAMESPACE_READS_BYTES,
      ttlMs: READ_THROUGH_TTL_MS,
      missingTtlMs: options.missingTtlMs ?? 10_000,
      reads: options.reads ?? new ReadBudget(),
      now: options.now,
      read: (name) => this.read(name),
    });
    this.informer = new ResilientInformer<V1Namespace>({
      name: 'namespaces',
      client: options.client,
      path: '/api/v1/namespaces',
      // Only the annotations and the Pod Security label are read: the rest of a namespace (its managed fields above
      // all) would cost memory per namespace in a large cluster.
      transform: ({ metadata: m = {} }) => {
        const labels = readLabels(m.labels);
        return {
          metadata: {
            ...(m.name !== undefined && { name: m.name }),
            ...(m.resourceVersion !== undefined && { resourceVersion: m.resourceVersion }),
            ...(m.annotations && { annotations: m.annotations }),
            ...(labels && { labels }),
          },
        };
      },
      logger: options.logger,
      onChange: (_type, ns) => {
        const name = ns.metadata?.name;
        if (name) this.direct.delete(name);
      },
      ...(options.onRestart && { onRestart: options.onRestart }),
      ...(options.watchdogMs !== undefined && { watchdogMs: options.watchdogMs }),
    });
  }

  get hasSynced(): boolean {
    return this.informer.hasSynced;
  }

  start(): void {
    this.informer.start();
  }

  waitForSync(timeoutMs: number): Promise<boolean> {
    return this.informer.waitForSync(timeoutMs);
  }

  stop(): Promise<void> {
    return this.informer.stop();
  }

  /** What the memory of direct reads holds, reads in progress included, as counted for its bound. */
  get bytes(): number {
    return this.direct.bytes;
  }

  /**
   * The labels the injector reads of a namespace already known (see readLabels), without reading it: asked after
   * `annotations`, which reads a namespace the cache has not seen. Undefined when it has none of them or is not known.
   */
  labels(name: string): Record<string, string> | undefined {
    const cached = this.informer.get(name);
    if (cached) return cached.metadata?.labels;
    const read = this.direct.cached(name);
    return read === MISSING ? undefined : read?.labels;
  }

  /**
   * The namespace's annotations; throws a SourceUnavailableError (NAMESPACE_UNKNOWN) when neither the cache nor a
   * direct read has them, which the admission handler treats as undecidable. `client` is the address of the review,
   * whose read budget pays for a direct read.
   */
  async annotations(name: string, client = ''): Promise<Record<string, string>> {
    const cached = this.informer.get(name);
    if (cached) {
      this.options.onLookup?.('cache');
      return annotationsOf(cached);
    }
    let known: Found<ReadNamespace> | Promise<Found<ReadNamespace>>;
    try {
      known = this.direct.lookup(name, client, undefined);
    } catch (err) {
      if (!(err instanceof ReadRefused)) throw err;
      this.options.onLookup?.('failed');
      throw unknown(name, 'too many namespaces not in the cache are being read');
    }
    let found: Found<ReadNamespace>;
    try {
      found = await known;
    } catch (err) {
      this.options.onLookup?.('failed');
      throw unknown(name, this.warnUnread(name, err));
    }
    if (found === MISSING) {
      this.options.onLookup?.('failed');
      throw unknown(name, 'it was not found');
    }
    this.options.onLookup?.(known instanceof Promise ? 'read' : 'cache');
    return found.annotations;
  }

  private async read(name: string): Promise<Found<ReadNamespace>> {
    const timeoutMs = this.options.readTimeoutMs ?? 2000;
    try {
      const ns = await this.options.client.request<V1Namespace>('GET', `/api/v1/namespaces/${encodeURIComponent(name)}`, { what: `reading namespace ${name}`, timeoutMs });
      const labels = readLabels(ns.metadata?.labels);
      return { annotations: annotationsOf(ns), ...(labels && { labels }) };
    } catch (err) {
      if (apiStatus(err) !== 404) throw err;
      // Said when it was found so, not again for every review that names it while it is remembered.
      this.warnUnread(name, err);
      return MISSING;
    }
  }

  /** Logs why a namespace could not be read, and returns it. */
  private warnUnread(name: string, err: unknown): string {
    const why = apiErrorMessage(err);
    this.options.logger.warn({ namespace: name, err: why }, 'namespace not in the cache and could not be read');
    return why;
  }
}

const unknown = (name: string, why: string): SourceUnavailableError =>
  new SourceUnavailableError('NAMESPACE_UNKNOWN', `the annotations of namespace ${name} are not known yet (${why})`);
