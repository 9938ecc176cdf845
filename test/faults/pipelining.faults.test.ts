/**
 * Clients that pipeline reviews on one connection, against a real `serve` process: in one write, and in small bursts
 * that arrive a turn or a millisecond apart while the client reads nothing. In process, the server and such a client
 * share one event loop and take turns, so the bursts never back up; across processes they do, and a server that left
 * such a connection on node:http's native parser cut it after a few answers.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pipelineReviews, reviewRequest } from '../support/https.js';
import { caOf, cleanUp, reviewWithAnswer, startInjector, tlsDir } from './support/injector.js';

afterAll(cleanUp);

let target: { url: string; ca: string };
let review: Record<string, unknown>;

beforeAll(async () => {
  const dir = tlsDir();
  const injector = await startInjector(dir);
  target = { url: injector.webhookUrl, ca: caOf(dir) };
  review = JSON.parse((await reviewWithAnswer('pipelined')).body) as Record<string, unknown>;
});

/** `count` injected reviews with uids pipelined-0, pipelined-1, ..., as HTTP/1.1 requests. */
function requests(count: number): string[] {
  return Array.from({ length: count }, (_, i) => reviewRequest(JSON.stringify({ ...review, request: { ...(review['request'] as object), uid: `pipelined-${i}` } })));
}

const uids = (count: number): string[] => Array.from({ length: count }, (_, i) => `pipelined-${i}`);

describe('a client that pipelines', () => {
  it('gets every answer, in order, for 300 reviews sent in one write', async () => {
    const answers = await pipelineReviews(target, requests(300), async (socket, all) => {
      socket.write(all.join(''));
    });
    expect(answers.map((a) => a.uid)).toEqual(uids(300));
    expect(answers.filter((a) => a.status !== 200 || !a.patched)).toEqual([]);
  });

  it('gets every answer, in order, for 200 reviews sent in bursts of one to four while it reads nothing', async () => {
    // Some bursts come after the answer before them was written, as a client that waits for each answer's would: the
    // server must still see that answers are backing up on the connection.
    const answers = await pipelineReviews(target, requests(200), async (socket, all) => {
      socket.pause();
      let step = 0;
      for (let i = 0; i < all.length; step++) {
        const burst = 1 + (step % 4);
        socket.write(all.slice(i, i + burst).join(''));
        i += burst;
        // A turn of the event loop, then none, then a millisecond, in turn.
        if (step % 3 === 0) await new Promise((r) => setImmediate(r));
        else if (step % 3 === 2) await new Promise((r) => setTimeout(r, 1));
      }
      socket.resume();
    });
    expect(answers.map((a) => a.uid)).toEqual(uids(200));
    expect(answers.filter((a) => a.status !== 200 || !a.patched)).toEqual([]);
  });
});
