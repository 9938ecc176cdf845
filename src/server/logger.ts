/** pino logging: JSON lines for machines, readable lines when a person watches a terminal. */
import { pino, type Logger, type LevelWithSilent } from 'pino';

export const LOG_LEVELS: readonly LevelWithSilent[] = ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'];

export type LogFormat = 'json' | 'pretty' | 'auto';

/**
 * Lines waiting to be written beyond this are dropped rather than kept: a log reader that stops reading must not grow
 * the process without bound.
 */
const MAX_PENDING_LOG_BYTES = 16 * 1024 * 1024;

/** Longest message a line carries, and longest text in any of its fields; longer ones are cut and say by how much. */
const MAX_MESSAGE = 8 * 1024;
const MAX_TEXT = 2 * 1024;
/** Most items of a list, and keys of an object, a line shows; the rest are counted. */
const MAX_ITEMS = 32;
/** Deepest a field's value is shown; deeper values are named by their type. */
const MAX_DEPTH = 4;

const clipped = (text: string, max: number): string => (text.length > max ? `${text.slice(0, max)}... (${text.length - max} more characters)` : text);

/**
 * A field of a log line, held to the bounds above: whatever a review made the injector log, a line stays a few KiB, so
 * that no review can make one line (or the log) grow with its size.
 */
export function boundedField(value: unknown, depth = 0): unknown {
  if (typeof value === 'string') return clipped(value, MAX_TEXT);
  // An error is left to its serializer, which bounds what it makes of it.
  if (typeof value !== 'object' || value === null || value instanceof Error) return value;
  if (depth >= MAX_DEPTH) return Array.isArray(value) ? `(a list of ${value.length})` : '(an object)';
  if (Array.isArray(value)) {
    const shown = value.slice(0, MAX_ITEMS).map((item) => boundedField(item, depth + 1));
    return value.length > MAX_ITEMS ? [...shown, `and ${value.length - MAX_ITEMS} more`] : shown;
  }
  const out: Record<string, unknown> = {};
  let count = 0;
  for (const key in value) {
    if (!Object.hasOwn(value, key)) continue;
    if (++count > MAX_ITEMS) {
      out['...'] = 'more keys not shown';
      break;
    }
    out[clipped(key, 64)] = boundedField((value as Record<string, unknown>)[key], depth + 1);
  }
  return out;
}

export function createLogger(options: { level: LevelWithSilent; format?: LogFormat }): Logger {
  const format = options.format ?? 'auto';
  const pretty = format === 'pretty' || (format === 'auto' && process.stdout.isTTY === true);
  const settings = {
    level: options.level,
    base: { component: 'proxy-injector' },
    timestamp: pino.stdTimeFunctions.isoTime,
    serializers: { err: (err: Error) => boundedField(pino.stdSerializers.err(err)) },
    formatters: { log: (fields: Record<string, unknown>) => boundedField(fields, -1) as Record<string, unknown> },
    hooks: {
      logMethod(this: Logger, args: Parameters<Logger['info']>, method: (...args: unknown[]) => void) {
        method.apply(this, args.map((arg) => (typeof arg === 'string' ? clipped(arg, MAX_MESSAGE) : arg)));
      },
    },
  };
  if (pretty) {
    return pino({
      ...settings,
      transport: { target: 'pino-pretty', options: { colorize: true, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname,component' } },
    });
  }
  // Written in the background, so that a slow log reader never holds an admission; pino writes what is still pending
  // synchronously when the process exits.
  return pino(settings, pino.destination({ dest: 1, sync: false, maxLength: MAX_PENDING_LOG_BYTES }));
}
