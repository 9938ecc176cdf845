/** A request to a fastify listener in-process, without a socket (fastify's own light-my-request). */
import type { InjectOptions, LightMyRequestResponse } from 'fastify';

export function inject(app: { inject(options: InjectOptions): Promise<LightMyRequestResponse> }, options: InjectOptions): Promise<LightMyRequestResponse> {
  return app.inject(options);
}
