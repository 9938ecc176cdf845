/** A request to a listener's handler in-process, without a socket (light-my-request). */
import { inject as injectRequest, type InjectOptions, type Response } from 'light-my-request';
import type { RequestHandler } from '../../src/server/http.js';

export function inject(app: { handle: RequestHandler }, options: InjectOptions): Promise<Response> {
  return injectRequest(app.handle, options);
}
