/** Healing on an interval: the first scan only logs its plan; then restarts within the hourly bound and the window. */
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { HealLoop, inWindow, parseHealWindow } from '../../src/cluster/index.js';
import { CONFIG } from '../support/running-pods.js';
import { clusters, start, workload } from './fake-workloads.js';

afterEach(async () => {
  await Promise.all(clusters.splice(0).map((c) => c.api.close()));
});

/** A loop over a fake cluster of three drifted Deployments, its log kept, at the time `clock.now` says. */
async function loopOver(options: { maxRestartsPerHour?: number; window?: string } = {}) {
  const fake = await start([workload('Deployment', 'shop', 'a'), workload('Deployment', 'shop', 'b'), workload('Deployment', 'shop', 'c')]);
  const lines: Array<{ msg: string }> = [];
  const logger = pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line) as { msg: string }) });
  const clock = { now: new Date('2026-11-29T02:00:00Z') };
  const loop = new HealLoop({
    cluster: fake.cluster(),
    config: { config: CONFIG, source: 'test' },
    logger,
    intervalMs: 60_000,
    maxRestartsPerHour: options.maxRestartsPerHour ?? 10,
    ...(options.window && { window: parseHealWindow(options.window) }),
    pollMs: 10,
    now: () => clock.now,
  });
  return { fake, loop, lines, clock };
}

describe('the heal loop', () => {
  it('logs its first plan and restarts nothing until the next scan', async () => {
    const { fake, loop, lines } = await loopOver();
    await loop.scan();
    expect(fake.patches).toEqual([]);
    expect(lines.map((l) => l.msg)).toEqual([
      'plan 1: restart deployment/a in shop: 2 of 2 pods drifted (proxy_config)',
      'plan 2: restart deployment/b in shop: 2 of 2 pods drifted (proxy_config)',
      'plan 3: restart deployment/c in shop: 2 of 2 pods drifted (proxy_config)',
      'the first scan only logs its plan: nothing is restarted before the next scan',
    ]);
    await loop.scan();
    expect(fake.patches).toEqual(['Deployment/shop/a', 'Deployment/shop/b', 'Deployment/shop/c']);
  });

  it('restarts no more workloads in an hour than its bound', async () => {
    const { fake, loop, lines, clock } = await loopOver({ maxRestartsPerHour: 2 });
    await loop.scan();
    await loop.scan();
    expect(fake.patches).toEqual(['Deployment/shop/a', 'Deployment/shop/b']);
    clock.now = new Date('2026-11-29T02:59:00Z');
    await loop.scan();
    expect(fake.patches).toHaveLength(2);
    expect(lines.at(-1)?.msg).toBe('the restarts of the last hour reached the bound: nothing more is restarted now');
    clock.now = new Date('2026-11-29T03:00:01Z');
    await loop.scan();
    expect(fake.patches).toEqual(['Deployment/shop/a', 'Deployment/shop/b', 'Deployment/shop/c']);
  });

  it('restarts only within its window', async () => {
    const { fake, loop, lines, clock } = await loopOver({ window: '03:00-05:00' });
    await loop.scan();
    await loop.scan();
    expect(fake.patches).toEqual([]);
    expect(lines.at(-1)?.msg).toBe('outside the heal window: nothing is restarted now');
    clock.now = new Date('2026-11-29T03:30:00Z');
    await loop.scan();
    expect(fake.patches).toHaveLength(3);
  });

  it('reads a window of UTC hours, across midnight too', () => {
    const at = (time: string) => new Date(`2026-11-29T${time}:00Z`);
    const night = parseHealWindow('22:00-02:00');
    expect([at('21:59'), at('22:00'), at('01:59'), at('02:00')].map((t) => inWindow(night, t))).toEqual([false, true, true, false]);
    const day = parseHealWindow('09:30-17:00');
    expect([at('09:29'), at('09:30'), at('16:59'), at('17:00')].map((t) => inWindow(day, t))).toEqual([false, true, true, false]);
    expect(inWindow(undefined, at('12:00'))).toBe(true);
    expect(() => parseHealWindow('9-17')).toThrow('"9-17": expected HH:MM-HH:MM (UTC), e.g. 01:00-05:00');
    expect(() => parseHealWindow('24:00-01:00')).toThrow(/expected HH:MM-HH:MM/);
    expect(() => parseHealWindow('05:00-05:00')).toThrow('"05:00-05:00": the window is empty');
  });
});
