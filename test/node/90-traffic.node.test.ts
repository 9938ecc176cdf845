/**
 * After every scenario: what the drop rules counted. The pods' FORWARD rule counted the packets the scenarios sent off
 * the node on purpose (to the sink range); the OUTPUT rule on the cluster's host processes counted none, which is to
 * say no component (the API server, the kubelet, containerd, CoreDNS, the CNI plugins) tried to reach anything off the
 * node, and containerd never tried to pull an image.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { dropCounters } from './support/cluster.js';
import { useNode } from './support/context.js';
import { log } from './support/host.js';

const node = useNode();

describe.skipIf(node.skip !== undefined)('traffic off the node, over the whole suite', () => {
  if (node.skip !== undefined) return;
  const { cluster } = node;

  it("counted the pods' packets bound off the node in FORWARD, and none from the cluster's host processes in OUTPUT", async () => {
    const counters = await dropCounters();
    log(`drop counters at the end: FORWARD (pods) ${counters.pods} packets, OUTPUT (cluster host processes, IPv4 + IPv6) ${counters.hosts} packets`);
    expect(counters.pods).toBeGreaterThan(0);
    expect(counters.hosts).toBe(0);
  });

  it('never had containerd pull an image: every image was imported', () => {
    const containerd = readFileSync(cluster.logPath('containerd'), 'utf8');
    const pulls = containerd.split('\n').filter((l) => l.includes('PullImage'));
    log(`containerd log: ${containerd.split('\n').length} lines, ${pulls.length} PullImage`);
    expect(pulls).toEqual([]);
  });
});
