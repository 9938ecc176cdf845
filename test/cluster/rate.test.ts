/** The token bucket that bounds what reviews make the injector do, on a clock the tests move. */
import { describe, expect, it } from 'vitest';
import { TokenBucket } from '../../src/cluster/rate.js';
import { drain, fakeClock } from './clock.js';

describe('TokenBucket', () => {
  it('allows a burst at once, then nothing until it refills', () => {
    const clock = fakeClock();
    const bucket = new TokenBucket(20, 100, clock.now);
    expect(drain(() => bucket.take())).toBe(100);
    expect(bucket.take()).toBe(false);
  });

  it('refills at its rate, continuously', () => {
    const clock = fakeClock();
    const bucket = new TokenBucket(20, 100, clock.now);
    drain(() => bucket.take());
    clock.advance(49);
    expect(bucket.take()).toBe(false);
    clock.advance(1);
    expect(drain(() => bucket.take())).toBe(1);
    clock.advance(1000);
    expect(drain(() => bucket.take())).toBe(20);
    clock.advance(250);
    expect(drain(() => bucket.take())).toBe(5);
  });

  it('never holds more than its burst, however long it was idle', () => {
    const clock = fakeClock();
    const bucket = new TokenBucket(20, 100, clock.now);
    bucket.take();
    clock.advance(3_600_000);
    expect(drain(() => bucket.take())).toBe(100);
  });

  it('a clock set back adds nothing', () => {
    const clock = fakeClock();
    const bucket = new TokenBucket(20, 100, clock.now);
    drain(() => bucket.take());
    clock.advance(-60_000);
    expect(bucket.take()).toBe(false);
    clock.advance(60_050);
    expect(drain(() => bucket.take())).toBe(1);
  });

  it('a charge may run it into debt, down to one burst, which the refill repays before anything is taken again', () => {
    const clock = fakeClock();
    const bucket = new TokenBucket(20, 100, clock.now);
    bucket.charge(10);
    expect(drain(() => bucket.take())).toBe(90);
    bucket.charge(1000);
    // A debt of one burst: 100 tokens to repay, at 20 a second, before the first is there again.
    clock.advance(5000);
    expect(bucket.take()).toBe(false);
    clock.advance(50);
    expect(drain(() => bucket.take())).toBe(1);
  });

  it('an unbounded bucket never refuses', () => {
    const clock = fakeClock();
    const bucket = new TokenBucket(Infinity, Infinity, clock.now);
    expect(drain(() => bucket.take())).toBe(10_000);
    bucket.charge(1e9);
    clock.advance(1);
    expect(bucket.take()).toBe(true);
  });
});
