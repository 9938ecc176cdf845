// The node suite's figures (a benchmark, not a test): on the suite's one-node cluster with Linkerd edge-26.8.3 and this
// injector's image, the time from a pod's creation to Ready, injected and not, as a classic sidecar, a native sidecar and
// under the CNI plugin, for this injector's pods and Linkerd's; and the time the API server takes to create a pod with
// no injector, with this one and with Linkerd's, each alone. Pods are made one at a time, each deleted (and gone) before
// the next; kinds are interleaved round by round so that drift spreads evenly. Prints one Markdown table.
//
//   node --import tsx bench/node-figures.mjs        (root; builds and starts the node as `npm run test:node` does)
//   NODE_FIGURES_PODS=10 NODE_FIGURES_CREATES=50    (pods per kind, API creations per webhook)
import { bringUp } from '../test/node/support/bring-up.ts';
import { log, sleep, unavailableReason, VALIDATOR_CONNECT_ADDR } from '../test/node/support/host.ts';
import { APP_IMAGE } from '../test/node/support/images.ts';
import { LINKERD_INJECTOR_AWAY, installLinkerdCni, onlyThisInjector } from '../test/node/support/linkerd.ts';
import { LINKERD_NAMESPACE_SELECTOR, NO_NAMESPACE_SELECTOR } from '../test/e2e/support/chart.ts';
import { ApiError, api, createNamespace, isReady, proxies } from '../test/node/support/workloads.ts';
import { exitOnSignals, median } from './serve-process.mjs';

const PODS = Number(process.env.NODE_FIGURES_PODS ?? 10);
const CREATES = Number(process.env.NODE_FIGURES_CREATES ?? 50);

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

const podBody = (name, namespace, annotations = {}) => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name, namespace, annotations },
  spec: { terminationGracePeriodSeconds: 1, containers: [{ name: 'app', image, imagePullPolicy: 'Never', command: ['httpd', '-f', '-p', '8080', '-h', '/www'] }] },
});

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
    rows.push({ what: `pod created → Ready (median of ${PODS})`, kind: kind.label, by: kind.by, value: `${median(t).toFixed(2)} s`, range: `${Math.min(...t).toFixed(2)}–${Math.max(...t).toFixed(2)} s` });
    log(`${kind.label} (${kind.by}): ${t.map((x) => x.toFixed(2)).join(' ')}`);
  }
}

/** The API server's time to create (server-side dry run, webhooks called) an injectable pod, `CREATES` times. */
async function creates(namespace, label, by, expectProxies) {
  const t = [];
  for (let i = 0; i < CREATES; i++) {
    const t0 = performance.now();
    const pod = await api(cluster, 'POST', `/api/v1/namespaces/${namespace}/pods?dryRun=All`, podBody(`dry-${i}`, namespace));
    t.push(performance.now() - t0);
    if (proxies(pod).length !== expectProxies) throw new Error(`dry run in ${namespace}: ${proxies(pod).length} proxies, not ${expectProxies}`);
  }
  rows.push({ what: `API create of a pod, dry run (median of ${CREATES})`, kind: label, by, value: `${median(t).toFixed(1)} ms`, range: `${Math.min(...t).toFixed(1)}–${Math.max(...t).toFixed(1)} ms` });
}

try {
  await createNamespace(cluster, 'plain');
  await createNamespace(cluster, 'meshed', { 'linkerd.io/inject': 'enabled' });
  await cluster.kubectl(['create', 'namespace', 'unhooked']);
  // Left out by both webhooks' namespaceSelector: the API server calls neither.
  await cluster.kubectl(['label', 'namespace', 'unhooked', 'config.linkerd.io/admission-webhooks=disabled']);
  await cluster.kubectl(['annotate', 'namespace', 'unhooked', 'linkerd.io/inject=enabled']);
  const native = { 'config.linkerd.io/proxy-enable-native-sidecar': 'true' };
  const classic = { 'config.linkerd.io/proxy-enable-native-sidecar': 'false' };

  // This injector alone.
  await onlyThisInjector(cluster, linkerd);
  await readyRounds([
    { label: 'not injected', by: '—', namespace: 'plain', prefix: 'plain', proxies: 0 },
    { label: 'classic sidecar (linkerd-init, linkerd-await)', by: 'this injector', namespace: 'meshed', prefix: 'classic', annotations: classic, proxies: 1 },
    { label: 'native sidecar (linkerd-init)', by: 'this injector', namespace: 'meshed', prefix: 'native', annotations: native, proxies: 1 },
  ]);
  await creates('unhooked', 'injectable pod', 'no webhook', 0);
  await creates('meshed', 'injectable pod', 'this injector', 1);

  // Linkerd's injector alone: its selector back, this one's pointed at no namespace (the README's step 2, reversed).
  const injectorRevision = await injector.revision();
  await linkerd.upgrade({ 'proxyInjector.namespaceSelector': LINKERD_NAMESPACE_SELECTOR });
  await injector.upgrade({ 'webhook.namespaceSelector': NO_NAMESPACE_SELECTOR });
  await readyRounds([
    { label: 'classic sidecar (linkerd-init, linkerd-await)', by: "Linkerd's injector", namespace: 'meshed', prefix: 'l-classic', annotations: classic, proxies: 1 },
    { label: 'native sidecar (linkerd-init)', by: "Linkerd's injector", namespace: 'meshed', prefix: 'l-native', annotations: native, proxies: 1 },
  ]);
  await creates('meshed', 'injectable pod', "Linkerd's injector", 1);
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

  const table = [
    '| measure | pods | injected by | median | range |',
    '|---|---|---|---|---|',
    ...rows.map((r) => `| ${r.what} | ${r.kind} | ${r.by} | ${r.value} | ${r.range} |`),
  ].join('\n');
  console.log(`\nnode figures (${new Date().toISOString().slice(0, 10)}, ${PODS} pods per kind, ${CREATES} dry-run creations per webhook, Kubernetes v1.34.10, Linkerd edge-26.8.3, injector ${info.injectorImage.tag}):\n\n${table}\n`);
} finally {
  if (process.env.KEEP_NODE === '1') log(`KEEP_NODE=1: the node is left running (${cluster.kubeconfigPath})`);
  else log(await cluster.stop());
}
