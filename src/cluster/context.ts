/** Wires the cluster into the server: configuration, namespace annotations, owners, events and readiness. */
import { existsSync } from 'node:fs';
import type { Logger } from 'pino';
import type { AdmissionRequest, AdmissionSources, HandledAdmission, PodIdentity } from '../admission/index.js';
import { isWorkloadKind, misplacedText, names, podSecurityLabels, templateAnnotationsPath, type Owner, type PodSecurityDefaults, type StartupRisk } from '../engine/index.js';
import { FileConfigSource } from './config-files.js';
import type { ConfigSource } from './config-source.js';
import type { PendingEvent } from './events.js';
import type { ClusterConnection } from './kubeconfig.js';
import type { ApiConfigSource } from './linkerd-config.js';
import type { ResolvedOwner } from './owners.js';
import type { Clock } from './rate.js';

/** Where Linkerd's own injector finds the two ConfigMaps when they are mounted. */
export const LINKERD_VALUES_PATH = '/var/run/linkerd/config/values';
export const LINKERD_TRUST_ROOTS_PATH = '/var/run/linkerd/identity/trust-roots/ca-bundle.crt';

/** A Prometheus counter as the cluster code uses it: incremented once per event, by label. */
export interface LabelledCounter {
  inc(labels: Record<string, string>): void;
}

/** The counters the cluster code keeps; the server's metrics registry provides them. */
export interface ClusterMetrics {
  /** Configuration reloads after the first load: `result` applied or refused. */
  configReloads: LabelledCounter;
  /** Watch restarts: `informer` and `reason`. */
  watchRestarts: LabelledCounter;
  /** Namespace lookups: `result` cache, read or failed. */
  namespaceLookups: LabelledCounter;
  /** Events: `result` written, failed or dropped. */
  events: LabelledCounter;
}

/** Which skipped pods get an InjectionSkipped event. */
export type EventPolicy = 'all' | 'relevant' | 'none';

export interface ContextOptions {
  cluster: ClusterConnection | undefined;
  controlPlaneNamespace: string;
  valuesPath?: string;
  trustAnchorsPath?: string;
  logger: Logger;
  metrics: ClusterMetrics;
  events: EventPolicy;
  /** What the API server's own Pod Security configuration enforces where no namespace label says (see podSecurityLabels). */
  podSecurity?: PodSecurityDefaults;
  /** Keep the app kubectl's default container when the proxy goes first (InjectionRequest.kubectlDefaultContainer). */
  kubectlDefaultContainer?: boolean;
  /** Checked for Linkerd's mounted ConfigMaps; tests point it elsewhere. */
  linkerdPaths?: { values: string; trustRoots: string };
  /** The clock of the read budget, in milliseconds; tests pass one they move. */
  now?: Clock;
}

export interface InjectorContext {
  /** The configuration, namespace annotations and owners, for the admission handler. */
  sources: Omit<AdmissionSources, 'answers'>;
  onAdmitted: (handled: HandledAdmission, request: AdmissionRequest) => void;
  /** What is still missing before the injector can answer correctly. */
  notReadyBecause(): string[];
  /** Closes what the context opened: the configuration source, the watches, the event recorder. */
  stop(): Promise<void>;
}

const INJECTED_MESSAGE = 'Linkerd sidecar proxy injected';
const SKIPPED_PREFIX = 'Linkerd sidecar proxy injection skipped: ';

/** Whether a pod was skipped only because nothing asked for it: neither it nor its namespace has the annotation. */
const nobodyAsked = (result: { reasons: ReadonlyArray<{ code: string }> }): boolean =>
  result.reasons.every((r) => r.code === 'injection_enable_annotation_absent');

/**
 * The workload an evaluated pod's events would go on (the owner the context resolved for it): none for a dry run (no
 * side effects), the policy "none" or Services.
 */
function ownerOfEvents(handled: HandledAdmission, owner: ResolvedOwner | undefined, request: AdmissionRequest, policy: EventPolicy): ResolvedOwner | undefined {
  if (request.dryRun || policy === 'none' || handled.kind !== 'evaluated' || handled.result.kind !== 'pod') return undefined;
  return owner;
}

/**
 * The workload an evaluated pod's events go on, when the API server was seen to hold it, as Linkerd records events only
 * on owners it found: a review can name any owner, and a pod without one is not stored yet.
 */
function eventTarget(handled: HandledAdmission, resolved: ResolvedOwner | undefined, request: AdmissionRequest, policy: EventPolicy): ResolvedOwner | undefined {
  const owner = ownerOfEvents(handled, resolved, request, policy);
  return owner?.exists ? owner : undefined;
}

/**
 * The Event an admission deserves, if any: Injected, or InjectionSkipped with Linkerd's reason texts, on the pod's
 * workload (see eventTarget), with Linkerd's messages. With the "relevant" policy, pods that nobody asked to mesh get
 * none, unless their workload asks where the injector never looks (see misplacedEventFor, which says so).
 */
export function eventFor(handled: HandledAdmission, resolved: ResolvedOwner | undefined, request: AdmissionRequest, policy: EventPolicy): PendingEvent | undefined {
  const owner = eventTarget(handled, resolved, request, policy);
  if (!owner || handled.kind !== 'evaluated') return undefined;
  const result = handled.result;
  if (result.outcome === 'injected') return { target: owner, type: 'Normal', reason: 'Injected', message: INJECTED_MESSAGE };
  if (policy === 'relevant' && nobodyAsked(result) && misplacedInjectText(owner) === undefined) return undefined;
  return {
    target: owner,
    type: 'Normal',
    reason: 'InjectionSkipped',
    message: `${SKIPPED_PREFIX}${result.reasons.map((r) => r.text).join(', ')}`,
  };
}

/**
 * A Warning event on a workload that carries Linkerd's annotations on its own metadata, where the injector never reads
 * them (linkerd/linkerd2#4125): `linkerd.io/inject: enabled` while its pods are skipped for the want of it, or proxy
 * settings its injected pods do not carry, so that the proxy runs without them. Each says where the annotation goes.
 * A Warning, apart from Linkerd's own events, so that whatever watches Warning events sees the mistake; on the same
 * workloads as eventFor, under every policy but "none".
 */
export function misplacedEventFor(handled: HandledAdmission, resolved: ResolvedOwner | undefined, request: AdmissionRequest, policy: EventPolicy): PendingEvent | undefined {
  const owner = eventTarget(handled, resolved, request, policy);
  if (!owner || handled.kind !== 'evaluated') return undefined;
  const result = handled.result;
  const text =
    result.outcome === 'injected'
      ? misplacedConfigText(owner, request)
      : nobodyAsked(result)
        ? misplacedInjectText(owner)
        : undefined;
  return text === undefined ? undefined : { target: owner, type: 'Warning', reason: 'MisplacedAnnotation', message: clip(text) };
}

/**
 * The owner of a pod whose events still depend on reading that owner: a StatefulSet or DaemonSet, which owns its pods
 * directly, so that resolving it needed no read. It is read after the pod was answered (see
 * OwnerResolver.withOwnMetadata) to know that it exists, and for its own metadata, which its pods never show: the
 * MisplacedAnnotation Warning and whether InjectionSkipped is relevant depend on it. Undefined when the events can be
 * decided now, or there are none.
 */
export function ownerToRead(handled: HandledAdmission, resolved: ResolvedOwner | undefined, request: AdmissionRequest, policy: EventPolicy): ResolvedOwner | undefined {
  const owner = ownerOfEvents(handled, resolved, request, policy);
  if (!owner || owner.exists) return undefined;
  return owner.apiKind === 'StatefulSet' || owner.apiKind === 'DaemonSet' ? owner : undefined;
}

/**
 * What to say of a workload that asks for injection outside its pod template (linkerd/linkerd2#4125): the injector
 * sees only the pods, so `linkerd.io/inject` on a Deployment's own metadata does nothing.
 */
function misplacedInjectText(owner: ResolvedOwner): string | undefined {
  const value = owner.misplacedInject;
  if (value !== names.INJECT_ENABLED && value !== names.INJECT_INGRESS) return undefined;
  const { where, belongs } = placesOf(owner);
  return misplacedText([`${names.INJECT_ANNOTATION}: ${value}`], where, belongs, () => 'so its pods are not injected');
}

/** Where a workload's annotations are that its pods never show, and where they would reach the pods. */
function placesOf(owner: ResolvedOwner): { where: string; belongs: string } {
  // A CronJob's are read from its Jobs, which carry what its jobTemplate's metadata says.
  const where = owner.apiKind === 'CronJob' ? "the CronJob's jobTemplate metadata" : `the ${owner.apiKind}'s own metadata`;
  return { where, belongs: templateAnnotationsPath(isWorkloadKind(owner.kind) ? owner.kind : 'deployment') };
}

/**
 * What to say of proxy annotations a workload carries on its own metadata and its pods do not: their values never
 * reach the proxy (the injector sees only the pods), which runs with the namespace's or the configured ones instead.
 */
function misplacedConfigText(owner: ResolvedOwner, request: AdmissionRequest): string | undefined {
  const metadata = (request.object as { metadata?: { annotations?: Record<string, unknown> } } | undefined)?.metadata;
  const own = metadata?.annotations ?? {};
  const keys = (owner.misplacedConfig ?? []).filter((key) => !Object.hasOwn(own, key));
  if (keys.length === 0) return undefined;
  const { where, belongs } = placesOf(owner);
  return misplacedText(keys, where, belongs, (them) => `so the proxy runs without ${them}`);
}

/**
 * A risk the workload took on by its own annotation, not one it inherited: `proxy-await: disabled` on the pod template.
 * A Warning event for it at every rollout would only be noise (and set off whatever alerts on Warning events); the
 * webhook's answer, `explain` and the log line still name it. From the namespace it is news to the workload's owner.
 */
function chosenByWorkload(risk: StartupRisk, own: Readonly<Record<string, string>>): boolean {
  return risk.code === 'proxy_await_disabled' && own[names.ANNOTATIONS.proxyAwait] !== undefined;
}

/** Longest message of an event: what events.k8s.io allows for a note, and more than kubectl shows in a row. */
const MAX_MESSAGE = 1024;

const clip = (message: string): string => (message.length > MAX_MESSAGE ? `${message.slice(0, MAX_MESSAGE - 1)}…` : message);

/**
 * A Warning event on the workload of an injected pod with start-up risks (see startupRisks), each with its fix. The pods
 * of a Deployment or Job are created by a controller, which drops the warnings the webhook answers with: this event is
 * where `kubectl describe` shows them, next to the controller's own FailedCreate when the API server refuses the pod.
 * On the same workloads as eventFor, under every policy but "none".
 */
export function riskEventFor(handled: HandledAdmission, resolved: ResolvedOwner | undefined, request: AdmissionRequest, policy: EventPolicy): PendingEvent | undefined {
  const owner = eventTarget(handled, resolved, request, policy);
  if (!owner || handled.kind !== 'evaluated') return undefined;
  const result = handled.result;
  if (result.outcome !== 'injected') return undefined;
  const shown = result.risks.filter((r) => !chosenByWorkload(r, result.workloadConfiguration));
  if (shown.length === 0) return undefined;
  const risks = shown.map((r) => `${r.code}: ${r.text}; fix: ${r.fix}`).join('. ');
  const message = `Linkerd sidecar proxy injected with start-up risks: ${risks}`;
  return {
    target: owner,
    type: 'Warning',
    reason: 'StartupRisk',
    message: clip(message),
  };
}

const configNotLoaded = (config: ConfigSource): string[] => (config.loaded ? [] : ['the Linkerd configuration is not loaded']);

/**
 * Chooses the configuration source: files given on the command line, else Linkerd's mounted ConfigMaps, else (with a
 * cluster) the ConfigMaps watched through the API, else the embedded defaults.
 */
export async function createContext(options: ContextOptions): Promise<InjectorContext> {
  const { cluster, logger, metrics } = options;
  const podSecurity = options.podSecurity?.enforce !== undefined || options.podSecurity?.exemptNamespaces?.length ? options.podSecurity : undefined;
  const defaultContainer = options.kubectlDefaultContainer ? { kubectlDefaultContainer: true } : {};
  const paths = options.linkerdPaths ?? { values: LINKERD_VALUES_PATH, trustRoots: LINKERD_TRUST_ROOTS_PATH };
  const onReload = (applied: boolean): void => {
    metrics.configReloads.inc({ result: applied ? 'applied' : 'refused' });
  };
  let config: ConfigSource;
  let apiConfig: ApiConfigSource | undefined;
  const mounted = existsSync(paths.values);
  if (options.valuesPath || options.trustAnchorsPath || mounted || !cluster) {
    const valuesPath = options.valuesPath ?? (mounted ? paths.values : undefined);
    const trustAnchorsPath = options.trustAnchorsPath ?? (mounted && existsSync(paths.trustRoots) ? paths.trustRoots : undefined);
    config = new FileConfigSource({
      ...(valuesPath && { valuesPath }),
      ...(trustAnchorsPath && { trustAnchorsPath }),
      controlPlaneNamespace: options.controlPlaneNamespace,
      logger,
      onReload,
    });
  } else {
    const { ApiConfigSource } = await import('./linkerd-config.js');
    apiConfig = new ApiConfigSource({
      client: cluster.client,
      controlPlaneNamespace: options.controlPlaneNamespace,
      logger,
      onReload,
      onRestart: (reason) => metrics.watchRestarts.inc({ informer: 'linkerd-config', reason }),
    });
    apiConfig.start();
    config = apiConfig;
  }

  if (!cluster) {
    logger.info("no Kubernetes cluster configured: namespace annotations are unknown, so each pod's own linkerd.io/inject annotation decides");
    if (podSecurity) logger.warn('the Pod Security default and exemptions apply to namespaces, which are unknown without a cluster: ignored');
    return {
      sources: { config: () => config.current(), namespaceAnnotations: () => undefined, ...defaultContainer },
      onAdmitted: () => {},
      notReadyBecause: () => configNotLoaded(config),
      stop: async () => config.close(),
    };
  }

  logger.info({ source: cluster.source, server: cluster.server }, 'using Kubernetes cluster');
  // The modules that talk to the API are loaded only by a process that has a cluster.
  const [{ apiEventSink, EventRecorder }, { NamespaceCache }, { apiOwnerLookup, OwnerResolver }, { ReadBudget }, { ResourceConstraintCache }, { ServerVersion }] =
    await Promise.all([
      import('./events.js'),
      import('./namespaces.js'),
      import('./owners.js'),
      import('./rate.js'),
      import('./resource-constraints.js'),
      import('./server-version.js'),
    ]);
  // Reads that reviews cause, of namespaces not yet cached and of owners: one budget for both, shared by address.
  const reads = new ReadBudget(options.now ? { now: options.now } : {});
  const namespaces = new NamespaceCache({
    client: cluster.client,
    logger,
    reads,
    onRestart: (reason) => metrics.watchRestarts.inc({ informer: 'namespaces', reason }),
    onLookup: (result) => metrics.namespaceLookups.inc({ result }),
  });
  namespaces.start();
  // Not waited for by /ready: until they are listed, pods are only answered without their quota and limit-range risks.
  const constraints = new ResourceConstraintCache({
    client: cluster.client,
    logger,
    onRestart: (informer, reason) => metrics.watchRestarts.inc({ informer, reason }),
  });
  constraints.start();
  // Not waited for either: until it is read, the risks that depend on the release are left out.
  const serverVersion = new ServerVersion({ client: cluster.client, logger });
  serverVersion.start();
  const owners = new OwnerResolver(apiOwnerLookup(cluster.client), logger, { reads });
  const recorder = new EventRecorder({
    sink: apiEventSink(cluster.client),
    logger,
    onDropped: () => metrics.events.inc({ result: 'dropped' }),
    onWritten: (ok) => metrics.events.inc({ result: ok ? 'written' : 'failed' }),
  });

  /** Linkerd's event for an admission, and the Warning for annotations its workload has where they do nothing. */
  const recordEvents = (handled: HandledAdmission, owner: ResolvedOwner | undefined, request: AdmissionRequest): void => {
    const event = eventFor(handled, owner, request, options.events);
    if (event) recorder.record(event);
    const misplaced = misplacedEventFor(handled, owner, request, options.events);
    if (misplaced) recorder.record(misplaced);
  };

  /**
   * The owners this context resolved, by the object the handler was given, with the address of the review each was
   * resolved for (a read made later for its events costs that address): events go only on a workload resolved here.
   */
  const resolved = new WeakMap<Owner, { owner: ResolvedOwner; client: string }>();
  const resolveOwner = async (request: AdmissionRequest, pod: PodIdentity, client: string): Promise<ResolvedOwner> => {
    const owner = await owners.resolve(pod, request.namespace ?? '', client);
    resolved.set(owner, { owner, client });
    return owner;
  };

  const onAdmitted = (handled: HandledAdmission, request: AdmissionRequest): void => {
    const known = handled.kind !== 'ignored' && handled.owner ? resolved.get(handled.owner) : undefined;
    const owner = known?.owner;
    const toRead = ownerToRead(handled, owner, request, options.events);
    if (toRead) {
      // Read after the pod was answered, and never failing: a workload that cannot be read gets the event it had.
      void owners.withOwnMetadata(toRead, known?.client).then((read) => recordEvents(handled, read, request));
    } else {
      recordEvents(handled, owner, request);
    }
    const risky = riskEventFor(handled, owner, request, options.events);
    if (risky) recorder.record(risky);
  };

  return {
    sources: {
      config: () => config.current(),
      namespaceAnnotations: (namespace, client) => namespaces.annotations(namespace, client),
      namespaceLabels: podSecurity
        ? (namespace) => podSecurityLabels(namespaces.labels(namespace), namespace, podSecurity)
        : (namespace) => namespaces.labels(namespace),
      namespaceConstraints: (namespace) => constraints.of(namespace),
      kubernetesVersion: () => serverVersion.current(),
      owner: resolveOwner,
      ...defaultContainer,
    },
    onAdmitted,
    notReadyBecause: () => [
      ...configNotLoaded(config),
      ...(namespaces.hasSynced ? [] : ['the namespace cache has not synced']),
      ...(apiConfig && !apiConfig.hasSynced ? ['the Linkerd ConfigMaps have not been listed'] : []),
    ],
    stop: async () => {
      await recorder.close();
      await namespaces.stop();
      await constraints.stop();
      serverVersion.stop();
      config.close();
      cluster.client.close();
    },
  };
}
