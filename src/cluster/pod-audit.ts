/**
 * Every running pod held against what the injector would make of it now, by the workload that made it: meshed pods
 * against the proxy the configuration in force would give them (drift), pods without a proxy against what their
 * namespace and template ask. Under `failurePolicy: Ignore` the API server creates a pod without the proxy whenever the
 * injector does not answer in time; an annotation, a Linkerd upgrade or a new trust bundle changes only the pods created
 * after it. `check pods` prints this; `serve --pod-scan-interval` exports its counts.
 */
import {
  compareCodeUnits,
  defaultValues,
  inject,
  injectAnnotationDecision,
  isObject,
  names,
  oneLine,
  podDrift,
  selects,
  withTrustAnchors,
  type Drift,
  type DriftKind,
  type InjectorConfig,
  type LabelSelector,
} from '../engine/index.js';
import { apiErrorMessage } from './api.js';
import type { ClusterConnection } from './kubeconfig.js';
import { readLinkerdConfig } from './linkerd-config.js';
import { listAll, listPages } from './list.js';

/** A mutating webhook as far as the check reads it: which namespaces and objects it is sent. */
interface Webhook {
  name: string;
  namespaceSelector?: LabelSelector;
  objectSelector?: LabelSelector;
  rules?: Array<{ operations?: string[]; resources?: string[] }>;
}

/** Linkerd's webhook selectors, which the chart keeps by default: assumed when no injector's webhook can be read. */
const LINKERD_SELECTORS: Webhook = {
  name: "Linkerd's default selectors",
  namespaceSelector: {
    matchExpressions: [
      { key: 'config.linkerd.io/admission-webhooks', operator: 'NotIn', values: ['disabled'] },
      { key: 'kubernetes.io/metadata.name', operator: 'NotIn', values: ['kube-system', 'cert-manager'] },
    ],
  },
  objectSelector: {
    matchExpressions: [
      { key: names.CONTROL_PLANE_COMPONENT_LABEL, operator: 'DoesNotExist' },
      { key: 'linkerd.io/cni-resource', operator: 'DoesNotExist' },
    ],
  },
};

/** A webhook of a proxy injector, this project's (named `*.proxy-injector.io` by its chart) or Linkerd's, sent pods. */
const isInjectorWebhook = (w: Webhook): boolean =>
  (w.name === 'linkerd-proxy-injector.linkerd.io' || w.name.endsWith('.proxy-injector.io')) &&
  (w.rules ?? []).some((r) => (r.resources ?? []).some((res) => res === 'pods' || res === '*') && (r.operations ?? []).some((op) => op === 'CREATE' || op === '*'));

/**
 * The proxy injectors' webhooks in the cluster, or Linkerd's selectors (with why) when none can be read: a pod is sent
 * to an injector when any of them selects it.
 */
async function injectorWebhooks(client: ClusterConnection['client']): Promise<{ webhooks: Webhook[]; assumed?: string }> {
  try {
    const configs = await listAll<{ webhooks?: Webhook[] }>(client, '/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations', 'mutating webhook configurations');
    const webhooks = configs.flatMap((c) => c.webhooks ?? []).filter(isInjectorWebhook);
    if (webhooks.length > 0) return { webhooks };
    return { webhooks: [LINKERD_SELECTORS], assumed: "no proxy injector's webhook is registered: Linkerd's default selectors are assumed" };
  } catch (err) {
    return { webhooks: [LINKERD_SELECTORS], assumed: `the webhooks could not be read (${apiErrorMessage(err)}): Linkerd's default selectors are assumed` };
  }
}

export type PodState = 'meshed' | 'drifted' | 'unreadable' | 'unmeshed_asked' | 'meshed_unasked' | 'skipped' | 'not_sent';

export const POD_STATES: readonly PodState[] = ['meshed', 'drifted', 'unreadable', 'unmeshed_asked', 'meshed_unasked', 'skipped', 'not_sent'];

/** The states that something is to be done about: the command fails while a pod is in one. */
export const TO_ACT_ON: ReadonlySet<PodState> = new Set(['drifted', 'unreadable', 'unmeshed_asked', 'meshed_unasked']);

export interface PodAudit {
  name: string;
  state: PodState;
  /** Why it is in that state. */
  why: string;
  /** For `drifted`: the kinds of its differences, in the order of their paths. */
  kinds?: DriftKind[];
}

/** A difference the pods of a workload have, once, with how many of its pods have it. */
export interface WorkloadDifference extends Drift {
  pods: number;
}

export interface WorkloadAudit {
  namespace: string;
  /** The workload that made the pods, as far as they say: a Deployment from its ReplicaSet's name; `Pod` for a bare pod. */
  kind: string;
  name: string;
  /** How to make its pods again, when one of them is `drifted`, `unmeshed_asked` or `meshed_unasked`. */
  fix?: string;
  counts: Partial<Record<PodState, number>>;
  pods: PodAudit[];
  /** What its drifted pods differ in, each difference once, in path order. */
  differences: WorkloadDifference[];
  /** Distinct differences beyond the first MAX_DIFFERENCES, counted but not listed. */
  moreDifferences?: number;
}

export interface PodsReport {
  server: string;
  /** The webhooks whose selectors say which pods reach an injector. */
  webhooks: string[];
  /** Why Linkerd's default selectors stand in for the cluster's, when they do. */
  assumed?: string;
  /** Where the configuration meshed pods are compared with was read, or why it could not be. */
  configuration: string;
  counts: Record<PodState, number>;
  /** Every running pod that reaches this list, by the workload that made it, in the order the API listed them. */
  workloads: WorkloadAudit[];
}

interface Meta {
  name?: string;
  namespace?: string;
  annotations?: Record<string, string>;
  labels?: Record<string, string>;
  deletionTimestamp?: string;
  ownerReferences?: Array<{ kind?: string; name?: string; controller?: boolean }>;
}

interface PodObject {
  metadata?: Meta;
  spec?: { containers?: unknown[]; initContainers?: unknown[] };
  status?: { phase?: string };
}

/** Distinct differences listed per workload: a hostile pod's thousands of env entries are counted, not kept. */
const MAX_DIFFERENCES = 20;

const hasProxy = (pod: PodObject): boolean =>
  [...(pod.spec?.containers ?? []), ...(pod.spec?.initContainers ?? [])].some((c) => isObject(c) && c['name'] === names.PROXY_CONTAINER);

/** The workload that made the pod: its controller, a ReplicaSet named after a Deployment and the pod's template hash. */
function workloadOf(pod: PodObject): { kind: string; name: string } {
  const meta = pod.metadata ?? {};
  const ref = (meta.ownerReferences ?? []).find((o) => o.controller === true);
  if (!ref?.kind || !ref.name) return { kind: 'Pod', name: meta.name ?? '' };
  const hash = meta.labels?.['pod-template-hash'];
  if (ref.kind === 'ReplicaSet' && hash && ref.name.endsWith(`-${hash}`)) return { kind: 'Deployment', name: ref.name.slice(0, -hash.length - 1) };
  return { kind: ref.kind, name: ref.name };
}

/** How a pod is made again, by what made it. */
function remedy(workload: { kind: string; name: string }, namespace: string): string {
  switch (workload.kind) {
    case 'Deployment':
    case 'StatefulSet':
    case 'DaemonSet':
      return `kubectl rollout restart ${workload.kind.toLowerCase()}/${workload.name} -n ${namespace}`;
    case 'ReplicaSet':
    case 'ReplicationController':
      return `delete the pod: its ${workload.kind} creates it again`;
    case 'Job':
      return "nothing to restart: a Job's pod runs once, and its next run (a new Job, or the CronJob's next) gets what the injector gives now";
    case 'Pod':
      return 'create the pod again';
    default:
      return `delete the pod, if its ${workload.kind} creates it again`;
  }
}

const asked = (at: string): string => (at === 'namespace' ? 'its namespace asks for it' : 'its pod template asks for it');

/** What meshed pods are compared with: the configuration in force, or why there is none. */
export type Comparison = { config: InjectorConfig; kubectlDefaultContainer: boolean } | { problem: string };

/** What is said of one pod, with its differences when drifted; undefined for a pod that has finished or is going. */
function auditPod(
  pod: PodObject,
  namespaces: ReadonlyMap<string, Meta>,
  webhooks: readonly Webhook[],
  comparison: Comparison,
): { audit: PodAudit; differences?: Drift[] } | undefined {
  const meta = pod.metadata ?? {};
  if (meta.deletionTimestamp || pod.status?.phase === 'Succeeded' || pod.status?.phase === 'Failed') return undefined;
  const ns = meta.namespace ?? '';
  const nsMeta = namespaces.get(ns) ?? {};
  const name = meta.name ?? '';
  // The API server labels every namespace with its name; a selector may use it.
  const nsLabels = { 'kubernetes.io/metadata.name': ns, ...nsMeta.labels };
  if (!webhooks.some((w) => selects(w.namespaceSelector, nsLabels) && selects(w.objectSelector, meta.labels ?? {}))) {
    return { audit: { name, state: 'not_sent', why: "no proxy injector's webhook selects its namespace and labels" } };
  }
  if (hasProxy(pod)) {
    const decision = injectAnnotationDecision('webhook', meta.annotations ?? {}, nsMeta.annotations ?? {});
    if (decision.disabled) {
      const why = 'it has the proxy, but neither its namespace nor its pod template asks for it any more: it keeps the proxy until it is made again';
      return { audit: { name, state: 'meshed_unasked', why } };
    }
    return compared(pod, name, ns, nsMeta, comparison, asked(decision.at));
  }
  const config = 'config' in comparison ? comparison.config : DECISION_ONLY;
  let result: ReturnType<typeof inject>;
  try {
    result = inject({ object: { apiVersion: 'v1', kind: 'Pod', ...pod }, kind: 'Pod', namespace: ns, namespaceAnnotations: nsMeta.annotations ?? {}, origin: 'webhook', config });
  } catch (err) {
    // One pod the engine refuses (annotations over the API server's limits, say) must not end the audit of the rest.
    return { audit: { name, state: 'unreadable', why: `the injector cannot read it: ${oneLine(err)}` } };
  }
  if (result.outcome !== 'injected') return { audit: { name, state: 'skipped', why: `the injector would skip it: ${result.reasons.map((r) => r.text).join(', ')}` } };
  const why =
    `it has no proxy, though ${asked(result.annotationAt)}: it was created while the injector did not answer (the ` +
    "webhook's failurePolicy Ignore lets the pod through without it), before the annotation, or before the injector was installed";
  return { audit: { name, state: 'unmeshed_asked', why } };
}

/** A meshed pod that is asked to be: whether its proxy is the one a fresh admission would give it. */
function compared(pod: PodObject, name: string, ns: string, nsMeta: Meta, comparison: Comparison, asking: string): { audit: PodAudit; differences?: Drift[] } {
  if (!('config' in comparison)) return { audit: { name, state: 'unreadable', why: comparison.problem } };
  const verdict = podDrift({
    pod,
    config: comparison.config,
    namespace: ns,
    namespaceAnnotations: nsMeta.annotations ?? {},
    origin: 'webhook',
    kubectlDefaultContainer: comparison.kubectlDefaultContainer,
  });
  if (verdict.verdict === 'unreadable') return { audit: { name, state: 'unreadable', why: `the comparison cannot read it: ${verdict.reason}` } };
  if (verdict.verdict === 'current') return { audit: { name, state: 'meshed', why: `it has the proxy, ${asking}, and it is what the injector gives now` } };
  const kinds = [...new Set(verdict.differences.map((d) => d.kind))];
  const why = `it has the proxy, but not as the injector gives it now: ${kinds.join(', ')}`;
  return { audit: { name, state: 'drifted', why, kinds }, differences: verdict.differences };
}

/** Without the configuration, a pod without a proxy is still judged: only the decision is read, never the proxy. */
const DECISION_ONLY: InjectorConfig = { values: withTrustAnchors(defaultValues(), 'unused: only the decision is read'), controlPlaneNamespace: 'linkerd' };

/** Adds one pod's audit, and its differences, to its workload's. */
function addTo(workload: WorkloadAudit, audit: PodAudit, differences: readonly Drift[] | undefined, seen: Map<string, WorkloadDifference>): void {
  workload.pods.push(audit);
  workload.counts[audit.state] = (workload.counts[audit.state] ?? 0) + 1;
  for (const d of differences ?? []) {
    const key = JSON.stringify([d.kind, d.path, d.expected, d.actual]);
    const known = seen.get(key);
    if (known) known.pods++;
    else if (workload.differences.length < MAX_DIFFERENCES) {
      const entry = { ...d, pods: 1 };
      seen.set(key, entry);
      workload.differences.push(entry);
    } else workload.moreDifferences = (workload.moreDifferences ?? 0) + 1;
  }
}

export interface AuditOptions {
  /** This namespace only. */
  namespace?: string;
  /** The configuration to compare with, and where it comes from; by default Linkerd's ConfigMaps, read once. */
  config?: { config: InjectorConfig; source: string };
  /** Linkerd's control-plane namespace, where its configuration is read (default linkerd). */
  controlPlaneNamespace?: string;
  /**
   * Pods per page (default 500). A page is audited in one turn of the event loop: the webhook's own scan reads small
   * pages, so that admissions wait at most for a few pods between them.
   */
  pageSize?: number;
  /** As the injector's `serve --kubectl-default-container`. */
  kubectlDefaultContainer?: boolean;
}

/**
 * Audits every running pod against what its namespace and template ask now, as the webhook would read them, and each
 * meshed pod against the proxy the configuration in force would give it. Pods are read a page at a time, and only what
 * is said of each is kept.
 */
export async function auditPods(cluster: ClusterConnection, options: AuditOptions = {}): Promise<PodsReport> {
  const { namespace } = options;
  const client = cluster.client;
  const namespaces = new Map<string, Meta>();
  if (namespace) {
    const ns = await client.request<{ metadata?: Meta }>('GET', `/api/v1/namespaces/${encodeURIComponent(namespace)}`, { what: `reading namespace ${namespace}`, timeoutMs: 30_000 });
    namespaces.set(namespace, ns.metadata ?? {});
  } else {
    for (const ns of await listAll<{ metadata?: Meta }>(client, '/api/v1/namespaces', 'namespaces')) namespaces.set(ns.metadata?.name ?? '', ns.metadata ?? {});
  }
  const { webhooks, assumed } = await injectorWebhooks(client);
  const comparison = await comparisonFor(client, options);
  const path = namespace ? `/api/v1/namespaces/${encodeURIComponent(namespace)}/pods` : '/api/v1/pods';
  const counts = Object.fromEntries(POD_STATES.map((s) => [s, 0])) as Record<PodState, number>;
  const workloads = new Map<string, { audit: WorkloadAudit; seen: Map<string, WorkloadDifference> }>();
  const pages = options.pageSize === undefined ? {} : { pageSize: options.pageSize };
  for await (const page of listPages<PodObject>(client, path, namespace ? `pods in ${namespace}` : 'pods', pages)) {
    for (const pod of page.items) {
      const audited = auditPod(pod, namespaces, webhooks, comparison);
      if (!audited) continue;
      counts[audited.audit.state]++;
      const ns = pod.metadata?.namespace ?? '';
      const made = workloadOf(pod);
      const key = `${ns}\u0000${made.kind}\u0000${made.name}`;
      let entry = workloads.get(key);
      if (!entry) workloads.set(key, (entry = { audit: { namespace: ns, ...made, counts: {}, pods: [], differences: [] }, seen: new Map() }));
      if (TO_ACT_ON.has(audited.audit.state) && audited.audit.state !== 'unreadable') entry.audit.fix ??= remedy(made, ns);
      addTo(entry.audit, audited.audit, audited.differences, entry.seen);
    }
  }
  const list = [...workloads.values()].map((w) => w.audit);
  for (const w of list) w.differences.sort((a, b) => compareCodeUnits(a.path, b.path) || compareCodeUnits(a.kind, b.kind));
  return { server: cluster.server, webhooks: webhooks.map((w) => w.name), ...(assumed && { assumed }), configuration: comparison.source, counts, workloads: list };
}

/** The configuration in force as the cluster holds it, or why it cannot be read: meshed pods are then unreadable. */
async function comparisonFor(client: ClusterConnection['client'], options: AuditOptions): Promise<Comparison & { source: string }> {
  const kubectlDefaultContainer = options.kubectlDefaultContainer === true;
  if (options.config) return { ...options.config, kubectlDefaultContainer };
  const ns = options.controlPlaneNamespace ?? 'linkerd';
  try {
    const { config, source } = await readLinkerdConfig(client, ns);
    return { config, kubectlDefaultContainer, source };
  } catch (err) {
    const problem = `the Linkerd configuration could not be read (${apiErrorMessage(err)}): meshed pods are not compared`;
    return { problem, source: problem };
  }
}
