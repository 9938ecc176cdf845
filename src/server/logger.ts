/** pino logging: JSON lines for machines, readable lines when a person watches a terminal. */
import { pino, type Logger, type LevelWithSilent } from 'pino';

export const LOG_LEVELS: readonly LevelWithSilent[] = ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'];

export type LogFormat = 'json' | 'pretty' | 'auto';

export function createLogger(options: { level: LevelWithSilent; format?: LogFormat }): Logger {
  const format = options.format ?? 'auto';
  const pretty = format === 'pretty' || (format === 'auto' && process.stdout.isTTY === true);
  return pino({
    level: options.level,
    base: { component: 'proxy-injector' },
    timestamp: pino.stdTimeFunctions.isoTime,
    ...(pretty && {
      transport: { target: 'pino-pretty', options: { colorize: true, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname,component' } },
    }),
  });
}
