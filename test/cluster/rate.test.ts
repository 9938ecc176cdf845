/**
 * The token bucket that bounds what reviews make the injector do, and the budget of reads shared by client address, on
 * a clock the tests move.
 */
import { describe, expect, it } from 'vitest';
import { ADDRESS_SHARES, NOT_FOUND_COST, ReadBudget, TokenBucket, type ReadBudgetOptions } from '../../src/cluster/rate.js';
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

describe('ReadBudget', () => {
  const budget = (clock: ReturnType<typeof fakeClock>, options: ReadBudgetOptions = {}) => new ReadBudget({ now: clock.now, ...options });

  it('lets an address alone read as the one shared budget did: a burst of 100, then 20 a second', () => {
    const clock = fakeClock();
    const reads = budget(clock);
    expect(drain(() => reads.take('10.0.0.1'))).toBe(100);
    clock.advance(1000);
    expect(drain(() => reads.take('10.0.0.1'))).toBe(20);
    clock.advance(60_000);
    expect(drain(() => reads.take('10.0.0.1'))).toBe(100);
  });

  it('leaves another address its whole share after one has spent its own, and bounds them all together', () => {
    const clock = fakeClock();
    const reads = budget(clock);
    expect(drain(() => reads.take('10.0.0.66'))).toBe(100);
    expect(drain(() => reads.take('10.0.0.1'))).toBe(100);
    // Two shares spend the global budget: a third address gets nothing until it refills, and then only that refill.
    expect(drain(() => reads.take('10.0.0.2'))).toBe(0);
    clock.advance(1000);
    const addresses = Array.from({ length: 10 }, (_, i) => `10.0.1.${i}`);
    expect(addresses.reduce((sum, address) => sum + drain(() => reads.take(address)), 0)).toBe(20 * ADDRESS_SHARES);
  });

  it('a read the global budget refuses costs the address nothing', () => {
    const clock = fakeClock();
    const reads = budget(clock);
    drain(() => reads.take('a'));
    drain(() => reads.take('b'));
    for (let i = 0; i < 1000; i++) expect(reads.take('c')).toBe(false);
    clock.advance(1000);
    // The global refill, all of it: c's own bucket is still full.
    expect(drain(() => reads.take('c'))).toBe(20 * ADDRESS_SHARES);
  });

  it('makes reads answered 404 cost their address more: a forging address is held back, the others are not', () => {
    const clock = fakeClock();
    const reads = budget(clock);
    // A burst of reads, all answered 404 after they were made; the same burst, found.
    expect(drain(() => reads.take('forger'))).toBe(100);
    for (let i = 0; i < 100; i++) reads.notFound('forger');
    expect(drain(() => reads.take('honest'))).toBe(100);
    clock.advance(2000);
    expect(drain(() => reads.take('forger'))).toBe(0);
    expect(drain(() => reads.take('honest'))).toBe(40);
    // Over a minute of asking every 10 ms, an address whose every read is answered 404 reads a small part of its share.
    let forged = 0;
    for (let ms = 0; ms < 60_000; ms += 10) {
      clock.advance(10);
      if (reads.take('forger')) {
        forged++;
        reads.notFound('forger');
      }
    }
    expect(forged).toBeGreaterThan(0);
    expect(forged).toBeLessThanOrEqual(Math.ceil((60 * 20) / (1 + NOT_FOUND_COST)));
  });

  it('keeps the buckets of the addresses within its bytes, the least recently seen forgotten first', () => {
    const clock = fakeClock();
    const maxBytes = 64 * 1024;
    const reads = budget(clock, { maxBytes });
    drain(() => reads.take('10.0.0.66'));
    let largest = 0;
    for (let i = 0; i < 5000; i++) {
      reads.take(`fd00::${i.toString(16)}:${'f'.repeat(i % 40)}`);
      // A forger that keeps asking stays remembered, and refused.
      expect(reads.take('10.0.0.66')).toBe(false);
      largest = Math.max(largest, reads.bytes);
    }
    expect(largest).toBeLessThanOrEqual(maxBytes);
    expect(largest).toBeGreaterThan(maxBytes / 2);
  });
});
