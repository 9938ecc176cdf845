/**
 * Nothing leaves the machine: the rules that keep the node's traffic on it were in place before the first pod, a
 * pod's packet to an address off the node is dropped by the FORWARD rule (its counter says so), the service range is a
 * blackhole, and kube-apiserver calls webhooks at their endpoints, not at a ClusterIP.
 */
import { readFileSync, readdirSync } from 'node:fs';
import { beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '../e2e/support/kube.js';
import { dropCounters, isolationRules, POD_DROP_COMMENT } from './support/cluster.js';
import { useNode } from './support/context.js';
import { API_SERVICE_IP, CGROUP_DIR, CGROUP_NAME, POD_CIDR, SERVICE_CIDR, SINK_CIDR, log, run } from './support/host.js';
import { APP_IMAGE } from './support/images.js';
import { apply, createNamespace, getPod, podsOf } from './support/workloads.js';

const node = useNode();
const NS = 'isolation';

describe.skipIf(node.skip !== undefined)('isolation', () => {
  if (node.skip !== undefined) return;
  const { cluster, appTag } = node;

  beforeAll(async () => {
    await createNamespace(cluster, NS);
  });

  it('had the drop rules and the blackhole route before the first pod was created', async () => {
    const rules = await isolationRules();
    log(`FORWARD:\n${rules.forward}${rules.podChain}OUTPUT:\n${rules.output}${rules.hostChain}blackhole routes:\n${rules.routes}`);
    // The jump is FORWARD's first rule, so no earlier rule can accept the pods' packets.
    expect(rules.forward.split('\n')[1]).toBe(`-A FORWARD -s ${POD_CIDR} -j PI-NODE-POD-EGRESS`);
    expect(rules.podChain.split('\n').slice(1, 4)).toEqual([
      `-A PI-NODE-POD-EGRESS -d ${POD_CIDR} -j RETURN`,
      `-A PI-NODE-POD-EGRESS -d ${cluster.nodeIp}/32 -j RETURN`,
      `-A PI-NODE-POD-EGRESS -m comment --comment "${POD_DROP_COMMENT}" -j DROP`,
    ]);
    expect(rules.output.split('\n')[1]).toBe(`-A OUTPUT -m cgroup --path "/${CGROUP_NAME}" -j PI-NODE-HOST-EGRESS`);
    expect(rules.routes).toContain(`blackhole ${SERVICE_CIDR}`);
    // Every pod the cluster ever had came after.
    const all = await podsOf(cluster, '', '');
    const first = all.map((p) => p.metadata.creationTimestamp).sort()[0];
    log(`isolation in place at ${cluster.isolatedAt}; the first of ${all.length} pods created at ${first}`);
    expect(all.length).toBeGreaterThan(0);
    expect(Date.parse(first ?? '')).toBeGreaterThanOrEqual(Math.floor(Date.parse(cluster.isolatedAt) / 1000) * 1000);
    // IPv6 is not forwarded at all.
    expect(readFileSync('/proc/sys/net/ipv6/conf/all/forwarding', 'utf8').trim()).toBe('0');
  });

  it('drops a pod packet bound off the node in FORWARD, and counts it', async () => {
    const before = await dropCounters();
    const target = SINK_CIDR.replace(/0\/24$/, '9');
    await apply(cluster, [
      {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: 'leaver', namespace: NS },
        spec: {
          restartPolicy: 'Never',
          containers: [{ name: 'c', image: `${APP_IMAGE}:${appTag}`, imagePullPolicy: 'Never', command: ['sh', '-c', `timeout 3 wget -q -O- http://${target}/; echo exit=$?`] }],
        },
      },
    ]);
    const pod = await eventually('the leaver pod to finish', async () => {
      const p = await getPod(cluster, NS, 'leaver');
      return p.status.phase === 'Succeeded' || p.status.phase === 'Failed' ? p : undefined;
    }, { timeoutMs: 60_000 });
    const logs = await cluster.kubectl(['-n', NS, 'logs', 'leaver']);
    const after = await dropCounters();
    log(`a pod (${pod.status.podIP}) connecting to ${target}:80: "${logs.trim()}"; FORWARD drop counter ${before.pods} -> ${after.pods}`);
    expect(logs).not.toContain('exit=0');
    expect(after.pods).toBeGreaterThan(before.pods);
  });

  it("runs every host component in the cgroup the OUTPUT rule matches, and drops that cgroup's packets bound off the node", async () => {
    const members = readFileSync(`${CGROUP_DIR}/cgroup.procs`, 'utf8').split('\n').filter(Boolean);
    const names = new Set(members.map((pid) => {
      try {
        return readFileSync(`/proc/${pid}/comm`, 'utf8').trim();
      } catch {
        return '';
      }
    }));
    log(`cgroup ${CGROUP_NAME}: ${members.length} processes: ${[...names].sort().join(', ')}`);
    for (const component of ['etcd', 'kube-apiserver', 'kube-controller', 'kube-scheduler', 'kubelet', 'containerd', 'coredns']) expect(names, component).toContain(component);
    // A process of that cgroup connecting to the sink range: the OUTPUT rule drops it (the sink would too).
    const before = await dropCounters();
    const target = SINK_CIDR.replace(/0\/24$/, '5');
    const out = await run('/bin/sh', ['-c', 'echo $$ > "$PROCS" && timeout 3 /bin/busybox wget -q -O- "http://$TARGET/"; echo "exit=$?"'], { env: { PATH: '/usr/bin:/bin', PROCS: `${CGROUP_DIR}/cgroup.procs`, TARGET: target } }).catch((err: Error) => err.message);
    const after = await dropCounters();
    log(`a process in the cgroup connecting to ${target}:80: "${out.trim()}"; OUTPUT probe counter ${before.hostProbe} -> ${after.hostProbe}, catch-all ${before.hosts} -> ${after.hosts}`);
    expect(after.hostProbe).toBeGreaterThan(before.hostProbe);
    expect(after.hosts).toBe(before.hosts);
  });

  it('routes the service range into a blackhole, and kube-apiserver calls webhooks at their endpoints', async () => {
    // The kernel refuses to route to a blackhole: a ClusterIP is unreachable from the node and its pods alike.
    await expect(run('ip', ['route', 'get', SERVICE_CIDR.replace(/0\/24$/, '42')])).rejects.toThrow(/Invalid argument/);
    expect(await run('ip', ['route', 'show', 'type', 'blackhole'])).toContain(`blackhole ${SERVICE_CIDR}`);
    // The kubernetes Service's address is the node's own (the API server listens on it), not a forwarded one.
    expect(await run('ip', ['route', 'get', API_SERVICE_IP])).toMatch(/^local /);
    const apiserver = readdirSync('/proc')
      .filter((p) => /^\d+$/.test(p))
      .map((p) => {
        try {
          return readFileSync(`/proc/${p}/cmdline`, 'utf8').split('\0');
        } catch {
          return [];
        }
      })
      .find((argv) => argv[0]?.endsWith('/kube-apiserver') && argv.some((a) => a.startsWith(`--cert-dir=${cluster.workDir}`)));
    expect(apiserver).toContain('--enable-aggregator-routing=true');
    // Both injectors' webhooks name a Service, which the API server resolves to the pod's address.
    const webhooks = JSON.parse(await cluster.kubectl(['get', 'mutatingwebhookconfigurations', '-o', 'json'])) as {
      items: Array<{ metadata: { name: string }; webhooks: Array<{ clientConfig: { service?: unknown; url?: string } }> }>;
    };
    const names = webhooks.items.map((w) => w.metadata.name);
    expect(names).toEqual(expect.arrayContaining(['linkerd-proxy-injector-webhook-config', 'proxy-injector-proxy-injector']));
    for (const w of webhooks.items) for (const hook of w.webhooks) expect(hook.clientConfig.url, w.metadata.name).toBeUndefined();
  });
});
