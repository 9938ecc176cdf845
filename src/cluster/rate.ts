/**
 * Bounds on how often something may happen, for the API calls and Events that reviews cause: a token bucket, and the
 * budget of reads of the API server that reviews cause, shared fairly by the addresses they come from.
 *
 * Each address reads from a bucket of its own under a global one that several such buckets take to spend, so that an
 * address alone (kube-apiserver, nearly always) reads as fast as the whole budget once allowed and no address can take
 * more than its share. A read the API server answers 404 named an owner or namespace that does not exist, which the
 * pods a real API server sends seldom do, so it costs its address more on top (a debt it must repay before reading
 * again): an address forging reviews soon reads at a small part of its share, and the others keep theirs.
 */
import { LRUCache } from 'lru-cache';
import { entryBytes, MiB } from './bytes.js';

/** The time in milliseconds; tests pass a clock they move themselves. */
export type Clock = () => number;

/**
 * A token bucket: `take()` is true while the rate allows, the bucket refilling continuously at `perSecond` up to
 * `burst`. Anyone who can reach the webhook can send reviews, so what those reviews make the injector do against the
 * API server is bounded by one.
 */
export class TokenBucket {
  private tokens: number;
  private at: number;

  constructor(
    private readonly perSecond: number,
    private readonly burst: number,
    private readonly now: Clock = Date.now,
  ) {
    this.tokens = burst;
    this.at = now();
  }

  /** Whether `take` would succeed now. */
  has(): boolean {
    this.refill();
    return this.tokens >= 1;
  }

  take(): boolean {
    if (!this.has()) return false;
    this.tokens -= 1;
    return true;
  }

  /**
   * Takes `count` tokens whether or not they are there, down to a debt of one burst, which the refill repays before
   * `take` succeeds again: for a cost learnt only after what caused it was allowed.
   */
  charge(count: number): void {
    this.refill();
    this.tokens = Math.max(-this.burst, this.tokens - count);
  }

  private refill(): void {
    const now = this.now();
    // A clock set back adds nothing until it passes where it was; and an unbounded bucket never meets Infinity times 0.
    if (now <= this.at) return;
    this.tokens = Math.min(this.burst, this.tokens + ((now - this.at) / 1000) * this.perSecond);
    this.at = now;
  }
}

export interface ReadBudgetOptions {
  /** What one address may read a second (default 20): all addresses together may read ADDRESS_SHARES times this. */
  perSecond?: number;
  /** What one address may read at once (default 100), likewise. */
  burst?: number;
  /** Most bytes kept of the addresses' buckets (default ADDRESS_BYTES); the least recently seen are forgotten first. */
  maxBytes?: number;
  now?: Clock;
}

/** How many addresses reading at their whole share spend the global budget: one alone never can. */
export const ADDRESS_SHARES = 2;
/** What a read answered 404 costs its address on top of the read: enough that forging reviews soon stops paying. */
export const NOT_FOUND_COST = 10;
/** Room for the buckets of far more addresses than send reviews to a webhook, which are a cluster's API servers. */
export const ADDRESS_BYTES = MiB;

export class ReadBudget {
  private readonly all: TokenBucket;
  private readonly addresses: LRUCache<string, TokenBucket>;
  private readonly perSecond: number;
  private readonly burst: number;
  private readonly now: Clock;

  constructor(options: ReadBudgetOptions = {}) {
    this.perSecond = options.perSecond ?? 20;
    this.burst = options.burst ?? 100;
    this.now = options.now ?? Date.now;
    this.all = new TokenBucket(this.perSecond * ADDRESS_SHARES, this.burst * ADDRESS_SHARES, this.now);
    this.addresses = new LRUCache({ maxSize: options.maxBytes ?? ADDRESS_BYTES, sizeCalculation: (bucket, address) => entryBytes(address, bucket) });
  }

  /** Whether `client` may make one more read now; if so, it is counted. */
  take(client: string): boolean {
    let own = this.addresses.get(client);
    if (!own) {
      own = new TokenBucket(this.perSecond, this.burst, this.now);
      this.addresses.set(client, own);
    }
    // Its own share first, so that a read the global budget refuses costs the address nothing.
    if (!own.has() || !this.all.take()) return false;
    return own.take();
  }

  /** A read `client`'s review caused was answered 404: what it named does not exist. */
  notFound(client: string): void {
    this.addresses.get(client)?.charge(NOT_FOUND_COST);
  }

  /** What the addresses' buckets cost, as counted for the bound. */
  get bytes(): number {
    return this.addresses.calculatedSize;
  }
}
