/**
 * Healing the data plane: the workloads whose pods `check pods` finds drifted or unmeshed, made again one at a time the
 * way `kubectl rollout restart` does, each waited on until its new pods are Ready and current before the next. It stops
 * at the first sign of harm (a rollout that does not progress, a new pod whose linkerd-init or network validator fails,
 * new pods that crash-loop), says why, and restarts nothing more until that workload is healthy again or a person says
 * so. Nothing is restarted that the plan, printed first, does not show.
 */
import { createHash } from 'node:crypto';
import type { Logger } from 'pino';
import { names, type InjectorConfig } from '../engine/index.js';
import { apiErrorMessage, apiStatus } from './api.js';
import type { ApiClient } from './client.js';
import type { ClusterConnection } from './kubeconfig.js';
import { auditPods, type PodsReport, type WorkloadAudit } from './pod-audit.js';

/** On a namespace or a workload (its own metadata or its pod template): `disabled` keeps healing away from it. */
export const HEAL_ANNOTATION = 'proxy-injector.io/heal';
/** On the pod template of a workload restarted by a heal: the drift it was restarted for. */
export const HEALED_FOR_ANNOTATION = 'proxy-injector.io/healed-for';
/** What `kubectl rollout restart` sets on the pod template. */
const RESTARTED_AT_ANNOTATION = 'kubectl.kubernetes.io/restartedAt';

/** The kinds a heal restarts, with their collection under apps/v1. */
const RESTARTABLE: Readonly<Record<string, string>> = { Deployment: 'deployments', StatefulSet: 'statefulsets', DaemonSet: 'daemonsets' };

export interface HealStep {
  namespace: string;
  kind: string;
  name: string;
  /** What is wrong with its pods, e.g. "2 of 3 pods drifted (proxy_config)". */
  why: string;
  /** The drift it is restarted for: the same drift never restarts it twice. */
  fingerprint: string;
}

export interface HealPlan {
  /** In the order they are restarted. */
  steps: HealStep[];
  /** Workloads with drifted or unmeshed pods that are left alone, and why. */
  untouched: Array<{ namespace: string; kind: string; name: string; why: string }>;
  /** A workload restarted before whose pods have not become healthy: nothing is restarted while there is one. */
  blocked?: { namespace: string; kind: string; name: string; why: string };
  counts: PodsReport['counts'];
}

export interface HealOptions {
  /** The injector's own namespace: never touched (default proxy-injector). */
  injectorNamespace?: string;
  controlPlaneNamespace?: string;
  config?: { config: InjectorConfig; source: string };
  /** Evict bare pods through the Eviction API (PodDisruptionBudgets are respected): nothing makes them again. */
  evictBarePods?: boolean;
  /** Go on past a workload a heal restarted that is not healthy, leaving it alone: a person has looked at it. */
  resume?: boolean;
}

interface WorkloadObject {
  metadata?: { annotations?: Record<string, string>; generation?: number };
  spec?: {
    replicas?: number;
    progressDeadlineSeconds?: number;
    selector?: { matchLabels?: Record<string, string> };
    template?: { metadata?: { annotations?: Record<string, string> } };
  };
  status?: Record<string, unknown> & { observedGeneration?: number; conditions?: Array<{ type?: string; status?: string; reason?: string; message?: string }> };
}

const workloadPath = (namespace: string, kind: string, name: string): string =>
  `/apis/apps/v1/namespaces/${encodeURIComponent(namespace)}/${RESTARTABLE[kind]}/${encodeURIComponent(name)}`;

/** The drift a workload's pods have, as a short stable digest: the differences each once, and the pods left unmeshed. */
function fingerprintOf(w: WorkloadAudit): string {
  const differences = w.differences.map((d) => [d.kind, d.path, d.expected ?? null]).sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b)));
  return createHash('sha256').update(JSON.stringify({ differences, unmeshed: (w.counts.unmeshed_asked ?? 0) > 0 })).digest('hex').slice(0, 16);
}

/** What is wrong with a workload's pods, in words. */
function whyOf(w: WorkloadAudit): string {
  const total = w.pods.length;
  const parts: string[] = [];
  if (w.counts.drifted) parts.push(`${w.counts.drifted} of ${total} pods drifted (${[...new Set(w.differences.map((d) => d.kind))].join(', ')})`);
  if (w.counts.unmeshed_asked) parts.push(`${w.counts.unmeshed_asked} of ${total} pods not meshed though asked`);
  return parts.join(', ');
}

/** Why a namespace is never healed, or undefined. */
function namespaceExclusion(namespace: string, meta: { labels?: Record<string, string>; annotations?: Record<string, string> }, options: HealOptions): string | undefined {
  if (namespace === 'kube-system') return 'kube-system is never restarted';
  if (namespace === (options.injectorNamespace ?? 'proxy-injector')) return "the injector's own namespace is never restarted";
  const labels = meta.labels ?? {};
  if (namespace === (options.controlPlaneNamespace ?? 'linkerd') || labels['linkerd.io/is-control-plane'] || labels['linkerd.io/extension'] || labels['linkerd.io/cni-resource']) {
    return "Linkerd's own namespaces are never restarted";
  }
  if (meta.annotations?.[HEAL_ANNOTATION] === 'disabled') return `its namespace is annotated ${HEAL_ANNOTATION}: disabled`;
  return undefined;
}

/**
 * The plan: every workload with drifted or unmeshed pods, restarted in namespace and name order unless something keeps
 * it away (said in `untouched`), or nothing at all while a workload restarted before is not healthy (`blocked`).
 */
export async function planHeal(cluster: ClusterConnection, options: HealOptions = {}): Promise<HealPlan> {
  const report = await auditPods(cluster, {
    ...(options.config && { config: options.config }),
    ...(options.controlPlaneNamespace && { controlPlaneNamespace: options.controlPlaneNamespace }),
  });
  const plan: HealPlan = { steps: [], untouched: [], counts: report.counts };
  if (report.counts.unreadable > 0 && !options.config) {
    // Without the configuration no pod can be called current, and a heal could never finish.
    plan.blocked = { namespace: '', kind: '', name: '', why: report.configuration };
    return plan;
  }
  const namespaces = new Map<string, { labels?: Record<string, string>; annotations?: Record<string, string> }>();
  const candidates = report.workloads.filter((w) => (w.counts.drifted ?? 0) + (w.counts.unmeshed_asked ?? 0) > 0);
  for (const w of candidates.sort((a, b) => a.namespace.localeCompare(b.namespace) || a.kind.localeCompare(b.kind) || a.name.localeCompare(b.name))) {
    const leave = (why: string): void => void plan.untouched.push({ namespace: w.namespace, kind: w.kind, name: w.name, why });
    if (!namespaces.has(w.namespace)) namespaces.set(w.namespace, await namespaceMeta(cluster.client, w.namespace));
    const excluded = namespaceExclusion(w.namespace, namespaces.get(w.namespace) ?? {}, options);
    if (excluded) {
      leave(excluded);
      continue;
    }
    const fingerprint = fingerprintOf(w);
    const step = { namespace: w.namespace, kind: w.kind, name: w.name, why: whyOf(w), fingerprint };
    if (w.kind === 'Job') leave("a Job's pods run once: its next run (a new Job, or its CronJob's next) gets what the injector gives now");
    else if (w.kind === 'Pod') {
      if (options.evictBarePods) plan.steps.push(step);
      else leave('a bare pod is evicted only with --evict-bare-pods, and nothing creates it again');
    } else if (!RESTARTABLE[w.kind]) leave(`a ${w.kind}'s pods are not restarted: delete them, if it creates them again`);
    else {
      const object = await cluster.client.request<WorkloadObject>('GET', workloadPath(w.namespace, w.kind, w.name), { what: `reading ${w.kind} ${w.namespace}/${w.name}`, timeoutMs: 30_000 });
      const own = object.metadata?.annotations?.[HEAL_ANNOTATION] ?? object.spec?.template?.metadata?.annotations?.[HEAL_ANNOTATION];
      const healedFor = object.spec?.template?.metadata?.annotations?.[HEALED_FOR_ANNOTATION];
      if (own === 'disabled') leave(`it is annotated ${HEAL_ANNOTATION}: disabled`);
      else if (healedFor === fingerprint) {
        // Restarted for this very drift and still drifted or unmeshed: another restart would not help. Healing waits
        // until it is healthy, unless a person resumes it, and even then leaves it alone.
        const when = object.spec?.template?.metadata?.annotations?.[RESTARTED_AT_ANNOTATION] ?? 'an earlier heal';
        const why = `restarted for this drift at ${when}, and its pods are still: ${whyOf(w)}`;
        leave(options.resume ? `${why} (left alone: healing was resumed)` : why);
        if (!options.resume) plan.blocked ??= { namespace: w.namespace, kind: w.kind, name: w.name, why };
      } else plan.steps.push(step);
    }
  }
  if (plan.blocked) plan.steps = [];
  return plan;
}

async function namespaceMeta(client: ApiClient, namespace: string): Promise<{ labels?: Record<string, string>; annotations?: Record<string, string> }> {
  const ns = await client.request<{ metadata?: { labels?: Record<string, string>; annotations?: Record<string, string> } }>('GET', `/api/v1/namespaces/${encodeURIComponent(namespace)}`, {
    what: `reading namespace ${namespace}`,
    timeoutMs: 30_000,
  });
  return ns.metadata ?? {};
}

export interface HealRunOptions extends HealOptions {
  logger: Logger;
  /** How often a rollout is looked at (default 2 s). */
  pollMs?: number;
  /** Longest a StatefulSet's or DaemonSet's rollout, or an eviction refused by a disruption budget, may take (default 10 minutes). */
  rolloutTimeoutMs?: number;
  /** Said when a workload is healed or a heal stops: an Event on the workload, by default. */
  onOutcome?: (step: HealStep, outcome: HealOutcome) => Promise<void>;
}

/** Why a heal stopped, as a metric's label: a fixed few. */
export type HealStopCode = 'restart_refused' | 'rollout_stalled' | 'rollout_timeout' | 'not_current' | 'init_failed' | 'crash_loop' | 'eviction_refused' | 'eviction_timeout';

interface Stop {
  code: HealStopCode;
  why: string;
}

export type HealOutcome = { healed: true; seconds: number } | { healed: false; code: HealStopCode; why: string };

export interface HealResult {
  healed: Array<HealStep & { seconds: number }>;
  stopped?: HealStep & Stop;
}

/** Restarts the plan's workloads one at a time, and stops at the first that does not become healthy and current. */
export async function runHeal(cluster: ClusterConnection, plan: HealPlan, options: HealRunOptions): Promise<HealResult> {
  const result: HealResult = { healed: [] };
  for (const step of plan.steps) {
    const started = Date.now();
    options.logger.info({ ...step }, `restarting ${step.kind.toLowerCase()}/${step.name} in ${step.namespace}: ${step.why}`);
    const stop = step.kind === 'Pod' ? await evict(cluster.client, step, options) : await restart(cluster, step, options);
    const seconds = (Date.now() - started) / 1000;
    await options.onOutcome?.(step, stop === undefined ? { healed: true, seconds } : { healed: false, ...stop });
    if (stop !== undefined) {
      options.logger.warn({ ...step, reason: stop.code }, `stopped healing at ${step.kind.toLowerCase()}/${step.name} in ${step.namespace}: ${stop.why}`);
      result.stopped = { ...step, ...stop };
      return result;
    }
    options.logger.info({ ...step, seconds }, `${step.kind.toLowerCase()}/${step.name} in ${step.namespace} is current after ${seconds.toFixed(0)} s`);
    result.healed.push({ ...step, seconds });
  }
  return result;
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Restarts a workload and waits for it; says why it failed, or undefined once its pods are all Ready and current. */
async function restart(cluster: ClusterConnection, step: HealStep, options: HealRunOptions): Promise<Stop | undefined> {
  const client = cluster.client;
  const path = workloadPath(step.namespace, step.kind, step.name);
  const annotations = { [RESTARTED_AT_ANNOTATION]: new Date().toISOString(), [HEALED_FOR_ANNOTATION]: step.fingerprint };
  try {
    await client.request('PATCH', path, { what: `restarting ${step.kind} ${step.namespace}/${step.name}`, timeoutMs: 30_000, contentType: 'application/merge-patch+json', body: { spec: { template: { metadata: { annotations } } } } });
  } catch (err) {
    return { code: 'restart_refused', why: `the restart was refused: ${apiErrorMessage(err)}` };
  }
  const pollMs = options.pollMs ?? 2000;
  const bound = options.rolloutTimeoutMs ?? 10 * 60_000;
  const deadline = Date.now() + bound;
  for (;;) {
    const object = await client.request<WorkloadObject>('GET', path, { what: `reading ${step.kind} ${step.namespace}/${step.name}`, timeoutMs: 30_000 });
    const harm = await newPodHarm(client, step, object);
    if (harm) return harm;
    // A stall the controller reported before it saw the restart is the old rollout's, not this one's.
    const seen = (object.status?.observedGeneration ?? 0) >= (object.metadata?.generation ?? 0);
    const stalled = object.status?.conditions?.find((c) => c.type === 'Progressing' && c.status === 'False' && c.reason === 'ProgressDeadlineExceeded');
    if (seen && stalled) {
      const why = `its rollout did not progress within its progressDeadlineSeconds (${object.spec?.progressDeadlineSeconds ?? 600} s): ${stalled.message ?? ''}`;
      return { code: 'rollout_stalled', why: why.trim() };
    }
    if (rolledOut(step.kind, object)) break;
    if (Date.now() > deadline) return { code: 'rollout_timeout', why: `its rollout did not finish within ${Math.round(bound / 1000)} s` };
    await sleep(pollMs);
  }
  const after = await auditPods(cluster, { namespace: step.namespace, ...(options.config && { config: options.config }), ...(options.controlPlaneNamespace && { controlPlaneNamespace: options.controlPlaneNamespace }) });
  const own = after.workloads.find((w) => w.kind === step.kind && w.name === step.name);
  const wrong = own?.pods.filter((p) => p.state !== 'meshed') ?? [];
  if (wrong.length > 0) return { code: 'not_current', why: `its new pods are not what the injector gives: ${wrong.map((p) => `${p.name} ${p.state}`).slice(0, 3).join(', ')}` };
  return undefined;
}

/** Whether a rollout is done, as `kubectl rollout status` reads each kind's status. */
function rolledOut(kind: string, object: WorkloadObject): boolean {
  const status = object.status ?? {};
  const n = (key: string): number => (typeof status[key] === 'number' ? (status[key] as number) : 0);
  if ((status.observedGeneration ?? 0) < (object.metadata?.generation ?? 0)) return false;
  const replicas = object.spec?.replicas ?? 1;
  if (kind === 'Deployment') return n('updatedReplicas') === replicas && n('replicas') === replicas && n('availableReplicas') === replicas;
  if (kind === 'StatefulSet') return n('updatedReplicas') === replicas && n('readyReplicas') === replicas && status['updateRevision'] === status['currentRevision'];
  // A DaemonSet's status without its desired count has not been written by its controller yet.
  if (typeof status['desiredNumberScheduled'] !== 'number') return false;
  return n('updatedNumberScheduled') === n('desiredNumberScheduled') && n('numberAvailable') === n('desiredNumberScheduled');
}

interface PodStatusView {
  metadata?: { name?: string; annotations?: Record<string, string> };
  status?: {
    initContainerStatuses?: ContainerStatusView[];
    containerStatuses?: ContainerStatusView[];
  };
}

interface ContainerStatusView {
  name: string;
  state?: { waiting?: { reason?: string }; terminated?: { exitCode?: number } };
  lastState?: { terminated?: { exitCode?: number } };
}

/** A sign that the restart's new pods will not start: linkerd-init or the validator failed, or a container crash-loops. */
async function newPodHarm(client: ApiClient, step: HealStep, object: WorkloadObject): Promise<Stop | undefined> {
  const selector = Object.entries(object.spec?.selector?.matchLabels ?? {}).map(([k, v]) => `${k}=${v}`).join(',');
  if (!selector) return undefined;
  const pods = await client.request<{ items?: PodStatusView[] }>('GET', `/api/v1/namespaces/${encodeURIComponent(step.namespace)}/pods?labelSelector=${encodeURIComponent(selector)}`, {
    what: `listing the pods of ${step.kind} ${step.namespace}/${step.name}`,
    timeoutMs: 30_000,
  });
  for (const pod of pods.items ?? []) {
    if (pod.metadata?.annotations?.[HEALED_FOR_ANNOTATION] !== step.fingerprint) continue;
    const name = pod.metadata?.name ?? '';
    for (const c of pod.status?.initContainerStatuses ?? []) {
      if (c.name !== names.INIT_CONTAINER && c.name !== names.VALIDATOR_CONTAINER) continue;
      const code = c.state?.terminated?.exitCode ?? c.lastState?.terminated?.exitCode;
      if (code !== undefined && code !== 0) return { code: 'init_failed', why: `${c.name} failed in its new pod ${name} (exit code ${code})` };
    }
    for (const c of [...(pod.status?.initContainerStatuses ?? []), ...(pod.status?.containerStatuses ?? [])]) {
      if (c.state?.waiting?.reason === 'CrashLoopBackOff') return { code: 'crash_loop', why: `${c.name} is crash-looping in its new pod ${name}` };
    }
  }
  return undefined;
}

/** Evicts a bare pod, waiting while a disruption budget refuses it; says why it failed, or undefined once it is gone. */
async function evict(client: ApiClient, step: HealStep, options: HealRunOptions): Promise<Stop | undefined> {
  const deadline = Date.now() + (options.rolloutTimeoutMs ?? 10 * 60_000);
  const body = { apiVersion: 'policy/v1', kind: 'Eviction', metadata: { name: step.name, namespace: step.namespace } };
  for (;;) {
    try {
      await client.request('POST', `/api/v1/namespaces/${encodeURIComponent(step.namespace)}/pods/${encodeURIComponent(step.name)}/eviction`, { what: `evicting pod ${step.namespace}/${step.name}`, timeoutMs: 30_000, body });
      return undefined;
    } catch (err) {
      // 429: a PodDisruptionBudget does not allow it now. Waited on, never forced.
      if (apiStatus(err) !== 429) return { code: 'eviction_refused', why: `its eviction was refused: ${apiErrorMessage(err)}` };
      if (Date.now() > deadline) {
        return { code: 'eviction_timeout', why: `its PodDisruptionBudget did not allow the eviction within ${Math.round((options.rolloutTimeoutMs ?? 600_000) / 1000)} s` };
      }
      await sleep(options.pollMs ?? 2000);
    }
  }
}
