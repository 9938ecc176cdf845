/** Whole collections read page by page for the command line. */
import { describe, expect, it } from 'vitest';
import type { ApiClient } from '../../src/cluster/client.js';
import { listAll, listPages } from '../../src/cluster/list.js';

/** A client whose collection answers `pages` in turn, each naming the next by its continue token. */
function paged(pages: string[][], paths: string[] = []): ApiClient {
  return {
    server: 'stub',
    async request<T>(_method: string, path: string): Promise<T> {
      paths.push(path);
      const at = Number(new URL(path, 'http://x').searchParams.get('continue') ?? '0');
      const more = at + 1 < pages.length;
      return { items: pages[at], metadata: more ? { continue: String(at + 1) } : {} } as T;
    },
    watch: () => {
      throw new Error('not used');
    },
    close: () => {},
  };
}

describe('listPages and listAll', () => {
  it('reads page after page by the continue token, 500 at a time, and yields each as it comes', async () => {
    const paths: string[] = [];
    const seen: string[][] = [];
    for await (const page of listPages<string>(paged([['a', 'b'], ['c'], ['d']], paths), '/api/v1/pods', 'pods')) seen.push(page.items);
    expect(seen).toEqual([['a', 'b'], ['c'], ['d']]);
    expect(paths).toEqual(['/api/v1/pods?limit=500', '/api/v1/pods?limit=500&continue=1', '/api/v1/pods?limit=500&continue=2']);
    expect(await listAll<string>(paged([['a'], [], ['b']]), '/api/v1/pods', 'pods')).toEqual(['a', 'b']);
  });

  it("passes further parameters before its own, and gives each page's resourceVersion", async () => {
    const paths: string[] = [];
    const client: ApiClient = {
      ...paged([]),
      request: async <T>(_method: string, path: string) => {
        paths.push(path);
        return { items: ['x'], metadata: { resourceVersion: '42' } } as T;
      },
    };
    const pages = [];
    for await (const page of listPages<string>(client, '/api/v1/namespaces', 'namespaces', { params: { fieldSelector: 'metadata.name=shop' } })) pages.push(page);
    expect(pages).toEqual([{ items: ['x'], resourceVersion: '42' }]);
    expect(paths).toEqual(['/api/v1/namespaces?fieldSelector=metadata.name%3Dshop&limit=500']);
  });

  it('stops a server that never stops saying continue', async () => {
    const endless: ApiClient = { ...paged([]), request: async <T>() => ({ items: [], metadata: { continue: 'again' } }) as T };
    await expect(listAll(endless, '/api/v1/pods', 'pods')).rejects.toThrow('listing pods: more than 2000 pages');
  });
});
