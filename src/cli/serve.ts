/** `proxy-injector serve`: runs the admission webhook, configured by flags or PROXY_INJECTOR_* environment variables. */
import { statSync } from 'node:fs';
import type { LevelWithSilent } from 'pino';
import { connectToCluster, createContext, PodScan, type EventPolicy } from '../cluster/index.js';
import { parseGoDuration } from '../engine/index.js';
import { createLogger, InjectorMetrics, ListenError, LOG_LEVELS, parseListenAddress, startServer, type LogFormat, type RunningServer, type ServerLimits } from '../server/index.js';
import { pathProblemText } from '../manifests/index.js';
import { parseCommandArgs, UsageError } from './command-io.js';
import { listFlag, podSecurityFlags } from './inject-flags.js';

/** How long a stopped server waits for its last log lines to be written before it exits regardless. */
const LOG_DRAIN_MS = 50;

export const SERVE_HELP = `Usage: proxy-injector serve [options]

Runs the Linkerd-compatible proxy injector as an HTTPS admission webhook (POST AdmissionReviews to /)
with an admin listener for /metrics, /ping, /live and /ready. Every option can also be given as an
environment variable: --tls-dir is PROXY_INJECTOR_TLS_DIR, and so on. Flags win over variables.
Exit status: 0 stopped cleanly; 1 failed or did not drain in time; 2 usage error.

Options:
  --addr HOST:PORT             webhook listen address (default 0.0.0.0:8443)
  --admin-addr HOST:PORT       admin listen address (default 0.0.0.0:9995)
  --tls-dir DIR                directory with tls.crt and tls.key, reloaded when they change; when it has
                               none, a development CA and certificate are generated there (default certs)
  --tls-san NAME               extra DNS name or IP for a generated certificate, e.g.
                               proxy-injector.linkerd.svc (repeatable, or comma-separated)
  --tls-min-version 1.2|1.3    oldest TLS version accepted (default 1.3)
  --values FILE                Linkerd values YAML (the 'values' key of ConfigMap linkerd-config),
                               re-read when it changes. Default: Linkerd's mounted ConfigMap at
                               /var/run/linkerd/config/values if present, else the ConfigMap watched
                               through the API when there is a cluster, else embedded defaults
  --trust-anchors FILE         identity trust anchors PEM (the ca-bundle.crt of ConfigMap
                               linkerd-identity-trust-roots); default found like --values
  --linkerd-namespace NS       control-plane namespace (default linkerd)
  --kubeconfig FILE            cluster credentials (default: in-cluster service account, else
                               $KUBECONFIG or ~/.kube/config, else run without a cluster)
  --no-cluster                 run without a cluster even if credentials are found
  --events POLICY              Kubernetes Events on the pod's workload: all (as Linkerd), relevant
                               (no InjectionSkipped for pods nobody asked to mesh), none (default relevant)
  --pod-security-default LEVEL  the Pod Security level kube-apiserver enforces in namespaces without a
                               pod-security.kubernetes.io/enforce label, when its admission configuration
                               sets one (defaults.enforce): baseline or restricted refuse linkerd-init, and
                               the webhook warns of it there too (default: none known, as privileged)
  --pod-security-exempt NS     a namespace that configuration exempts (exemptions.namespaces), whatever its
                               label (repeatable, or comma-separated)
  --kubectl-default-container  when the proxy goes first (a classic sidecar with the await hook), annotate
                               the pod with kubectl.kubernetes.io/default-container: its first app container,
                               so that kubectl logs and exec reach the app as before (default off: Linkerd
                               does not, and the pods are then Linkerd's own)
  --pod-scan-interval DURATION  every DURATION, hold every running pod against what the injector would make
                               of it now, as check pods does, and export the counts as the gauges
                               proxy_inject_pods and proxy_inject_drifted_pods; needs a cluster and list on
                               pods and mutatingwebhookconfigurations; at least 1m (default 0s: off)
  --log-level LEVEL            trace, debug, info, warn, error, fatal or silent (default info)
  --log-format FORMAT          json, pretty, or auto: pretty on a terminal (default auto)
  --shutdown-delay DURATION    keep serving this long after SIGTERM so endpoints drop the pod first (default 0s)
  --shutdown-timeout DURATION  longest in-flight requests may take to finish after that (default 10s)

Limits on the webhook listener (all well inside kube-apiserver's 10 s webhook timeout):
  --tls-handshake-timeout DURATION  to finish the TLS handshake (default 5s)
  --header-timeout DURATION    to send a request's headers, from the connection or the previous
                               response (default 5s)
  --request-timeout DURATION   to send a whole request, headers and body (default 8s)
  --keep-alive-timeout DURATION  idle time between requests on a connection (default 30s)
  --stall-timeout DURATION     while a request is answered, longest nothing may move on its connection
                               (a client not reading its answers) before it is closed; at least
                               --request-timeout (default 10s)
  --max-connections N          open connections; beyond it a new one closes the oldest connection that
                               answers nothing of the address holding the most, else is closed itself
                               (default 1000, 0: no limit)
  --max-connections-per-client N  open connections from one address; more are closed as they arrive
                               (default 500, 0: no limit)
  --max-body-bytes N           a review's body; a larger one gets 413 (default 4194304: kube-apiserver
                               takes request bodies of up to 3 MiB)
  --max-json-values N          JSON values a review's body may start (keys, values, objects, lists); more
                               gets 413 as they arrive (default 100000)
  --max-in-flight-bytes N      what all reviews being read or answered may hold, counted as they arrive
                               (each byte, and 32 for each JSON value): one address's reviews may hold
                               half of it (429 beyond), all together all of it (503 beyond); a body that
                               alone passes half gets 413 (default 16777216, at least twice
                               --max-body-bytes)
  --max-requests-per-connection N  then the connection is closed after its response (default 0: no limit)
  --max-header-bytes N         request line and headers; more gets 431 (default 16384)
  -h, --help                   this help

The admin listener takes the same header, request and stall timeouts and header size as the webhook, a
keep-alive of at most 5s, and at most 64 connections, 8 from one address; beyond 64 a new one closes one
that answers nothing, so that probes always get through.
`;

const OPTIONS = {
  addr: { type: 'string', default: '0.0.0.0:8443' },
  'admin-addr': { type: 'string', default: '0.0.0.0:9995' },
  'tls-dir': { type: 'string', default: 'certs' },
  'tls-san': { type: 'string', multiple: true },
  'tls-min-version': { type: 'string', default: '1.3' },
  values: { type: 'string' },
  'trust-anchors': { type: 'string' },
  'linkerd-namespace': { type: 'string', default: 'linkerd' },
  kubeconfig: { type: 'string' },
  'no-cluster': { type: 'boolean', default: false },
  events: { type: 'string', default: 'relevant' },
  'pod-security-default': { type: 'string' },
  'pod-security-exempt': { type: 'string', multiple: true },
  'kubectl-default-container': { type: 'boolean', default: false },
  'pod-scan-interval': { type: 'string', default: '0s' },
  'log-level': { type: 'string', default: 'info' },
  'log-format': { type: 'string', default: 'auto' },
  'shutdown-delay': { type: 'string', default: '0s' },
  'shutdown-timeout': { type: 'string', default: '10s' },
  'tls-handshake-timeout': { type: 'string', default: '5s' },
  'header-timeout': { type: 'string', default: '5s' },
  'request-timeout': { type: 'string', default: '8s' },
  'keep-alive-timeout': { type: 'string', default: '30s' },
  'stall-timeout': { type: 'string', default: '10s' },
  'max-connections': { type: 'string', default: '1000' },
  'max-connections-per-client': { type: 'string', default: '500' },
  'max-body-bytes': { type: 'string', default: '4194304' },
  'max-json-values': { type: 'string', default: '100000' },
  'max-in-flight-bytes': { type: 'string', default: '16777216' },
  'max-requests-per-connection': { type: 'string', default: '0' },
  'max-header-bytes': { type: 'string', default: '16384' },
  help: { type: 'boolean', short: 'h', default: false },
} as const;

type OptionName = keyof typeof OPTIONS;

/** The environment variable that stands for a flag. */
export const envName = (flag: string): string => `PROXY_INJECTOR_${flag.toUpperCase().replace(/-/g, '_')}`;

/** PROXY_INJECTOR_<FLAG> variables become flags placed before the real ones, so the command line wins. */
export function envArgs(env: NodeJS.ProcessEnv): string[] {
  const args: string[] = [];
  for (const name of Object.keys(OPTIONS) as OptionName[]) {
    if (name === 'help') continue;
    const value = env[envName(name)];
    if (value === undefined || value === '') continue;
    if (OPTIONS[name].type === 'boolean') {
      if (/^(1|true|yes)$/i.test(value)) args.push(`--${name}`);
      continue;
    }
    const values = OPTIONS[name].type === 'string' && 'multiple' in OPTIONS[name] ? value.split(',') : [value];
    for (const v of values) args.push(`--${name}=${v.trim()}`);
  }
  return args;
}

function durationMs(label: string, text: string): number {
  const ns = parseGoDuration(text);
  if (ns === undefined || ns < 0n) throw new UsageError(`${label} ${JSON.stringify(text)}: expected a duration such as 5s or 500ms`);
  return Number(ns / 1_000_000n);
}

function positiveMs(label: string, text: string): number {
  const ms = durationMs(label, text);
  if (ms <= 0) throw new UsageError(`${label} ${JSON.stringify(text)}: must be longer than 0s`);
  return ms;
}

function count(label: string, text: string, min: number): number {
  if (!/^\d{1,9}$/.test(text.trim()) || Number(text) < min) {
    throw new UsageError(`${label} ${JSON.stringify(text)}: expected a whole number of at least ${min}`);
  }
  return Number(text);
}

/** The webhook listener's limits from the flags; a timeout of 0 would mean none, so it is refused. */
type LimitFlag =
  | 'tls-handshake-timeout'
  | 'header-timeout'
  | 'request-timeout'
  | 'keep-alive-timeout'
  | 'stall-timeout'
  | 'max-connections'
  | 'max-connections-per-client'
  | 'max-body-bytes'
  | 'max-json-values'
  | 'max-in-flight-bytes'
  | 'max-requests-per-connection'
  | 'max-header-bytes';

export function serverLimits(opts: Record<LimitFlag, string>, label: (name: LimitFlag) => string = (name) => `--${name}`): ServerLimits {
  const limits: ServerLimits = {
    handshakeTimeoutMs: positiveMs(label('tls-handshake-timeout'), opts['tls-handshake-timeout']),
    headersTimeoutMs: positiveMs(label('header-timeout'), opts['header-timeout']),
    requestTimeoutMs: positiveMs(label('request-timeout'), opts['request-timeout']),
    keepAliveTimeoutMs: positiveMs(label('keep-alive-timeout'), opts['keep-alive-timeout']),
    stallTimeoutMs: positiveMs(label('stall-timeout'), opts['stall-timeout']),
    maxConnections: count(label('max-connections'), opts['max-connections'], 0),
    maxConnectionsPerClient: count(label('max-connections-per-client'), opts['max-connections-per-client'], 0),
    // Below 64 KiB a pod with a few containers would not fit.
    maxBodyBytes: count(label('max-body-bytes'), opts['max-body-bytes'], 64 * 1024),
    // Below a few thousand a pod with a few containers, and the managedFields the API server adds, would not fit.
    maxJsonValues: count(label('max-json-values'), opts['max-json-values'], 4096),
    maxInFlightBytes: count(label('max-in-flight-bytes'), opts['max-in-flight-bytes'], 64 * 1024),
    maxRequestsPerSocket: count(label('max-requests-per-connection'), opts['max-requests-per-connection'], 0),
    // Below about 1 KiB even kube-apiserver's own request line and headers would not fit.
    maxHeaderBytes: count(label('max-header-bytes'), opts['max-header-bytes'], 1024),
  };
  if (limits.headersTimeoutMs > limits.requestTimeoutMs) {
    throw new UsageError(`${label('header-timeout')} ${opts['header-timeout']} is longer than ${label('request-timeout')} ${opts['request-timeout']}`);
  }
  // One client's share is half of it, and the largest body must fit in one client's share.
  if (limits.maxInFlightBytes < 2 * limits.maxBodyBytes) {
    throw new UsageError(`${label('max-in-flight-bytes')} ${opts['max-in-flight-bytes']} is less than twice ${label('max-body-bytes')} ${opts['max-body-bytes']}: one client may hold half of it, and no body that large could be read`);
  }
  // A shorter stall timeout would close a silent or slow client without the 408 that says why.
  if (limits.stallTimeoutMs < limits.requestTimeoutMs) {
    throw new UsageError(`${label('stall-timeout')} ${opts['stall-timeout']} is shorter than ${label('request-timeout')} ${opts['request-timeout']}`);
  }
  return limits;
}

/** --tls-dir is created when missing; a file there is an error that says so, before anything starts. */
function tlsDirectory(named: string, dir: string): void {
  let stat;
  try {
    stat = statSync(dir, { throwIfNoEntry: false });
  } catch (err) {
    throw new Error(`${named}: ${pathProblemText(err)}`);
  }
  if (stat !== undefined && !stat.isDirectory()) throw new Error(`${named}: not a directory`);
}

export async function runServe(argv: string[]): Promise<number> {
  const fromEnv = envArgs(process.env);
  const { values: opts, tokens } = parseCommandArgs({ args: [...fromEnv, ...argv], options: OPTIONS, allowPositionals: false, tokens: true });
  if (opts.help) {
    process.stdout.write(SERVE_HELP);
    return 0;
  }
  /** How to name an option in an error: as the variable when the value came from the environment. */
  const label = (name: OptionName): string => {
    const last = tokens.filter((t) => t.kind === 'option' && t.name === name).pop();
    return last !== undefined && last.index < fromEnv.length ? envName(name) : `--${name}`;
  };
  const level = opts['log-level'] as LevelWithSilent;
  if (!LOG_LEVELS.includes(level)) throw new UsageError(`${label('log-level')} ${JSON.stringify(level)}: expected one of ${LOG_LEVELS.join(', ')}`);
  const format = opts['log-format'] as LogFormat;
  if (!['json', 'pretty', 'auto'].includes(format)) throw new UsageError(`${label('log-format')} ${JSON.stringify(format)}: expected json, pretty or auto`);
  const minVersion = opts['tls-min-version'];
  if (minVersion !== '1.2' && minVersion !== '1.3') throw new UsageError(`${label('tls-min-version')} ${JSON.stringify(minVersion)}: expected 1.2 or 1.3`);
  const shutdownDelayMs = durationMs(label('shutdown-delay'), opts['shutdown-delay']);
  const shutdownTimeoutMs = durationMs(label('shutdown-timeout'), opts['shutdown-timeout']);
  const limits = serverLimits(opts, label);
  const sans = listFlag(opts['tls-san']);
  const events = opts.events as EventPolicy;
  if (!['all', 'relevant', 'none'].includes(events)) throw new UsageError(`${label('events')} ${JSON.stringify(events)}: expected all, relevant or none`);
  const podSecurity = podSecurityFlags(opts['pod-security-default'], opts['pod-security-exempt'], label('pod-security-default'));
  if (opts['no-cluster'] && opts.kubeconfig) throw new UsageError(`${label('no-cluster')} and ${label('kubeconfig')} contradict each other`);
  const podScanMs = durationMs(label('pod-scan-interval'), opts['pod-scan-interval']);
  if (podScanMs > 0 && podScanMs < 60_000) throw new UsageError(`${label('pod-scan-interval')} ${JSON.stringify(opts['pod-scan-interval'])}: at least 1m, since each scan lists every pod, or 0s for none`);
  if (podScanMs > 0 && opts['no-cluster']) throw new UsageError(`${label('pod-scan-interval')} reads the cluster's pods, and ${label('no-cluster')} says there is none`);
  for (const name of ['addr', 'admin-addr'] as const) {
    try {
      parseListenAddress(opts[name]);
    } catch (err) {
      throw new UsageError(`${label(name)}: ${(err as Error).message}`);
    }
  }

  tlsDirectory(`${label('tls-dir')} ${opts['tls-dir']}`, opts['tls-dir']);

  const logger = createLogger({ level, format });
  const metrics = new InjectorMetrics();
  const cluster = opts['no-cluster'] ? undefined : await connectToCluster(opts.kubeconfig ? { kubeconfig: opts.kubeconfig } : {});
  const context = await createContext({
    cluster,
    controlPlaneNamespace: opts['linkerd-namespace'],
    ...(opts.values && { valuesPath: opts.values }),
    ...(opts['trust-anchors'] && { trustAnchorsPath: opts['trust-anchors'] }),
    logger,
    metrics,
    events,
    podSecurity,
    kubectlDefaultContainer: opts['kubectl-default-container'],
  });

  let server: RunningServer;
  try {
    server = await startServer({
      addr: opts.addr,
      adminAddr: opts['admin-addr'],
      tlsDir: opts['tls-dir'],
      tlsSans: sans,
      tlsMinVersion: minVersion === '1.2' ? 'TLSv1.2' : 'TLSv1.3',
      sources: context.sources,
      onAdmitted: context.onAdmitted,
      notReadyBecause: context.notReadyBecause,
      metrics,
      logger,
      shutdownDelayMs,
      shutdownTimeoutMs,
      limits,
    });
  } catch (err) {
    // What started before the listeners (file watches, the cluster's caches) stops too, so that the process exits 1
    // rather than living on half-started.
    await context.stop();
    logger.flush();
    if (err instanceof ListenError) throw new Error(`${label(err.listener === 'admin' ? 'admin-addr' : 'addr')} ${err.address}: ${err.reason}`, { cause: err });
    throw err;
  }

  let podScan: PodScan | undefined;
  if (podScanMs > 0 && cluster) {
    podScan = new PodScan({ cluster, config: () => context.sources.config(), kubectlDefaultContainer: opts['kubectl-default-container'], intervalMs: podScanMs, metrics, logger });
    podScan.start();
  } else if (podScanMs > 0) {
    logger.warn(`${label('pod-scan-interval')} is set, but there is no cluster: no pods are scanned`);
  }

  return new Promise<number>((resolve) => {
    let signals = 0;
    const onSignal = (signal: NodeJS.Signals): void => {
      signals++;
      if (signals > 1) {
        logger.warn({ signal }, 'second signal: exiting now');
        resolve(1);
        return;
      }
      void server
        .shutdown(signal)
        .then(async (clean) => {
          await podScan?.stop();
          await context.stop();
          return clean;
        })
        .then((clean) => resolve(clean ? 0 : 1));
    };
    process.on('SIGTERM', onSignal);
    process.on('SIGINT', onSignal);
  }).then((code) => {
    logger.flush();
    // The log's last lines may still be on their way out. The process ends by itself once nothing else is under way
    // (the log then writes what is left as it exits), and explicitly after LOG_DRAIN_MS: a stuck keep-alive socket or a
    // pretty-printing worker must not hold it open.
    setTimeout(() => process.exit(code), LOG_DRAIN_MS).unref();
    return code;
  });
}
