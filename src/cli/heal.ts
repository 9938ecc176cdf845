/**
 * `proxy-injector heal`: the plan for making the pods `check pods` finds drifted or unmeshed current again, workload by
 * workload (see cluster/heal.ts); with `--apply`, carried out one workload at a time, stopping at the first sign of harm.
 */
import { pino } from 'pino';
import { apiErrorMessage, connectToCluster, planHeal, runHeal, type HealOptions, type HealPlan, type HealResult } from '../cluster/index.js';
import { clusterCommandArgs, type CliResult } from './command-io.js';
import { runHealDaemon } from './heal-daemon.js';
import { recordOutcome } from './heal-events.js';
import { FAIL, OK, WARN } from './report.js';

export const HEAL_HELP = `Usage: proxy-injector heal [--kubeconfig FILE] [-L LINKERD_NAMESPACE] [--injector-namespace NS]
                         [--evict-bare-pods] [--resume] [--apply] [-o text|json]

Plans how to make current again the pods that 'check pods' finds drifted (their proxy is not the one the
injector gives now) or not meshed though asked: each Deployment, StatefulSet and DaemonSet that made them
is restarted as 'kubectl rollout restart' does, one at a time, in namespace and name order. Without
--apply it only prints the plan: which workloads, in which order, why, and what it leaves alone and why.

With --apply it restarts them, waiting for each rollout to finish and its new pods to be Ready and what
the injector gives before the next, and stops at the first workload whose rollout does not progress
(a Deployment's progressDeadlineSeconds; 10 minutes for the others), whose new pods' linkerd-init or
network validator fails, or whose new pods crash-loop. It says why in an Event on that workload. While
a workload it restarted is not healthy, later runs restart nothing; --resume goes on, leaving it alone.

Never restarted: kube-system, Linkerd's namespaces, the injector's own namespace, namespaces and
workloads annotated proxy-injector.io/heal: disabled, Jobs and CronJobs (their next run gets the
current proxy), a workload already restarted for the same drift, and bare pods unless
--evict-bare-pods (evicted through the Eviction API, which waits on PodDisruptionBudgets; nothing
creates a bare pod again).

Options:
  --kubeconfig FILE          cluster credentials (default: $KUBECONFIG, ~/.kube/config, or the in-cluster
                             service account)
  -L, --linkerd-namespace NS  namespace of the Linkerd control plane (default linkerd)
  --injector-namespace NS    the injector's own namespace (default proxy-injector)
  --evict-bare-pods          evict bare pods too
  --resume                   go on past a workload a heal restarted that is not healthy
  --apply                    restart; without it, print the plan only
  -o, --output FORMAT        text (default) or json

Run on an interval (the chart's heal Deployment), logging JSON lines until SIGTERM:
  --every DURATION           plan, and with --apply heal, every DURATION (at least 1m); the first scan only
                             logs its plan
  --max-restarts-per-hour N  most workloads restarted in any hour (default 6)
  --window HH:MM-HH:MM       restart only within these hours, UTC (default: any time)
  --metrics-addr HOST:PORT   serve /metrics and /live there (default: none)
  -h, --help                 this help

Exit status: 0 nothing to do, or every workload healed; 1 stopped, blocked, or the cluster cannot be read,
or (without --apply) there is something to do; 2 usage error.
`;

/** Runs `heal`. */
export async function runHealCommand(argv: readonly string[], env: NodeJS.ProcessEnv = process.env): Promise<CliResult> {
  const args = clusterCommandArgs('heal', HEAL_HELP, argv, {
    'linkerd-namespace': { type: 'string', short: 'L' },
    'injector-namespace': { type: 'string' },
    'evict-bare-pods': { type: 'boolean' },
    resume: { type: 'boolean' },
    apply: { type: 'boolean' },
    every: { type: 'string' },
    'max-restarts-per-hour': { type: 'string' },
    window: { type: 'string' },
    'metrics-addr': { type: 'string' },
  });
  if (!('output' in args)) return args;
  const { text, flag, output } = args;
  const controlPlaneNamespace = text('linkerd-namespace');
  const injectorNamespace = text('injector-namespace');
  const options: HealOptions = {
    ...(controlPlaneNamespace && { controlPlaneNamespace }),
    ...(injectorNamespace && { injectorNamespace }),
    evictBarePods: flag('evict-bare-pods'),
    resume: flag('resume'),
  };
  if (text('every') !== undefined) return runHealDaemon(args, options, env);
  for (const name of ['max-restarts-per-hour', 'window', 'metrics-addr']) {
    if (text(name) !== undefined) return { stdout: '', stderr: `proxy-injector heal: --${name} applies only with --every\n`, code: 2 };
  }
  let plan: HealPlan;
  let result: HealResult | undefined;
  try {
    const kubeconfig = text('kubeconfig');
    const cluster = await connectToCluster({ env, ...(kubeconfig && { kubeconfig }) });
    if (!cluster) return { stdout: '', stderr: 'proxy-injector heal: no cluster: give --kubeconfig FILE, or set KUBECONFIG\n', code: 1 };
    try {
      plan = await planHeal(cluster, options);
      if (flag('apply') && !plan.blocked && plan.steps.length > 0) {
        // What it does, as it does it: a heal may take minutes a workload.
        process.stderr.write(planText(plan));
        const logger = pino({ level: 'info' }, { write: (line: string) => void process.stderr.write(`${(JSON.parse(line) as { msg: string }).msg}\n`) });
        result = await runHeal(cluster, plan, { ...options, logger, onOutcome: (step, outcome) => recordOutcome(cluster.client, step, outcome) });
      }
    } finally {
      cluster.client.close();
    }
  } catch (err) {
    return { stdout: '', stderr: `proxy-injector heal: ${apiErrorMessage(err)}\n`, code: 1 };
  }
  const code = plan.blocked || result?.stopped || (!result && plan.steps.length > 0) ? 1 : 0;
  if (output === 'json') return { stdout: `${JSON.stringify({ plan, ...(result && { result }) }, null, 2)}\n`, stderr: '', code };
  return { stdout: result ? resultText(result) : planText(plan), stderr: '', code };
}

/** The plan, as a person reads it before anything is done. */
function planText(plan: HealPlan): string {
  const lines: string[] = [];
  if (plan.blocked) {
    const where = plan.blocked.name ? `${plan.blocked.namespace} ${plan.blocked.kind.toLowerCase()}/${plan.blocked.name}: ` : '';
    lines.push(`${FAIL} nothing will be restarted: ${where}${plan.blocked.why}`);
  }
  plan.steps.forEach((s, i) => lines.push(`${i + 1}. restart ${s.namespace} ${s.kind.toLowerCase()}/${s.name}: ${s.why}`));
  for (const u of plan.untouched) lines.push(`${WARN} leave ${u.namespace} ${u.kind.toLowerCase()}/${u.name}: ${u.why}`);
  if (lines.length === 0) lines.push(`${OK} nothing to heal: every meshed pod is what the injector gives now`);
  else if (!plan.blocked && plan.steps.length > 0) lines.push(`${plan.steps.length} to restart, one at a time${plan.steps.length > 1 ? ', each current before the next' : ''}`);
  return `${lines.join('\n')}\n`;
}

function resultText(result: HealResult): string {
  const lines = result.healed.map((h) => `${OK} ${h.namespace} ${h.kind.toLowerCase()}/${h.name}: current after ${h.seconds.toFixed(0)} s`);
  if (result.stopped) {
    lines.push(`${FAIL} stopped at ${result.stopped.namespace} ${result.stopped.kind.toLowerCase()}/${result.stopped.name}: ${result.stopped.why}`);
    lines.push('  nothing after it was restarted; fix it, then run heal again (or --resume to go on without it)');
  }
  return `${lines.join('\n')}\n`;
}
