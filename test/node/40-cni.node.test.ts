/**
 * CNI mode: Linkerd's linkerd-cni plugin chained in the node's conflist, with its kubeconfig, as its installer writes
 * them (from the linkerd2-cni chart's configuration), and Linkerd's `cniEnabled: true`. Pods this injector meshes then
 * get Linkerd's real network validator instead of linkerd-init; it passes, and their traffic is meshed. With linkerd-cni
 * taken out of the conflist the validator fails and the pod stays in Init with the validator's reason (the failure seed
 * 002 shows), and `proxy-injector check cni` on the node's conflist says so before any pod is made.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { eventually } from '../e2e/support/kube.js';
import { dropCounters } from './support/cluster.js';
import { useNode } from './support/context.js';
import { VALIDATOR_CONNECT_ADDR, log, sleep } from './support/host.js';
import { identityOf, installLinkerdCni, onlyThisInjector, type LinkerdCni } from './support/linkerd.js';
import {
  apply,
  appPod,
  containerLog,
  containerPid,
  createNamespace,
  getPod,
  isReady,
  natTable,
  promText,
  readyPods,
  service,
  serviceAccount,
  statusOf,
} from './support/workloads.js';
import { sum } from '../support/metrics.js';

const node = useNode();
const NS = 'cni';

describe.skipIf(node.skip !== undefined)("CNI mode, with Linkerd's linkerd-cni on the node", () => {
  if (node.skip !== undefined) return;
  const { cluster, linkerd, injector, appTag } = node;
  let cni: LinkerdCni;
  const checkCni = () => injector.cli(['check', 'cni', '--cni-conf-dir', cluster.cniConfDir, '--cni-bin-dir', cluster.cniBinDir]);
  const pluginTypes = () => (JSON.parse(readFileSync(cluster.conflistPath, 'utf8')) as { plugins: Array<{ type: string }> }).plugins.map((p) => p.type);

  beforeAll(async () => {
    await onlyThisInjector(cluster, linkerd);
    cni = await installLinkerdCni(cluster, linkerd);
    await cni.install();
    await createNamespace(cluster, NS, { 'linkerd.io/inject': 'enabled' });
    await apply(cluster, [serviceAccount('server', NS), serviceAccount('client', NS), service('server', NS)]);
  });

  afterAll(async () => {
    // The node as the rest of the suite expects it: linkerd-cni chained again.
    await cni?.install();
  });

  it('check cni on the node says linkerd-cni is chained, before any pod is made', async () => {
    expect(pluginTypes()).toEqual(['bridge', 'portmap', 'linkerd-cni']);
    const check = await checkCni();
    log(`check cni (linkerd-cni chained), exit ${check.code}:\n${check.stdout}${check.stderr}`);
    expect(check.code).toBe(0);
  });

  it('with cniEnabled: true, a pod gets the real network validator, which passes, no linkerd-init, and its traffic is meshed', async () => {
    await linkerd.upgrade({ cniEnabled: true });
    expect(await linkerd.configValues()).toMatch(/^cniEnabled: true$/m);
    await eventually('cniEnabled followed by this injector', async () => {
      const names = await cluster.kubectl(['-n', NS, 'run', 'dry', '--image=nginx', '--dry-run=server', '-o', 'jsonpath={.spec.initContainers[*].name}']);
      return names.split(' ').includes('linkerd-network-validator') ? true : undefined;
    });
    await apply(cluster, [
      appPod(appTag, { name: 'server', namespace: NS, serviceAccount: 'server', serverOnly: true }),
      appPod(appTag, { name: 'client', namespace: NS, serviceAccount: 'client', targets: [`http://server.${NS}.svc.cluster.local:8080/`] }),
    ]);
    const [server] = await readyPods(cluster, NS, 'app=server', 1);
    const [client] = await readyPods(cluster, NS, 'app=client', 1);
    if (!server || !client) throw new Error('server and client pods expected');
    for (const pod of [server, client]) {
      const init = (pod.spec.initContainers ?? []).map((c) => c.name);
      expect(init, pod.metadata.name).toContain('linkerd-network-validator');
      expect(init, pod.metadata.name).not.toContain('linkerd-init');
      const validator = statusOf(pod, 'linkerd-network-validator')?.state.terminated;
      expect(validator?.exitCode, pod.metadata.name).toBe(0);
    }
    const validatorLog = await containerLog(cluster, NS, 'server', 'linkerd-network-validator');
    log(`validator (server): exit 0; its log:\n${validatorLog.trim()}`);
    expect(validatorLog).toContain(VALIDATOR_CONNECT_ADDR);
    // linkerd-cni wrote the pod's nat rules when its sandbox was made.
    const nat = await natTable(await containerPid(cluster, statusOf(server, 'app')));
    log(`nat table in the server pod, written by linkerd-cni:\n  ${nat.join('\n  ')}`);
    expect(nat).toContain('-A PROXY_INIT_REDIRECT -p tcp -m comment --comment "proxy-init/redirect-all-incoming-to-proxy-port" -j REDIRECT --to-ports 4143');
    expect(nat).toContain('-A PROXY_INIT_OUTPUT -p tcp -m comment --comment "proxy-init/redirect-all-outgoing-to-proxy-port" -j REDIRECT --to-ports 4140');
    // The client's calls reach the server through both proxies, over mTLS with Linkerd's identities.
    const [serverMetrics, clientMetrics] = await eventually('mTLS between the CNI-mode pods', async () => {
      const s = await promText(`http://${server.status.podIP}:4191/metrics`);
      const c = await promText(`http://${client.status.podIP}:4191/metrics`);
      return sum(s, 'tcp_open_total', { direction: 'inbound', tls: 'true', client_id: identityOf('client', NS) }) > 0 &&
        sum(c, 'tcp_open_total', { direction: 'outbound', tls: 'true', server_id: identityOf('server', NS) }) > 0
        ? [s, c]
        : undefined;
    });
    log(
      `server proxy: inbound tls="true" client_id=${identityOf('client', NS)}: ${sum(serverMetrics, 'tcp_open_total', { direction: 'inbound', tls: 'true', client_id: identityOf('client', NS) })} connections; client proxy: outbound tls="true" server_id=${identityOf('server', NS)}: ${sum(clientMetrics, 'tcp_open_total', { direction: 'outbound', tls: 'true', server_id: identityOf('server', NS) })}`,
    );
  });

  it('with linkerd-cni taken out of the conflist, check cni says so, and the validator fails: the pod stays in Init with its reason', async () => {
    await cni.removeFromConflist();
    expect(pluginTypes()).toEqual(['bridge', 'portmap']);
    const check = await checkCni();
    log(`check cni (linkerd-cni removed), exit ${check.code}:\n${check.stdout}${check.stderr}`);
    expect(check.code).toBe(1);
    expect(`${check.stdout}${check.stderr}`).toContain('linkerd-cni');
    // containerd reads the conflist again when it changes; give it a moment before the pod's sandbox is made.
    await sleep(2_000);

    const dropsBefore = (await dropCounters()).pods;
    await apply(cluster, [appPod(appTag, { name: 'unredirected', namespace: NS, serviceAccount: 'server', serverOnly: true })]);
    const failed = await eventually(
      'the validator to fail',
      async () => {
        const pod = await getPod(cluster, NS, 'unredirected');
        const v = statusOf(pod, 'linkerd-network-validator');
        const terminated = v?.state.terminated ?? v?.lastState?.terminated;
        return terminated && terminated.exitCode !== 0 ? pod : undefined;
      },
      { timeoutMs: 60_000 },
    );
    const v = statusOf(failed, 'linkerd-network-validator');
    const terminated = v?.state.terminated ?? v?.lastState?.terminated;
    const validatorLog = await containerLog(cluster, NS, 'unredirected', 'linkerd-network-validator', v?.state.terminated === undefined);
    const stuck = await getPod(cluster, NS, 'unredirected');
    const table = (await cluster.kubectl(['-n', NS, 'get', 'pod', 'unredirected', '--no-headers'])).trim();
    const dropsAfter = (await dropCounters()).pods;
    log(`without linkerd-cni: validator exit ${terminated?.exitCode} (${terminated?.reason}), restarts ${v?.restartCount}; kubectl get pod: ${table}; phase ${stuck.status.phase}; its log:\n${validatorLog.trim()}\nFORWARD drop counter ${dropsBefore} -> ${dropsAfter} (the validator's connections to ${VALIDATOR_CONNECT_ADDR})`);
    expect(terminated?.exitCode).not.toBe(0);
    expect(validatorLog).toMatch(/Failed to validate networking configuration/);
    expect(stuck.status.phase).toBe('Pending');
    expect(isReady(stuck)).toBe(false);
    expect(table).toMatch(/Init:(Error|CrashLoopBackOff)/);
    expect(statusOf(stuck, 'app')?.state.running).toBeUndefined();
    expect(dropsAfter).toBeGreaterThan(dropsBefore);
    await cluster.kubectl(['-n', NS, 'delete', 'pod', 'unredirected', '--grace-period=1', '--wait=false']);
  });
});
