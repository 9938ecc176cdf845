/**
 * A watch-fed cache that survives errors: client-node's ListWatch stops for good on any error but a 410, so this
 * restarts it with backoff, re-lists into a fresh cache when the watch has been silent too long, and says when the
 * first list has arrived. An outage is logged when it starts and when it ends, never per attempt: an API server down
 * for an hour must not flood the log (the attempts are counted through `onRestart`).
 */
import { ListWatch, Watch, type KubeConfig, type KubernetesListObject, type KubernetesObject } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { apiErrorMessage } from './api.js';

export interface InformerOptions<T extends KubernetesObject> {
  /** For logs and metrics, e.g. "namespaces". */
  name: string;
  kubeConfig: KubeConfig;
  /** The collection's API path, e.g. /api/v1/namespaces; must match what `list` lists. */
  path: string;
  list: () => Promise<KubernetesListObject<T>>;
  fieldSelector?: string;
  logger: Logger;
  /** Called for every add, update and delete (and for the items of each fresh list). */
  onChange?: (type: 'add' | 'update' | 'delete', object: T) => void;
  /** Told of each restart, with why. */
  onRestart?: (reason: 'error' | 'watchdog') => void;
  initialBackoffMs?: number;
  maxBackoffMs?: number;
  /** Re-list when nothing (no event, no reconnect) has arrived for this long (default 10 minutes). */
  watchdogMs?: number;
}

export class ResilientInformer<T extends KubernetesObject> {
  private current: ListWatch<T> | undefined;
  private synced = false;
  private stopped = false;
  private attempts = 0;
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
    return this.current?.get(name, namespace);
  }

  list(namespace?: string): readonly T[] {
    return this.current?.list(namespace) ?? [];
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.retryTimer);
    clearInterval(this.watchdogTimer);
    const lw = this.current;
    if (lw) await lw.stop();
  }

  /**
   * Lists into a new ListWatch and swaps it in only once its list has arrived, so a restart never leaves the cache
   * empty; the old watch is stopped after the swap.
   */
  private async run(why: 'start' | 'retry' | 'watchdog'): Promise<void> {
    if (this.stopped) return;
    this.lastActivity = Date.now();
    const o = this.options;
    const lw = new ListWatch<T>(o.path, new Watch(o.kubeConfig), o.list, false, undefined, o.fieldSelector);
    let failed: unknown;
    const touch = (): void => {
      this.lastActivity = Date.now();
    };
    lw.on('add', (obj) => (touch(), o.onChange?.('add', obj)));
    lw.on('update', (obj) => (touch(), o.onChange?.('update', obj)));
    lw.on('delete', (obj) => (touch(), o.onChange?.('delete', obj)));
    lw.on('connect', touch);
    lw.on('error', (err) => {
      failed = err;
      if (this.current === lw || this.current === undefined) this.retry(lw, err);
    });
    try {
      await lw.start();
    } catch (err) {
      failed ??= err;
    }
    if (failed !== undefined || this.stopped) {
      if (failed !== undefined && this.current !== lw) this.retry(lw, failed);
      return;
    }
    const old = this.current;
    this.current = lw;
    if (this.failingSince !== undefined) {
      o.logger.info(
        { informer: o.name, attempts: this.attempts, downMs: Date.now() - this.failingSince, objects: lw.list().length },
        'watch resumed',
      );
      this.failingSince = undefined;
    }
    this.attempts = 0;
    if (old && old !== lw) void old.stop();
    if (!this.synced) {
      this.synced = true;
      o.logger.info({ informer: o.name, objects: lw.list().length, why }, 'cache synced');
      this.syncWaiters.splice(0).forEach((wake) => wake());
    }
  }

  private retry(lw: ListWatch<T>, err: unknown): void {
    if (this.stopped || this.retryTimer) return;
    void lw.stop();
    this.attempts++;
    const initial = this.options.initialBackoffMs ?? 500;
    const max = this.options.maxBackoffMs ?? 30_000;
    const delay = Math.min(max, initial * 2 ** Math.min(this.attempts - 1, 16)) * (0.8 + Math.random() * 0.4);
    if (this.failingSince === undefined) {
      this.failingSince = Date.now();
      this.options.logger.warn(
        { informer: this.options.name, retryInMs: Math.round(delay), maxBackoffMs: max, err: apiErrorMessage(err) },
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
