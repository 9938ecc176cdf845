/**
 * While the webhook denies every pod that asks for injection, it stays ready (see docs/operations.md#health) and says
 * so instead: on /ready, in the gauge `proxy_inject_denying_injection`, and in a log line repeated on an interval.
 */
import type { Logger } from 'pino';
import type { AdmissionFailure } from '../admission/index.js';
import { clip, oneLine } from '../engine/index.js';

/** Why every pod that asks for injection is denied now (injectionDenial), or undefined while they are injected. */
export type DenialSource = () => AdmissionFailure | undefined;

/** Most characters of a denial's reason shown: it comes from the configuration, whose errors can quote its lines. */
const MAX_REASON = 512;

/** A denial in one line: its code and the reason the API server is given. */
export function denialText(denial: AdmissionFailure): string {
  return `${denial.code}: ${clip(oneLine(denial.message), MAX_REASON)}`;
}

export interface DenialLogOptions {
  denial: DenialSource;
  logger: Logger;
  /** How often the denial is looked at (ms): a change is logged within this. */
  checkMs?: number;
  /** How often a denial that holds is logged again (ms). */
  repeatMs?: number;
}

/**
 * Logs a warning when the webhook starts denying every pod that asks for injection, again every `repeatMs` while it
 * does (a line logged once scrolls away while pods keep being refused), and a line when it stops.
 */
export class DenialLog {
  private readonly checkMs: number;
  private readonly repeatMs: number;
  private logged: { denial: AdmissionFailure; at: number } | undefined;
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly options: DenialLogOptions) {
    this.checkMs = options.checkMs ?? 5_000;
    this.repeatMs = options.repeatMs ?? 60_000;
  }

  /** Looks every `checkMs`, the first time after `checkMs`: a configuration still loading at start is no denial. */
  start(): void {
    this.timer ??= setInterval(() => this.check(), this.checkMs);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  check(now = Date.now()): void {
    const denial = this.options.denial();
    const { logger } = this.options;
    const last = this.logged;
    if (!denial) {
      if (last) logger.info({ code: last.denial.code }, 'injecting again: pods that ask for injection are no longer denied');
      this.logged = undefined;
      return;
    }
    const changed = !last || last.denial.code !== denial.code || last.denial.message !== denial.message;
    if (!changed && now - last.at < this.repeatMs) return;
    const details = { code: denial.code, ...(denial.detail !== undefined && { detail: denial.detail }) };
    logger.warn(details, `denying injection: every pod that asks for it is refused (${denialText(denial)})`);
    this.logged = { denial, at: now };
  }
}
