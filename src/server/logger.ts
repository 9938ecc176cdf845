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

export function createLogger(options: { level: LevelWithSilent; format?: LogFormat }): Logger {
  const format = options.format ?? 'auto';
  const pretty = format === 'pretty' || (format === 'auto' && process.stdout.isTTY === true);
  return pino({
    level: options.level,
    base: { component: 'proxy-injector' },
    timestamp: isoTimeEachMillisecond(),
    ...(pretty && {
      transport: { target: 'pino-pretty', options: { colorize: true, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname,component' } },
    }),
  });
}
