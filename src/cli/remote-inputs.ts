/**
 * Manifests named by URL, as `linkerd inject https://...` takes them. Only HTTPS, as Linkerd allows: a manifest is
 * code that will run in the cluster, and plain HTTP lets anyone on the path change it.
 */
import { get } from 'node:https';
import { stdinReader, type CliIo, type UrlOptions } from './command-io.js';
import { InputError, type ReadIo } from '../manifests/index.js';

/**
 * The most a URL may return, and the longest it may take, redirects included: a slow or endless server must not hang
 * the command, so this is a deadline for the whole answer, not a limit on the time between two bytes.
 */
const MAX_BYTES = 64 * 1024 * 1024;
const TIMEOUT_MS = 30_000;
/** As Go's http.Get, which `linkerd inject` uses. */
const MAX_REDIRECTS = 10;

/** An argument that names a URL (scheme and host), rather than a file or directory. */
export function isUrl(arg: string): boolean {
  return /^[a-z][a-z0-9+.-]*:\/\/[^/]/i.test(arg);
}

function seconds(ms: number): string {
  return ms >= 1000 ? `${ms / 1000} s` : `${ms} ms`;
}

function getOnce(url: URL, options: UrlOptions, deadline: number, timeoutMs: number): Promise<{ redirect?: string; body?: string }> {
  return new Promise((resolveOnce, rejectOnce) => {
    // One timer for the whole request, body included: the socket's idle timeout alone lets a server that sends a byte
    // now and then keep the command waiting for ever.
    const timer = setTimeout(() => {
      reject(new Error(`no complete answer within ${seconds(timeoutMs)}`));
      request.destroy();
    }, Math.max(1, deadline - Date.now()));
    const resolve = (value: { redirect?: string; body?: string }): void => {
      clearTimeout(timer);
      resolveOnce(value);
    };
    const reject = (err: Error): void => {
      clearTimeout(timer);
      rejectOnce(err);
    };
    const request = get(url, { ...(options.ca !== undefined && { ca: options.ca }) }, (response) => {
      const status = response.statusCode ?? 0;
      const location = response.headers.location;
      if (status >= 300 && status < 400 && location !== undefined) {
        response.resume();
        resolve({ redirect: new URL(location, url).href });
        return;
      }
      if (status !== 200) {
        response.resume();
        reject(new Error(`the server answered ${status} ${response.statusMessage ?? ''}`.trim()));
        return;
      }
      const chunks: Buffer[] = [];
      let size = 0;
      response.on('data', (chunk: Buffer) => {
        size += chunk.length;
        if (size > MAX_BYTES) {
          request.destroy(new Error(`the response is larger than ${MAX_BYTES / 1024 / 1024} MiB`));
          return;
        }
        chunks.push(chunk);
      });
      response.on('end', () => resolve({ body: Buffer.concat(chunks).toString('utf8') }));
      response.on('error', reject);
    });
    request.on('error', reject);
  });
}

/** The text at an HTTPS URL, following redirects to HTTPS URLs. */
export async function fetchText(arg: string, options: UrlOptions = {}): Promise<string> {
  const timeoutMs = options.timeoutMs ?? TIMEOUT_MS;
  const deadline = Date.now() + timeoutMs;
  let url = arg;
  for (let hop = 0; hop <= MAX_REDIRECTS; hop++) {
    let parsed: URL;
    try {
      parsed = new URL(url);
    } catch {
      throw new InputError(`${arg}: not a valid URL`);
    }
    if (parsed.protocol !== 'https:') {
      throw new InputError(`${arg}: only HTTPS URLs are allowed${url === arg ? '' : ` (redirected to ${url})`}`);
    }
    let answer;
    try {
      answer = await getOnce(parsed, options, deadline, timeoutMs);
    } catch (err) {
      throw new InputError(`${arg}: ${(err as Error).message}`);
    }
    if (answer.body !== undefined) return answer.body;
    url = answer.redirect ?? url;
  }
  throw new InputError(`${arg}: more than ${MAX_REDIRECTS} redirects`);
}

/** How a command reads its inputs: files and directories under `cwd`, stdin, and HTTPS URLs. */
export function inputReader(io: CliIo, cwd: string): ReadIo {
  return {
    cwd,
    readStdin: stdinReader(io),
    remote: { matches: isUrl, read: (url) => fetchText(url, io.url) },
    ...(io.fastReader !== undefined && { fastReader: io.fastReader }),
  };
}
