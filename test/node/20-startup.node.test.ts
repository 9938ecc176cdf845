/**
 * How a pod this injector meshed starts on a real kubelet, read from the node: the kubelet's container statuses, each
 * container's process start (from /proc, in seconds since boot), the moment its proxy first answered /ready at the
 * pod's IP (polled from the node every 10 ms from the pod's creation), and the nat table in the pod's network
 * namespace. As a native sidecar (Linkerd's chart default), as a classic sidecar (`proxy.nativeSidecar: false`, the seed
 * documents' mode) with linkerd-await, and as a classic sidecar with `config.linkerd.io/proxy-await: disabled`.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '../e2e/support/kube.js';
import { readmeCommand, shell } from './support/documented.js';
import { useNode } from './support/context.js';
import { log } from './support/host.js';
import { LINKERD_NS, onlyThisInjector } from './support/linkerd.js';
import {
  apply,
  appPod,
  containerPid,
  createNamespace,
  getPod,
  natTable,
  processStart,
  proxyFirstReady,
  readyPods,
  serviceAccount,
  statusOf,
  wallClock,
  type Pod,
} from './support/workloads.js';
import { sum } from '../support/metrics.js';

const node = useNode();
const NS = 'startup';

interface Timeline {
  pod: Pod;
  proxyStart: number;
  proxyReady: number;
  /** the same moment as wall-clock seconds */
  proxyReadyWall: number;
  appStart: number;
  /** the kubelet's startedAt of the app container (whole seconds) */
  appStartedAt: string;
}

const show = (t: Timeline): string =>
  `proxy process started ${wallClock(t.proxyStart)}, first answered ready ${wallClock(t.proxyReady)}, app process started ${wallClock(t.appStart)} (kubelet startedAt ${t.appStartedAt}); app - ready = ${(t.appStart - t.proxyReady).toFixed(2)} s`;

describe.skipIf(node.skip !== undefined)('start-up order of the pods this injector meshes', () => {
  if (node.skip !== undefined) return;
  const { cluster, linkerd, injector, appTag } = node;
  const scratch = mkdtempSync(join(tmpdir(), 'node-startup-'));
  afterAll(() => rmSync(scratch, { recursive: true, force: true }));

  beforeAll(async () => {
    await onlyThisInjector(cluster, linkerd);
    await createNamespace(cluster, NS, { 'linkerd.io/inject': 'enabled' });
    await apply(cluster, [serviceAccount('app', NS)]);
  });

  /** Creates the pod while watching its proxy from the node; returns the timeline once it is Ready. */
  async function start(name: string, annotations: Record<string, string> = {}): Promise<Timeline> {
    const injectedBefore = sum(await injector.metrics(), 'proxy_inject_admission_responses_total', { namespace: NS, skip: 'false' });
    const manifest = appPod(appTag, { name, namespace: NS, serviceAccount: 'app', annotations, serverOnly: true });
    const ready = proxyFirstReady(cluster, NS, name);
    await apply(cluster, [manifest]);
    const { sinceBoot: proxyReady, wall: proxyReadyWall } = await ready;
    const [pod] = await readyPods(cluster, NS, `app=${name}`, 1, 90_000);
    if (!pod) throw new Error(`${name} is not ready`);
    // This injector made the pod what it is (Linkerd's webhook selects no namespace).
    expect(sum(await injector.metrics(), 'proxy_inject_admission_responses_total', { namespace: NS, skip: 'false' }) - injectedBefore).toBe(1);
    const proxyStart = processStart(await containerPid(cluster, statusOf(pod, 'linkerd-proxy')));
    const appStart = processStart(await containerPid(cluster, statusOf(pod, 'app')));
    const appStartedAt = statusOf(pod, 'app')?.state.running?.startedAt ?? '';
    return { pod, proxyStart, proxyReady, proxyReadyWall, appStart, appStartedAt };
  }

  it("as a native sidecar (Linkerd's default), the proxy is a restartable init container and the app starts after its startup probe passes", async () => {
    expect(await linkerd.configValues()).toMatch(/^ {2}nativeSidecar: true$/m);
    const t = await start('native');
    const init = t.pod.spec.initContainers ?? [];
    expect(init.map((c) => c.name)).toEqual(['linkerd-init', 'linkerd-proxy']);
    const proxy = init[1];
    expect(proxy?.restartPolicy).toBe('Always');
    expect(proxy?.startupProbe).toMatchObject({ httpGet: { path: '/ready', port: 4191 } });
    expect(t.pod.spec.containers.map((c) => c.name)).toEqual(['app']);
    expect(statusOf(t.pod, 'linkerd-init')?.state.terminated?.exitCode).toBe(0);
    expect(statusOf(t.pod, 'linkerd-proxy')).toMatchObject({ started: true, ready: true, state: { running: {} } });
    log(`native: ${show(t)}`);
    // The kubelet starts the app only once the startup probe has passed, which needs /ready to answer 200.
    expect(t.appStart).toBeGreaterThanOrEqual(t.proxyReady);
    // The kubelet's own record (whole seconds) says as much.
    expect(Date.parse(t.appStartedAt) / 1000).toBeGreaterThanOrEqual(Math.floor(t.proxyReadyWall));
  });

  describe('as a classic sidecar (proxy.nativeSidecar: false)', () => {
    beforeAll(async () => {
      await linkerd.upgrade({ 'proxy.nativeSidecar': false });
      expect(await linkerd.configValues()).toMatch(/^ {2}nativeSidecar: false$/m);
      // This injector follows linkerd-config without a restart: wait until a dry run shows the classic proxy.
      await eventually('the classic sidecar in a dry run', async () => {
        const names = await cluster.kubectl(['-n', NS, 'run', 'dry', `--image=nginx`, '--dry-run=server', '-o', 'jsonpath={.spec.containers[*].name}']);
        return names.split(' ').includes('linkerd-proxy') ? true : undefined;
      });
    });

    it("the README's check, as printed, says the same as with a native sidecar", async () => {
      const dryRun = await shell(cluster, [readmeCommand(/ run probe .*--dry-run=server/).replace('-n my-app ', `-n ${NS} `)]);
      expect(dryRun).toBe('linkerd-init linkerd-proxy probe\n');
    });

    it('linkerd-init exits 0, the nat table in the pod equals explain\'s plan, and the app starts after the proxy first answers ready', async () => {
      const t = await start('classic');
      expect((t.pod.spec.initContainers ?? []).map((c) => c.name)).toEqual(['linkerd-init']);
      expect(t.pod.spec.containers.map((c) => c.name)).toEqual(['linkerd-proxy', 'app']);
      expect(t.pod.spec.containers[0]?.lifecycle?.postStart?.exec?.command?.[0]).toBe('/usr/lib/linkerd/linkerd-await');
      const init = statusOf(t.pod, 'linkerd-init')?.state.terminated;
      log(`classic: linkerd-init exit code ${init?.exitCode} (${init?.reason}), ran ${init?.startedAt} to ${init?.finishedAt}`);
      expect(init?.exitCode).toBe(0);

      // The rules linkerd-init wrote, read in the pod's network namespace, against the plan `explain` prints for the
      // pod as it was submitted, with Linkerd's values and trust anchors from the cluster.
      const values = await linkerd.configValues();
      const mode = /^ {2}iptablesMode: (\w+)$/m.exec(values)?.[1] ?? 'nft';
      const nat = await natTable(await containerPid(cluster, statusOf(t.pod, 'app')), mode === 'legacy' ? 'legacy' : 'nft');
      writeFileSync(join(scratch, 'values.yaml'), values);
      writeFileSync(join(scratch, 'ca.crt'), await cluster.kubectl(['-n', LINKERD_NS, 'get', 'configmap', 'linkerd-identity-trust-roots', '-o', 'jsonpath={.data.ca-bundle\\.crt}']));
      writeFileSync(join(scratch, 'pod.json'), JSON.stringify(appPod(appTag, { name: 'classic', namespace: NS, serviceAccount: 'app', serverOnly: true })));
      const explained = await injector.cli([
        'explain', '--output', 'json', '--values', join(scratch, 'values.yaml'), '--trust-anchors', join(scratch, 'ca.crt'),
        '--namespace-annotation', 'linkerd.io/inject=enabled', join(scratch, 'pod.json'),
      ]);
      expect(explained.code, explained.stderr).toBe(0);
      const [record] = JSON.parse(explained.stdout) as Array<{ iptables?: { ipv4: string[] } }>;
      const plan = (record?.iptables?.ipv4 ?? []).map((l) => l.replace(/\s*\[\d+:\d+\]$/, ''));
      const read = nat.filter((l) => l !== '*nat' && l !== 'COMMIT');
      log(`classic: nat table in the pod (iptables-${mode}-save -t nat), ${read.length} lines:\n  ${read.join('\n  ')}`);
      expect(plan.length).toBeGreaterThan(6);
      expect(read).toEqual(plan);

      log(`classic: ${show(t)}`);
      // linkerd-await, the proxy's postStart hook, holds the app until /ready answers.
      expect(t.proxyStart).toBeLessThanOrEqual(t.proxyReady);
      expect(t.appStart).toBeGreaterThanOrEqual(t.proxyReady);
      expect(Date.parse(t.appStartedAt) / 1000).toBeGreaterThanOrEqual(Math.floor(t.proxyReadyWall));
    });

    it('with config.linkerd.io/proxy-await: disabled, the app starts without waiting for the proxy', async () => {
      const t = await start('no-await', { 'config.linkerd.io/proxy-await': 'disabled' });
      expect(t.pod.spec.containers.map((c) => c.name)).toEqual(['app', 'linkerd-proxy']);
      expect(t.pod.spec.containers[1]?.lifecycle?.postStart).toBeUndefined();
      log(`no await: ${show(t)}`);
      expect(t.appStart).toBeLessThan(t.proxyReady);
      expect(t.appStart).toBeLessThanOrEqual(t.proxyStart);
    });
  });

  it('leaves nothing of these pods running after they are deleted', async () => {
    await cluster.kubectl(['-n', NS, 'delete', 'pods', '--all', '--wait=true', '--timeout=60s']);
    const left = await cluster.kubectl(['-n', NS, 'get', 'pods', '-o', 'name']);
    expect(left.trim()).toBe('');
    await expect(getPod(cluster, NS, 'classic')).rejects.toThrow(/404/);
  });
});
