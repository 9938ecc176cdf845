/** HttpApiClient against a loopback server: what a caller gets for each way a request can go wrong, and never a hang. */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { apiErrorMessage, apiStatus } from '../../src/cluster/api.js';
import { HttpApiClient, type WatchEvent } from '../../src/cluster/client.js';

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function serve(handler: (req: IncomingMessage, res: ServerResponse) => void): Promise<HttpApiClient> {
  const server: Server = createServer(handler);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const client = new HttpApiClient(`http://127.0.0.1:${(server.address() as AddressInfo).port}`, async () => {});
  cleanups.push(() => {
    server.closeAllConnections();
    return new Promise((r) => server.close(() => r()));
  });
  cleanups.push(() => client.close());
  return client;
}

const get = (client: HttpApiClient, timeoutMs = 2000) => client.request('GET', '/api/v1/namespaces/shop', { what: 'reading namespace shop', timeoutMs });

describe('HttpApiClient', () => {
  it('sends JSON with the content type asked for and returns the JSON answer', async () => {
    const seen: string[] = [];
    const client = await serve((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        seen.push(`${req.method} ${req.url} ${req.headers['content-type']} ${body}`);
        res.writeHead(201, { 'content-type': 'application/json' }).end('{"ok":true}');
      });
    });
    const answer = await client.request('PATCH', '/api/v1/namespaces/shop/events/e1', { what: 'updating an event', timeoutMs: 2000, body: { count: 2 }, contentType: 'application/merge-patch+json' });
    expect(answer).toEqual({ ok: true });
    expect(seen).toEqual(['PATCH /api/v1/namespaces/shop/events/e1 application/merge-patch+json {"count":2}']);
  });

  it('an error status becomes an ApiError with the status and the Status message', async () => {
    const client = await serve((_req, res) => res.writeHead(404, { 'content-type': 'application/json' }).end('{"kind":"Status","message":"namespaces \\"shop\\" not found"}'));
    const err = await get(client).catch((e: unknown) => e);
    expect(apiStatus(err)).toBe(404);
    expect(apiErrorMessage(err)).toBe('HTTP 404: namespaces "shop" not found');
  });

  it('a server that never answers fails within the timeout, saying what was slow', async () => {
    const client = await serve(() => {});
    const started = Date.now();
    await expect(get(client, 150)).rejects.toThrow('reading namespace shop did not answer within 150 ms');
    expect(Date.now() - started).toBeLessThan(2000);
  });

  it('an answer cut in the middle, or one that is not JSON, is an error, not a hang', async () => {
    const cut = await serve((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': '100' });
      res.write('{"kind":');
      setTimeout(() => res.destroy(), 20);
    });
    await expect(get(cut)).rejects.toThrow(/^reading namespace shop failed: /);
    const garbled = await serve((_req, res) => res.writeHead(200).end('<html>'));
    await expect(get(garbled)).rejects.toThrow('reading namespace shop: the answer is not JSON');
  });

  it('a read on a kept-alive connection the server drops is sent again on a new one, a write is not', async () => {
    const served = new WeakSet<object>();
    let dropped = 0;
    const client = await serve((req, res) => {
      // Each connection answers once; a request on a connection used before is dropped unanswered, as by a server
      // that closed it while the request was on its way.
      if (served.has(req.socket)) {
        dropped++;
        req.socket.destroy();
        return;
      }
      served.add(req.socket);
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"n":1}');
    });
    expect(await get(client)).toEqual({ n: 1 });
    expect(await get(client)).toEqual({ n: 1 });
    expect(dropped).toBe(1);
    const write = client.request('POST', '/api/v1/namespaces/shop/events', { what: 'creating an event', timeoutMs: 2000, body: {} });
    await expect(write).rejects.toThrow(/^creating an event failed: socket hang up/);
  });

  it('a watch delivers its events line by line, then says how it ended', async () => {
    const client = await serve((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write('{"type":"ADDED","object":{"metadata":{"name":"a"}}}\n{"type":"MOD');
      setTimeout(() => res.end('IFIED","object":{"metadata":{"name":"a"}}}\n'), 20);
    });
    const events: WatchEvent[] = [];
    const ended = await new Promise<Error | undefined>((resolve) => {
      client.watch('/api/v1/namespaces?watch=true', { onOpen: () => {}, onEvent: (e) => events.push(e), onClose: resolve });
    });
    expect(ended).toBeUndefined();
    expect(events.map((e) => e.type)).toEqual(['ADDED', 'MODIFIED']);
  });

  it('a watch refused or never answered ends with an error', async () => {
    const refused = await serve((_req, res) => res.writeHead(403).end('{"kind":"Status","message":"forbidden"}'));
    const closed = (client: HttpApiClient, timeoutMs?: number) =>
      new Promise<Error | undefined>((resolve) => client.watch('/api/v1/namespaces?watch=true', { onOpen: () => {}, onEvent: () => {}, onClose: resolve }, timeoutMs));
    expect(apiErrorMessage(await closed(refused))).toBe('HTTP 403: forbidden');
    const silent = await serve(() => {});
    expect((await closed(silent, 100))?.message).toBe('the watch on /api/v1/namespaces?watch=true did not answer within 100 ms');
  });
});
