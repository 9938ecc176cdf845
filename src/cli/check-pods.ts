/**
 * `proxy-injector check pods`: the running pods that their namespace or template asks to mesh but that have no proxy,
 * and the meshed pods that nothing asks to mesh any more. Under `failurePolicy: Ignore` the API server creates a pod
 * without the proxy whenever the injector does not answer in time, and says so nowhere but its own metrics; an
 * annotation added to a namespace or template meshes only the pods created after it. This finds both.
 */
import { parseArgs } from 'node:util';
import { apiErrorMessage, connectToCluster, listAll, listPages, type ClusterConnection } from '../cluster/index.js';
import { defaultValues, inject, injectAnnotationDecision, isObject, names, selects, withTrustAnchors, type InjectorConfig, type LabelSelector } from '../engine/index.js';
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

export type PodState = 'meshed' | 'unmeshed_asked' | 'meshed_unasked' | 'skipped' | 'not_sent';

export interface PodAudit {
  namespace: string;
  name: string;
  /** The workload that made the pod, as far as the pod says: a Deployment from its ReplicaSet's name. */
  workload: { kind: string; name: string };
  state: PodState;
  /** Why it is in that state; for `unmeshed_asked` and `meshed_unasked`, with what to do in `fix`. */
  why: string;
  fix?: string;
}

export interface PodsReport {
  server: string;
  /** The webhooks whose selectors say which pods reach an injector. */
  webhooks: string[];
  /** Why Linkerd's default selectors stand in for the cluster's, when they do. */
  assumed?: string;
  pods: PodAudit[];
  counts: Record<PodState, number>;
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

/** How a pod is made again, meshed, by what made it. */
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
      return 'it runs once: the next pod of a new Job gets what its namespace and template ask';
    case 'Pod':
      return 'create the pod again';
    default:
      return `delete the pod, if its ${workload.kind} creates it again`;
  }
}

const asked = (at: string): string => (at === 'namespace' ? 'its namespace asks for it' : 'its pod template asks for it');

/** What is said of one pod; undefined for a pod that has finished or is going. */
function auditPod(pod: PodObject, namespaces: ReadonlyMap<string, Meta>, webhooks: readonly Webhook[], config: InjectorConfig): PodAudit | undefined {
  const meta = pod.metadata ?? {};
  if (meta.deletionTimestamp || pod.status?.phase === 'Succeeded' || pod.status?.phase === 'Failed') return undefined;
  const ns = meta.namespace ?? '';
  const nsMeta = namespaces.get(ns) ?? {};
  const workload = workloadOf(pod);
  const base = { namespace: ns, name: meta.name ?? '', workload };
  // The API server labels every namespace with its name; a selector may use it.
  const nsLabels = { 'kubernetes.io/metadata.name': ns, ...nsMeta.labels };
  if (!webhooks.some((w) => selects(w.namespaceSelector, nsLabels) && selects(w.objectSelector, meta.labels ?? {}))) {
    return { ...base, state: 'not_sent', why: "no proxy injector's webhook selects its namespace and labels" };
  }
  if (hasProxy(pod)) {
    const decision = injectAnnotationDecision('webhook', meta.annotations ?? {}, nsMeta.annotations ?? {});
    return decision.disabled
      ? {
          ...base,
          state: 'meshed_unasked',
          why: 'it has the proxy, but neither its namespace nor its pod template asks for it any more: it keeps the proxy until it is made again',
          fix: remedy(workload, ns),
        }
      : { ...base, state: 'meshed', why: `it has the proxy, and ${asked(decision.at)}` };
  }
  const result = inject({ object: { apiVersion: 'v1', kind: 'Pod', ...pod }, kind: 'Pod', namespace: ns, namespaceAnnotations: nsMeta.annotations ?? {}, origin: 'webhook', config });
  if (result.outcome !== 'injected') return { ...base, state: 'skipped', why: `the injector would skip it: ${result.reasons.map((r) => r.text).join(', ')}` };
  return {
    ...base,
    state: 'unmeshed_asked',
    why:
      `it has no proxy, though ${asked(result.annotationAt)}: it was created while the injector did not answer (the ` +
      "webhook's failurePolicy Ignore lets the pod through without it), before the annotation, or before the injector was installed",
    fix: remedy(workload, ns),
  };
}

/** Audits every running pod against what its namespace and template ask now, as the webhook would read them. */
export async function auditPods(cluster: ClusterConnection, namespace?: string): Promise<PodsReport> {
  const client = cluster.client;
  const namespaces = new Map<string, Meta>();
  if (namespace) {
    const ns = await client.request<{ metadata?: Meta }>('GET', `/api/v1/namespaces/${encodeURIComponent(namespace)}`, { what: `reading namespace ${namespace}`, timeoutMs: 30_000 });
    namespaces.set(namespace, ns.metadata ?? {});
  } else {
    for (const ns of await listAll<{ metadata?: Meta }>(client, '/api/v1/namespaces', 'namespaces')) namespaces.set(ns.metadata?.name ?? '', ns.metadata ?? {});
  }
  const { webhooks, assumed } = await injectorWebhooks(client);
  const path = namespace ? `/api/v1/namespaces/${encodeURIComponent(namespace)}/pods` : '/api/v1/pods';
  // Only the decision is read: the proxy is rendered with placeholder anchors and thrown away.
  const config: InjectorConfig = { values: withTrustAnchors(defaultValues(), 'unused: check pods renders no proxy it keeps'), controlPlaneNamespace: 'linkerd' };
  const counts: Record<PodState, number> = { meshed: 0, unmeshed_asked: 0, meshed_unasked: 0, skipped: 0, not_sent: 0 };
  const audits: PodAudit[] = [];
  // Page by page: only what is said of each pod is kept, not the pod.
  for await (const page of listPages<PodObject>(client, path, namespace ? `pods in ${namespace}` : 'pods')) {
    for (const pod of page.items) {
      const audit = auditPod(pod, namespaces, webhooks, config);
      if (!audit) continue;
      counts[audit.state]++;
      audits.push(audit);
    }
  }
  return { server: cluster.server, webhooks: webhooks.map((w) => w.name), ...(assumed && { assumed }), pods: audits, counts };
}

export const CHECK_PODS_HELP = `Usage: proxy-injector check pods [--kubeconfig FILE] [-n NAMESPACE] [-o text|json]

Lists the running pods that their namespace or pod template asks to mesh (linkerd.io/inject) but that have no
proxy, and the meshed pods that nothing asks to mesh any more, each with how to make it again. Under
failurePolicy Ignore the API server creates a pod without the proxy whenever the injector does not answer in
time, and an annotation meshes only the pods created after it: this finds those pods. Pods that no proxy
injector's webhook selects (its namespaceSelector and objectSelector, read from the cluster; Linkerd's
defaults when they cannot be read) and finished pods are left out.

Options:
  --kubeconfig FILE     cluster credentials (default: $KUBECONFIG, ~/.kube/config, or the in-cluster
                        service account)
  -n, --namespace NS    this namespace only (default: all; needs list on pods and namespaces, and on
                        mutatingwebhookconfigurations)
  -o, --output FORMAT   text (default): one line per pod to act on; json: every pod with its state
  -h, --help            this help

Exit status: 0 every pod is as asked; 1 some pod is not (or the cluster cannot be read); 2 usage error.
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
  let report: PodsReport;
  try {
    const kubeconfig = typeof opts['kubeconfig'] === 'string' ? opts['kubeconfig'] : undefined;
    const cluster = await connectToCluster({ env, ...(kubeconfig && { kubeconfig }) });
    if (!cluster) return { stdout: '', stderr: 'proxy-injector check pods: no cluster: give --kubeconfig FILE, or set KUBECONFIG\n', code: 1 };
    try {
      report = await auditPods(cluster, typeof opts['namespace'] === 'string' ? opts['namespace'] : undefined);
    } finally {
      cluster.client.close();
    }
  } catch (err) {
    return { stdout: '', stderr: `proxy-injector check pods: ${apiErrorMessage(err)}\n`, code: 1 };
  }
  const ok = report.counts.unmeshed_asked === 0 && report.counts.meshed_unasked === 0;
  if (output === 'json') return { stdout: `${JSON.stringify(report, null, 2)}\n`, stderr: '', code: ok ? 0 : 1 };
  const lines: string[] = report.assumed ? [`${WARN} ${report.assumed}`] : [];
  for (const p of report.pods) {
    if (p.state !== 'unmeshed_asked' && p.state !== 'meshed_unasked') continue;
    const of = p.workload.kind === 'Pod' ? '' : ` (${p.workload.kind} ${p.workload.name})`;
    lines.push(`${p.state === 'unmeshed_asked' ? FAIL : WARN} ${p.namespace}/${p.name}${of}: ${p.why}; fix: ${p.fix ?? ''}`);
  }
  const c = report.counts;
  const total = Object.values(c).reduce((a, b) => a + b, 0);
  lines.push(
    `${total} running pods: ${c.meshed} meshed as asked, ${c.unmeshed_asked} not meshed though asked, ${c.meshed_unasked} meshed though no longer asked, ` +
      `${c.skipped} that the injector skips, ${c.not_sent} never sent to it`,
  );
  return { stdout: `${lines.join('\n')}\n`, stderr: '', code: ok ? 0 : 1 };
}
