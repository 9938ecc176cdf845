/**
 * Kubernetes Events on the workload a pod belongs to, written in the background so an admission never waits on them.
 * Repeats (the pods of one rollout) are folded into one Event whose count grows, as kubectl shows them.
 */
import { hostname } from 'node:os';
import type { CoreV1Event } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { apiErrorMessage, apiStatus } from './api.js';
import { entryBytes, MiB } from './bytes.js';
import type { ApiClient } from './client.js';
import type { ResolvedOwner } from './owners.js';
import { TokenBucket } from './rate.js';

export const EVENT_COMPONENT = 'linkerd-proxy-injector';

export interface EventSink {
  create(namespace: string, event: CoreV1Event): Promise<void>;
  /** Sets the count and last timestamp of an Event created before. */
  bump(namespace: string, name: string, count: number, last: Date): Promise<void>;
}

export interface PendingEvent {
  target: ResolvedOwner;
  type: 'Normal' | 'Warning';
  reason: string;
  message: string;
}

interface Series {
  /** Name of the Event object once created. */
  name: string | undefined;
  /** The name it is created with: chosen when the series begins, so that it is counted with the rest. */
  nextName: string;
  count: number;
  /** Occurrences not yet written. */
  unsent: number;
  first: Date;
  last: Date;
  event: PendingEvent;
  /** What it costs, as bytes.ts counts it (its key and itself). */
  bytes: number;
}

export interface EventRecorderOptions {
  sink: EventSink;
  logger: Logger;
  /** Repeats within this window update one Event (default 10 minutes). */
  windowMs?: number;
  /** Most series waiting to be written; beyond it new ones are dropped and counted (default 1000). */
  maxPending?: number;
  /**
   * Most bytes of series remembered for folding repeats (default EVENT_SERIES_BYTES). Beyond it the oldest already
   * written are forgotten: a repeat of one of those starts a new Event instead of raising a count, and memory stays
   * bounded under a churn of namespaces and workloads, whatever their names and messages.
   */
  maxBytes?: number;
  onDropped?: () => void;
  onWritten?: (ok: boolean) => void;
  /**
   * New Events allowed (default 10 a second, 100 at once); beyond them new ones are dropped and counted. Repeats fold
   * into Events already written, whatever this says.
   */
  newEvents?: TokenBucket;
}

/** Room to fold the repeats of every workload that a large cluster rolls out within the window. */
export const EVENT_SERIES_BYTES = 8 * MiB;

export class EventRecorder {
  /**
   * In insertion order, oldest first: what eviction relies on. A map of its own rather than an lru-cache, which would
   * forget a series whose occurrences are still waiting to be written; bounded in bytes all the same.
   */
  private readonly series = new Map<string, Series>();
  private seriesBytes = 0;
  /** Keys with occurrences to write, in order; a Set so that a busy series is queued once without a scan. */
  private readonly queue = new Set<string>();
  private draining: Promise<void> | undefined;
  private closed = false;
  private readonly newEvents: TokenBucket;

  constructor(private readonly options: EventRecorderOptions) {
    this.newEvents = options.newEvents ?? new TokenBucket(10, 100);
  }

  /** Queues an event; returns at once. */
  record(event: PendingEvent): void {
    if (this.closed || !event.target.name) return;
    const t = event.target;
    const key = [t.namespace, t.apiKind, t.name, t.uid ?? '', event.type, event.reason, event.message].join('\u0000');
    const now = new Date();
    let s = this.series.get(key);
    if (s && now.getTime() - s.first.getTime() > (this.options.windowMs ?? 600_000)) {
      this.forget(key, s);
      s = undefined;
    }
    if (!s) {
      const begun: Series = { name: undefined, nextName: eventName(t, now), count: 0, unsent: 0, first: now, last: now, event, bytes: 0 };
      begun.bytes = entryBytes(key, begun);
      if (this.queue.size >= (this.options.maxPending ?? 1000) || !this.makeRoom(begun.bytes) || !this.newEvents.take()) {
        this.options.onDropped?.();
        return;
      }
      s = begun;
      this.series.set(key, s);
      this.seriesBytes += s.bytes;
    }
    s.count++;
    s.unsent++;
    s.last = now;
    this.queue.add(key);
    this.draining ??= this.drain().finally(() => {
      this.draining = undefined;
    });
  }

  /** What the series remembered (written or waiting) cost, as counted for the bound. */
  get bytes(): number {
    return this.seriesBytes;
  }

  /** Writes what is queued, waiting at most `timeoutMs`, then refuses new events. */
  async close(timeoutMs = 2000): Promise<void> {
    this.closed = true;
    if (this.draining) await Promise.race([this.draining, new Promise((r) => setTimeout(r, timeoutMs).unref())]);
  }

  /**
   * Makes room for a series of `bytes`: forgets the oldest of those already written until a tenth of the room is free
   * besides (so the cost is paid once per many insertions, not scanned on each). False when the series still waiting to
   * be written leave too little.
   */
  private makeRoom(bytes: number): boolean {
    const max = this.options.maxBytes ?? EVENT_SERIES_BYTES;
    if (this.seriesBytes + bytes <= max) return true;
    // One larger than all the room would only push out every other for nothing.
    if (bytes > max) return false;
    for (const [key, s] of this.series) {
      if (this.seriesBytes + bytes <= max - max / 10) break;
      if (s.unsent === 0) this.forget(key, s);
    }
    return this.seriesBytes + bytes <= max;
  }

  private forget(key: string, s: Series): void {
    this.series.delete(key);
    this.seriesBytes -= s.bytes;
  }

  private async drain(): Promise<void> {
    for (let key = first(this.queue); key !== undefined; key = first(this.queue)) {
      this.queue.delete(key);
      const s = this.series.get(key);
      if (!s || s.unsent === 0) continue;
      const sending = s.unsent;
      s.unsent = 0;
      const { target } = s.event;
      try {
        if (s.name) {
          await this.options.sink.bump(target.namespace, s.name, s.count, s.last);
        } else {
          const name = s.nextName;
          await this.options.sink.create(target.namespace, {
            metadata: { name, namespace: target.namespace },
            involvedObject: {
              apiVersion: target.apiVersion,
              kind: target.apiKind,
              name: target.name,
              namespace: target.namespace,
              ...(target.uid && { uid: target.uid }),
            },
            reason: s.event.reason,
            message: s.event.message,
            type: s.event.type,
            source: { component: EVENT_COMPONENT },
            reportingComponent: EVENT_COMPONENT,
            reportingInstance: hostname(),
            firstTimestamp: s.first,
            lastTimestamp: s.last,
            count: s.count,
          });
          s.name = name;
        }
        this.options.onWritten?.(true);
      } catch (err) {
        if (s.name && apiStatus(err) === 404) {
          // The Event expired (the API server deletes them after a while): write a new one next.
          s.name = undefined;
          s.nextName = eventName(target, s.first);
          s.unsent += sending;
          this.queue.add(key);
          continue;
        }
        this.options.onWritten?.(false);
        this.options.logger.warn(
          { target: `${target.apiKind}/${target.namespace}/${target.name}`, reason: s.event.reason, err: apiErrorMessage(err), occurrences: sending },
          'could not record event',
        );
      }
    }
  }
}

const first = (set: Set<string>): string | undefined => set.values().next().value;

/** A new name for an Event on `target`, as the API's clients make them: the object's name and a unique suffix. */
const eventName = (target: ResolvedOwner, first: Date): string => `${target.name}.${(first.getTime() * 1e6 + Math.floor(Math.random() * 1e6)).toString(16)}`;

/** Writes Events through the core/v1 API, each call bounded by `timeoutMs`. */
export function apiEventSink(client: ApiClient, timeoutMs = 5000): EventSink {
  const events = (namespace: string): string => `/api/v1/namespaces/${encodeURIComponent(namespace)}/events`;
  return {
    async create(namespace, event) {
      const body = { apiVersion: 'v1', kind: 'Event', ...event };
      await client.request('POST', events(namespace), { what: 'creating an event', timeoutMs, body });
    },
    async bump(namespace, name, count, last) {
      await client.request('PATCH', `${events(namespace)}/${encodeURIComponent(name)}`, {
        what: 'updating an event',
        timeoutMs,
        body: { count, lastTimestamp: last.toISOString() },
        contentType: 'application/merge-patch+json',
      });
    },
  };
}
