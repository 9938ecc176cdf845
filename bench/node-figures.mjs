// The node suite's figures (a benchmark, not a test), on the suite's one-node cluster with Linkerd edge-26.8.3 and this
// injector's image:
// - what a webhook adds to the API server's creation of an injectable pod: through no webhook, the floor webhook (what
//   any webhook costs: bench/node-floor-webhook.mjs in a pod of this injector's image answering with this injector's own
//   answer, deployed by test/node/support/floor.ts), this injector and Linkerd's, each alone (each selects a namespace of
//   its own; a creation goes to one of them), one creation through each per round, over one keep-alive connection to the
//   API server: server-side dry runs, then stored creations of pods that no scheduler takes, each deleted before the next;
// - the resident memory of both injectors' pods and the floor's, idle and after those creations, read on the node from
//   /proc: VmRSS of every process of each container, found by containerd's task list, the same measure for each pod;
// - the time from a pod's creation to Ready, injected and not, as a classic sidecar, a native sidecar and under the CNI
//   plugin, for this injector's pods and Linkerd's, one pod at a time, each deleted before the next, kinds interleaved.
// Prints one Markdown table.
//
//   node --import tsx bench/node-figures.mjs   (root; builds and starts the node as `npm run test:node` does)
//   NODE_FIGURES_CREATES=1000  creations through each webhook, of each kind (dry runs, stored)
//   NODE_FIGURES_PODS=10       pods of each kind made to Ready (0: none)
//   NODE_FIGURES_SETTLE=60     seconds each webhook's pod is left alone, ready, before its idle memory is read
import { Agent, request } from 'node:https';
import { cpus, loadavg } from 'node:os';
import { bringUp } from '../test/node/support/bring-up.ts';
import { askInjector, installFloor } from '../test/node/support/floor.ts';
import { log, sleep, unavailableReason, VALIDATOR_CONNECT_ADDR } from '../test/node/support/host.ts';
import { APP_IMAGE } from '../test/node/support/images.ts';
import { LINKERD_INJECTOR_AWAY, LINKERD_NS, installLinkerdCni, onlyThisInjector } from '../test/node/support/linkerd.ts';
import { LINKERD_NAMESPACE_SELECTOR, NO_NAMESPACE_SELECTOR } from '../test/e2e/support/chart.ts';
import { ApiError, api, createNamespace, isReady, podsOf, proxies } from '../test/node/support/workloads.ts';
import { exitOnSignals, median, rssMiBOf } from './serve-process.mjs';

const CREATES = Number(process.env.NODE_FIGURES_CREATES ?? 1000);
const PODS = Number(process.env.NODE_FIGURES_PODS ?? 10);
const SETTLE_S = Number(process.env.NODE_FIGURES_SETTLE ?? 60);
/** Rounds of creations before the measured ones, uncounted: the API server's connections to each webhook are open. */
const WARM_UP = 20;
const MEMORY_READINGS = 5;

const reason = unavailableReason();
if (reason) {
  console.error(`node-figures: cannot run: ${reason}`);
  process.exit(1);
}
exitOnSignals();

const node = await bringUp();
const { cluster, linkerd, injector, info } = node;
const image = `${APP_IMAGE}:${info.appTag}`;
const rows = [];
/** Printed after the others. */
const memory = [];
const loads = [];
const noteLoad = (when) => loads.push(`${when} ${loadavg().map((l) => l.toFixed(2)).join(' ')}`);

const podBody = (name, namespace, annotations = {}) => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name, namespace, annotations },
  spec: { terminationGracePeriodSeconds: 1, containers: [{ name: 'app', image, imagePullPolicy: 'Never', command: ['httpd', '-f', '-p', '8080', '-h', '/www'] }] },
});

/** The 99th percentile (nearest rank). */
const p99 = (xs) => [...xs].sort((a, b) => a - b)[Math.ceil(xs.length * 0.99) - 1];
const ms = (x) => `${x.toFixed(1)} ms`;

// ---------------------------------------------------------------------------------------------------------------
// what a webhook adds to a pod's creation, and what the injectors hold

const apiAgent = new Agent({ keepAlive: true, maxSockets: 1, ca: cluster.ca.certPem, cert: cluster.admin.certPem, key: cluster.admin.keyPem });

/** One call to the API server over the kept-alive connection: its status, its answer and the milliseconds it took. */
function timedCall(method, path, body) {
  const url = new URL(path, cluster.apiServerUrl);
  const payload = body === undefined ? undefined : JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const req = request(
      {
        hostname: url.hostname,
        port: url.port,
        path: url.pathname + url.search,
        method,
        agent: apiAgent,
        timeout: 15_000,
        headers: { accept: 'application/json', ...(payload !== undefined && { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) }) },
      },
      (res) => {
        const chunks = [];
        res.on('data', (c) => chunks.push(c));
        res.on('error', reject);
        res.on('end', () => {
          const elapsed = performance.now() - t0;
          const text = Buffer.concat(chunks).toString('utf8');
          if (res.statusCode < 200 || res.statusCode > 299) reject(new Error(`${method} ${path}: ${res.statusCode} ${text.slice(0, 2000)}`));
          else resolve({ ms: elapsed, json: JSON.parse(text) });
        });
      },
    );
    req.on('timeout', () => req.destroy(new Error(`${method} ${path} timed out`)));
    req.on('error', reject);
    req.end(payload);
  });
}

/** Each webhook is called for the namespaces with this label's value naming it, and no others. */
const WEBHOOK_LABEL = 'node-figures.proxy-injector.io/webhook';
const only = (who) => ({ matchExpressions: [{ key: WEBHOOK_LABEL, operator: 'In', values: [who] }] });
const THROUGH = [
  { who: 'none', by: 'no webhook', proxies: 0 },
  { who: 'floor', by: 'the floor webhook', proxies: 1 },
  { who: 'this', by: 'this injector', proxies: 1 },
  { who: 'linkerd', by: "Linkerd's injector", proxies: 1 },
];
// Names of one length: the patch names the pod's namespace, and the floor's answer is the injector's for its own.
const namespaceOf = (who) => `figures-${THROUGH.findIndex((t) => t.who === who) + 1}`;
/** The benchmark's injectable pod; no scheduler has its schedulerName, so a stored one is never started. */
const creationBody = (name, namespace) => {
  const body = podBody(name, namespace);
  body.spec.schedulerName = 'node-figures-unscheduled';
  return body;
};

/** A server-side dry run of the pod through `through`'s webhook: the milliseconds it took. */
async function dryRun(through, round) {
  const namespace = namespaceOf(through.who);
  const { ms: elapsed, json } = await timedCall('POST', `/api/v1/namespaces/${namespace}/pods?dryRun=All`, creationBody(`dry-${round}`, namespace));
  if (proxies(json).length !== through.proxies) throw new Error(`dry run through ${through.by}: ${proxies(json).length} proxies, not ${through.proxies}`);
  return elapsed;
}

/** A stored creation of the pod through `through`'s webhook (the milliseconds it took), then its deletion (untimed). */
async function storedCreation(through, round) {
  const namespace = namespaceOf(through.who);
  const name = `stored-${round}`;
  const { ms: elapsed, json } = await timedCall('POST', `/api/v1/namespaces/${namespace}/pods`, creationBody(name, namespace));
  if (proxies(json).length !== through.proxies) throw new Error(`creation through ${through.by}: ${proxies(json).length} proxies, not ${through.proxies}`);
  // Never scheduled, so deleted at once.
  await timedCall('DELETE', `/api/v1/namespaces/${namespace}/pods/${name}?gracePeriodSeconds=0`);
  return elapsed;
}

/** `count` rounds of one creation through each, the order turned by one each round; the times by webhook. */
async function rounds(count, create) {
  const times = new Map(THROUGH.map((t) => [t.who, []]));
  for (let round = 0; round < count; round++) {
    for (let k = 0; k < THROUGH.length; k++) {
      const through = THROUGH[(round + k) % THROUGH.length];
      times.get(through.who).push(await create(through, round));
    }
  }
  return times;
}

/** The rows of one kind of creation: each webhook's times, what each adds to no webhook, and that against the floor's. */
function creationRows(what, times) {
  const none = times.get('none');
  for (const through of THROUGH) {
    const t = times.get(through.who);
    rows.push({ what, kind: 'injectable pod', by: through.by, n: t.length, median: ms(median(t)), p99: ms(p99(t)), range: `${Math.min(...t).toFixed(1)}–${Math.max(...t).toFixed(1)} ms` });
    log(`${what} through ${through.by}: ${t.map((x) => x.toFixed(1)).join(' ')}`);
  }
  const added = (who, stat) => stat(times.get(who)) - stat(none);
  for (const who of ['floor', 'this', 'linkerd']) {
    const by = THROUGH.find((t) => t.who === who).by;
    rows.push({ what: `${what}: added to no webhook's`, kind: 'injectable pod', by, n: '', median: ms(added(who, median)), p99: ms(added(who, p99)), range: '' });
  }
  for (const who of ['this', 'linkerd']) {
    const by = THROUGH.find((t) => t.who === who).by;
    const ratio = (stat) => `${(added(who, stat) / added('floor', stat)).toFixed(1)}×`;
    rows.push({ what: `${what}: added, as a multiple of the floor's added`, kind: 'injectable pod', by, n: '', median: ratio(median), p99: ratio(p99), range: '' });
  }
}

/** The one ready pod of a selector in a namespace. */
async function readyPod(namespace, selector) {
  const pods = (await podsOf(cluster, namespace, selector)).filter((p) => !p.metadata.deletionTimestamp && isReady(p));
  if (pods.length !== 1) throw new Error(`${pods.length} ready pods ${selector} in ${namespace}, not 1`);
  return pods[0];
}
const linkerdInjectorPod = () => readyPod(LINKERD_NS, 'linkerd.io/control-plane-component=proxy-injector');

/** MiB resident (VmRSS) of every process of each running container of the pod, by containerd's task list, from /proc. */
async function memoryOf(pod) {
  const containers = {};
  for (const status of [...(pod.status.initContainerStatuses ?? []), ...(pod.status.containerStatuses ?? [])]) {
    if (!status.state.running) continue;
    const id = status.containerID.replace(/^containerd:\/\//, '');
    const pids = (await cluster.ctr(['tasks', 'ps', id])).split('\n').map((line) => Number(/^\s*(\d+)\s/.exec(line)?.[1])).filter(Boolean);
    if (pids.length === 0) throw new Error(`no process in ${pod.metadata.name}'s ${status.name}`);
    containers[status.name] = pids.reduce((sum, pid) => sum + rssMiBOf(pid), 0);
  }
  return containers;
}

/** MEMORY_READINGS readings a second apart of each pod (by name); the pods must be the ones `pods` names throughout. */
async function memoryReadings(pods) {
  const readings = Object.fromEntries(Object.keys(pods).map((name) => [name, []]));
  for (let i = 0; i < MEMORY_READINGS; i++) {
    if (i > 0) await sleep(1_000);
    for (const [name, pod] of Object.entries(pods)) readings[name].push(await memoryOf(pod));
  }
  return readings;
}

/** Waits until each pod has been Ready SETTLE_S seconds, then reads their idle memory. */
async function idleMemory(pods) {
  const readySince = (pod) => Date.parse(pod.status.conditions.find((c) => c.type === 'Ready').lastTransitionTime);
  const wait = Math.max(...Object.values(pods).map(readySince)) + SETTLE_S * 1000 - Date.now();
  log(`waiting ${Math.max(0, wait / 1000).toFixed(0)} s for ${Object.keys(pods).join(' and ')} to have been ready ${SETTLE_S} s`);
  if (wait > 0) await sleep(wait);
  memoryRows('idle', await memoryReadings(pods));
}

function memoryRows(when, readings) {
  const mib = (xs) => `${median(xs).toFixed(1)} MiB`;
  const range = (xs) => `${Math.min(...xs).toFixed(1)}–${Math.max(...xs).toFixed(1)} MiB`;
  for (const [by, list] of Object.entries(readings)) {
    const totals = list.map((r) => Object.values(r).reduce((a, b) => a + b, 0));
    const names = Object.keys(list[0]);
    memory.push({ what: `resident memory, ${when}`, kind: `its pod (${names.join(' + ')})`, by, n: list.length, median: mib(totals), p99: '—', range: range(totals) });
    if (names.length > 1) {
      for (const name of names) memory.push({ what: `resident memory, ${when}`, kind: `its container ${name}`, by, n: list.length, median: mib(list.map((r) => r[name])), p99: '—', range: range(list.map((r) => r[name])) });
    }
  }
}

async function creationFigures() {
  const injectorRevision = await injector.revision();
  const linkerdRevision = await linkerd.revision();
  await injector.upgrade({ 'webhook.namespaceSelector': only('this') });
  await linkerd.upgrade({ 'proxyInjector.namespaceSelector': only('linkerd') });
  for (const { who } of THROUGH) {
    await createNamespace(cluster, namespaceOf(who), { 'linkerd.io/inject': 'enabled' });
    await cluster.kubectl(['label', 'namespace', namespaceOf(who), `${WEBHOOK_LABEL}=${who}`]);
  }

  // Idle: both ready for SETTLE_S seconds, no pod sent to either yet.
  const ours = await injector.pod();
  const theirs = await linkerdInjectorPod();
  await idleMemory({ 'this injector': ours, "Linkerd's injector": theirs });

  // The floor's answer: this injector's to the review the API server sends for the pod (as a dry run in the floor's
  // namespace shows it before the floor is registered).
  const namespace = namespaceOf('floor');
  const { json: object } = await timedCall('POST', `/api/v1/namespaces/${namespace}/pods?dryRun=All`, creationBody('answer', namespace));
  for (const key of ['uid', 'creationTimestamp', 'resourceVersion', 'generation']) delete object.metadata[key];
  object.status = {};
  const review = {
    apiVersion: 'admission.k8s.io/v1',
    kind: 'AdmissionReview',
    request: {
      uid: '5d1f8c2e-6b0a-4f3e-9c57-0a1b2c3d4e5f',
      kind: { group: '', version: 'v1', kind: 'Pod' },
      resource: { group: '', version: 'v1', resource: 'pods' },
      requestKind: { group: '', version: 'v1', kind: 'Pod' },
      requestResource: { group: '', version: 'v1', resource: 'pods' },
      name: 'answer',
      namespace,
      operation: 'CREATE',
      userInfo: { username: 'admin', groups: ['system:masters', 'system:authenticated'] },
      object,
      oldObject: null,
      // As the API server sends a dry run's: the injector records nothing for it.
      dryRun: true,
      options: { apiVersion: 'meta.k8s.io/v1', kind: 'CreateOptions', dryRun: ['All'] },
    },
  };
  const answer = await askInjector(cluster, injector, review);
  if (!JSON.parse(answer).response?.patch) throw new Error(`this injector gave no patch for the benchmark's pod: ${answer.slice(0, 2000)}`);
  const tokenVolume = object.spec.volumes?.find((v) => v.name.startsWith('kube-api-access-'))?.name;
  if (!tokenVolume) throw new Error(`no service-account token volume in ${JSON.stringify(object.spec.volumes)}`);
  const floor = await installFloor(cluster, { text: answer, tokenVolume }, only('floor'));
  if (floor.floorAnswerBytes !== floor.answerBytes) throw new Error(`the floor's answer is ${floor.floorAnswerBytes} bytes, this injector's ${floor.answerBytes}`);
  // The floor idle as the injectors were: no review reaches it before the check below.
  await idleMemory({ 'the floor webhook': await floor.pod() });

  // The floor's pods are this injector's (once its webhook is in force): the same containers, volumes, labels and
  // annotations, but for the names of their namespace and of the token volume the API server gave them.
  const shape = (pod) => {
    const token = pod.spec.volumes?.find((v) => v.name.startsWith('kube-api-access-'))?.name ?? 'none';
    const text = JSON.stringify({ annotations: pod.metadata.annotations, labels: pod.metadata.labels, spec: pod.spec });
    return text.replaceAll(pod.metadata.namespace, '(namespace)').replaceAll(token, '(token volume)');
  };
  const podThrough = async (who, stored) => {
    const namespace = namespaceOf(who);
    const { json } = await timedCall('POST', `/api/v1/namespaces/${namespace}/pods${stored ? '' : '?dryRun=All'}`, creationBody('same', namespace));
    if (stored) await timedCall('DELETE', `/api/v1/namespaces/${namespace}/pods/same?gracePeriodSeconds=0`);
    return json;
  };
  const difference = async (stored) => {
    const [a, b] = [await podThrough('floor', stored), await podThrough('this', stored)];
    return proxies(a).length === 1 && shape(a) === shape(b) ? undefined : `${shape(a)}\n${shape(b)}`;
  };
  let different;
  for (const deadline = Date.now() + 30_000; (different = await difference(false)) && Date.now() < deadline; ) await sleep(500);
  different ??= await difference(true);
  if (different) throw new Error(`the floor's pod is not this injector's:\n${different}`);
  log(`the floor answers with this injector's answer (${floor.answerBytes} bytes); its pods are this injector's, dry run or stored`);

  noteLoad('creations start');
  await rounds(WARM_UP, dryRun);
  creationRows('API create of a pod, server-side dry run', await rounds(CREATES, dryRun));
  await rounds(WARM_UP, storedCreation);
  creationRows('API create of a pod, stored (never scheduled)', await rounds(CREATES, storedCreation));
  noteLoad('creations end');

  const after = { 'this injector': await injector.pod(), "Linkerd's injector": await linkerdInjectorPod(), 'the floor webhook': await floor.pod() };
  if (after['this injector'].metadata.uid !== ours.metadata.uid || after["Linkerd's injector"].metadata.uid !== theirs.metadata.uid) throw new Error('an injector pod was replaced during the creations');
  memoryRows('after the creations', await memoryReadings(after));

  for (const who of ['this', 'linkerd']) {
    const events = await timedCall('GET', `/api/v1/namespaces/${namespaceOf(who)}/events`);
    log(`${events.json.items.length} events in ${namespaceOf(who)} (${[...new Set(events.json.items.map((e) => `${e.reason} by ${e.reportingComponent || e.source?.component}`))].join(', ')})`);
  }
  await floor.remove();
  for (const { who } of THROUGH) await cluster.kubectl(['delete', 'namespace', namespaceOf(who), '--wait']);
  await injector.rollback(injectorRevision);
  await linkerd.rollback(linkerdRevision);
}

// ---------------------------------------------------------------------------------------------------------------
// from a pod's creation to Ready

/** Creates a pod, polls it every 25 ms until Ready, deletes it and waits until it is gone. Seconds to Ready. */
async function createToReady(namespace, name, annotations, expectProxies) {
  const t0 = performance.now();
  const created = await api(cluster, 'POST', `/api/v1/namespaces/${namespace}/pods`, podBody(name, namespace, annotations));
  if (proxies(created).length !== expectProxies) {
    const webhook = await cluster.kubectl(['get', 'mutatingwebhookconfigurations', '-o', 'jsonpath={range .items[*]}{.metadata.name} {.webhooks[0].namespaceSelector}{"\\n"}{end}']);
    const logs = await cluster.kubectl(['-n', 'proxy-injector', 'logs', '-l', 'app.kubernetes.io/name=proxy-injector', '--tail=20']);
    throw new Error(`${namespace}/${name} has ${proxies(created).length} proxies, not ${expectProxies}\n${webhook}\n${logs}`);
  }
  let seconds;
  for (const deadline = Date.now() + 120_000; Date.now() < deadline; ) {
    const pod = await api(cluster, 'GET', `/api/v1/namespaces/${namespace}/pods/${name}`);
    if (isReady(pod)) {
      seconds = (performance.now() - t0) / 1000;
      break;
    }
    await sleep(25);
  }
  if (seconds === undefined) throw new Error(`${namespace}/${name} not Ready in 120 s`);
  await api(cluster, 'DELETE', `/api/v1/namespaces/${namespace}/pods/${name}?gracePeriodSeconds=1`);
  for (;;) {
    try {
      await api(cluster, 'GET', `/api/v1/namespaces/${namespace}/pods/${name}`);
    } catch (err) {
      if (err instanceof ApiError && err.status === 404) break;
      throw err;
    }
    await sleep(100);
  }
  return seconds;
}

/** Runs the kinds round by round, one pod each per round; records each kind's median and range. */
async function readyRounds(kinds) {
  const times = kinds.map(() => []);
  for (let round = 0; round < PODS; round++) {
    for (const [i, kind] of kinds.entries()) times[i].push(await createToReady(kind.namespace, `${kind.prefix}-${round}`, kind.annotations ?? {}, kind.proxies));
  }
  for (const [i, kind] of kinds.entries()) {
    const t = times[i];
    rows.push({ what: 'pod created → Ready', kind: kind.label, by: kind.by, n: t.length, median: `${median(t).toFixed(2)} s`, p99: '—', range: `${Math.min(...t).toFixed(2)}–${Math.max(...t).toFixed(2)} s` });
    log(`${kind.label} (${kind.by}): ${t.map((x) => x.toFixed(2)).join(' ')}`);
  }
}

async function readyFigures() {
  await createNamespace(cluster, 'plain');
  await createNamespace(cluster, 'meshed', { 'linkerd.io/inject': 'enabled' });
  const native = { 'config.linkerd.io/proxy-enable-native-sidecar': 'true' };
  const classic = { 'config.linkerd.io/proxy-enable-native-sidecar': 'false' };

  // This injector alone.
  await onlyThisInjector(cluster, linkerd);
  await readyRounds([
    { label: 'not injected', by: '—', namespace: 'plain', prefix: 'plain', proxies: 0 },
    { label: 'classic sidecar (linkerd-init, linkerd-await)', by: 'this injector', namespace: 'meshed', prefix: 'classic', annotations: classic, proxies: 1 },
    { label: 'native sidecar (linkerd-init)', by: 'this injector', namespace: 'meshed', prefix: 'native', annotations: native, proxies: 1 },
  ]);

  // Linkerd's injector alone: its selector back, this one's pointed at no namespace (the README's step 2, reversed).
  const injectorRevision = await injector.revision();
  await linkerd.upgrade({ 'proxyInjector.namespaceSelector': LINKERD_NAMESPACE_SELECTOR });
  await injector.upgrade({ 'webhook.namespaceSelector': NO_NAMESPACE_SELECTOR });
  await readyRounds([
    { label: 'classic sidecar (linkerd-init, linkerd-await)', by: "Linkerd's injector", namespace: 'meshed', prefix: 'l-classic', annotations: classic, proxies: 1 },
    { label: 'native sidecar (linkerd-init)', by: "Linkerd's injector", namespace: 'meshed', prefix: 'l-native', annotations: native, proxies: 1 },
  ]);
  await injector.rollback(injectorRevision);
  await linkerd.upgrade(LINKERD_INJECTOR_AWAY);

  // CNI mode: linkerd-cni chained, cniEnabled; the validator instead of linkerd-init.
  const cni = await installLinkerdCni(cluster, linkerd);
  await cni.install();
  await linkerd.upgrade({ cniEnabled: true });
  await sleep(2_000);
  await readyRounds([
    { label: 'not injected, linkerd-cni chained', by: '—', namespace: 'plain', prefix: 'cni-plain', proxies: 0 },
    { label: `CNI: native sidecar (network validator, ${VALIDATOR_CONNECT_ADDR})`, by: 'this injector', namespace: 'meshed', prefix: 'cni-native', annotations: native, proxies: 1 },
    { label: 'CNI: classic sidecar (network validator, linkerd-await)', by: 'this injector', namespace: 'meshed', prefix: 'cni-classic', annotations: classic, proxies: 1 },
  ]);
}

try {
  noteLoad('start');
  await creationFigures();
  if (PODS > 0) await readyFigures();
  noteLoad('end');
  const table = [
    '| measure | pods | through | n | median | p99 | range |',
    '|---|---|---|---|---|---|---|',
    ...[...rows, ...memory].map((r) => `| ${r.what} | ${r.kind} | ${r.by} | ${r.n} | ${r.median} | ${r.p99} | ${r.range} |`),
  ].join('\n');
  const cpu = cpus();
  console.log(
    `\nnode figures (${new Date().toISOString().slice(0, 10)}; ${cpu.length} × ${cpu[0]?.model}; load average (1, 5, 15 min) at ${loads.join(', at ')}; ` +
      `${CREATES} creations of each kind through each webhook, ${PODS} pods of each kind to Ready; Kubernetes v1.34.10, Linkerd edge-26.8.3, injector ${info.injectorImage.tag}):\n\n${table}\n`,
  );
} finally {
  apiAgent.destroy();
  if (process.env.KEEP_NODE === '1') log(`KEEP_NODE=1: the node is left running (${cluster.kubeconfigPath})`);
  else log(await cluster.stop());
}
