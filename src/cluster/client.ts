/**
 * The few calls the injector makes to the Kubernetes API (GET, LIST, WATCH, POST, PATCH), over node:http(s) with JSON.
 * Every request is bounded in time, from authorisation (an exec plugin may be slow) to the last byte; a watch is bounded
 * until its answer starts, then kept alive by TCP keep-alive and the informer's watchdog.
 */
import { Agent as HttpAgent, request as httpRequest, type ClientRequest, type IncomingMessage, type RequestOptions } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest, type RequestOptions as HttpsRequestOptions } from 'node:https';

/** Adds credentials and TLS settings to the options of one request. */
export type Authorize = (options: HttpsRequestOptions) => Promise<void>;

/** The API server answered with a status other than 2xx; `body` is its answer as text (a Status object, usually). */
export class ApiError extends Error {
  constructor(
    readonly code: number,
    readonly body: string,
    what: string,
  ) {
    super(`${what}: HTTP ${code}`);
    this.name = 'ApiError';
  }
}

export interface WatchEvent {
  type: string;
  object: unknown;
}

export interface WatchHandlers {
  /** The API server accepted the watch (status 200). */
  onOpen(): void;
  onEvent(event: WatchEvent): void;
  /** Called once: without an error when the server ended the watch normally, else with why it failed. */
  onClose(err?: Error): void;
}

export interface WatchHandle {
  /** Ends the watch; no handler is called afterwards. */
  abort(): void;
}

export interface ApiClient {
  readonly server: string;
  /** The JSON answer to one request, or an ApiError, or an Error saying what failed or did not answer in time. */
  request<T>(method: 'GET' | 'POST' | 'PATCH', path: string, options: RequestSpec): Promise<T>;
  /** Opens a watch on `path` (its query included); the handlers see its events until it ends or is aborted. */
  watch(path: string, handlers: WatchHandlers, openTimeoutMs?: number): WatchHandle;
  /** Closes idle connections. */
  close(): void;
}

export interface RequestSpec {
  /** For error messages, e.g. "reading namespace shop". */
  what: string;
  timeoutMs: number;
  body?: unknown;
  contentType?: string;
}

/** Most bytes read from one answer, or from one line of a watch: a misbehaving server must not exhaust the heap. */
const MAX_BODY_BYTES = 64 * 1024 * 1024;
/** How often TCP probes an idle watch connection, so that a peer that vanished is noticed. */
const WATCH_KEEPALIVE_MS = 30_000;

export class HttpApiClient implements ApiClient {
  readonly server: string;
  private readonly base: URL;
  private readonly agent: HttpAgent;

  constructor(
    server: string,
    private readonly authorize: Authorize,
  ) {
    this.base = new URL(server);
    if (this.base.protocol !== 'https:' && this.base.protocol !== 'http:') throw new Error(`server ${server}: expected an http or https URL`);
    this.server = server;
    // Connections are reused: owner reads and events come in bursts during a rollout.
    const agentOptions = { keepAlive: true, maxSockets: 16, maxFreeSockets: 4 };
    this.agent = this.base.protocol === 'https:' ? new HttpsAgent(agentOptions) : new HttpAgent(agentOptions);
  }

  request<T>(method: 'GET' | 'POST' | 'PATCH', path: string, spec: RequestSpec): Promise<T> {
    const payload = spec.body === undefined ? undefined : JSON.stringify(spec.body);
    return new Promise<T>((resolve, reject) => {
      let req: ClientRequest | undefined;
      let settled = false;
      const finish = (err: Error | undefined, value?: T): void => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        if (err) {
          req?.destroy();
          reject(err);
        } else {
          resolve(value as T);
        }
      };
      const timer = setTimeout(() => finish(new Error(`${spec.what} did not answer within ${spec.timeoutMs} ms`)), spec.timeoutMs);
      const headers: Record<string, string | number> = { accept: 'application/json' };
      if (payload !== undefined) {
        headers['content-type'] = spec.contentType ?? 'application/json';
        headers['content-length'] = Buffer.byteLength(payload);
      }
      const attempt = (again: boolean): void => {
        this.open(method, path, headers)
          .then((r) => {
            if (settled) {
              r.destroy();
              return;
            }
            req = r;
            r.on('error', (err: NodeJS.ErrnoException) => {
              // A kept-alive connection the server closed as it was reused: the request never reached it, so a read
              // is sent once more, on a new connection, within the same time bound.
              if (!again && method === 'GET' && r.reusedSocket && err.code === 'ECONNRESET' && !settled) return attempt(true);
              finish(new Error(`${spec.what} failed: ${err.message}`));
            });
            r.on('response', (res) => {
              readBody(res, (err, text) => {
                if (err) return finish(new Error(`${spec.what} failed: ${err.message}`));
                const status = res.statusCode ?? 0;
                if (status < 200 || status >= 300) return finish(new ApiError(status, text, spec.what));
                try {
                  finish(undefined, (text === '' ? undefined : JSON.parse(text)) as T);
                } catch {
                  finish(new Error(`${spec.what}: the answer is not JSON`));
                }
              });
            });
            r.end(payload);
          })
          .catch((err: unknown) => finish(new Error(`${spec.what} failed: ${(err as Error)?.message ?? String(err)}`)));
      };
      attempt(false);
    });
  }

  watch(path: string, handlers: WatchHandlers, openTimeoutMs = 30_000): WatchHandle {
    let req: ClientRequest | undefined;
    let done = false;
    const close = (err?: Error): void => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      req?.destroy();
      handlers.onClose(err);
    };
    const timer = setTimeout(() => close(new Error(`the watch on ${path} did not answer within ${openTimeoutMs} ms`)), openTimeoutMs);
    this.open('GET', path, { accept: 'application/json' })
      .then((r) => {
        if (done) {
          r.destroy();
          return;
        }
        req = r;
        r.on('error', (err) => close(err));
        r.on('socket', (socket) => socket.setKeepAlive(true, WATCH_KEEPALIVE_MS));
        r.on('response', (res) => {
          const status = res.statusCode ?? 0;
          if (status !== 200) {
            readBody(res, (err, text) => close(err ?? new ApiError(status, text, `watching ${path.split('?')[0]}`)));
            return;
          }
          clearTimeout(timer);
          handlers.onOpen();
          let pending = '';
          res.setEncoding('utf8');
          res.on('data', (chunk: string) => {
            pending += chunk;
            for (let nl = pending.indexOf('\n'); nl >= 0 && !done; nl = pending.indexOf('\n')) {
              const line = pending.slice(0, nl);
              pending = pending.slice(nl + 1);
              if (line.trim() === '') continue;
              let event: WatchEvent;
              try {
                event = JSON.parse(line) as WatchEvent;
              } catch {
                close(new Error(`the watch on ${path.split('?')[0]} sent a line that is not JSON`));
                return;
              }
              handlers.onEvent(event);
            }
            if (pending.length > MAX_BODY_BYTES) close(new Error(`the watch on ${path.split('?')[0]} sent a line longer than ${MAX_BODY_BYTES} bytes`));
          });
          res.on('error', (err) => close(err));
          res.on('close', () => close(res.complete ? undefined : new Error('the watch connection was cut')));
        });
        r.end();
      })
      .catch((err: unknown) => close(new Error(`opening the watch on ${path.split('?')[0]} failed: ${(err as Error)?.message ?? String(err)}`)));
    return {
      abort: () => {
        done = true;
        clearTimeout(timer);
        req?.destroy();
      },
    };
  }

  close(): void {
    this.agent.destroy();
  }

  private async open(method: string, path: string, headers: Record<string, string | number>): Promise<ClientRequest> {
    const url = new URL(path, this.base);
    const options: HttpsRequestOptions = {
      protocol: url.protocol,
      hostname: url.hostname.replace(/^\[(.*)\]$/, '$1'),
      port: url.port,
      path: `${url.pathname}${url.search}`,
      method,
      headers,
      agent: this.agent,
    };
    await this.authorize(options);
    const request = url.protocol === 'https:' ? httpsRequest : httpRequest;
    return request(options as RequestOptions);
  }
}

/** Reads an answer as text, refusing one larger than MAX_BODY_BYTES. */
function readBody(res: IncomingMessage, done: (err: Error | undefined, text: string) => void): void {
  const chunks: Buffer[] = [];
  let size = 0;
  let finished = false;
  const finish = (err: Error | undefined): void => {
    if (finished) return;
    finished = true;
    done(err, err ? '' : Buffer.concat(chunks).toString('utf8'));
  };
  res.on('data', (chunk: Buffer) => {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) {
      res.destroy();
      finish(new Error(`the answer is larger than ${MAX_BODY_BYTES} bytes`));
      return;
    }
    chunks.push(chunk);
  });
  res.on('end', () => finish(undefined));
  res.on('error', (err) => finish(err));
  res.on('close', () => finish(res.complete ? undefined : new Error('the connection was cut before the answer ended')));
}
