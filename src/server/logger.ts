/** pino logging: JSON lines for machines, readable lines when a person watches a terminal. */
import { pino, type Logger, type LevelWithSilent } from 'pino';

export const LOG_LEVELS: readonly LevelWithSilent[] = ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'];

export type LogFormat = 'json' | 'pretty' | 'auto';

/**
 * pino's ISO timestamp, formatted once per millisecond: a busy webhook writes several lines within one, and formatting
 * a Date was a tenth of what a line costs.
 */
export function isoTimeEachMillisecond(): () => string {
  let at = -1;
  let text = '';
  return () => {
    const now = Date.now();
    if (now !== at) {
      at = now;
      text = `,"time":"${new Date(now).toISOString()}"`;
    }
    return text;
  };
}

/**
 * Lines waiting to be written beyond this are dropped rather than kept: a log reader that stops reading must not grow
 * the process without bound.
 */
const MAX_PENDING_LOG_BYTES = 16 * 1024 * 1024;

export function createLogger(options: { level: LevelWithSilent; format?: LogFormat }): Logger {
  const format = options.format ?? 'auto';
  const pretty = format === 'pretty' || (format === 'auto' && process.stdout.isTTY === true);
  const settings = { level: options.level, base: { component: 'proxy-injector' }, timestamp: isoTimeEachMillisecond() };
  if (pretty) {
    return pino({
      ...settings,
      transport: { target: 'pino-pretty', options: { colorize: true, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname,component' } },
    });
  }
  return pino(settings, new GatheredLines(pino.destination({ dest: 1, sync: false, maxLength: MAX_PENDING_LOG_BYTES })));
}

/**
 * How long a logged line may wait to be written with the lines after it. Each background write costs the event loop
 * about 10 µs however short it is, a twentieth of an injected admission's cost when every line had one; gathered over
 * this long, a busy webhook writes tens of lines at a time, and a person reading the log cannot tell the delay.
 */
const LOG_GATHER_MS = 20;

/**
 * Lines gathered for LOG_GATHER_MS, then handed to the destination as one write. The destination writes in the
 * background and synchronously at exit; lines still held here at exit are handed to it first.
 */
class GatheredLines {
  private pending: string[] = [];
  private scheduled = false;

  constructor(private readonly destination: ReturnType<typeof pino.destination>) {
    process.on('exit', () => {
      this.hand();
      try {
        destination.flushSync();
      } catch {
        // Nobody reads the log any more (EPIPE) or it was never opened: there is nowhere left to write.
      }
    });
  }

  write(line: string): boolean {
    this.pending.push(line);
    if (!this.scheduled) {
      this.scheduled = true;
      setTimeout(() => this.hand(), LOG_GATHER_MS).unref();
    }
    return true;
  }

  flush(callback?: (err?: Error) => void): void {
    this.hand();
    this.destination.flush(callback);
  }

  private hand(): void {
    this.scheduled = false;
    if (this.pending.length === 0) return;
    const text = this.pending.length === 1 ? (this.pending[0] as string) : this.pending.join('');
    this.pending = [];
    this.destination.write(text);
  }
}
