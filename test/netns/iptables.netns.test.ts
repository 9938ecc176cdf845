/**
 * The iptables plan on a real kernel: in network namespaces this suite creates, the plan for a pod is applied with
 * iptables-restore (legacy and nft backends), and real TCP connections show where traffic goes. Needs root, `ip`,
 * Debian's iptables package and python3; `npm run test:netns` says why it skips when they are missing.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { iptablesPlan, type IptablesPlan } from '../../src/engine/index.js';
import type { Container } from '../../src/engine/k8s.js';
import { renderedInit } from '../support/engine.js';
import {
  OUTSIDE_IP,
  PEER_IP,
  PEER_IP6,
  PEER_SECOND_IP,
  POD_IP,
  POD_IP6,
  PodNetwork,
  unavailableReason,
  type Agent,
  type Backend,
} from './harness.js';

const skipped = unavailableReason();
if (skipped) {
  // CI installs what the suite needs, so there a skip is a failure.
  if (process.env['REQUIRE_NETNS'] === '1') throw new Error(`netns: cannot run: ${skipped}`);
  console.log(`netns: skipped: ${skipped}`);
}

const BACKENDS: Backend[] = ['legacy', 'nft'];
const APP_USER = { uid: 1000, gid: 1000 };
/** linkerd-network-validator's default user. */
const VALIDATOR_USER = { uid: 65534, gid: 65534 };
const CONNECT_TIMEOUT_S = 2;
const VALIDATOR_TIMEOUT_S = 1;

let connections = 0;
let scenarios = 0;
afterAll(() => {
  if (!skipped) console.log(`netns: ${connections} connections checked in ${scenarios} scenarios`);
});

const address = (host: string, port: number): string => (host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`);

interface Pod {
  net: PodNetwork;
  plan: IptablesPlan;
  /** Connects as the app's user inside the pod. */
  app: Agent;
  /** Connects as the proxy's user inside the pod. */
  proxy: Agent;
  /** Connects from outside the pod. */
  peer: Agent;
}

interface PodOptions {
  proxyUser: { uid: number; gid: number };
  /** Ports the app listens on in the pod, besides the proxy's 4140, 4143, 4190 and 4191. */
  appPorts: number[];
  /** Ports listened on in the peer namespace. */
  peerPorts: number[];
  /** Runs before the proxy starts, as in a pod: linkerd-network-validator binds the proxy's outbound port. */
  beforeProxy?: (net: PodNetwork) => Promise<void>;
}

/**
 * A pod namespace with the plan applied (checked to read back exactly as the plan says), listeners for the proxy,
 * the app and the peer, and agents to connect as the app, as the proxy and from the peer. `run` gets the pod; the
 * namespaces are removed whatever happens.
 */
async function withPod(backend: Backend, init: Container, options: PodOptions, run: (pod: Pod) => Promise<void>): Promise<void> {
  scenarios++;
  const plan = iptablesPlan(init);
  const net = PodNetwork.create();
  try {
    net.restore(backend, 4, plan.ipv4);
    expect(net.save(backend, 4)).toEqual(plan.ipv4);
    if (plan.ipv6.length > 0) {
      net.restore(backend, 6, plan.ipv6);
      expect(net.save(backend, 6)).toEqual(plan.ipv6);
    }
    await options.beforeProxy?.(net);
    const [root, app, proxy, peer] = await Promise.all([
      net.agent(net.pod),
      net.agent(net.pod, APP_USER),
      net.agent(net.pod, options.proxyUser),
      net.agent(net.peer),
    ]);
    const podListeners: Array<[number, string]> = [
      [4143, 'proxy-inbound'],
      [4140, 'proxy-outbound'],
      [4190, 'proxy-control'],
      [4191, 'proxy-admin'],
      ...options.appPorts.map((p): [number, string] => [p, `app-${p}`]),
    ];
    await Promise.all([
      ...podListeners.flatMap(([port, tag]) => [root.listen('0.0.0.0', port, tag), root.listen('::', port, tag)]),
      ...options.peerPorts.flatMap((port) => [peer.listen('0.0.0.0', port, `peer-${port}`), peer.listen('::', port, `peer-${port}`)]),
    ]);
    await run({ net, plan, app, proxy, peer });
  } finally {
    net.destroy();
  }
}

async function dial(from: Agent, host: string, port: number, source?: string) {
  connections++;
  const result = await from.request({ op: 'connect', host, port, source, timeout: CONNECT_TIMEOUT_S });
  expect(result.ok, `connection to ${address(host, port)}: ${result.error}`).toBe(true);
  return result.reply as NonNullable<typeof result.reply>;
}

/** The connection lands on the proxy's listener, which can still read where the client meant to go. */
async function expectProxied(from: Agent, host: string, port: number, listener: string, source?: string): Promise<void> {
  const reply = await dial(from, host, port, source);
  expect({ to: address(host, port), listener: reply.listener, original: reply.original }).toEqual({
    to: address(host, port),
    listener,
    original: address(host, port),
  });
}

/** The connection lands on the listener it was addressed to. */
async function expectDirect(from: Agent, host: string, port: number, listener: string, source?: string): Promise<void> {
  const reply = await dial(from, host, port, source);
  expect({ to: address(host, port), listener: reply.listener }).toEqual({ to: address(host, port), listener });
}

/** linkerd-network-validator's check, run in the pod as its default user or as `user`. */
async function validate(net: PodNetwork, user = VALIDATOR_USER) {
  connections++;
  const validator = await net.agent(net.pod, user);
  try {
    return await validator.request(
      { op: 'validate', listen: ['0.0.0.0', 4140], connect: [OUTSIDE_IP, 20001], timeout: VALIDATOR_TIMEOUT_S },
      (VALIDATOR_TIMEOUT_S + 10) * 1000,
    );
  } finally {
    validator.close();
  }
}

const expectValidated = async (net: PodNetwork): Promise<void> => {
  const result = await validate(net);
  expect(result, JSON.stringify(result)).toMatchObject({ ok: true });
};

const PROXY = { uid: 2102, gid: 2102 };
const multiportRules = (lines: string[], chain: string): string[] =>
  lines.filter((l) => l.startsWith(`-A ${chain} `) && l.includes('-m multiport'));

describe.skipIf(skipped)('the iptables plan in a network namespace', () => {
  for (const backend of BACKENDS) {
    describe(`with iptables-${backend}`, () => {
      it('a default pod: inbound reaches the proxy except its own ports, outbound reaches it except the proxy, loopback is left alone', async () => {
        const options = { proxyUser: PROXY, appPorts: [8080, 4567], peerPorts: [80, 4567], beforeProxy: expectValidated };
        await withPod(backend, renderedInit(), options, async ({ app, proxy, peer }) => {
          await expectProxied(peer, POD_IP, 8080, 'proxy-inbound');
          await expectDirect(peer, POD_IP, 4190, 'proxy-control');
          await expectDirect(peer, POD_IP, 4191, 'proxy-admin');
          await expectDirect(peer, POD_IP, 4567, 'app-4567');

          await expectProxied(app, PEER_IP, 80, 'proxy-outbound');
          await expectDirect(proxy, PEER_IP, 80, 'peer-80');
          await expectDirect(app, PEER_IP, 4567, 'peer-4567');

          await expectDirect(app, '127.0.0.1', 8080, 'app-8080');
          await expectDirect(app, POD_IP, 8080, 'app-8080');
        });
      });

      it('skipped ports and ranges bypass the proxy both ways; the ports next to them do not', async () => {
        const init = renderedInit({
          'config.linkerd.io/skip-inbound-ports': '8081,9000-9010',
          'config.linkerd.io/skip-outbound-ports': '5432,6000-6010',
        });
        const options = { proxyUser: PROXY, appPorts: [8080, 8081, 9000, 9005, 9010, 9011], peerPorts: [5432, 6000, 6010, 6011] };
        await withPod(backend, init, options, async ({ app, peer }) => {
          for (const port of [8081, 9000, 9005, 9010]) await expectDirect(peer, POD_IP, port, `app-${port}`);
          for (const port of [8080, 9011]) await expectProxied(peer, POD_IP, port, 'proxy-inbound');
          for (const port of [5432, 6000, 6010]) await expectDirect(app, PEER_IP, port, `peer-${port}`);
          await expectProxied(app, PEER_IP, 6011, 'proxy-outbound');
        });
      });

      it('a skipped subnet bypasses the proxy for inbound traffic from it, and only for that', async () => {
        const init = renderedInit({ 'config.linkerd.io/skip-subnets': `${PEER_SECOND_IP}/32` });
        const options = { proxyUser: PROXY, appPorts: [8080], peerPorts: [80], beforeProxy: expectValidated };
        await withPod(backend, init, options, async ({ app, peer }) => {
          await expectDirect(peer, POD_IP, 8080, 'app-8080', PEER_SECOND_IP);
          await expectProxied(peer, POD_IP, 8080, 'proxy-inbound', PEER_IP);
          // proxy-init matches the subnets as sources in the inbound chain: outbound traffic to them is redirected.
          await expectProxied(app, PEER_SECOND_IP, 80, 'proxy-outbound');
        });
      });

      it('a custom proxy uid: that user bypasses the outbound redirect and the default uid no longer does', async () => {
        const custom = { uid: 3000, gid: 3000 };
        const init = renderedInit({ 'config.linkerd.io/proxy-uid': '3000' });
        await withPod(backend, init, { proxyUser: custom, appPorts: [], peerPorts: [80], beforeProxy: expectValidated }, async ({ net, proxy, peer }) => {
          await expectDirect(proxy, PEER_IP, 80, 'peer-80');
          const formerProxyUser = await net.agent(net.pod, PROXY);
          await expectProxied(formerProxyUser, PEER_IP, 80, 'proxy-outbound');
          await expectProxied(peer, POD_IP, 8080, 'proxy-inbound');
        });
      });

      it('more than 15 skipped ports are split over several rules, and ports in every rule bypass the proxy', async () => {
        const inbound = Array.from({ length: 20 }, (_, i) => 10001 + i);
        const outbound = Array.from({ length: 16 }, (_, i) => 11001 + i);
        const init = renderedInit({
          'config.linkerd.io/skip-inbound-ports': inbound.join(','),
          'config.linkerd.io/skip-outbound-ports': [...outbound.map(String), '12000-12010'].join(','),
        });
        const options = { proxyUser: PROXY, appPorts: [10001, 10020, 10021], peerPorts: [11001, 11016, 11017, 12005] };
        await withPod(backend, init, options, async ({ plan, app, peer }) => {
          // 4190, 4191, the 2 default ports, then 20: 15 + 9. Outbound: 16 ports and a range: 15 + 3.
          expect(multiportRules(plan.ipv4, 'PROXY_INIT_REDIRECT')).toHaveLength(2);
          expect(multiportRules(plan.ipv4, 'PROXY_INIT_OUTPUT')).toHaveLength(2);
          for (const port of [10001, 10020]) await expectDirect(peer, POD_IP, port, `app-${port}`);
          await expectProxied(peer, POD_IP, 10021, 'proxy-inbound');
          for (const port of [11001, 11016, 12005]) await expectDirect(app, PEER_IP, port, `peer-${port}`);
          await expectProxied(app, PEER_IP, 11017, 'proxy-outbound');
        });
      });

      it('a dual-stack pod gets the same redirection over IPv6 from ip6tables', async () => {
        const init = renderedInit({}, (v) => (v.disableIPv6 = false));
        await withPod(backend, init, { proxyUser: PROXY, appPorts: [8080], peerPorts: [80] }, async ({ plan, app, proxy, peer }) => {
          expect(plan.ipv6).toEqual(plan.ipv4);
          await expectProxied(peer, POD_IP6, 8080, 'proxy-inbound');
          await expectDirect(peer, POD_IP6, 4191, 'proxy-admin');
          await expectProxied(app, PEER_IP6, 80, 'proxy-outbound');
          await expectDirect(proxy, PEER_IP6, 80, 'peer-80');
          await expectDirect(app, '::1', 8080, 'app-8080');
          await expectProxied(app, PEER_IP, 80, 'proxy-outbound');
        });
      });

      it("without the rules (the CNI plugin did not run), the validator's check fails when its timeout runs out", async () => {
        scenarios++;
        const net = PodNetwork.create();
        try {
          const result = await validate(net);
          expect(result).toMatchObject({ ok: false, error: 'timeout' });
          expect(result.elapsed).toBeGreaterThanOrEqual(VALIDATOR_TIMEOUT_S * 0.9);
        } finally {
          net.destroy();
        }
      });

      it("the validator's check fails as the proxy's uid even with the rules, which exempt that uid", async () => {
        scenarios++;
        const net = PodNetwork.create();
        try {
          net.restore(backend, 4, iptablesPlan(renderedInit()).ipv4);
          const result = await validate(net, PROXY);
          expect(result).toMatchObject({ ok: false, error: 'timeout' });
        } finally {
          net.destroy();
        }
      });

      it("proxy-init's own commands leave exactly the plan in the nat table", () => {
        scenarios++;
        // What proxy-init runs, in its order and with its argument spelling, for a pod with every kind of rule.
        const init: Container = {
          name: 'linkerd-init',
          args: [
            '--ipv6=false', '--incoming-proxy-port', '4143', '--outgoing-proxy-port', '4140', '--proxy-uid', '2102',
            '--proxy-gid', '2103', '--inbound-ports-to-ignore', '4190,4191,9000-9010', '--outbound-ports-to-ignore',
            '443,6443', '--subnets-to-ignore', '10.1.2.3/8', '--ports-to-redirect', '8080,8443',
          ],
        };
        const nat = (...args: string[]): string[] => ['-t', 'nat', ...args];
        const comment = (text: string): string[] => ['-m', 'comment', '--comment', `proxy-init/${text}`];
        const commands = [
          nat('-N', 'PROXY_INIT_REDIRECT'),
          nat('-A', 'PROXY_INIT_REDIRECT', '-p', 'tcp', '--match', 'multiport', '--dports', '4190,4191,9000:9010', '-j', 'RETURN', ...comment('ignore-port-4190,4191,9000:9010')),
          nat('-A', 'PROXY_INIT_REDIRECT', '-p', 'all', '-j', 'RETURN', '-s', '10.1.2.3/8', ...comment('ignore-subnet-10.1.2.3/8')),
          nat('-A', 'PROXY_INIT_REDIRECT', '-p', 'tcp', '--destination-port', '8080', '-j', 'REDIRECT', '--to-port', '4143', ...comment('redirect-port-8080-to-proxy-port')),
          nat('-A', 'PROXY_INIT_REDIRECT', '-p', 'tcp', '--destination-port', '8443', '-j', 'REDIRECT', '--to-port', '4143', ...comment('redirect-port-8443-to-proxy-port')),
          nat('-A', 'PREROUTING', '-j', 'PROXY_INIT_REDIRECT', ...comment('install-proxy-init-prerouting')),
          nat('-N', 'PROXY_INIT_OUTPUT'),
          nat('-A', 'PROXY_INIT_OUTPUT', '-m', 'owner', '--uid-owner', '2102', '-j', 'RETURN', ...comment('ignore-proxy-user-id')),
          nat('-A', 'PROXY_INIT_OUTPUT', '-m', 'owner', '--gid-owner', '2103', '-j', 'RETURN', ...comment('ignore-proxy-group-id')),
          nat('-A', 'PROXY_INIT_OUTPUT', '-o', 'lo', '-j', 'RETURN', ...comment('ignore-loopback')),
          nat('-A', 'PROXY_INIT_OUTPUT', '-p', 'tcp', '--match', 'multiport', '--dports', '443,6443', '-j', 'RETURN', ...comment('ignore-port-443,6443')),
          nat('-A', 'PROXY_INIT_OUTPUT', '-p', 'tcp', '-j', 'REDIRECT', '--to-port', '4140', ...comment('redirect-all-outgoing-to-proxy-port')),
          nat('-A', 'OUTPUT', '-j', 'PROXY_INIT_OUTPUT', ...comment('install-proxy-init-output')),
        ];
        const net = PodNetwork.create();
        try {
          for (const command of commands) net.iptables(backend, command);
          expect(net.save(backend, 4)).toEqual(iptablesPlan(init).ipv4);
        } finally {
          net.destroy();
        }
      });
    });
  }
});
