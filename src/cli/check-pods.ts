/**
 * `proxy-injector check pods`: the running pods that their namespace or template asks to mesh but that have no proxy,
 * and the meshed pods that nothing asks to mesh any more. Under `failurePolicy: Ignore` the API server creates a pod
 * without the proxy whenever the injector does not answer in time, and says so nowhere but its own metrics; an
 * annotation added to a namespace or template meshes only the pods created after it. This finds both.
 */
import { parseArgs } from 'node:util';
import { apiErrorMessage, connectToCluster, listAll, listPages, readLinkerdConfig, type ClusterConnection } from '../cluster/index.js';
import {
  clip,
  compareCodeUnits,
  defaultValues,
  inject,
  injectAnnotationDecision,
  isObject,
  names,
  podDrift,
  selects,
  withTrustAnchors,
  type Drift,
  type DriftKind,
  type InjectorConfig,
  type LabelSelector,
} from '../engine/index.js';
import type { CliResult } from './command-io.js';
import { FAIL, WARN } from './report.js';

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

const STATES: readonly PodState[] = ['meshed', 'drifted', 'unreadable', 'unmeshed_asked', 'meshed_unasked', 'skipped', 'not_sent'];

/** The states that something is to be done about: the command fails while a pod is in one. */
const TO_ACT_ON: ReadonlySet<PodState> = new Set(['drifted', 'unreadable', 'unmeshed_asked', 'meshed_unasked']);

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
  const result = inject({ object: { apiVersion: 'v1', kind: 'Pod', ...pod }, kind: 'Pod', namespace: ns, namespaceAnnotations: nsMeta.annotations ?? {}, origin: 'webhook', config });
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
  /** Linkerd's control-plane namespace, where its configuration is read (default linkerd). */
  controlPlaneNamespace?: string;
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
  const counts = Object.fromEntries(STATES.map((s) => [s, 0])) as Record<PodState, number>;
  const workloads = new Map<string, { audit: WorkloadAudit; seen: Map<string, WorkloadDifference> }>();
  for await (const page of listPages<PodObject>(client, path, namespace ? `pods in ${namespace}` : 'pods')) {
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
  const ns = options.controlPlaneNamespace ?? 'linkerd';
  try {
    const { config, source } = await readLinkerdConfig(client, ns);
    return { config, kubectlDefaultContainer: options.kubectlDefaultContainer === true, source };
  } catch (err) {
    const problem = `the Linkerd configuration could not be read (${apiErrorMessage(err)}): meshed pods are not compared`;
    return { problem, source: problem };
  }
}

export const CHECK_PODS_HELP = `Usage: proxy-injector check pods [--kubeconfig FILE] [-n NAMESPACE] [-L LINKERD_NAMESPACE]
                                [--kubectl-default-container] [-o text|json]

Holds every running pod against what the injector would make of it now, by the workload that made it:
  - a meshed pod whose proxy is not the one the configuration in force (ConfigMaps linkerd-config and
    linkerd-identity-trust-roots) would give it: drifted, with what differs (the proxy's image, the trust
    anchors, the start-up mode, its resources, other proxy configuration) and the fields;
  - a pod that its namespace or template asks to mesh (linkerd.io/inject) but that has no proxy: under
    failurePolicy Ignore the API server creates a pod without it whenever the injector does not answer in
    time, and an annotation meshes only the pods created after it;
  - a meshed pod that nothing asks to mesh any more.
Each with the command that makes the workload's pods again. Pods that no proxy injector's webhook selects
(its namespaceSelector and objectSelector, read from the cluster; Linkerd's defaults when they cannot be
read) and finished pods are left out. Pods are read 500 at a time.

Options:
  --kubeconfig FILE     cluster credentials (default: $KUBECONFIG, ~/.kube/config, or the in-cluster
                        service account)
  -n, --namespace NS    this namespace only (default: all; needs list on pods and namespaces, and on
                        mutatingwebhookconfigurations; get on ConfigMaps in Linkerd's namespace)
  -L, --linkerd-namespace NS  namespace of the Linkerd control plane (default linkerd)
  --kubectl-default-container  compare as the injector runs with serve --kubectl-default-container
  -o, --output FORMAT   text (default): each workload to act on; json: every pod, by workload
  -h, --help            this help

Exit status: 0 every pod is as the injector would make it; 1 some pod is not, or could not be compared (or
the cluster cannot be read); 2 usage error.
`;

/** Runs `check pods`. */
export async function runCheckPods(argv: readonly string[], env: NodeJS.ProcessEnv = process.env): Promise<CliResult> {
  let opts: Record<string, string | boolean | undefined>;
  try {
    opts = parseArgs({
      args: [...argv],
      options: {
        kubeconfig: { type: 'string' },
        namespace: { type: 'string', short: 'n' },
        'linkerd-namespace': { type: 'string', short: 'L' },
        'kubectl-default-container': { type: 'boolean' },
        output: { type: 'string', short: 'o' },
        help: { type: 'boolean', short: 'h' },
      },
      strict: true,
    }).values;
  } catch (err) {
    return { stdout: '', stderr: `proxy-injector check pods: ${(err as Error).message}\n${CHECK_PODS_HELP}`, code: 2 };
  }
  if (opts['help'] === true) return { stdout: CHECK_PODS_HELP, stderr: '', code: 0 };
  const output = opts['output'] ?? 'text';
  if (output !== 'text' && output !== 'json') {
    return { stdout: '', stderr: `proxy-injector check pods: --output ${JSON.stringify(output)}: expected text or json\n`, code: 2 };
  }
  const text = (key: string): string | undefined => (typeof opts[key] === 'string' && opts[key] !== '' ? (opts[key] as string) : undefined);
  let report: PodsReport;
  try {
    const kubeconfig = text('kubeconfig');
    const cluster = await connectToCluster({ env, ...(kubeconfig && { kubeconfig }) });
    if (!cluster) return { stdout: '', stderr: 'proxy-injector check pods: no cluster: give --kubeconfig FILE, or set KUBECONFIG\n', code: 1 };
    try {
      const namespace = text('namespace');
      const controlPlaneNamespace = text('linkerd-namespace');
      report = await auditPods(cluster, {
        ...(namespace && { namespace }),
        ...(controlPlaneNamespace && { controlPlaneNamespace }),
        kubectlDefaultContainer: opts['kubectl-default-container'] === true,
      });
    } finally {
      cluster.client.close();
    }
  } catch (err) {
    return { stdout: '', stderr: `proxy-injector check pods: ${apiErrorMessage(err)}\n`, code: 1 };
  }
  const ok = [...TO_ACT_ON].every((state) => report.counts[state] === 0);
  if (output === 'json') return { stdout: `${JSON.stringify(report, null, 2)}\n`, stderr: '', code: ok ? 0 : 1 };
  return { stdout: textReport(report), stderr: '', code: ok ? 0 : 1 };
}

/** What each state is called in the text, for a count of pods. */
const STATE_WORDS: Record<PodState, string> = {
  meshed: 'meshed and current',
  drifted: 'drifted',
  unreadable: 'that could not be compared',
  unmeshed_asked: 'not meshed though asked',
  meshed_unasked: 'meshed though no longer asked',
  skipped: 'that the injector skips',
  not_sent: 'never sent to it',
};

/** Differences and pod names shown per workload in the text, and a value's characters; json has them all. */
const SHOWN = 5;
const SHOWN_VALUE = 64;

const plural = (n: number, word: string): string => `${n} ${word}${n === 1 ? '' : 's'}`;

/** The text report: a block per workload to act on, then the counts. */
function textReport(report: PodsReport): string {
  const lines: string[] = report.assumed ? [`${WARN} ${report.assumed}`] : [];
  if (!report.configuration.startsWith('ConfigMaps ')) lines.push(`${WARN} ${report.configuration}`);
  for (const w of report.workloads) {
    const acting = STATES.filter((s) => TO_ACT_ON.has(s) && (w.counts[s] ?? 0) > 0);
    if (acting.length === 0) continue;
    const total = w.pods.length;
    const serious = acting.some((s) => s === 'unmeshed_asked' || s === 'unreadable');
    const what = acting.map((s) => `${w.counts[s]} of ${plural(total, 'pod')} ${STATE_WORDS[s]}`).join(', ');
    const named = w.kind === 'Pod' ? `pod/${w.name}` : `${w.kind.toLowerCase()}/${w.name}`;
    lines.push(`${serious ? FAIL : WARN} ${w.namespace} ${named}: ${what}`);
    for (const state of acting) {
      const pods = w.pods.filter((p) => p.state === state);
      const shown = pods.slice(0, SHOWN).map((p) => p.name).join(', ');
      lines.push(`    ${STATE_WORDS[state]}: ${shown}${pods.length > SHOWN ? ` and ${pods.length - SHOWN} more` : ''}; ${pods[0]?.why ?? ''}`);
    }
    for (const d of w.differences.slice(0, SHOWN)) lines.push(`    ${differenceLine(d)}`);
    const hidden = w.differences.length - Math.min(w.differences.length, SHOWN) + (w.moreDifferences ?? 0);
    if (hidden > 0) lines.push(`    and ${plural(hidden, 'other difference')} (-o json lists ${w.moreDifferences ? 'the first ' : ''}them)`);
    if (w.fix) lines.push(`    fix: ${w.fix}`);
  }
  const c = report.counts;
  const total = Object.values(c).reduce((a, b) => a + b, 0);
  lines.push(`${total} running pods: ${STATES.map((s) => `${c[s]} ${STATE_WORDS[s]}`).join(', ')}`);
  return `${lines.join('\n')}\n`;
}

/** One difference: its field, what the injector gives now and what the pods carry. */
function differenceLine(d: WorkloadDifference): string {
  const now = d.expected === undefined ? 'absent now' : `${JSON.stringify(clip(d.expected, SHOWN_VALUE))} now`;
  const pods = d.actual === undefined ? 'absent in the pods' : `${JSON.stringify(clip(d.actual, SHOWN_VALUE))} in the pods`;
  const reasons = d.reasons?.length ? ` (${d.reasons.join(', ')})` : '';
  const documented = d.documented ? `; a documented difference: ${d.documented}` : '';
  return `${d.kind} ${d.path}: ${now}, ${pods}${reasons} (${plural(d.pods, 'pod')}${documented})`;
}
