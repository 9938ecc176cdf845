/** A bound on how often something may happen, for the API calls and Events that reviews cause. */

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

  take(): boolean {
    this.refill();
    if (this.tokens < 1) return false;
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
