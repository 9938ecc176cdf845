/**
 * `proxy-injector heal` on a real cluster: after a change to Linkerd's proxy settings, and after a new trust-anchor
 * bundle, `heal --apply` makes every drifted workload current one at a time (a watcher polling the pods meanwhile sees
 * no two rollouts at once), and the restarted pods talk mTLS, with the identities Linkerd issued, to each other and to
 * a pod that was never restarted; a pod created unmeshed while the injector was away is meshed again; a Deployment
 * whose new pods never become Ready stops the heal (nothing after it restarted, a HealStopped Event saying why), blocks
 * the next run, and once it is fixed a plain run finishes the rest; a workload annotated `proxy-injector.io/heal:
 * disabled` and one in the injector's own namespace are never restarted, and every plan says why. Everything is read
 * from the CLI's JSON, the pods, workloads and Events the API server returns, and the proxies' metrics.
 *
 * It runs after 15-drift and leaves the cluster as it found it: Linkerd's release rolled back to the revision it found
 * (its webhook selecting as at the start), this injector with one pod, its namespaces and the workload it made in the
 * injector's namespace gone. 10-swap's Deployment is restarted by the heals too (heal acts on the whole cluster), and
 * is current again at the end.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { HealPlan, HealResult, HealStep } from '../../src/cluster/index.js';
import { LINKERD_NAMESPACE_SELECTOR, NO_NAMESPACE_SELECTOR } from '../e2e/support/chart.js';
import { eventually } from '../e2e/support/kube.js';
import { sum, samples } from '../support/metrics.js';
import { withSecondRoot } from './support/pki.js';
import { useNode } from './support/context.js';
import { log, sleep } from './support/host.js';
import { INJECTOR_NS, INJECTOR_RELEASE, INJECTOR_SELECTOR } from './support/injector.js';
import { LINKERD_INJECTOR_AWAY, LINKERD_NS, identityOf, linkerdWebhookSelector } from './support/linkerd.js';
import { api, apply, appContainers, createNamespace, isReady, podsOf, promText, proxies, readyPods, serviceAccount, type Container, type Pod } from './support/workloads.js';

const node = useNode();
const NS = 'heal';
/** The namespace of the workload that opts out of healing. */
const OFF_NS = 'heal-off';
const CHANGED_LOG_LEVEL = 'warn,linkerd=debug';
/** The stuck Deployment's progressDeadlineSeconds. */
const GATE_DEADLINE = 25;
const HEAL_DISABLED = { 'proxy-injector.io/heal': 'disabled' };
const RESTARTED_AT = 'kubectl.kubernetes.io/restartedAt';
const HEALED_FOR = 'proxy-injector.io/healed-for';
/** The states check pods asks something to be done about. */
const TO_ACT_ON = new Set(['drifted', 'unreadable', 'unmeshed_asked', 'meshed_unasked']);
const PLURAL: Record<string, string> = { Deployment: 'deployments', StatefulSet: 'statefulsets', DaemonSet: 'daemonsets' };

// ---------------------------------------------------------------------------------------------------------------
// the workloads: every pod of NS calls every other by its IP (the headless Service `mesh`) and the opted-out one by its
// Service; the opted-out one calls api's Service

const MESH = { mesh: NS };
const meshTargets = [`http://optout.${OFF_NS}.svc.cluster.local:8080/`];

interface Template {
  metadata: { labels: Record<string, string>; annotations: Record<string, string> };
  spec: { serviceAccountName: string; terminationGracePeriodSeconds: number; containers: Container[] };
}

function template(tag: string, name: string, namespace: string, options: { mesh?: boolean; targets?: string[]; annotations?: Record<string, string>; app?: Partial<Container> } = {}): Template {
  const containers = appContainers(tag, {
    name,
    namespace,
    serviceAccount: name,
    ...(options.mesh ? { peers: 'mesh', targets: meshTargets } : options.targets ? { targets: options.targets } : { serverOnly: true }),
  });
  if (options.app && containers[0]) containers[0] = { ...containers[0], ...options.app };
  return {
    metadata: { labels: { app: name, ...(options.mesh ? MESH : {}) }, annotations: options.annotations ?? {} },
    spec: { serviceAccountName: name, terminationGracePeriodSeconds: 2, containers },
  };
}

const deployment = (name: string, namespace: string, replicas: number, pod: Template, extra: Record<string, unknown> = {}, annotations: Record<string, string> = {}) => ({
  apiVersion: 'apps/v1',
  kind: 'Deployment',
  metadata: { name, namespace, annotations },
  spec: { replicas, selector: { matchLabels: { app: name } }, template: pod, ...extra },
});

/** The Deployment whose readiness reads READY, from a ConfigMap, as its container started: set `no`, its next pods never become Ready. */
const gateApp: Partial<Container> = {
  env: [{ name: 'READY', valueFrom: { configMapKeyRef: { name: 'gate', key: 'ready' } } }],
  readinessProbe: { exec: { command: ['sh', '-c', 'test "$READY" = yes'] }, periodSeconds: 2, failureThreshold: 1 },
};

function objects(tag: string): unknown[] {
  return [
    serviceAccount('agent', NS),
    serviceAccount('api', NS),
    serviceAccount('gate', NS),
    serviceAccount('store', NS),
    serviceAccount('late', NS),
    { apiVersion: 'v1', kind: 'Service', metadata: { name: 'mesh', namespace: NS }, spec: { clusterIP: 'None', selector: MESH, ports: [{ name: 'http', port: 8080, targetPort: 8080 }] } },
    { apiVersion: 'v1', kind: 'Service', metadata: { name: 'api', namespace: NS }, spec: { selector: { app: 'api' }, ports: [{ name: 'http', port: 8080, targetPort: 8080 }] } },
    { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'gate', namespace: NS }, data: { ready: 'yes' } },
    {
      apiVersion: 'apps/v1',
      kind: 'DaemonSet',
      metadata: { name: 'agent', namespace: NS },
      spec: { selector: { matchLabels: { app: 'agent' } }, template: template(tag, 'agent', NS, { mesh: true }) },
    },
    deployment('api', NS, 2, template(tag, 'api', NS, { mesh: true })),
    deployment('gate', NS, 1, template(tag, 'gate', NS, { mesh: true, app: gateApp }), {
      progressDeadlineSeconds: GATE_DEADLINE,
      strategy: { type: 'RollingUpdate', rollingUpdate: { maxSurge: 1, maxUnavailable: 0 } },
    }),
    {
      apiVersion: 'apps/v1',
      kind: 'StatefulSet',
      metadata: { name: 'store', namespace: NS },
      spec: { serviceName: 'mesh', replicas: 1, selector: { matchLabels: { app: 'store' } }, template: template(tag, 'store', NS, { mesh: true }) },
    },
    // Opted out, in a namespace of its own; it calls api's Service, and NS's pods call it.
    serviceAccount('optout', OFF_NS),
    { apiVersion: 'v1', kind: 'Service', metadata: { name: 'optout', namespace: OFF_NS }, spec: { selector: { app: 'optout' }, ports: [{ name: 'http', port: 8080, targetPort: 8080 }] } },
    deployment('optout', OFF_NS, 1, template(tag, 'optout', OFF_NS, { targets: [`http://api.${NS}.svc.cluster.local:8080/`] }), {}, HEAL_DISABLED),
    // In the injector's namespace, meshed by its template's annotation (Linkerd's webhook selects that namespace).
    serviceAccount('resident', INJECTOR_NS),
    deployment('resident', INJECTOR_NS, 1, template(tag, 'resident', INJECTOR_NS, { annotations: { 'linkerd.io/inject': 'enabled' } })),
  ];
}

// ---------------------------------------------------------------------------------------------------------------
// what is read

interface HealOut {
  code: number;
  stderr: string;
  plan: HealPlan;
  result?: HealResult;
}

interface WorkloadObject {
  metadata: { name: string; namespace: string; annotations?: Record<string, string> };
  spec: { replicas?: number; selector: { matchLabels: Record<string, string> }; template: { metadata?: { annotations?: Record<string, string> } } };
  status?: Record<string, unknown> & { desiredNumberScheduled?: number; conditions?: Array<{ type: string; status: string; reason?: string }> };
}

interface EventObject {
  metadata: { name: string };
  reason: string;
  message: string;
  type: string;
  firstTimestamp?: string;
  involvedObject: { kind: string; name: string; namespace?: string };
  reportingComponent?: string;
}

const keyOf = (w: { namespace: string; kind: string; name: string }): string => `${w.namespace}/${w.kind}/${w.name}`;
const live = (p: Pod): boolean => !p.metadata.deletionTimestamp;
const matches = (labels: Record<string, string> | undefined, selector: Record<string, string>): boolean => Object.entries(selector).every(([k, v]) => labels?.[k] === v);
/** The order heal restarts in: namespace, kind, name. */
const healOrder = (a: { namespace: string; kind: string; name: string }, b: { namespace: string; kind: string; name: string }): number =>
  a.namespace.localeCompare(b.namespace) || a.kind.localeCompare(b.kind) || a.name.localeCompare(b.name);

/** A workload the watcher follows: steady when it has its desired number of live pods, all Ready, of one revision. */
interface Watched {
  key: string;
  namespace: string;
  selector: Record<string, string>;
  desired: number;
  revisionLabel: string;
}

interface Sample {
  at: number;
  rolling: string[];
}

describe.skipIf(node.skip !== undefined)('heal: restarting drifted and unmeshed workloads one at a time, and stopping at harm', () => {
  if (node.skip !== undefined) return;
  const { cluster, linkerd, injector, appTag } = node;
  let linkerdRevision = 0;
  let linkerdChanged = false;
  let injectorScaledDown = false;
  /** the opted-out pods: their UIDs at the start, and every plan's word on their workloads */
  const leftAlone = new Map<string, { uids: string[]; said: Set<string> }>();
  const LEFT_ALONE = [
    { namespace: OFF_NS, kind: 'Deployment', name: 'optout', why: 'it is annotated proxy-injector.io/heal: disabled' },
    { namespace: INJECTOR_NS, kind: 'Deployment', name: 'resident', why: "the injector's own namespace is never restarted" },
  ];

  const heal = async (args: string[] = []): Promise<HealOut> => {
    const r = await injector.cli(['heal', '--kubeconfig', cluster.kubeconfigPath, '--injector-namespace', INJECTOR_NS, '-o', 'json', ...args]);
    let parsed: { plan?: HealPlan; result?: HealResult };
    try {
      parsed = JSON.parse(r.stdout) as typeof parsed;
    } catch {
      throw new Error(`heal ${args.join(' ')}: exit ${r.code}, not JSON: ${r.stdout.slice(0, 500)} ${r.stderr.slice(0, 2000)}`);
    }
    if (!parsed.plan) throw new Error(`heal gave no plan: ${r.stdout.slice(0, 500)}`);
    // Whatever the plan says of the workloads that must be left alone, kept for the last proof.
    for (const u of parsed.plan.untouched) leftAlone.get(keyOf(u))?.said.add(u.why);
    return { code: r.code, stderr: r.stderr, plan: parsed.plan, ...(parsed.result && { result: parsed.result }) };
  };
  const showPlan = (plan: HealPlan): string =>
    `steps [${plan.steps.map((s) => `${keyOf(s)} (${s.why})`).join(', ')}]; untouched [${plan.untouched.map((u) => `${keyOf(u)}: ${u.why}`).join('; ')}]` +
    (plan.blocked ? `; blocked by ${keyOf(plan.blocked)}: ${plan.blocked.why}` : '');

  /** check pods -o json: exit code, and each workload's pod states. */
  const checkPods = async (namespace?: string) => {
    const r = await injector.cli(['check', 'pods', '--kubeconfig', cluster.kubeconfigPath, ...(namespace ? ['-n', namespace] : []), '-o', 'json']);
    let report: { counts?: Record<string, number>; workloads?: Array<{ namespace: string; kind: string; name: string; pods?: Array<{ name: string; state: string }> }> };
    try {
      report = JSON.parse(r.stdout) as typeof report;
    } catch {
      throw new Error(`check pods exit ${r.code}, not JSON: ${r.stdout.slice(0, 500)} ${r.stderr.slice(0, 500)}`);
    }
    const workloads = report.workloads ?? [];
    const toActOn = workloads.filter((w) => (w.pods ?? []).some((p) => TO_ACT_ON.has(p.state))).map(keyOf);
    return { code: r.code, counts: report.counts ?? {}, workloads, toActOn };
  };

  const workload = (namespace: string, kind: string, name: string) => api<WorkloadObject>(cluster, 'GET', `/apis/apps/v1/namespaces/${namespace}/${PLURAL[kind]}/${name}`);
  const restartedAt = async (w: { namespace: string; kind: string; name: string }): Promise<string | undefined> =>
    (await workload(w.namespace, w.kind, w.name)).spec.template.metadata?.annotations?.[RESTARTED_AT];
  const podUids = async (namespace: string, selector: Record<string, string>): Promise<string[]> =>
    (await podsOf(cluster, namespace, Object.entries(selector).map(([k, v]) => `${k}=${v}`).join(',')))
      .filter(live)
      .map((p) => p.metadata.uid)
      .sort();
  const events = async (namespaces: string[]): Promise<EventObject[]> =>
    (await Promise.all(namespaces.map((ns) => api<{ items: EventObject[] }>(cluster, 'GET', `/api/v1/namespaces/${ns}/events`)))).flatMap((l) => l.items);
  const healEvents = async (namespaces: string[], before: Set<string>) =>
    (await events(namespaces)).filter((e) => (e.reason === 'Healed' || e.reason === 'HealStopped') && !before.has(e.metadata.name));

  const watchedOf = async (step: { namespace: string; kind: string; name: string }): Promise<Watched> => {
    const o = await workload(step.namespace, step.kind, step.name);
    return {
      key: keyOf(step),
      namespace: step.namespace,
      selector: o.spec.selector.matchLabels,
      desired: step.kind === 'DaemonSet' ? Number(o.status?.desiredNumberScheduled ?? 0) : (o.spec.replicas ?? 1),
      revisionLabel: step.kind === 'Deployment' ? 'pod-template-hash' : 'controller-revision-hash',
    };
  };
  const steady = (w: Watched, pods: Pod[]): boolean => {
    const mine = pods.filter((p) => p.metadata.namespace === w.namespace && live(p) && matches(p.metadata.labels, w.selector));
    return mine.length === w.desired && mine.every(isReady) && new Set(mine.map((p) => p.metadata.labels?.[w.revisionLabel])).size === 1;
  };
  /** Polls the pods of the watched workloads until stopped: which are not steady, sample by sample. */
  const watch = (watched: Watched[]) => {
    const namespaces = [...new Set(watched.map((w) => w.namespace))];
    const taken: Sample[] = [];
    let stopped = false;
    let errors = 0;
    const loop = (async () => {
      while (!stopped) {
        const at = Date.now();
        try {
          const pods = (await Promise.all(namespaces.map((ns) => podsOf(cluster, ns, '')))).flat();
          taken.push({ at, rolling: watched.filter((w) => !steady(w, pods)).map((w) => w.key) });
        } catch {
          errors++;
        }
        await sleep(200);
      }
    })();
    return {
      stop: async () => {
        stopped = true;
        await loop;
        return { samples: taken, errors };
      },
    };
  };
  /** When each watched workload was seen rolling: the first and last sample, by index and time. */
  const windows = (taken: Sample[], keys: string[]) =>
    new Map(
      keys.map((k) => {
        const idx = taken.flatMap((s, i) => (s.rolling.includes(k) ? [i] : []));
        const first = idx[0];
        const last = idx[idx.length - 1];
        return [k, first === undefined || last === undefined ? undefined : { first, last, from: taken[first]?.at ?? 0, to: taken[last]?.at ?? 0 }];
      }),
    );

  /**
   * heal --apply with the watcher running: the plan carried out in order, each workload's rollout seen, none while
   * another's was; Healed Events in that order, each next restart after the last one's Event; the new pods current.
   */
  const applyAndProve = async (label: string, expected: HealStep[], options: { stopAt?: string } = {}) => {
    const watched = await Promise.all(expected.map(watchedOf));
    const namespaces = [...new Set(expected.map((s) => s.namespace))];
    const eventsBefore = new Set((await events(namespaces)).map((e) => e.metadata.name));
    const restartedBefore = new Map(await Promise.all(expected.map(async (s) => [keyOf(s), await restartedAt(s)] as const)));
    const uidsBefore = new Map(await Promise.all(watched.map(async (w) => [w.key, await podUids(w.namespace, w.selector)] as const)));
    // Before anything is restarted, every workload is steady: what the watcher then sees rolling is heal's doing.
    const start = await podsOf(cluster, '', '');
    expect(watched.filter((w) => !steady(w, start)).map((w) => w.key), `${label}: workloads not steady before the heal`).toEqual([]);

    const watcher = watch(watched);
    const started = Date.now();
    const out = await heal(['--apply']);
    const finished = Date.now();
    const { samples: taken, errors } = await watcher.stop();
    const keys = expected.map(keyOf);
    const seen = windows(taken, keys);
    const overlapping = taken.filter((s) => s.rolling.length > 1);
    const healed = out.result?.healed ?? [];
    const found = await healEvents(namespaces, eventsBefore);
    const restarted = new Map(await Promise.all(expected.map(async (s) => [keyOf(s), await restartedAt(s)] as const)));
    log(
      `${label}: heal --apply exit ${out.code} in ${((finished - started) / 1000).toFixed(1)} s; healed ${healed.map((h) => `${keyOf(h)} ${h.seconds.toFixed(1)} s`).join(', ')}` +
        `${out.result?.stopped ? `; stopped at ${keyOf(out.result.stopped)}: ${out.result.stopped.why}` : ''}; the watcher took ${taken.length} samples (${errors} failed reads), ` +
        `${overlapping.length} with two workloads rolling; rollouts seen: ${keys
          .map((k) => {
            const w = seen.get(k);
            return `${k} ${w ? `${new Date(w.from).toISOString().slice(11, 23)}–${new Date(w.to).toISOString().slice(11, 23)} (${((w.to - w.from) / 1000).toFixed(1)} s)` : 'never'}, restartedAt ${restarted.get(k) ?? 'none'}`;
          })
          .join('; ')}; events ${found.map((e) => `${e.reason} ${e.involvedObject.kind}/${e.involvedObject.name} at ${e.firstTimestamp}`).join(', ')}`,
    );
    const gaps = keys.slice(1).flatMap((k, i) => {
      const previous = seen.get(keys[i] ?? '');
      const next = Date.parse(restarted.get(k) ?? '');
      return previous && seen.get(k) ? [`${k} ${((next - previous.to) / 1000).toFixed(2)} s`] : [];
    });
    log(`${label}: each restart after the previous rollout was last seen rolling: ${gaps.join(', ') || 'none'}`);
    expect(errors, `${label}: the watcher's reads`).toBe(0);
    expect(overlapping.map((s) => `${new Date(s.at).toISOString()}: ${s.rolling.join(' and ')}`), `${label}: samples with two rollouts at once`).toEqual([]);

    const stopAt = options.stopAt;
    const upTo = stopAt === undefined ? expected.length : keys.indexOf(stopAt) + 1;
    const done = expected.slice(0, stopAt === undefined ? expected.length : upTo - 1);
    const untouched = expected.slice(upTo);
    expect(healed.map(keyOf), `${label}: healed, in order`).toEqual(done.map(keyOf));
    if (stopAt === undefined) {
      expect(out.code, out.stderr).toBe(0);
      expect(out.result?.stopped).toBeUndefined();
    } else {
      expect(out.code).toBe(1);
      expect(out.result?.stopped && keyOf(out.result.stopped)).toBe(stopAt);
    }
    // Each restarted workload's rollout was seen, in the plan's order, each after the one before it had finished.
    const restartedKeys = keys.slice(0, upTo);
    for (const k of restartedKeys) expect(seen.get(k), `${label}: ${k}'s rollout seen`).toBeDefined();
    for (let i = 1; i < restartedKeys.length; i++) {
      const before = seen.get(restartedKeys[i - 1] ?? '');
      const after = seen.get(restartedKeys[i] ?? '');
      expect((after?.first ?? -1) > (before?.last ?? Infinity), `${label}: ${restartedKeys[i]} rolled only after ${restartedKeys[i - 1]} had finished`).toBe(true);
    }
    // Its restartedAt set by this run; those after the stop never touched.
    for (const k of restartedKeys) expect(restarted.get(k), `${label}: ${k}'s restartedAt`).not.toBe(restartedBefore.get(k));
    for (const s of untouched) {
      const k = keyOf(s);
      expect(restarted.get(k), `${label}: ${k} not restarted`).toBe(restartedBefore.get(k));
      expect(seen.get(k), `${label}: ${k} never rolled`).toBeUndefined();
      const w = watched.find((x) => x.key === k);
      if (w) expect(await podUids(w.namespace, w.selector), `${label}: ${k}'s pods unchanged`).toEqual(uidsBefore.get(k));
    }
    // The Events: one Healed per workload healed, in order, and each next restart after it (the Event's time has
    // whole seconds); a HealStopped one, saying why, where it stopped.
    const healedEvents = found.filter((e) => e.reason === 'Healed');
    expect(healedEvents.map((e) => `${e.involvedObject.namespace}/${e.involvedObject.kind}/${e.involvedObject.name}`).sort(), `${label}: Healed events`).toEqual(done.map(keyOf).sort());
    for (let i = 1; i < restartedKeys.length; i++) {
      const previous = done[i - 1];
      const event = healedEvents.find((e) => previous && e.involvedObject.kind === previous.kind && e.involvedObject.name === previous.name && e.involvedObject.namespace === previous.namespace);
      const next = Date.parse(restarted.get(restartedKeys[i] ?? '') ?? '');
      expect(Math.floor(next / 1000) * 1000 >= Date.parse(event?.firstTimestamp ?? ''), `${label}: ${restartedKeys[i]} restarted after ${keyOf(previous ?? { namespace: '', kind: '', name: '' })}'s Healed event`).toBe(true);
    }
    const stoppedEvents = found.filter((e) => e.reason === 'HealStopped');
    if (stopAt === undefined) expect(stoppedEvents).toEqual([]);
    else {
      expect(stoppedEvents.map((e) => `${e.involvedObject.namespace}/${e.involvedObject.kind}/${e.involvedObject.name}`)).toEqual([stopAt]);
      expect(stoppedEvents[0]?.type).toBe('Warning');
      expect(stoppedEvents[0]?.message).toBe(`proxy-injector heal stopped here: ${out.result?.stopped?.why}`);
    }
    return { out, started, finished, seen, taken, restarted };
  };

  /** The heal's plan once the change is seen: waits until it names every workload of NS. */
  const planFor = (what: string, names: string[]) =>
    eventually(
      what,
      async () => {
        const p = await heal();
        const planned = new Set(p.plan.steps.map(keyOf));
        return names.every((n) => planned.has(n)) ? p : undefined;
      },
      { timeoutMs: 120_000 },
    );

  /** The plan, read: in heal's order, nothing Linkerd's, the injector's or opted out among its steps, and the opted-out workloads left with why. */
  const expectPlanSound = (plan: HealPlan, leftAloneDrifted = true) => {
    expect([...plan.steps].sort(healOrder).map(keyOf)).toEqual(plan.steps.map(keyOf));
    for (const s of plan.steps) {
      expect(['kube-system', LINKERD_NS, INJECTOR_NS, OFF_NS], keyOf(s)).not.toContain(s.namespace);
      expect(['Deployment', 'StatefulSet', 'DaemonSet'], keyOf(s)).toContain(s.kind);
    }
    if (leftAloneDrifted) for (const u of LEFT_ALONE) expect(plan.untouched.find((x) => keyOf(x) === keyOf(u))?.why, keyOf(u)).toBe(u.why);
    expect(plan.blocked).toBeUndefined();
  };

  /** After a heal: NS all current, and whatever check pods still asks to act on anywhere is what the plan left alone. */
  const expectCurrent = async (label: string, plan: HealPlan) => {
    const mine = await checkPods(NS);
    const all = await checkPods();
    const leftOut = new Set(plan.untouched.map(keyOf));
    log(`${label}: check pods -n ${NS} exit ${mine.code}, counts ${JSON.stringify(mine.counts)}; on the whole cluster exit ${all.code}, still to act on: ${all.toActOn.join(', ') || 'nothing'}`);
    expect(mine.code).toBe(0);
    expect(mine.workloads.flatMap((w) => (w.pods ?? []).map((p) => p.state)).every((s) => s === 'meshed')).toBe(true);
    expect(all.toActOn.filter((k) => !leftOut.has(k)), `${label}: drifted or unmeshed, and not among what the plan left alone`).toEqual([]);
  };

  /**
   * mTLS between every pod of NS (all restarted by then) and the others: on each one's proxy, with tls="true", an
   * outbound connection to every other pod's identity and to the opted-out pod's (never restarted), an inbound one from
   * every other pod's identity; on api's, an inbound one from the opted-out pod. A restarted pod's proxy is new: its
   * counters are its own connections.
   */
  const proveMtls = async (label: string) => {
    const pods = (await podsOf(cluster, NS, 'mesh=heal')).filter(live);
    expect(pods.every(isReady), `${label}: every pod of ${NS} ready`).toBe(true);
    const optout = identityOf('optout', OFF_NS);
    const idOf = (p: Pod) => identityOf(p.spec.serviceAccountName ?? 'default', NS);
    const texts = await eventually(
      `${label}: tls="true" connections with the expected identities on every proxy of ${NS}`,
      async () => {
        const read = await Promise.all(pods.map((p) => promText(`http://${p.status.podIP}:4191/metrics`)));
        const missing: string[] = [];
        pods.forEach((p, i) => {
          const text = read[i] ?? '';
          const peers = new Set(pods.filter((q) => q !== p).map(idOf));
          const want: Array<Record<string, string>> = [
            ...[...peers].flatMap((id) => [
              { direction: 'outbound', tls: 'true', server_id: id },
              { direction: 'inbound', tls: 'true', client_id: id },
            ]),
            { direction: 'outbound', tls: 'true', server_id: optout },
          ];
          for (const labels of want) if (sum(text, 'tcp_open_total', labels) === 0) missing.push(`${p.metadata.name}: ${JSON.stringify(labels)}`);
        });
        const fromOptout = pods.reduce((n, p, i) => (p.metadata.labels?.['app'] === 'api' ? n + sum(read[i] ?? '', 'tcp_open_total', { direction: 'inbound', tls: 'true', client_id: optout }) : n), 0);
        if (fromOptout === 0) missing.push(`api: inbound from ${optout}`);
        if (missing.length > 0) throw new Error(`not yet seen: ${missing.join('; ')}`);
        return read;
      },
      { timeoutMs: 90_000 },
    );
    // Every inbound connection from a meshed peer was TLS.
    const plaintext = texts.flatMap((t) => samples(t, 'tcp_open_total').filter((s) => s.labels['direction'] === 'inbound' && s.labels['client_id'] && s.labels['tls'] !== 'true'));
    const ids = pods.map((p, i) => {
      const tls = samples(texts[i] ?? '', 'tcp_open_total').filter((s) => s.labels['tls'] === 'true');
      const short = (id = '') => id.split('.serviceaccount')[0];
      const inbound = [...new Set(tls.filter((s) => s.labels['direction'] === 'inbound').map((s) => short(s.labels['client_id'])))].sort();
      const outbound = [...new Set(tls.filter((s) => s.labels['direction'] === 'outbound').map((s) => short(s.labels['server_id'])))].sort();
      return `${p.metadata.name} in from ${inbound.join(',')} out to ${outbound.join(',')}`;
    });
    log(`${label}: tls="true" on ${pods.length} proxies (identities as sa.namespace): ${ids.join('; ')}`);
    expect(plaintext).toEqual([]);
  };

  const injectorSettled = () =>
    eventually(
      'one injector pod, ready, and no other',
      async () => {
        const all = await podsOf(cluster, INJECTOR_NS, INJECTOR_SELECTOR);
        return all.length === 1 ? injector.pod() : undefined;
      },
      { timeoutMs: 90_000 },
    );

  beforeAll(async () => {
    // As 15-drift left it: both webhooks select the namespaces, Linkerd's answers first.
    expect(await linkerdWebhookSelector(cluster)).toEqual(LINKERD_NAMESPACE_SELECTOR);
    linkerdRevision = await linkerd.revision();
    await createNamespace(cluster, NS, { 'linkerd.io/inject': 'enabled' });
    await createNamespace(cluster, OFF_NS, { 'linkerd.io/inject': 'enabled' });
    await apply(cluster, objects(appTag));
    const pods = [
      ...(await readyPods(cluster, NS, 'app=agent', 1)),
      ...(await readyPods(cluster, NS, 'app=api', 2)),
      ...(await readyPods(cluster, NS, 'app=gate', 1)),
      ...(await readyPods(cluster, NS, 'app=store', 1)),
      ...(await readyPods(cluster, OFF_NS, 'app=optout', 1)),
      ...(await readyPods(cluster, INJECTOR_NS, 'app=resident', 1)),
    ];
    for (const p of pods) expect(proxies(p), `${p.metadata.namespace}/${p.metadata.name} meshed`).toHaveLength(1);
    for (const u of LEFT_ALONE) leftAlone.set(keyOf(u), { uids: await podUids(u.namespace, { app: u.name }), said: new Set() });
    const first = await heal();
    log(`Linkerd revision ${linkerdRevision}; before any change: heal exit ${first.code}, ${showPlan(first.plan)}`);
    expect(first.plan.steps.filter((s) => s.namespace === NS)).toEqual([]);
  });

  afterAll(async () => {
    if (injectorScaledDown) await cluster.kubectl(['-n', INJECTOR_NS, 'scale', `deployment/${INJECTOR_RELEASE}`, '--replicas=1']);
    if (linkerdChanged) await linkerd.rollback(linkerdRevision);
    await cluster.kubectl(['-n', INJECTOR_NS, 'delete', 'deployment', 'resident', '--ignore-not-found']);
    await cluster.kubectl(['-n', INJECTOR_NS, 'delete', 'serviceaccount', 'resident', '--ignore-not-found']);
    await cluster.kubectl(['delete', 'namespace', NS, OFF_NS, '--wait=false', '--ignore-not-found']);
    await eventually('resident gone from the injector namespace', async () => ((await podsOf(cluster, INJECTOR_NS, 'app=resident')).length === 0 ? true : undefined), { timeoutMs: 60_000 });
    await injectorSettled();
  });

  const nsWorkloads = ['DaemonSet/agent', 'Deployment/api', 'Deployment/gate', 'StatefulSet/store'].map((w) => `${NS}/${w}`);

  it('after a helm upgrade of proxy.logLevel, heal --apply restarts every drifted workload one at a time, and the new pods talk mTLS', async () => {
    const started = Date.now();
    linkerdChanged = true;
    await linkerd.upgrade({ 'proxy.logLevel': CHANGED_LOG_LEVEL });
    const upgraded = Date.now();
    const { plan, code } = await planFor('heal to plan every workload of the namespace', nsWorkloads);
    const planned = Date.now();
    log(`proxy.logLevel ${JSON.stringify(CHANGED_LOG_LEVEL)}: helm upgrade ${((upgraded - started) / 1000).toFixed(1)} s; heal (no --apply) exit ${code}, ${showPlan(plan)}`);
    expect(code).toBe(1);
    expectPlanSound(plan);
    for (const s of plan.steps.filter((x) => x.namespace === NS)) expect(s.why, keyOf(s)).toMatch(/^\d+ of \d+ pods drifted \(proxy_config\)$/);

    const { finished } = await applyAndProve('proxy.logLevel', plan.steps);
    log(`proxy.logLevel: from the helm upgrade's start to a current data plane ${((finished - started) / 1000).toFixed(1)} s (${((finished - upgraded) / 1000).toFixed(1)} s after it returned, the plan read ${((planned - upgraded) / 1000).toFixed(1)} s after it)`);
    await expectCurrent('proxy.logLevel', plan);
    await proveMtls('proxy.logLevel');
  }, 600_000);

  it('after a new trust-anchor bundle (old root + a new one), heal --apply does the same, and the pods with the bundle talk mTLS to one without it', async () => {
    const bundle = await withSecondRoot(linkerd.trustAnchorPem);
    const started = Date.now();
    linkerdChanged = true;
    await linkerd.upgrade({ identityTrustAnchorsPEM: bundle });
    const upgraded = Date.now();
    const { plan, code } = await planFor('heal to plan every workload of the namespace', nsWorkloads);
    log(`trust-anchor bundle: helm upgrade ${((upgraded - started) / 1000).toFixed(1)} s; heal (no --apply) exit ${code}, ${showPlan(plan)}`);
    expect(code).toBe(1);
    expectPlanSound(plan);
    // On top of the log level the last heal gave them: the bundle is their one difference.
    for (const s of plan.steps.filter((x) => x.namespace === NS)) expect(s.why, keyOf(s)).toMatch(/^\d+ of \d+ pods drifted \(trust_anchors\)$/);

    const { finished } = await applyAndProve('trust-anchor bundle', plan.steps);
    log(`trust-anchor bundle: from the helm upgrade's start to a current data plane ${((finished - started) / 1000).toFixed(1)} s (${((finished - upgraded) / 1000).toFixed(1)} s after it returned)`);
    const anchors = (p: Pod) => (proxies(p)[0]?.['env'] as Array<{ name: string; value?: string }> | undefined)?.find((e) => e.name === 'LINKERD2_PROXY_IDENTITY_TRUST_ANCHORS')?.value?.trim();
    for (const p of (await podsOf(cluster, NS, 'mesh=heal')).filter(live)) expect(anchors(p), `${p.metadata.name} trusts the bundle`).toBe(bundle.trim());
    const [optout] = await readyPods(cluster, OFF_NS, 'app=optout', 1);
    expect(anchors(optout as Pod), 'the opted-out pod kept the one root').toBe(linkerd.trustAnchorPem.trim());
    await expectCurrent('trust-anchor bundle', plan);
    await proveMtls('trust-anchor bundle');
  }, 600_000);

  describe("with Linkerd's webhook pointed away, so that this injector answers", () => {
    beforeAll(async () => {
      linkerdChanged = true;
      await linkerd.upgrade(LINKERD_INJECTOR_AWAY);
      expect(await linkerdWebhookSelector(cluster)).toEqual(NO_NAMESPACE_SELECTOR);
    });

    it('restarts the Deployment of a pod created unmeshed while the injector was away, and its new pod is meshed', async () => {
      const before = await heal();
      log(`Linkerd's webhook pointed away: heal exit ${before.code}, ${showPlan(before.plan)}`);
      expect(before.plan.steps).toEqual([]);
      const policy = await cluster.kubectl(['get', 'mutatingwebhookconfiguration', 'proxy-injector-proxy-injector', '-o', 'jsonpath={.webhooks[0].failurePolicy}']);
      expect(policy).toBe('Ignore');
      injectorScaledDown = true;
      await cluster.kubectl(['-n', INJECTOR_NS, 'scale', `deployment/${INJECTOR_RELEASE}`, '--replicas=0']);
      await eventually('no injector pod left', async () => ((await podsOf(cluster, INJECTOR_NS, INJECTOR_SELECTOR)).length === 0 ? true : undefined), { timeoutMs: 60_000 });
      const away = Date.now();
      await apply(cluster, [deployment('late', NS, 1, template(appTag, 'late', NS, { mesh: true }))]);
      const [unmeshed] = await readyPods(cluster, NS, 'app=late', 1);
      expect(proxies(unmeshed as Pod), 'late made without a proxy').toHaveLength(0);
      await cluster.kubectl(['-n', INJECTOR_NS, 'scale', `deployment/${INJECTOR_RELEASE}`, '--replicas=1']);
      injectorScaledDown = false;
      await injectorSettled();
      const back = Date.now();
      // The injector's pod is new: its counters start here.
      const injected = async () => sum(await injector.metrics(), 'proxy_inject_admission_responses_total', { namespace: NS, skip: 'false' });
      const injectedBefore = await injected();

      const { plan, code } = await heal();
      log(`late's pod ${unmeshed?.metadata.name} made with the injector scaled to 0 (failurePolicy ${policy}) and no proxy; the injector back after ${((back - away) / 1000).toFixed(1)} s; heal exit ${code}, ${showPlan(plan)}`);
      expect(code).toBe(1);
      expect(plan.steps.map((s) => `${keyOf(s)}: ${s.why}`)).toEqual([`${NS}/Deployment/late: 1 of 1 pods not meshed though asked`]);
      const { finished } = await applyAndProve('unmeshed', plan.steps);
      const [meshed] = await readyPods(cluster, NS, 'app=late', 1);
      const injectedByThis = (await injected()) - injectedBefore;
      log(
        `unmeshed: late's new pod ${meshed?.metadata.name} has ${proxies(meshed as Pod).length} proxy, ${((finished - back) / 1000).toFixed(1)} s after the injector was back; ` +
          `this injector injected ${injectedByThis} pod in ${NS} meanwhile`,
      );
      expect(meshed?.metadata.uid).not.toBe(unmeshed?.metadata.uid);
      expect(proxies(meshed as Pod)).toHaveLength(1);
      expect(injectedByThis).toBe(1);
      await expectCurrent('unmeshed', plan);
      await proveMtls('unmeshed');
    }, 600_000);
  });

  it('stops at a Deployment whose new pods never become Ready, restarts nothing after it, blocks the next run, and finishes once it is fixed', async () => {
    // gate's pods started so far read READY=yes; those started from now read no, and never become Ready.
    await cluster.kubectl(['-n', NS, 'patch', 'configmap', 'gate', '--type=merge', '-p', JSON.stringify({ data: { ready: 'no' } })]);
    // The drift: Linkerd's release back as the file found it (log level, trust anchors, its webhook's selector).
    const started = Date.now();
    await linkerd.rollback(linkerdRevision);
    linkerdChanged = false;
    expect(await linkerdWebhookSelector(cluster)).toEqual(LINKERD_NAMESPACE_SELECTOR);
    const nsAll = [...nsWorkloads, `${NS}/Deployment/late`];
    const { plan, code } = await planFor('heal to plan every workload of the namespace', nsAll);
    log(`Linkerd rolled back to revision ${linkerdRevision}: heal (no --apply) exit ${code}, ${showPlan(plan)}`);
    // The opted-out pods were made before the first change: with Linkerd as it was then, they are current again.
    expectPlanSound(plan, false);
    const gate = `${NS}/Deployment/gate`;
    const keys = plan.steps.map(keyOf);
    // Something drifted comes after gate: what the stop must leave alone.
    expect(keys.indexOf(gate)).toBeGreaterThanOrEqual(0);
    expect(keys.length).toBeGreaterThan(keys.indexOf(gate) + 1);

    const first = await applyAndProve('stuck', plan.steps, { stopAt: gate });
    const why = first.out.result?.stopped?.why ?? '';
    const conditions = (await workload(NS, 'Deployment', 'gate')).status?.conditions ?? [];
    const gatePods = (await podsOf(cluster, NS, 'app=gate')).filter(live);
    log(
      `stuck: stopped ${((first.finished - (Date.parse(first.restarted.get(gate) ?? '') || first.finished)) / 1000).toFixed(1)} s after gate's restart: ${why}; gate's Progressing condition ` +
        `${JSON.stringify(conditions.find((c) => c.type === 'Progressing'))}; its pods ${gatePods.map((p) => `${p.metadata.name} ready=${isReady(p)} healed-for=${p.metadata.annotations?.[HEALED_FOR] ?? '-'}`).join(', ')}`,
    );
    expect(why).toMatch(new RegExp(`progressDeadlineSeconds \\(${GATE_DEADLINE} s\\)`));
    expect(conditions.find((c) => c.type === 'Progressing')?.reason).toBe('ProgressDeadlineExceeded');

    // The next run restarts nothing: blocked by gate.
    const restartedBefore = new Map(await Promise.all(plan.steps.map(async (s) => [keyOf(s), await restartedAt(s)] as const)));
    const second = await heal(['--apply']);
    const restartedAfter = new Map(await Promise.all(plan.steps.map(async (s) => [keyOf(s), await restartedAt(s)] as const)));
    log(`stuck, the next run: heal --apply exit ${second.code}, ${showPlan(second.plan)}; result ${JSON.stringify(second.result ?? null)}`);
    expect(second.code).toBe(1);
    expect(second.plan.blocked && keyOf(second.plan.blocked)).toBe(gate);
    expect(second.plan.blocked?.why).toMatch(/^restarted for this drift at /);
    expect(second.plan.steps).toEqual([]);
    expect(second.result).toBeUndefined();
    expect(restartedAfter).toEqual(restartedBefore);

    // The fix: the ConfigMap says yes again, and the pod that read no is made again; gate's rollout then finishes.
    const fixing = Date.now();
    await cluster.kubectl(['-n', NS, 'patch', 'configmap', 'gate', '--type=merge', '-p', JSON.stringify({ data: { ready: 'yes' } })]);
    const stuck = (await podsOf(cluster, NS, 'app=gate')).filter((p) => live(p) && !isReady(p)).map((p) => p.metadata.name);
    expect(stuck.length).toBeGreaterThan(0);
    await cluster.kubectl(['-n', NS, 'delete', 'pod', ...stuck, '--wait=false']);
    const fingerprint = first.out.result?.stopped?.fingerprint ?? '';
    await eventually(
      "gate's rollout finished",
      async () => {
        const o = await workload(NS, 'Deployment', 'gate');
        const pods = (await podsOf(cluster, NS, 'app=gate')).filter(live);
        const s = o.status ?? {};
        return pods.length === 1 && pods.every((p) => isReady(p) && p.metadata.annotations?.[HEALED_FOR] === fingerprint) && s['updatedReplicas'] === 1 && s['availableReplicas'] === 1 && s['replicas'] === 1
          ? true
          : undefined;
      },
      { timeoutMs: 120_000 },
    );
    const fixed = Date.now();

    // A plain run: nothing blocks, the rest is restarted, gate is not.
    const rest = plan.steps.slice(keys.indexOf(gate) + 1);
    const next = await heal();
    log(`gate fixed in ${((fixed - fixing) / 1000).toFixed(1)} s; heal (no --apply) exit ${next.code}, ${showPlan(next.plan)}`);
    expect(next.plan.blocked).toBeUndefined();
    expect(next.plan.steps.map(keyOf)).toEqual(rest.map(keyOf));
    const last = await applyAndProve('resumed', next.plan.steps);
    log(`stuck: from the rollback's start to a current data plane ${((last.finished - started) / 1000).toFixed(1)} s, ${((fixed - fixing) / 1000).toFixed(1)} s of them fixing gate`);
    await expectCurrent('resumed', next.plan);
    await proveMtls('resumed');
  }, 600_000);

  it('never restarted the workload annotated proxy-injector.io/heal: disabled nor the one in the injector namespace, and every plan said why', async () => {
    for (const u of LEFT_ALONE) {
      const o = await workload(u.namespace, u.kind, u.name);
      const seen = leftAlone.get(keyOf(u));
      const uids = await podUids(u.namespace, { app: u.name });
      log(`${keyOf(u)}: restartedAt ${o.spec.template.metadata?.annotations?.[RESTARTED_AT] ?? 'absent'}, healed-for ${o.spec.template.metadata?.annotations?.[HEALED_FOR] ?? 'absent'}, pods ${uids.join(',')} (at the start ${seen?.uids.join(',')}); the plans said ${JSON.stringify([...(seen?.said ?? [])])}`);
      expect(o.spec.template.metadata?.annotations?.[RESTARTED_AT]).toBeUndefined();
      expect(o.spec.template.metadata?.annotations?.[HEALED_FOR]).toBeUndefined();
      expect(uids).toEqual(seen?.uids);
      expect(uids).toHaveLength(1);
      // The plans that saw it drifted (after each change) all said the same why.
      expect([...(seen?.said ?? [])]).toEqual([u.why]);
      const theirs = (await events([u.namespace])).filter((e) => (e.reason === 'Healed' || e.reason === 'HealStopped') && e.involvedObject.name === u.name);
      expect(theirs).toEqual([]);
    }
  });
});
