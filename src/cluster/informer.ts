/**
 * A watch-fed cache that survives errors: it lists, then watches from the list's resourceVersion; a watch the server
 * ends normally is reopened from where it was, one that fails (or a failed list) is retried with backoff by a fresh
 * list, a watch whose history expired (410) is re-listed at once, and a watch silent for too long is re-listed. The
 * cache keeps serving throughout: a new list replaces it only once it has arrived. An outage is logged when it starts
 * and when it ends, never per attempt: an API server down for an hour must not flood the log (the attempts are counted
 * through `onRestart`).
 */
import type { Logger } from 'pino';
import { apiErrorMessage } from './api.js';
import { ApiError, type ApiClient, type WatchEvent, type WatchHandle } from './client.js';
import { listPages } from './list.js';

/** What the cache needs of an object. */
export interface KubeObject {
  metadata?: { name?: string; namespace?: string; resourceVersion?: string };
}

export interface InformerOptions<T extends KubeObject> {
  /** For logs and metrics, e.g. "namespaces". */
  name: string;
  client: ApiClient;
  /** The collection's API path, e.g. /api/v1/namespaces. */
  path: string;
  fieldSelector?: string;
  logger: Logger;
  /**
   * Called for every add, update and delete (and for the items of each fresh list, and what it no longer has), with the
   * object as the store keeps it.
   */
  onChange?: (type: 'add' | 'update' | 'delete', object: T) => void;
  /** Told of each restart, with why. */
  onRestart?: (reason: 'error' | 'watchdog') => void;
  initialBackoffMs?: number;
  maxBackoffMs?: number;
  /** Re-list when nothing (no event, no reconnect) has arrived for this long (default 10 minutes). */
  watchdogMs?: number;
  /** Longest one page of a list may take (default 60 s). */
  listTimeoutMs?: number;
  /**
   * What the cache keeps of each object, for the store and onChange alike (default: all of it), as client-go's
   * SetTransform: what the cache does not need costs memory per object, and a callback that saw more would tell changes
   * apart that the store cannot.
   */
  transform?: (object: T) => T;
}

/** A watch ended normally sooner than this after opening, with no event, counts as a quick close (see `rewatch`). */
const QUICK_CLOSE_MS = 1000;

const keyOf = (namespace: string | undefined, name: string | undefined): string => `${namespace ?? ''}/${name ?? ''}`;

export class ResilientInformer<T extends KubeObject> {
  private store: Map<string, T> | undefined;
  private resourceVersion = '';
  private watch: WatchHandle | undefined;
  /** Incremented by each (re)start and by stop(): answers to an older run are ignored. */
  private runId = 0;
  private synced = false;
  private stopped = false;
  private attempts = 0;
  private quickCloses = 0;
  /** When the current run of failures began; undefined while the watch is healthy. */
  private failingSince: number | undefined;
  private lastActivity = Date.now();
  private retryTimer: NodeJS.Timeout | undefined;
  private watchdogTimer: NodeJS.Timeout | undefined;
  private readonly syncWaiters: Array<() => void> = [];

  constructor(private readonly options: InformerOptions<T>) {}

  /** Whether the first complete list has arrived. Stays true across restarts: the cache keeps serving meanwhile. */
  get hasSynced(): boolean {
    return this.synced;
  }

  start(): void {
    this.stopped = false;
    void this.run('start');
    const watchdogMs = this.options.watchdogMs ?? 600_000;
    this.watchdogTimer = setInterval(() => {
      if (Date.now() - this.lastActivity > watchdogMs) {
        this.options.logger.warn({ informer: this.options.name, silentMs: Date.now() - this.lastActivity }, 'watch went silent; re-listing');
        this.options.onRestart?.('watchdog');
        void this.run('watchdog');
      }
    }, Math.min(60_000, Math.max(1000, Math.floor(watchdogMs / 4))));
    this.watchdogTimer.unref();
  }

  /** Resolves true once synced, false if `timeoutMs` passes first. */
  waitForSync(timeoutMs: number): Promise<boolean> {
    if (this.synced) return Promise.resolve(true);
    return new Promise((resolve) => {
      const timer = setTimeout(() => resolve(false), timeoutMs);
      this.syncWaiters.push(() => {
        clearTimeout(timer);
        resolve(true);
      });
    });
  }

  get(name: string, namespace?: string): T | undefined {
    return this.store?.get(keyOf(namespace, name));
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.runId++;
    clearTimeout(this.retryTimer);
    this.retryTimer = undefined;
    clearInterval(this.watchdogTimer);
    this.watch?.abort();
    this.watch = undefined;
  }

  private kept(object: T): T {
    return this.options.transform ? this.options.transform(object) : object;
  }

  private touch(): void {
    this.lastActivity = Date.now();
  }

  /** Lists into a new cache, swaps it in, then watches from the list's resourceVersion. */
  private async run(why: 'start' | 'retry' | 'watchdog' | 'expired'): Promise<void> {
    if (this.stopped) return;
    const id = ++this.runId;
    clearTimeout(this.retryTimer);
    this.retryTimer = undefined;
    this.watch?.abort();
    this.watch = undefined;
    this.touch();
    const o = this.options;
    const fresh = new Map<string, T>();
    let resourceVersion = '';
    try {
      const params = o.fieldSelector ? { fieldSelector: o.fieldSelector } : undefined;
      for await (const page of listPages<T>(o.client, o.path, o.name, { timeoutMs: o.listTimeoutMs ?? 60_000, ...(params && { params }) })) {
        if (id !== this.runId) return;
        for (const item of page.items) fresh.set(keyOf(item.metadata?.namespace, item.metadata?.name), this.kept(item));
        resourceVersion = page.resourceVersion;
      }
    } catch (err) {
      if (id === this.runId) this.retry(err);
      return;
    }
    const old = this.store;
    this.store = fresh;
    this.resourceVersion = resourceVersion;
    for (const item of fresh.values()) o.onChange?.('add', item);
    if (old) for (const [key, item] of old) if (!fresh.has(key)) o.onChange?.('delete', item);
    if (!this.synced) {
      this.synced = true;
      o.logger.info({ informer: o.name, objects: fresh.size, why }, 'cache synced');
      this.syncWaiters.splice(0).forEach((wake) => wake());
    }
    this.openWatch(id);
  }

  /** The watch's URL, from the resourceVersion of the last list or event. */
  private watchUrl(): string {
    const query = new URLSearchParams();
    if (this.options.fieldSelector) query.set('fieldSelector', this.options.fieldSelector);
    query.set('watch', 'true');
    query.set('resourceVersion', this.resourceVersion);
    query.set('allowWatchBookmarks', 'true');
    // The server ends the watch after 5 to 10 minutes, as client-go asks, so that a connection lost without a word
    // costs at most that long even before the watchdog.
    query.set('timeoutSeconds', String(300 + Math.floor(Math.random() * 300)));
    return `${this.options.path}?${query.toString()}`;
  }

  private openWatch(id: number): void {
    const o = this.options;
    const opened = Date.now();
    let events = 0;
    this.watch = o.client.watch(this.watchUrl(), {
      onOpen: () => {
        this.touch();
        if (this.failingSince !== undefined) {
          o.logger.info(
            { informer: o.name, attempts: this.attempts, downMs: Date.now() - this.failingSince, objects: this.store?.size ?? 0 },
            'watch resumed',
          );
          this.failingSince = undefined;
        }
        this.attempts = 0;
      },
      onEvent: (event) => {
        if (id !== this.runId) return;
        this.touch();
        events++;
        this.apply(event);
      },
      onClose: (err) => {
        if (id !== this.runId || this.stopped) return;
        this.watch = undefined;
        if (err) this.retry(err);
        else this.rewatch(id, Date.now() - opened < QUICK_CLOSE_MS && events === 0);
      },
    });
  }

  private apply(event: WatchEvent): void {
    const object = event.object as T & { code?: number };
    const store = this.store;
    if (!store) return;
    const meta = object?.metadata;
    switch (event.type) {
      case 'ADDED':
      case 'MODIFIED': {
        const key = keyOf(meta?.namespace, meta?.name);
        const known = store.has(key);
        const kept = this.kept(object);
        store.set(key, kept);
        this.resourceVersion = meta?.resourceVersion ?? this.resourceVersion;
        this.options.onChange?.(known ? 'update' : 'add', kept);
        break;
      }
      case 'DELETED': {
        store.delete(keyOf(meta?.namespace, meta?.name));
        this.resourceVersion = meta?.resourceVersion ?? this.resourceVersion;
        this.options.onChange?.('delete', this.kept(object));
        break;
      }
      case 'BOOKMARK':
        this.resourceVersion = meta?.resourceVersion ?? this.resourceVersion;
        break;
      case 'ERROR':
        this.watch?.abort();
        this.watch = undefined;
        // 410 Gone: the history since our resourceVersion was compacted; a fresh list is the normal way on.
        if (object?.code === 410) void this.run('expired');
        else this.retry(new ApiError(object?.code ?? 0, JSON.stringify(object), `watching ${this.options.name}`));
        break;
      default:
      // An event type this code does not know changes nothing it keeps.
    }
  }

  /**
   * Reopens a watch the server ended normally, from the last resourceVersion, without a list. A server (or proxy) that
   * keeps ending watches at once is met with growing pauses rather than a tight loop.
   */
  private rewatch(id: number, quick: boolean): void {
    this.quickCloses = quick ? this.quickCloses + 1 : 0;
    if (this.quickCloses === 0) {
      this.openWatch(id);
      return;
    }
    const delay = this.backoff(this.quickCloses);
    this.retryTimer = setTimeout(() => {
      this.retryTimer = undefined;
      if (id === this.runId && !this.stopped) this.openWatch(id);
    }, delay);
    this.retryTimer.unref();
  }

  private backoff(attempt: number): number {
    const initial = this.options.initialBackoffMs ?? 500;
    const max = this.options.maxBackoffMs ?? 30_000;
    return Math.min(max, initial * 2 ** Math.min(attempt - 1, 16)) * (0.8 + Math.random() * 0.4);
  }

  private retry(err: unknown): void {
    if (this.stopped || this.retryTimer) return;
    this.watch?.abort();
    this.watch = undefined;
    this.attempts++;
    const delay = this.backoff(this.attempts);
    if (this.failingSince === undefined) {
      this.failingSince = Date.now();
      this.options.logger.warn(
        { informer: this.options.name, retryInMs: Math.round(delay), maxBackoffMs: this.options.maxBackoffMs ?? 30_000, err: apiErrorMessage(err) },
        this.synced ? 'watch failed; serving the cache and retrying with backoff' : 'list failed; retrying with backoff',
      );
    }
    this.options.onRestart?.('error');
    this.retryTimer = setTimeout(() => {
      this.retryTimer = undefined;
      void this.run('retry');
    }, delay);
    this.retryTimer.unref();
  }
}
