/** Starts the webhook and admin listeners with their configuration, certificates and graceful shutdown. */
import { lookup } from 'node:dns/promises';
import { existsSync } from 'node:fs';
import type { Logger } from 'pino';
import { injectionDenial, TemplateAnswerLru, type AdmissionSources } from '../admission/index.js';
import { CertificateReloader, ensureCertificates, loadKeyPair } from '../tls/index.js';
import { adminLimitsOf, buildAdminApp, type AdminApp } from './admin.js';
import { DenialLog, type DenialLogOptions } from './denial.js';
import { closeNow } from './http.js';
import { InjectorMetrics } from './metrics.js';
import { buildWebhookApp, TLS_CIPHERS, type ServerLimits, type WebhookApp } from './webhook.js';

export interface ListenAddress {
  host: string;
  port: number;
}

/** "0.0.0.0:8443", ":8443", "[::]:8443" or "localhost:0" → host and port. */
export function parseListenAddress(text: string): ListenAddress {
  const m = /^(?:\[([^\]]+)\]|([^:[\]]*)):(\d{1,5})$/.exec(text.trim());
  const port = m ? Number(m[3]) : NaN;
  if (!m || port > 65535) throw new Error(`invalid listen address ${JSON.stringify(text)}: expected HOST:PORT, e.g. 0.0.0.0:8443`);
  return { host: m[1] ?? (m[2] || '0.0.0.0'), port };
}

/** Why a listener could not take its address, in words, by the listen error's code. */
const LISTEN_PROBLEMS: Record<string, string> = {
  EADDRINUSE: 'address already in use',
  EACCES: 'permission denied (a port below 1024 needs privileges)',
  EADDRNOTAVAIL: 'no such address on this host',
};

/** A listener that could not take its address; nothing the server started is left running when this is thrown. */
export class ListenError extends Error {
  constructor(
    /** Which listener: the webhook's (--addr) or the admin one (--admin-addr). */
    readonly listener: 'webhook' | 'admin',
    /** The address as given. */
    readonly address: string,
    /** Why, in words, e.g. "address already in use". */
    readonly reason: string,
    options?: { cause?: unknown },
  ) {
    super(`cannot listen on ${address} for the ${listener} listener: ${reason}`, options);
    this.name = 'ListenError';
  }
}

async function listenAs(listener: 'webhook' | 'admin', app: AdminApp | WebhookApp, address: ListenAddress, given: string, hint?: string): Promise<void> {
  try {
    // fastify would bind "localhost" once per address it resolves to, each a server of its own without this one's limits:
    // it is resolved here to one address, as node:http resolves it.
    const host = address.host === 'localhost' ? (await lookup('localhost')).address : address.host;
    await app.listen({ host, port: address.port });
  } catch (err) {
    const { code, message } = err as NodeJS.ErrnoException;
    const reason = (code !== undefined && LISTEN_PROBLEMS[code]) || message;
    throw new ListenError(listener, given.trim(), code === 'EADDRINUSE' && hint ? `${reason} (${hint})` : reason, { cause: err });
  }
}

export interface ServerOptions {
  addr: string;
  adminAddr: string;
  tlsDir: string;
  /** DNS names (or IPs) for a generated serving certificate, besides localhost and 127.0.0.1. */
  tlsSans: string[];
  tlsMinVersion: 'TLSv1.2' | 'TLSv1.3';
  /** Where admissions get the configuration, namespace annotations and owners; whoever opened them closes them. */
  sources: Omit<AdmissionSources, 'answers'>;
  logger: Logger;
  /** Keep serving this long after a shutdown starts, so endpoints can drop the pod first (ms). */
  shutdownDelayMs: number;
  /** Longest the in-flight requests may take to finish once closing starts (ms). */
  shutdownTimeoutMs: number;
  /** How often to re-read the certificate files as a safety net (ms). */
  tlsPollMs?: number;
  metrics?: InjectorMetrics;
  /** Why the sources cannot answer correctly yet (configuration not loaded, caches not synced); empty when they can. */
  notReadyBecause?: () => string[];
  onAdmitted?: Parameters<typeof buildWebhookApp>[0]['onAdmitted'];
  /** The webhook listener's timeouts and sizes; the defaults where not given. */
  limits?: Partial<ServerLimits>;
  /** How often the log says that every pod that asks for injection is denied, while it is (DenialLog's defaults). */
  denialLog?: Pick<DenialLogOptions, 'checkMs' | 'repeatMs'>;
}

export interface RunningServer {
  webhook: WebhookApp;
  admin: AdminApp;
  webhookUrl: string;
  adminUrl: string;
  metrics: InjectorMetrics;
  /** Where a generated CA is, for the webhook configuration's caBundle; undefined when the pair was provided. */
  caPath: string | undefined;
  /** Stops accepting, lets in-flight requests finish (bounded), closes everything. Resolves true on a clean stop. */
  shutdown(reason: string): Promise<boolean>;
}

const urlOf = (scheme: string, address: ListenAddress, port: number): string =>
  `${scheme}://${address.host.includes(':') ? `[${address.host}]` : address.host}:${port}`;

export async function startServer(options: ServerOptions): Promise<RunningServer> {
  const { logger } = options;
  const webhookAddress = parseListenAddress(options.addr);
  const adminAddress = parseListenAddress(options.adminAddr);
  const certs = await ensureCertificates(options.tlsDir, options.tlsSans, logger);
  const pair = loadKeyPair(options.tlsDir);
  logger.info({ notAfter: pair.notAfter.toISOString(), fingerprint: pair.fingerprint256, dir: options.tlsDir }, 'serving certificate loaded');

  const metrics = options.metrics ?? new InjectorMetrics();
  let closing = false;
  // Asked of the sources admissions read, so that /ready, the gauge and the log say what admissions get.
  const denial = () => injectionDenial(options.sources);
  metrics.reportDenial(() => denial()?.code);
  metrics.reportLinkerdVersion(() => {
    try {
      return options.sources.config().values.linkerdVersion;
    } catch {
      return undefined;
    }
  });
  const readiness = {
    notReadyBecause: (): string[] => [
      ...(closing ? ['shutting down'] : []),
      ...(options.notReadyBecause?.() ?? []),
    ],
    denyingBecause: denial,
  };
  const webhook = buildWebhookApp({
    sources: { ...options.sources, answers: new TemplateAnswerLru() },
    metrics,
    logger,
    tls: { key: pair.key, cert: pair.cert, minVersion: options.tlsMinVersion },
    ...(options.onAdmitted && { onAdmitted: options.onAdmitted }),
    ...(options.limits && { limits: options.limits }),
  });
  const admin = buildAdminApp({ metrics, readiness, logger, limits: adminLimitsOf(options.limits) });

  await listenAs('webhook', webhook, webhookAddress, options.addr);
  const webhookPort = (webhook.server.address() as { port: number }).port;
  try {
    // The same port as the webhook's is the likeliest mistake; it is named, rather than left to look like another process.
    await listenAs('admin', admin, adminAddress, options.adminAddr, adminAddress.port === webhookPort ? 'the webhook listener is on that port' : undefined);
  } catch (err) {
    // Nothing else has started yet: the webhook listener is the one thing to stop, with any connection it took meanwhile.
    await closeNow(webhook);
    throw err;
  }
  const adminPort = (admin.server.address() as { port: number }).port;

  const connections = webhook.connections;
  const reloader = new CertificateReloader(pair, {
    dir: options.tlsDir,
    logger,
    pollIntervalMs: options.tlsPollMs ?? 10_000,
    onUpdate: (next) => {
      webhook.server.setSecureContext({ key: next.key, cert: next.cert, minVersion: options.tlsMinVersion, ciphers: TLS_CIPHERS });
      metrics.certificateReloads.inc({ result: 'applied' });
    },
    onRefused: () => metrics.certificateReloads.inc({ result: 'refused' }),
  });
  reloader.start();
  const denialLog = new DenialLog({ denial, logger, ...options.denialLog });
  denialLog.start();

  const webhookUrl = urlOf('https', webhookAddress, webhookPort);
  const adminUrl = urlOf('http', adminAddress, adminPort);
  logger.info({ webhook: webhookUrl, admin: adminUrl, minTls: options.tlsMinVersion }, 'proxy-injector listening');
  // The metrics library is loaded now that the listeners are up, not before: nothing needs it to answer a review.
  metrics.load().catch((err: unknown) => logger.error({ err }, 'cannot load the metrics library: /metrics will fail'));

  let stopping: Promise<boolean> | undefined;
  const shutdown = (reason: string): Promise<boolean> => {
    stopping ??= (async () => {
      closing = true;
      connections.drain();
      logger.info({ reason, delayMs: options.shutdownDelayMs }, 'shutting down: readiness now fails');
      if (options.shutdownDelayMs > 0) await new Promise((r) => setTimeout(r, options.shutdownDelayMs));
      let timer: NodeJS.Timeout | undefined;
      const timedOut = new Promise<false>((resolve) => {
        timer = setTimeout(() => resolve(false), options.shutdownTimeoutMs);
      });
      const closed = webhook.close().then(() => true as const);
      const ended = connections.closeIdle();
      logger.debug({ ended, ...connections.counts }, 'listener closed; idle connections ended');
      const clean = await Promise.race([closed, timedOut]);
      clearTimeout(timer);
      if (!clean) {
        logger.error({ timeoutMs: options.shutdownTimeoutMs }, 'in-flight requests did not finish in time; closing their connections');
        webhook.server.closeAllConnections();
      }
      reloader.stop();
      denialLog.stop();
      // The admin listener has nothing left to answer: a probe or scrape still on it (or a client that stopped reading
      // its answer) is cut off rather than waited for.
      await closeNow(admin);
      logger.info({ clean }, 'proxy-injector stopped');
      return clean;
    })();
    return stopping;
  };

  return { webhook, admin, webhookUrl, adminUrl, metrics, caPath: existsSync(certs.caPath) ? certs.caPath : undefined, shutdown };
}
