/** pino logging: JSON lines for machines, readable lines when a person watches a terminal. */
import { pino, type Logger, type LevelWithSilent } from 'pino';

export const LOG_LEVELS: readonly LevelWithSilent[] = ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'];

export type LogFormat = 'json' | 'pretty' | 'auto';

/**
 * Lines waiting to be written beyond this are dropped rather than kept: a log reader that stops reading must not grow
 * the process without bound.
 */
const MAX_PENDING_LOG_BYTES = 16 * 1024 * 1024;

export function createLogger(options: { level: LevelWithSilent; format?: LogFormat }): Logger {
  const format = options.format ?? 'auto';
  const pretty = format === 'pretty' || (format === 'auto' && process.stdout.isTTY === true);
  const settings = { level: options.level, base: { component: 'proxy-injector' }, timestamp: pino.stdTimeFunctions.isoTime };
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
