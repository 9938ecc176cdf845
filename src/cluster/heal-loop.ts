/**
 * Healing on an interval (`heal --every`, the chart's heal Deployment): each scan plans and logs the plan, and restarts
 * what it may, within a bound of restarts per hour and a window of hours. The first scan only logs its plan, so that
 * nothing is restarted that a plan in the log did not show first.
 */
import type { Logger } from 'pino';
import { apiErrorMessage } from './api.js';
import { planHeal, runHeal, type HealOptions, type HealOutcome, type HealPlan, type HealStep } from './heal.js';
import type { ClusterConnection } from './kubeconfig.js';
import { Repeating } from './repeating.js';

/** Hours of the day, in UTC, as minutes since midnight; `end` before `start` wraps past midnight. */
export interface HealWindow {
  start: number;
  end: number;
}

/** A window written `HH:MM-HH:MM` (UTC), or an Error saying what is wrong with it. */
export function parseHealWindow(text: string): HealWindow {
  const m = /^([01]\d|2[0-3]):([0-5]\d)-([01]\d|2[0-3]):([0-5]\d)$/.exec(text);
  if (!m) throw new Error(`${JSON.stringify(text)}: expected HH:MM-HH:MM (UTC), e.g. 01:00-05:00`);
  const [start, end] = [Number(m[1]) * 60 + Number(m[2]), Number(m[3]) * 60 + Number(m[4])];
  if (start === end) throw new Error(`${JSON.stringify(text)}: the window is empty`);
  return { start, end };
}

export function inWindow(window: HealWindow | undefined, at: Date): boolean {
  if (!window) return true;
  const minute = at.getUTCHours() * 60 + at.getUTCMinutes();
  return window.start < window.end ? minute >= window.start && minute < window.end : minute >= window.start || minute < window.end;
}

export interface HealLoopOptions extends HealOptions {
  cluster: ClusterConnection;
  logger: Logger;
  intervalMs: number;
  maxRestartsPerHour: number;
  window?: HealWindow;
  /** As runHeal's; by default its own. */
  pollMs?: number;
  rolloutTimeoutMs?: number;
  now?: () => Date;
  onPlan?: (plan: HealPlan) => void;
  onOutcome?: (step: HealStep, outcome: HealOutcome) => Promise<void>;
  onScanFailed?: () => void;
}

const HOUR_MS = 3_600_000;

export class HealLoop {
  private first = true;
  /** When each restart of the last hour began. */
  private restarts: number[] = [];
  private readonly repeating: Repeating;

  constructor(private readonly options: HealLoopOptions) {
    this.repeating = new Repeating(() => this.tick(), options.intervalMs);
  }

  start(): void {
    this.repeating.start();
  }

  /** Stops scanning; a heal under way finishes the workload it is waiting on first. */
  stop(): Promise<void> {
    return this.repeating.stop();
  }

  private async tick(): Promise<void> {
    try {
      await this.scan();
    } catch (err) {
      this.options.onScanFailed?.();
      this.options.logger.warn({ err: apiErrorMessage(err) }, 'could not plan the heal; trying again at the next scan');
    }
  }

  /** One scan: the plan, logged, and what of it may be done now. */
  async scan(): Promise<void> {
    const { logger } = this.options;
    const plan = await planHeal(this.options.cluster, this.options);
    this.options.onPlan?.(plan);
    logPlan(logger, plan);
    if (this.first) {
      this.first = false;
      if (plan.steps.length > 0) logger.info('the first scan only logs its plan: nothing is restarted before the next scan');
      return;
    }
    if (plan.blocked || plan.steps.length === 0) return;
    const now = (this.options.now ?? (() => new Date()))();
    if (!inWindow(this.options.window, now)) {
      logger.info({ steps: plan.steps.length }, 'outside the heal window: nothing is restarted now');
      return;
    }
    this.restarts = this.restarts.filter((t) => now.getTime() - t < HOUR_MS);
    const allowed = this.options.maxRestartsPerHour - this.restarts.length;
    if (allowed <= 0) {
      logger.info({ steps: plan.steps.length, maxRestartsPerHour: this.options.maxRestartsPerHour }, 'the restarts of the last hour reached the bound: nothing more is restarted now');
      return;
    }
    await runHeal(this.options.cluster, { ...plan, steps: plan.steps.slice(0, allowed) }, {
      ...this.options,
      onOutcome: async (step, outcome) => {
        this.restarts.push(now.getTime());
        await this.options.onOutcome?.(step, outcome);
      },
    });
  }
}

/** The plan in the log: a line for each step, what is left alone, and what blocks it. */
function logPlan(logger: Logger, plan: HealPlan): void {
  if (plan.blocked) logger.warn({ ...plan.blocked }, `nothing will be restarted: ${plan.blocked.name ? `${plan.blocked.kind.toLowerCase()}/${plan.blocked.name} in ${plan.blocked.namespace}: ` : ''}${plan.blocked.why}`);
  plan.steps.forEach((s, i) => logger.info({ ...s, order: i + 1 }, `plan ${i + 1}: restart ${s.kind.toLowerCase()}/${s.name} in ${s.namespace}: ${s.why}`));
  for (const u of plan.untouched) logger.info({ ...u }, `plan: leave ${u.kind.toLowerCase()}/${u.name} in ${u.namespace}: ${u.why}`);
}
