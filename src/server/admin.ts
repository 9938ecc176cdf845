/** The admin listener: Prometheus metrics and the health endpoints kubelet probes. */
import Fastify, { LogController, type FastifyInstance } from 'fastify';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import type { InjectorMetrics } from './metrics.js';

export interface Readiness {
  /** Empty when ready; otherwise what is still missing, e.g. "configuration not loaded". */
  notReadyBecause(): string[];
}

/** Plain HTTP, with the injector's pino logger. */
export type AdminApp = FastifyInstance<Server, IncomingMessage, ServerResponse, Logger>;

export function buildAdminApp(options: { metrics: InjectorMetrics; readiness: Readiness; logger: Logger }): AdminApp {
  const app = Fastify({
    loggerInstance: options.logger,
    logController: new LogController({ disableRequestLogging: true }),
  });
  const text = 'text/plain; charset=utf-8';

  app.get('/metrics', async (_request, reply) =>
    reply.type(options.metrics.contentType).send(await options.metrics.metrics()),
  );
  app.get('/ping', async (_request, reply) => reply.type(text).send('pong\n'));
  // Alive as long as the event loop answers: a hung process fails this and kubelet restarts it.
  app.get('/live', async (_request, reply) => reply.type(text).send('ok\n'));
  app.get('/ready', async (_request, reply) => {
    const missing = options.readiness.notReadyBecause();
    if (missing.length === 0) return reply.type(text).send('ok\n');
    return reply.code(503).type(text).send(`not ready: ${missing.join('; ')}\n`);
  });
  return app;
}
