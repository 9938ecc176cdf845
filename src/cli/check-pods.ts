/**
 * `proxy-injector check pods`: every running pod held against what the injector would make of it now (see
 * cluster/pod-audit.ts), printed by workload with the command that makes its pods again.
 */
import { apiErrorMessage, auditPods, connectToCluster, POD_STATES, TO_ACT_ON, type PodState, type PodsReport, type WorkloadDifference } from '../cluster/index.js';
import { clip } from '../engine/index.js';
import { clusterCommandArgs, type CliResult } from './command-io.js';
import { FAIL, WARN } from './report.js';

export { auditPods, type AuditOptions, type PodsReport, type WorkloadAudit } from '../cluster/index.js';

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
  const args = clusterCommandArgs('check pods', CHECK_PODS_HELP, argv, {
    namespace: { type: 'string', short: 'n' },
    'linkerd-namespace': { type: 'string', short: 'L' },
    'kubectl-default-container': { type: 'boolean' },
  });
  if (!('output' in args)) return args;
  const { text, output } = args;
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
        kubectlDefaultContainer: args.flag('kubectl-default-container'),
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
    const acting = POD_STATES.filter((s) => TO_ACT_ON.has(s) && (w.counts[s] ?? 0) > 0);
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
  lines.push(`${total} running pods: ${POD_STATES.map((s) => `${c[s]} ${STATE_WORDS[s]}`).join(', ')}`);
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
