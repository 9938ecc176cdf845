/** A bound on how often something may happen, for the API calls and Events that reviews cause. */

/**
 * A token bucket: `take()` is true while the rate allows, the bucket refilling continuously at `perSecond` up to
 * `burst`. Anyone who can reach the webhook can send reviews, so what those reviews make the injector do against the
 * API server is bounded by one.
 */
export class TokenBucket {
  private tokens: number;
  private at = Date.now();

  constructor(
    private readonly perSecond: number,
    private readonly burst: number,
  ) {
    this.tokens = burst;
  }

  take(): boolean {
    const now = Date.now();
    this.tokens = Math.min(this.burst, this.tokens + ((now - this.at) / 1000) * this.perSecond);
    this.at = now;
    if (this.tokens < 1) return false;
    this.tokens -= 1;
    return true;
  }
}
