/**
 * The swap, as the README's "Replacing Linkerd's injector" tells it, in a running mesh: with both webhooks registered
 * a pod gets one proxy (Linkerd's); once Linkerd's webhook selects no namespace, a Deployment's new pods are injected
 * by this injector (its metrics and its Injected event say so), become Ready and talk mTLS to a pod Linkerd injected
 * and to each other, with the identities Linkerd's identity service gave them; the rollback gives the pods back to
 * Linkerd's injector and leaves none unmeshed. What the pods are is read from the API, their proxies' metrics and the
 * injectors' metrics, never from a patch.
 */
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { LINKERD_NAMESPACE_SELECTOR, NO_NAMESPACE_SELECTOR } from '../e2e/support/chart.js';
import { eventually } from '../e2e/support/kube.js';
import { useNode } from './support/context.js';
import { log } from './support/host.js';
import { notesCommands, readmeCommand, shell } from './support/documented.js';
import { helmOn } from './support/helm.js';
import { APP_IMAGE } from './support/images.js';
import { INJECTOR_NS, INJECTOR_RELEASE } from './support/injector.js';
import { identityOf, linkerdInjectorMetrics, linkerdWebhookSelector } from './support/linkerd.js';
import {
  apply,
  appDeployment,
  appPod,
  createNamespace,
  getJson,
  promText,
  proxies,
  readyPods,
  service,
  serviceAccount,
  type Pod,
} from './support/workloads.js';
import { samples, sum } from '../support/metrics.js';

const node = useNode();
const NS = 'swap';
const WEB = identityOf('web', NS);
const LEGACY = identityOf('legacy', NS);

/** One line per tcp_open_total series with TLS and a peer identity, for the log. */
const tlsSeries = (text: string) =>
  samples(text, 'tcp_open_total')
    .filter((s) => s.labels['tls'] === 'true')
    .map((s) =>
      s.labels['direction'] === 'inbound'
        ? `inbound client_id=${s.labels['client_id']} (${s.value} connections)`
        : `outbound to ${s.labels['dst_pod'] ?? s.labels['target_addr']} server_id=${s.labels['server_id']} (${s.value})`,
    );

describe.skipIf(node.skip !== undefined)("replacing Linkerd's injector, and rolling back", () => {
  if (node.skip !== undefined) return;
  const { cluster, linkerd, injector, appTag } = node;
  let revisionBefore = 0;

  const ours = async (labels: Record<string, string>) => sum(await injector.metrics(), 'proxy_inject_admission_responses_total', { namespace: NS, ...labels });
  const linkerds = async () => sum(await linkerdInjectorMetrics(cluster), 'proxy_inject_admission_requests_total');
  const webPods = () => readyPods(cluster, NS, 'app=web', 2);
  const proxyMetrics = (pod: Pod) => promText(`http://${pod.status.podIP}:4191/metrics`);

  beforeAll(async () => {
    expect(await linkerdWebhookSelector(cluster)).toEqual(LINKERD_NAMESPACE_SELECTOR);
    await createNamespace(cluster, NS, { 'linkerd.io/inject': 'enabled' });
    await apply(cluster, [serviceAccount('legacy', NS), serviceAccount('web', NS), service('legacy', NS), service('web', NS, { headless: true })]);
  });

  it("with both webhooks registered, gives each pod one proxy: Linkerd's injects and this one sees the proxy", async () => {
    const alreadyBefore = await ours({ skip: 'true', skip_reason: 'sidecar_already_exists' });
    const linkerdBefore = await linkerds();
    // The README's check that the injector answers, with both webhooks registered, as printed: here the proxy is a
    // native sidecar (Linkerd's chart default), an init container.
    expect(await linkerd.configValues()).toMatch(/^ {2}nativeSidecar: true$/m);
    const dryRun = await shell(cluster, [readmeCommand(/ run probe .*--dry-run=server/).replace('-n my-app ', `-n ${NS} `)]);
    log(`the README's kubectl run probe --dry-run=server: ${dryRun.trim()}`);
    expect(dryRun).toBe('linkerd-init linkerd-proxy probe\n');

    await apply(cluster, [
      // Both call every web pod by its IP (the headless Service's addresses); the web pods also call legacy's Service.
      appPod(appTag, { name: 'legacy', namespace: NS, serviceAccount: 'legacy', peers: 'web' }),
      appDeployment(appTag, { name: 'web', namespace: NS, serviceAccount: 'web', replicas: 2, targets: [`http://legacy.${NS}.svc.cluster.local:8080/`], peers: 'web' }),
    ]);
    const pods = [...(await readyPods(cluster, NS, 'app=legacy', 1)), ...(await webPods())];
    for (const pod of pods) expect(proxies(pod), pod.metadata.name).toHaveLength(1);
    const already = (await ours({ skip: 'true', skip_reason: 'sidecar_already_exists' })) - alreadyBefore;
    const linkerdReviews = (await linkerds()) - linkerdBefore;
    log(`both registered: ${pods.length} pods with one proxy each; Linkerd's injector reviewed ${linkerdReviews} requests, this one answered sidecar_already_exists ${already} times`);
    // The dry run's pod and the three pods: each already had Linkerd's proxy when this injector saw it.
    expect(already).toBe(4);
    expect(linkerdReviews).toBeGreaterThanOrEqual(4);
  });

  it("after Linkerd's webhook is pointed at no namespace, injects the Deployment's new pods itself", async () => {
    revisionBefore = await linkerd.revision();
    // The README's two commands, as printed but for the chart: this suite's copy of Linkerd's, not a repository's.
    const chartVersion = readmeCommand(/^LINKERD_CHART=/);
    const upgrade = readmeCommand(/^helm upgrade linkerd-control-plane /).replace(' linkerd/linkerd-control-plane ', ` ${join(linkerd.charts, 'linkerd-control-plane')} `);
    const installed = JSON.parse(await helmOn(cluster, ['get', 'metadata', 'linkerd-control-plane', '-n', 'linkerd', '-o', 'json'])) as { version: string };
    expect(await shell(cluster, [chartVersion, 'echo "$LINKERD_CHART"'])).toBe(`${installed.version}\n`);
    await shell(cluster, [chartVersion, upgrade]);
    // The upgrade rolls Linkerd's Deployments (its injector's metrics start again at 0): wait as helm's --wait would.
    for (const deployment of (await cluster.kubectl(['-n', 'linkerd', 'get', 'deployments', '-o', 'name'])).split(/\s+/).filter(Boolean)) {
      await cluster.kubectl(['-n', 'linkerd', 'rollout', 'status', deployment, '--timeout=300s']);
    }
    expect(await linkerd.revision()).toBe(revisionBefore + 1);
    expect(JSON.parse(await helmOn(cluster, ['get', 'metadata', 'linkerd-control-plane', '-n', 'linkerd', '-o', 'json']))).toMatchObject({ version: installed.version });
    expect(await linkerdWebhookSelector(cluster)).toEqual(NO_NAMESPACE_SELECTOR);
    const injectedBefore = await ours({ skip: 'false' });
    const linkerdBefore = await linkerds();
    const oldPods = new Set((await webPods()).map((p) => p.metadata.name));

    await cluster.kubectl(['-n', NS, 'rollout', 'restart', 'deployment/web']);
    await cluster.kubectl(['-n', NS, 'rollout', 'status', 'deployment/web', '--timeout=120s']);
    const pods = await webPods();
    for (const pod of pods) {
      expect(oldPods.has(pod.metadata.name), `${pod.metadata.name} is new`).toBe(false);
      expect(proxies(pod), pod.metadata.name).toHaveLength(1);
    }
    const injected = (await ours({ skip: 'false' })) - injectedBefore;
    const linkerdReviews = (await linkerds()) - linkerdBefore;
    const ourPod = (await injector.pod()).metadata.name;
    const event = await eventually('the Injected event of this injector on deployment/web', async () => {
      const events = await getJson<{ items: Array<{ reason: string; message: string; count?: number; reportingInstance?: string; involvedObject: { kind: string; name: string } }> }>(cluster, [
        '-n',
        NS,
        'get',
        'events',
        '--field-selector',
        'reason=Injected',
      ]);
      return events.items.find((e) => e.reportingInstance === ourPod && e.involvedObject.kind === 'Deployment' && e.involvedObject.name === 'web');
    });
    log(`pointed away: Linkerd's injector reviewed ${linkerdReviews} more requests; this one injected ${injected} pods (${pods.map((p) => p.metadata.name).join(', ')}); event "${event.message}" x${event.count} from ${ourPod}`);
    expect(injected).toBe(2);
    expect(linkerdReviews).toBe(0);
    expect(event.message).toBe('Linkerd sidecar proxy injected');
    expect(event.count).toBeGreaterThanOrEqual(2);
  });

  it("the chart's NOTES, as printed, show this injector adding a native sidecar and its Injected event", async () => {
    const commands = (await notesCommands(cluster, INJECTOR_RELEASE, INJECTOR_NS)).filter((c) => /\binject-demo\b/.test(c));
    expect(commands).toHaveLength(5);
    // The suite's busybox in place of nginx, which no node here can pull; the dry run pulls nothing.
    const local = commands.map((c) => (c.includes('create deployment') ? c.replace('--image=nginx', `--image=${APP_IMAGE}:${appTag}`) : c));
    try {
      const out = await shell(cluster, local.slice(0, 3));
      log(`NOTES step 2: ${out.trim()}`);
      expect(out.trim().split('\n').at(-1)).toBe('linkerd-init linkerd-proxy demo');
      await shell(cluster, [local[3] ?? '']);
      const events = await eventually('the Injected event the NOTES read', async () => {
        const text = await shell(cluster, [local[4] ?? '']);
        return /Injected\s+deployment\/demo\s+Linkerd sidecar proxy injected/.test(text) ? text : undefined;
      });
      log(`NOTES events: ${events.trim()}`);
    } finally {
      await cluster.kubectl(['delete', 'namespace', 'inject-demo', '--wait=false', '--ignore-not-found']);
    }
  });

  it('its pods talk mTLS with the pod Linkerd injected and with each other, with the identities Linkerd issued', async () => {
    const [a, b] = await webPods();
    if (!a || !b) throw new Error('two web pods expected');
    const [legacy] = await readyPods(cluster, NS, 'app=legacy', 1);
    if (!legacy) throw new Error('the legacy pod is gone');
    const seen = await eventually(
      'tls="true" connections with the expected identities on every proxy',
      async () => {
        const [ta, tb, tl] = await Promise.all([proxyMetrics(a), proxyMetrics(b), proxyMetrics(legacy)]);
        const expected: Array<[string, string, Record<string, string>]> = [
          // the pod Linkerd injected accepts the web pods' identity, and reaches theirs
          ['legacy', tl, { direction: 'inbound', tls: 'true', client_id: WEB }],
          ['legacy', tl, { direction: 'outbound', tls: 'true', server_id: WEB }],
          ...[['web a', ta], ['web b', tb]].flatMap(([name = '', t = '']): Array<[string, string, Record<string, string>]> => [
            [name, t, { direction: 'outbound', tls: 'true', server_id: LEGACY }],
            [name, t, { direction: 'inbound', tls: 'true', client_id: LEGACY }],
            // each web pod calls the other by its IP: the other's identity on both sides
            [name, t, { direction: 'outbound', tls: 'true', server_id: WEB }],
            [name, t, { direction: 'inbound', tls: 'true', client_id: WEB }],
          ]),
        ];
        const missing = expected.filter(([, text, labels]) => sum(text, 'tcp_open_total', labels) === 0).map(([name, , labels]) => `${name}: ${JSON.stringify(labels)}`);
        if (missing.length > 0) throw new Error(`not yet seen: ${missing.join('; ')}`);
        return { ta, tb, tl };
      },
      { timeoutMs: 60_000 },
    );
    for (const [pod, text] of [[legacy, seen.tl], [a, seen.ta], [b, seen.tb]] as const) log(`${pod.metadata.name} (${pod.status.podIP}) tls="true": ${tlsSeries(text).join('; ')}`);
    // No plaintext between meshed pods: every connection a web pod's proxy accepted from a meshed peer was TLS.
    for (const text of [seen.ta, seen.tb]) {
      const inbound = samples(text, 'tcp_open_total').filter((s) => s.labels['direction'] === 'inbound' && s.labels['client_id']);
      expect(inbound.every((s) => s.labels['tls'] === 'true')).toBe(true);
    }
  });

  it("the rollback gives new pods back to Linkerd's injector, and leaves no pod unmeshed", async () => {
    await linkerd.rollback(revisionBefore);
    expect(await linkerdWebhookSelector(cluster)).toEqual(LINKERD_NAMESPACE_SELECTOR);
    const injectedBefore = await ours({ skip: 'false' });
    const alreadyBefore = await ours({ skip: 'true', skip_reason: 'sidecar_already_exists' });
    const linkerdBefore = await linkerds();
    await cluster.kubectl(['-n', NS, 'rollout', 'restart', 'deployment/web']);
    await cluster.kubectl(['-n', NS, 'rollout', 'status', 'deployment/web', '--timeout=120s']);
    const pods = [...(await webPods()), ...(await readyPods(cluster, NS, 'app=legacy', 1))];
    for (const pod of pods) expect(proxies(pod), pod.metadata.name).toHaveLength(1);
    const injected = (await ours({ skip: 'false' })) - injectedBefore;
    const already = (await ours({ skip: 'true', skip_reason: 'sidecar_already_exists' })) - alreadyBefore;
    const linkerdReviews = (await linkerds()) - linkerdBefore;
    // This injector's own check: no running pod that should have a proxy lacks one.
    const check = await injector.cli(['check', 'pods', '--kubeconfig', cluster.kubeconfigPath, '-n', NS, '-o', 'json']);
    log(`rolled back: Linkerd's injector reviewed ${linkerdReviews}, this one injected ${injected} and saw ${already} already injected; check pods exit ${check.code}: ${check.stdout.trim().slice(0, 400)}`);
    expect(injected).toBe(0);
    expect(already).toBe(2);
    expect(linkerdReviews).toBeGreaterThanOrEqual(2);
    expect(check.code).toBe(0);
  });

  it("leaves this injector's namespace out of both webhooks", async () => {
    const pods = await readyPods(cluster, INJECTOR_NS, 'app.kubernetes.io/name=proxy-injector', 1);
    expect(pods.map((p) => proxies(p).length)).toEqual([0]);
  });
});
