/** A clock the tests move themselves, for the caches' time to live and the read budgets: no test waits on time. */

/** A clock that stands still until moved; it starts well after zero, as a real one does. */
export function fakeClock(start = 1_000_000) {
  let now = start;
  return { now: () => now, advance: (ms: number) => void (now += ms) };
}

/** How many takes succeed in a row now. */
export function drain(take: () => boolean, most = 10_000): number {
  let taken = 0;
  while (taken < most && take()) taken++;
  return taken;
}
