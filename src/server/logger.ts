/** pino logging: JSON lines for machines, readable lines when a person watches a terminal. */
import { writeSync } from 'node:fs';
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

const STDOUT = 1;

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
  const lines = new GatheredLines(pino.destination({ dest: STDOUT, sync: false, maxLength: MAX_PENDING_LOG_BYTES, contentMode: 'buffer' }), STDOUT);
  const logger = pino(settings, lines);
  const line = infoLineText(settings.base, settings.timestamp);
  infoLines.set(logger, (fields, msg) => {
    if (logger.isLevelEnabled('info')) lines.write(line(fields, msg));
  });
  return logger;
}

/** The values a line written by an InfoLine may carry: what the webhook's per-admission line holds. */
export type LineValue = string | boolean | readonly string[] | undefined;

/** Writes `logger.info(fields, msg)`'s line; fields that are undefined are left out, as pino leaves them out. */
export type InfoLine = (fields: Readonly<Record<string, LineValue>>, msg: string) => void;

const infoLines = new WeakMap<Logger, InfoLine>();

/**
 * The info line of a logger, for a line written on every admission. For a JSON logger made by createLogger it writes
 * the very line pino writes (level, time, bindings, the fields in order, msg) without pino's general path, which
 * looks up serializers, formatters and hooks for each field: in the webhook under load that line cost a tenth of a
 * cached answer's CPU, and half as much written this way. For any other logger it is `logger.info`.
 */
export function infoLineOf(logger: Logger): InfoLine {
  return infoLines.get(logger) ?? ((fields, msg) => logger.info(fields, msg));
}

const MAX_KEY_TEXTS = 64;

/** The text of an info line for loggers with these bindings (`base`) and this time field, ending with a newline. */
export function infoLineText(base: Readonly<Record<string, string>>, time: () => string): (fields: Readonly<Record<string, LineValue>>, msg: string) => string {
  let bindings = '';
  for (const [key, value] of Object.entries(base)) bindings += `,${JSON.stringify(key)}:${JSON.stringify(value)}`;
  // The few keys such lines carry, as `,"key":`, made once each (up to a bound: any others are made every time).
  const keyTexts = new Map<string, string>();
  const keyText = (key: string): string => {
    let text = keyTexts.get(key);
    if (text !== undefined) return text;
    text = `,${JSON.stringify(key)}:`;
    if (keyTexts.size < MAX_KEY_TEXTS) keyTexts.set(key, text);
    return text;
  };
  return (fields, msg) => {
    let text = `{"level":30${time()}${bindings}`;
    for (const key in fields) {
      const value = fields[key];
      if (value === undefined) continue;
      text += keyText(key) + (typeof value === 'boolean' ? (value ? 'true' : 'false') : JSON.stringify(value));
    }
    return `${text},"msg":${JSON.stringify(msg)}}\n`;
  };
}

/**
 * How long a logged line may wait to be written with the lines after it. Each background write costs the event loop
 * about 10 µs however short it is, a twentieth of an injected admission's cost when every line had one; gathered over
 * this long, a busy webhook writes tens of lines at a time, and a person reading the log cannot tell the delay.
 */
const LOG_GATHER_MS = 20;

/** Bytes gathered before they are handed over sooner: a burst of lines is written in pieces of this size. */
const GATHER_BYTES = 64 * 1024;

/** How long the last lines may wait, at exit, for a log reader that does not take them (the pipe stays full). */
const EXIT_WRITE_PATIENCE_MS = 1000;

/**
 * Lines gathered for LOG_GATHER_MS, then handed to the destination as one write. Each line is copied into a buffer
 * outside the JavaScript heap as it comes: kept as strings for 20 ms, the lines outlived two young-generation
 * collections and were moved to the old generation, which made each collection of an injecting webhook half again as
 * long (0.83 ms against 0.56). The destination writes in the background. At exit the lines still gathered are
 * written synchronously, after what the destination still holds: handed to it, they started a background write that
 * the exiting process did not wait for, and under Node 24 the last lines were lost in a third of the runs.
 */
class GatheredLines {
  private pending = Buffer.allocUnsafe(GATHER_BYTES);
  private used = 0;
  private scheduled = false;

  constructor(
    private readonly destination: ReturnType<typeof pino.destination>,
    fd: number,
  ) {
    process.on('exit', () => {
      try {
        destination.flushSync();
        this.writeGatheredSync(fd);
      } catch {
        // Nobody reads the log any more (EPIPE) or it was never opened: there is nowhere left to write.
      }
    });
  }

  write(line: string): boolean {
    // A character takes at most three bytes in UTF-8 (a pair of surrogates, two characters, takes four).
    const most = line.length * 3;
    if (this.used + most > this.pending.length) {
      this.hand();
      if (most > this.pending.length) {
        this.destination.write(Buffer.from(line) as unknown as string);
        return true;
      }
    }
    this.used += this.pending.write(line, this.used);
    if (!this.scheduled) {
      this.scheduled = true;
      setTimeout(() => {
        this.scheduled = false;
        this.hand();
      }, LOG_GATHER_MS).unref();
    }
    return true;
  }

  flush(callback?: (err?: Error) => void): void {
    this.hand();
    this.destination.flush(callback);
  }

  /** Hands what is gathered to the destination, which keeps the buffer until it is written: the next lines get a new one. */
  private hand(): void {
    if (this.used === 0) return;
    const gathered = this.pending.subarray(0, this.used);
    this.pending = Buffer.allocUnsafe(GATHER_BYTES);
    this.used = 0;
    this.destination.write(gathered as unknown as string);
  }

  /**
   * Writes what is gathered to `fd` before returning. A reader that keeps the pipe full (EAGAIN) is waited for up to
   * EXIT_WRITE_PATIENCE_MS in all; what it has not taken by then is dropped, so that the process still exits.
   */
  private writeGatheredSync(fd: number): void {
    const pause = new Int32Array(new SharedArrayBuffer(4));
    let waited = 0;
    let offset = 0;
    while (offset < this.used) {
      try {
        offset += writeSync(fd, this.pending, offset, this.used - offset);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EAGAIN' || waited >= EXIT_WRITE_PATIENCE_MS) throw err;
        Atomics.wait(pause, 0, 0, 10);
        waited += 10;
      }
    }
    this.used = 0;
  }
}
