/**
 * `heal --every`: the heal loop (cluster/heal-loop.ts) as a long-running process, the chart's heal Deployment, with its
 * counts on /metrics. Only the loop acts on the cluster; this is its flags, its log, its metrics and its signals.
 */
import { createServer, type Server } from 'node:http';
import type { Counter, Gauge, Registry } from 'prom-client';
import { connectToCluster, HealLoop, parseHealWindow, type HealOptions, type HealWindow } from '../cluster/index.js';
import { parseGoDuration } from '../engine/index.js';
import { createLogger, parseListenAddress } from '../server/index.js';
import type { CliResult, ClusterCommandArgs } from './command-io.js';
import { recordOutcome } from './heal-events.js';

const usage = (message: string): CliResult => ({ stdout: '', stderr: `proxy-injector heal: ${message}\n`, code: 2 });

/** The loop's counts, as Prometheus reads them. */
interface HealMetrics {
  registry: Registry;
  restarts: Counter;
  stops: Counter;
  scans: Counter;
  planned: Gauge;
  blocked: Gauge;
}

async function healMetrics(): Promise<HealMetrics> {
  const { Counter, Gauge, Registry, collectDefaultMetrics } = await import('prom-client');
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const registers = [registry];
  return {
    registry,
    restarts: new Counter({ name: 'proxy_inject_heal_restarts_total', help: 'Workloads a heal restarted, by result: healed or stopped.', labelNames: ['result'], registers }),
    stops: new Counter({
      name: 'proxy_inject_heal_stops_total',
      help: 'Heals stopped at a workload, by reason: restart_refused, rollout_stalled, rollout_timeout, not_current, init_failed, crash_loop, eviction_refused, eviction_timeout.',
      labelNames: ['reason'],
      registers,
    }),
    scans: new Counter({ name: 'proxy_inject_heal_scans_total', help: 'Heal scans, by result: done or failed.', labelNames: ['result'], registers }),
    planned: new Gauge({ name: 'proxy_inject_heal_planned', help: 'Workloads the last scan planned to restart.', registers }),
    blocked: new Gauge({ name: 'proxy_inject_heal_blocked', help: '1 while a workload a heal restarted is not healthy and nothing is restarted, else 0.', registers }),
  };
}

/** Serves /metrics and /live until closed. */
async function serveMetrics(addr: string, registry: Registry): Promise<Server> {
  const { host, port } = parseListenAddress(addr);
  const server = createServer((req, res) => {
    if (req.url === '/live') return void res.writeHead(200, { 'content-type': 'text/plain' }).end('ok\n');
    if (req.url !== '/metrics') return void res.writeHead(404, { 'content-type': 'text/plain' }).end('not found: /metrics or /live\n');
    registry.metrics().then(
      (text) => res.writeHead(200, { 'content-type': registry.contentType }).end(text),
      () => res.writeHead(500).end(),
    );
  });
  await new Promise<void>((resolve, reject) => server.once('error', reject).listen(port, host, resolve));
  return server;
}

/** Runs the heal loop until SIGTERM or SIGINT. */
export async function runHealDaemon(args: ClusterCommandArgs, options: HealOptions, env: NodeJS.ProcessEnv): Promise<CliResult> {
  const every = parseGoDuration(args.text('every') ?? '');
  if (every === undefined || every < 60_000_000_000n) return usage(`--every ${JSON.stringify(args.text('every'))}: expected a duration of at least 1m, e.g. 10m`);
  const max = args.text('max-restarts-per-hour') ?? '6';
  if (!/^\d{1,4}$/.test(max) || Number(max) < 1) return usage(`--max-restarts-per-hour ${JSON.stringify(max)}: expected a whole number of at least 1`);
  let window: HealWindow | undefined;
  try {
    const text = args.text('window');
    if (text !== undefined) window = parseHealWindow(text);
  } catch (err) {
    return usage(`--window ${(err as Error).message}`);
  }
  const metricsAddr = args.text('metrics-addr');
  if (metricsAddr !== undefined) {
    try {
      parseListenAddress(metricsAddr);
    } catch (err) {
      return usage(`--metrics-addr: ${(err as Error).message}`);
    }
  }
  const kubeconfig = args.text('kubeconfig');
  const cluster = await connectToCluster({ env, ...(kubeconfig && { kubeconfig }) });
  if (!cluster) return { stdout: '', stderr: 'proxy-injector heal: no cluster: give --kubeconfig FILE, or set KUBECONFIG\n', code: 1 };
  const logger = createLogger({ level: 'info', format: 'json' });
  const metrics = await healMetrics();
  const server = metricsAddr !== undefined ? await serveMetrics(metricsAddr, metrics.registry) : undefined;
  const apply = args.flag('apply');
  logger.info({ every: args.text('every'), apply, maxRestartsPerHour: Number(max), window: args.text('window') ?? 'any time' }, apply ? 'healing on an interval' : 'planning on an interval (without --apply nothing is restarted)');
  const loop = new HealLoop({
    ...options,
    cluster,
    logger,
    intervalMs: Number(every / 1_000_000n),
    // Without --apply the loop plans only: no restart is ever allowed.
    maxRestartsPerHour: apply ? Number(max) : 0,
    ...(window && { window }),
    onPlan: (plan) => {
      metrics.scans.inc({ result: 'done' });
      metrics.planned.set(plan.steps.length);
      metrics.blocked.set(plan.blocked ? 1 : 0);
    },
    onScanFailed: () => metrics.scans.inc({ result: 'failed' }),
    onOutcome: async (step, outcome) => {
      metrics.restarts.inc({ result: outcome.healed ? 'healed' : 'stopped' });
      if (!outcome.healed) metrics.stops.inc({ reason: outcome.code });
      await recordOutcome(cluster.client, step, outcome, (text) => logger.warn(text));
    },
  });
  loop.start();
  const signal = await new Promise<NodeJS.Signals>((resolve) => {
    process.once('SIGTERM', resolve);
    process.once('SIGINT', resolve);
  });
  logger.info({ signal }, 'stopping: a heal under way finishes the workload it waits on first');
  await loop.stop();
  server?.close();
  cluster.client.close();
  logger.flush();
  return { stdout: '', stderr: '', code: 0 };
}
