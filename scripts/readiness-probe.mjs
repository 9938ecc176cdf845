// A small model of how kubelet acts on a readiness probe, for the chart's checks: each probe succeeds when /ready
// answers within timeoutSeconds, and the pod leaves its Service after failureThreshold failures in a row and comes
// back after successThreshold successes in a row (Kubernetes' defaults where a setting is absent).
// `node scripts/readiness-probe.mjs < rendered.yaml` checks every readiness probe of the rendered Deployments and exits 1
// naming what one slow answer would do to them; npm run check:chart runs it on each rendering.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/** How long /ready takes to answer on a busy node (CPU starved, a long GC pause): twice the 1 s Kubernetes allows by default. */
export const SLOW_ANSWER_SECONDS = 2;
/** The longest a pod that stopped answering may stay in its Service, and a starting one may wait to enter it. */
export const MOST_SECONDS_TO_LEAVE = 30;
export const MOST_SECONDS_TO_ENTER = 5;

/** Kubernetes' defaults for a probe's settings. */
const DEFAULTS = { periodSeconds: 10, timeoutSeconds: 1, failureThreshold: 3, successThreshold: 1 };

/** Whether the pod is ready after each probe, given how long /ready took to answer each (Infinity: never). */
export function readyAfterEach(probe, answerSeconds) {
  const { timeoutSeconds, failureThreshold, successThreshold } = { ...DEFAULTS, ...probe };
  let ready = false;
  let successes = 0;
  let failures = 0;
  return answerSeconds.map((seconds) => {
    if (seconds < timeoutSeconds) {
      failures = 0;
      successes++;
      if (successes >= successThreshold) ready = true;
    } else {
      successes = 0;
      failures++;
      if (failures >= failureThreshold) ready = false;
    }
    return ready;
  });
}

/** What is wrong with a readiness probe of the webhook, in words; empty when nothing is. */
export function readinessProblems(probe) {
  const settings = { ...DEFAULTS, ...probe };
  const fast = Array(5).fill(0.01);
  const problems = [];
  const slow = readyAfterEach(probe, [...fast, SLOW_ANSWER_SECONDS, ...fast]);
  if (slow.slice(fast.length).includes(false)) problems.push(`one answer of ${SLOW_ANSWER_SECONDS} s takes the pod out of its Service`);
  const lost = readyAfterEach(probe, [...fast, Infinity, ...fast]);
  if (lost.slice(fast.length).includes(false)) problems.push('one answer that never comes takes the pod out of its Service');
  const stopped = readyAfterEach(probe, [...fast, ...Array(100).fill(Infinity)]);
  const probesToLeave = stopped.indexOf(false, fast.length) - fast.length;
  const secondsToLeave = probesToLeave * settings.periodSeconds + settings.timeoutSeconds;
  if (probesToLeave < 0 || secondsToLeave > MOST_SECONDS_TO_LEAVE) {
    problems.push(`a pod that stops answering stays in its Service for more than ${MOST_SECONDS_TO_LEAVE} s`);
  }
  if (settings.periodSeconds * settings.successThreshold > MOST_SECONDS_TO_ENTER) {
    problems.push(`a starting pod may wait more than ${MOST_SECONDS_TO_ENTER} s to enter its Service`);
  }
  return problems;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { parseAllDocuments } = await import('yaml');
  const docs = parseAllDocuments(readFileSync(0, 'utf8')).map((d) => d.toJS()).filter(Boolean);
  const containers = docs
    .filter((d) => d.kind === 'Deployment')
    .flatMap((d) => d.spec.template.spec.containers.map((c) => ({ where: `${d.metadata.name}/${c.name}`, probe: c.readinessProbe })))
    .filter((c) => c.probe);
  const problems = containers.flatMap(({ where, probe }) => readinessProblems(probe).map((p) => `${where}: ${p}`));
  if (containers.length === 0) problems.push('no Deployment has a readiness probe');
  for (const p of problems) console.error(`chart: readiness probe: ${p}`);
  if (problems.length > 0) process.exit(1);
  console.log(`chart: readiness probe of ${containers.map((c) => c.where).join(', ')} survives one slow answer`);
}
