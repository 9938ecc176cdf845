/** A task run now and then `intervalMs` after each run ends, one run at a time, until stopped. */
export class Repeating {
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  private running: Promise<void> | undefined;

  /** `run` must not throw: what goes wrong is its own to report. */
  constructor(
    private readonly run: () => Promise<void>,
    private readonly intervalMs: number,
  ) {}

  start(): void {
    this.running = this.next();
  }

  get isStopped(): boolean {
    return this.stopped;
  }

  /** Stops repeating, and waits for the run under way. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    await this.running;
  }

  private async next(): Promise<void> {
    await this.run();
    if (this.stopped) return;
    this.timer = setTimeout(() => (this.running = this.next()), this.intervalMs);
    this.timer.unref();
  }
}
