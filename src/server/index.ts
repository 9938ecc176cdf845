/** The HTTPS front end: the webhook and admin listeners, their limits, metrics and logs, and graceful shutdown. */
export { startServer, parseListenAddress, ListenError, type ListenAddress, type RunningServer, type ServerOptions } from './start.js';
export { buildWebhookApp, DEFAULT_LIMITS, TLS_CIPHERS, type ServerLimits, type WebhookOptions } from './webhook.js';
export { InjectorMetrics, type RefusalReason } from './metrics.js';
export { createLogger, LOG_LEVELS, type LogFormat } from './logger.js';
