/**
 * A Deployment rollout in miniature: two `serve` processes behind one address, a client sending AdmissionReviews all
 * along, and each process replaced in turn (the new one started and ready before the old one gets SIGTERM). The
 * balancer behaves like kube-proxy with endpoints: it sends new connections only to processes whose /ready answers
 * 200, and never touches connections already made; the old process must drain them itself.
 */
import { createServer, connect as tcpConnect, type Server, type Socket } from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import { caOf, cleanUp, LONG, percentile, readyStatus, startInjector, tlsDir, wellBehavedClient, type ClientTally, type Injector } from './support/injector.js';

afterAll(cleanUp);

interface Backend {
  injector: Injector;
  ready: boolean;
}

/** A TCP balancer: round robin over the ready backends, their readiness polled every 100 ms as endpoints would be. */
class Balancer {
  readonly backends: Backend[] = [];
  private next = 0;
  private readonly server: Server;
  private readonly poller: NodeJS.Timeout;
  /** Connections that arrived when no backend was ready (each one is a failure for its client). */
  refused = 0;

  constructor() {
    this.server = createServer((client) => this.route(client));
    this.poller = setInterval(() => {
      for (const b of this.backends) void readyStatus(b.injector.adminUrl).then((status) => (b.ready = status === 200));
    }, 100);
  }

  async listen(): Promise<number> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    return (this.server.address() as { port: number }).port;
  }

  /** Adds a backend and resolves once the balancer routes to it. */
  async add(injector: Injector): Promise<void> {
    const backend = { injector, ready: false };
    this.backends.push(backend);
    while (!backend.ready) await new Promise((r) => setTimeout(r, 50));
  }

  remove(injector: Injector): void {
    const i = this.backends.findIndex((b) => b.injector === injector);
    if (i >= 0) this.backends.splice(i, 1);
  }

  private route(client: Socket): void {
    const ready = this.backends.filter((b) => b.ready);
    const backend = ready[this.next++ % Math.max(1, ready.length)];
    if (!backend) {
      this.refused++;
      client.destroy();
      return;
    }
    const upstream = tcpConnect({ host: backend.injector.host, port: backend.injector.port });
    // A close on either side is passed on at once, as a NAT'd connection would see it.
    client.pipe(upstream).pipe(client);
    const end = (): void => {
      client.destroy();
      upstream.destroy();
    };
    client.on('error', end).on('close', end);
    upstream.on('error', end).on('close', end);
  }

  close(): void {
    clearInterval(this.poller);
    this.server.close();
  }
}

const SERVE_FLAGS = ['--shutdown-delay', '1s', '--shutdown-timeout', '5s'];
/** Traffic before the first replacement, between the two, and after the last. */
const STEADY_MS = LONG ? 30_000 : 2_000;
const ROUNDS = LONG ? 5 : 1;

describe('rolling restart', () => {
  it('replacing each of two processes in turn under continuous AdmissionReviews fails no request and answers each one correctly', async () => {
    const dir = tlsDir();
    let current = [await startInjector(dir, SERVE_FLAGS), await startInjector(dir, SERVE_FLAGS)];
    const balancer = new Balancer();
    const port = await balancer.listen();
    for (const injector of current) await balancer.add(injector);

    let stop = false;
    const tally: ClientTally = { sent: 0, closes: 0, failures: [], latenciesMs: [] };
    const target = { host: '127.0.0.1', port, ca: caOf(dir) };
    const traffic = Promise.all([
      wellBehavedClient({ ...target, workers: 3, keepAlive: true, pauseMs: 5, until: () => stop }, tally),
      wellBehavedClient({ ...target, workers: 1, keepAlive: false, pauseMs: 5, until: () => stop }, tally),
    ]);

    const exits: (number | null)[] = [];
    let drained = 0;
    for (let round = 0; round < ROUNDS; round++) {
      const replaced: Injector[] = [];
      for (const old of current) {
        await new Promise((r) => setTimeout(r, STEADY_MS));
        const fresh = await startInjector(dir, SERVE_FLAGS);
        await balancer.add(fresh);
        old.child.kill('SIGTERM');
        exits.push(await old.exited);
        drained += old.logs.filter((l) => l.includes('"clean":true')).length;
        balancer.remove(old);
        replaced.push(fresh);
      }
      current = replaced;
    }
    await new Promise((r) => setTimeout(r, STEADY_MS));
    stop = true;
    await traffic;
    balancer.close();
    for (const injector of current) injector.child.kill('SIGTERM');
    await Promise.all(current.map((i) => i.exited));

    console.log(
      `rolling restart (${ROUNDS} round(s) of 2 replacements, two shared cores): requests sent ${tally.sent}, ` +
        `processes stopped ${exits.length}, responses with Connection: close ${tally.closes}, failures seen ${tally.failures.length}, connections refused by the balancer ${balancer.refused}, ` +
        `p50 ${percentile(tally.latenciesMs, 50).toFixed(1)} ms, p99 ${percentile(tally.latenciesMs, 99).toFixed(1)} ms`,
    );
    expect(tally.failures.slice(0, 5)).toEqual([]);
    expect(balancer.refused).toBe(0);
    // The draining processes told the keep-alive clients to go elsewhere rather than letting them reuse a dying socket.
    expect(tally.closes).toBeGreaterThan(0);
    expect(tally.sent).toBeGreaterThan(20);
    expect(exits).toEqual(Array.from({ length: ROUNDS * 2 }, () => 0));
    expect(drained).toBe(ROUNDS * 2);
  }, (LONG ? 600 : 120) * 1000);
});
