/** The API server's release, read from /version at start and again on an interval, never failing an admission. */
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { ServerVersion } from '../../src/cluster/server-version.js';
import { fakeApi, type FakeApi } from './fake-api.js';

/** A logger whose lines a test can read. */
function capturedLogger() {
  const lines: Array<{ level: number; msg: string } & Record<string, unknown>> = [];
  const stream = new Writable({
    write(chunk, _encoding, done) {
      for (const line of String(chunk).split('\n')) if (line) lines.push(JSON.parse(line));
      done();
    },
  });
  return { logger: pino({ level: 'info' }, stream), lines };
}

let api: FakeApi | undefined;
let version: ServerVersion | undefined;
afterEach(async () => {
  version?.stop();
  await api?.close();
  api = version = undefined;
});

/** A fake API server whose /version answers with what `answer()` says at the time (a status and a body). */
async function serving(answer: () => [number, unknown]) {
  api = await fakeApi({
    read: (path, res) => {
      const [status, body] = path === '/version' ? answer() : [404, { kind: 'Status', message: 'not found' }];
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    },
  });
  return api;
}

describe('ServerVersion', () => {
  it('reads the release at start, logs it once, and follows an upgrade on the next read', async () => {
    let info: unknown = { major: '1', minor: '28+', gitVersion: 'v1.28.15-eks-1a2b3c' };
    const served = await serving(() => [200, info]);
    const { logger, lines } = capturedLogger();
    version = new ServerVersion({ client: served.client, logger, intervalMs: 60_000 });
    expect(version.current()).toBeUndefined();
    version.start();
    await version.read();
    expect(version.current()).toEqual({ major: 1, minor: 28 });
    await version.read();
    expect(lines.filter((l) => l.msg === 'Kubernetes API server version')).toEqual([expect.objectContaining({ kubernetes: 'v1.28.15-eks-1a2b3c' })]);
    info = { major: '1', minor: '29', gitVersion: 'v1.29.2' };
    await version.read();
    expect(version.current()).toEqual({ major: 1, minor: 29 });
    expect(lines.filter((l) => l.msg === 'Kubernetes API server version').map((l) => l['kubernetes'])).toEqual(['v1.28.15-eks-1a2b3c', 'v1.29.2']);
    expect(served.reads.filter((p) => p === '/version').length).toBeGreaterThanOrEqual(3);
  });

  it('reads again on its interval', async () => {
    const served = await serving(() => [200, { major: '1', minor: '34', gitVersion: 'v1.34.10' }]);
    version = new ServerVersion({ client: served.client, logger: pino({ level: 'silent' }), intervalMs: 20 });
    version.start();
    while (served.reads.filter((p) => p === '/version').length < 3) await new Promise((resolve) => setTimeout(resolve, 5));
    expect(version.current()).toEqual({ major: 1, minor: 34 });
  });

  it('keeps the last release known through failed and unreadable answers, and says so once for each', async () => {
    let answer: [number, unknown] = [200, { major: '1', minor: '27', gitVersion: 'v1.27.16' }];
    const served = await serving(() => answer);
    const { logger, lines } = capturedLogger();
    version = new ServerVersion({ client: served.client, logger, intervalMs: 60_000 });
    await version.read();
    answer = [503, { kind: 'Status', message: 'the server is shutting down' }];
    await version.read();
    await version.read();
    expect(version.current()).toEqual({ major: 1, minor: 27 });
    const failures = lines.filter((l) => l.msg.startsWith("could not read the API server's version"));
    expect(failures).toEqual([expect.objectContaining({ level: 40, kept: '1.27', err: 'HTTP 503: the server is shutting down' })]);
    answer = [200, { gitVersion: 'a release of our own' }];
    await version.read();
    await version.read();
    expect(version.current()).toEqual({ major: 1, minor: 27 });
    expect(lines.filter((l) => l.msg.includes('names no release')).length).toBe(1);
  });

  it('without any answer the release stays unknown, and a stopped reader reads no more', async () => {
    const served = await serving(() => [404, { kind: 'Status', message: 'the page could not be found' }]);
    version = new ServerVersion({ client: served.client, logger: pino({ level: 'silent' }), intervalMs: 10 });
    version.start();
    await version.read();
    expect(version.current()).toBeUndefined();
    version.stop();
    await new Promise((resolve) => setTimeout(resolve, 30));
    const after = served.reads.length;
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(served.reads.length).toBe(after);
  });
});
