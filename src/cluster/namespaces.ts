/**
 * Namespace annotations (and the one label the injector reads) from a watch-fed cache, with a bounded direct read for a
 * namespace the cache has not seen.
 */
import type { V1Namespace } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { SourceUnavailableError } from '../admission/index.js';
import { names } from '../engine/index.js';
import { apiErrorMessage, apiStatus } from './api.js';
import type { ApiClient } from './client.js';
import { ResilientInformer } from './informer.js';
import { ReadBudget } from './rate.js';

export interface NamespaceCacheOptions {
  client: ApiClient;
  logger: Logger;
  /** Longest a direct read may take when the cache misses (default 2000 ms). */
  readTimeoutMs?: number;
  onRestart?: (reason: 'error' | 'watchdog') => void;
  /**
   * Most namespaces remembered from direct reads (default 1024): bounds memory under a churn of short-lived namespaces
   * while the watch is broken.
   */
  readThroughMax?: number;
  /** Told whether each lookup was served by the cache, by a direct read, or failed. */
  onLookup?: (result: 'cache' | 'read' | 'failed') => void;
  /** Direct reads allowed, by the address of the review that causes them: reviews can name any namespace (shared with owner reads). */
  reads?: ReadBudget;
  /** How long a namespace the API server said does not exist is remembered so (default 10 s). */
  missingTtlMs?: number;
  watchdogMs?: number;
}

const READ_THROUGH_TTL_MS = 60_000;
/** Most namespaces remembered as missing: beyond it the oldest are forgotten (and read again if asked). */
const MAX_MISSING = 1024;

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
  /** Direct reads in progress, so a burst of pods in a new namespace reads it once. */
  private readonly reading = new Map<string, Promise<Record<string, string>>>();
  /** Namespaces read directly, until the watch delivers them or a minute passes (a broken watch must not pin them). */
  private readonly readThrough = new Map<string, { annotations: Record<string, string>; labels: Record<string, string> | undefined; at: number }>();
  /** Namespaces the API server said do not exist, and when: reviews that name one are not each a read. */
  private readonly missing = new Map<string, number>();
  private readonly reads: ReadBudget;

  constructor(private readonly options: NamespaceCacheOptions) {
    this.reads = options.reads ?? new ReadBudget();
    this.informer = new ResilientInformer<V1Namespace>({
      name: 'namespaces',
      client: options.client,
      path: '/api/v1/namespaces',
      // Only the annotations and the Pod Security label are read: the rest of a namespace (its managed fields above
      // all) would cost memory per namespace in a large cluster.
      keep: ({ metadata: m = {} }) => {
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
        if (name) this.readThrough.delete(name);
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

  /** Namespaces remembered from direct reads, for tests of the bound. */
  get readThroughSize(): number {
    return this.readThrough.size;
  }

  /** Keeps a direct read for a while; at the bound, expired entries go first, then the oldest. */
  private remember(name: string, annotations: Record<string, string>, labels: Record<string, string> | undefined): void {
    const now = Date.now();
    this.readThrough.delete(name);
    const max = this.options.readThroughMax ?? 1024;
    if (this.readThrough.size >= max) {
      for (const [key, entry] of this.readThrough) if (now - entry.at >= READ_THROUGH_TTL_MS) this.readThrough.delete(key);
      for (const key of this.readThrough.keys()) {
        if (this.readThrough.size < max) break;
        this.readThrough.delete(key);
      }
    }
    this.readThrough.set(name, { annotations, labels, at: now });
  }

  private rememberMissing(name: string): void {
    this.missing.delete(name);
    if (this.missing.size >= MAX_MISSING) this.missing.delete(this.missing.keys().next().value as string);
    this.missing.set(name, Date.now());
  }

  /**
   * The labels the injector reads of a namespace already known (see readLabels), without reading it: asked after
   * `annotations`, which reads a namespace the cache has not seen. Undefined when it has none of them or is not known.
   */
  labels(name: string): Record<string, string> | undefined {
    const cached = this.informer.get(name);
    return cached ? cached.metadata?.labels : this.readRecently(name)?.labels;
  }

  /** The namespace as read directly, while that read is recent enough to stand for it. */
  private readRecently(name: string): { annotations: Record<string, string>; labels: Record<string, string> | undefined } | undefined {
    const readBefore = this.readThrough.get(name);
    return readBefore && Date.now() - readBefore.at < READ_THROUGH_TTL_MS ? readBefore : undefined;
  }

  /**
   * The namespace's annotations; throws a SourceUnavailableError (NAMESPACE_UNKNOWN) when neither the cache nor a direct
   * read has them, which the admission handler treats as undecidable. `client` is the address of the review, whose read
   * budget pays for a direct read.
   */
  async annotations(name: string, client = ''): Promise<Record<string, string>> {
    const cached = this.informer.get(name);
    if (cached) {
      this.options.onLookup?.('cache');
      return annotationsOf(cached);
    }
    const readBefore = this.readRecently(name);
    if (readBefore) {
      this.options.onLookup?.('cache');
      return readBefore.annotations;
    }
    const missingSince = this.missing.get(name);
    if (missingSince !== undefined && Date.now() - missingSince < (this.options.missingTtlMs ?? 10_000)) {
      this.options.onLookup?.('failed');
      throw new SourceUnavailableError('NAMESPACE_UNKNOWN', `the annotations of namespace ${name} are not known yet (it was not found)`);
    }
    let pending = this.reading.get(name);
    if (!pending && !this.reads.take(client)) {
      this.options.onLookup?.('failed');
      throw new SourceUnavailableError('NAMESPACE_UNKNOWN', `the annotations of namespace ${name} are not known yet (too many namespaces not in the cache are being read)`);
    }
    if (!pending) {
      const timeoutMs = this.options.readTimeoutMs ?? 2000;
      pending = this.options.client
        .request<V1Namespace>('GET', `/api/v1/namespaces/${encodeURIComponent(name)}`, { what: `reading namespace ${name}`, timeoutMs })
        .then(
          (ns) => {
            const annotations = annotationsOf(ns);
            this.remember(name, annotations, readLabels(ns.metadata?.labels));
            return annotations;
          },
          (err: unknown) => {
            if (apiStatus(err) === 404) {
              this.rememberMissing(name);
              this.reads.notFound(client);
            }
            throw err;
          },
        )
        .finally(() => this.reading.delete(name));
      this.reading.set(name, pending);
    }
    try {
      const annotations = await pending;
      this.options.onLookup?.('read');
      return annotations;
    } catch (err) {
      this.options.onLookup?.('failed');
      const why = apiErrorMessage(err);
      this.options.logger.warn({ namespace: name, err: why }, 'namespace not in the cache and could not be read');
      throw new SourceUnavailableError('NAMESPACE_UNKNOWN', `the annotations of namespace ${name} are not known yet (${why})`);
    }
  }
}
