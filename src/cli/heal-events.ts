/** The Events a heal writes on the workloads it restarts. */
import { hostname } from 'node:os';
import { apiErrorMessage, type ClusterConnection, type HealStep } from '../cluster/index.js';

/** An Event on the workload: Healed, or HealStopped with why. A heal goes on (or stops) whether or not it is written. */
export async function recordOutcome(
  client: ClusterConnection['client'],
  step: HealStep,
  outcome: { healed: true; seconds: number } | { healed: false; why: string },
  warn: (text: string) => void = (text) => void process.stderr.write(`${text}\n`),
): Promise<void> {
  const apiVersion = step.kind === 'Pod' ? 'v1' : 'apps/v1';
  const now = new Date().toISOString();
  const event = {
    metadata: { generateName: `${step.name}.heal.`, namespace: step.namespace },
    involvedObject: { apiVersion, kind: step.kind, name: step.name, namespace: step.namespace },
    reason: outcome.healed ? 'Healed' : 'HealStopped',
    message: outcome.healed ? `restarted by proxy-injector heal (${step.why}); its pods are current` : `proxy-injector heal stopped here: ${outcome.why}`,
    type: outcome.healed ? 'Normal' : 'Warning',
    source: { component: 'proxy-injector-heal' },
    reportingComponent: 'proxy-injector-heal',
    reportingInstance: hostname(),
    firstTimestamp: now,
    lastTimestamp: now,
    count: 1,
  };
  try {
    await client.request('POST', `/api/v1/namespaces/${encodeURIComponent(step.namespace)}/events`, { what: 'writing an event', timeoutMs: 10_000, body: event });
  } catch (err) {
    warn(`could not write the ${event.reason} event on ${step.kind} ${step.namespace}/${step.name}: ${apiErrorMessage(err)}`);
  }
}
