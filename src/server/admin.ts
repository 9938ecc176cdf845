/** The admin listener: Prometheus metrics and the health endpoints kubelet probes. */
import { createServer, type Server } from 'node:http';
import type { Logger } from 'pino';
import { closeServer, listen, pathOf, sendText, TEXT, type HttpApp, type RequestHandler } from './http.js';
import type { InjectorMetrics } from './metrics.js';

export interface Readiness {
  /** Empty when ready; otherwise what is still missing, e.g. "configuration not loaded". */
  notReadyBecause(): string[];
}

/** Plain HTTP: GET (or HEAD) /metrics, /ping, /live and /ready. */
export type AdminApp = HttpApp<Server>;

export function buildAdminApp(options: { metrics: InjectorMetrics; readiness: Readiness; logger: Logger }): AdminApp {
  const { metrics, readiness, logger } = options;

  const route = async (path: string): Promise<{ status: number; type?: string; body: string }> => {
    switch (path) {
      case '/metrics':
        return { status: 200, type: metrics.contentType, body: await metrics.metrics() };
      case '/ping':
        return { status: 200, body: 'pong\n' };
      // Alive as long as the event loop answers: a hung process fails this and kubelet restarts it.
      case '/live':
        return { status: 200, body: 'ok\n' };
      case '/ready': {
        const missing = readiness.notReadyBecause();
        return missing.length === 0 ? { status: 200, body: 'ok\n' } : { status: 503, body: `not ready: ${missing.join('; ')}\n` };
      }
      default:
        return { status: 404, body: `no route for ${path}: the admin listener serves /metrics, /ping, /live and /ready\n` };
    }
  };

  const handle: RequestHandler = (request, response) => {
    const method = request.method ?? '';
    if (method !== 'GET' && method !== 'HEAD') {
      sendText(response, 405, `method ${method} not allowed: use GET\n`);
      return;
    }
    route(pathOf(request)).then(
      ({ status, type = TEXT, body }) => {
        response.writeHead(status, { 'content-type': type, 'content-length': Buffer.byteLength(body) });
        response.end(method === 'HEAD' ? undefined : body);
      },
      (err: unknown) => {
        logger.error({ err }, 'failed to answer an admin request');
        if (!response.headersSent) sendText(response, 500, 'internal error\n');
        else response.destroy();
      },
    );
  };

  const server = createServer(handle);
  return { server, handle, listen: (host, port) => listen(server, host, port), close: () => closeServer(server) };
}
