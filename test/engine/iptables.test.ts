import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { EngineError, iptablesPlan, type IptablesPlan } from '../../src/engine/index.js';
import type { Container } from '../../src/engine/k8s.js';
import { renderedInit } from '../support/engine.js';

const init = (...args: string[]): Container => ({ name: 'linkerd-init', args });
const base = ['--ipv6=false', '--incoming-proxy-port', '4143', '--outgoing-proxy-port', '4140', '--proxy-uid', '2102'];
const planOf = (...extra: string[]): IptablesPlan => iptablesPlan(init(...base, ...extra));
const rulesOf = (lines: string[], chain: string): string[] => lines.filter((l) => l.startsWith(`-A ${chain} `));

function expectRefused(container: Container, message: RegExp): void {
  let error: unknown;
  try {
    iptablesPlan(container);
  } catch (e) {
    error = e;
  }
  expect(error).toBeInstanceOf(EngineError);
  expect((error as EngineError).message).toMatch(message);
}

const here = dirname(fileURLToPath(import.meta.url));
const seeds = resolve(join(here, '..', '..', '..', 'shared', 'seeds'));
const seedFile = existsSync(seeds) ? readdirSync(seeds).find((f) => f.startsWith('001_')) : undefined;
const seedRequired = process.env['REQUIRE_LINKERD_FIXTURES'] === '1';

/**
 * The rules of an `iptables -L CHAIN -n -v` listing, rewritten in iptables-save's syntax. Handles the columns and
 * match texts the listing of a proxy-init pod contains, and fails on anything else rather than guess.
 */
function listingAsSaveRules(text: string): Map<string, string[]> {
  const chains = new Map<string, string[]>();
  let chain: string | undefined;
  let rules: string[] = [];
  const finish = (): void => {
    if (chain === undefined) return;
    const earlier = chains.get(chain);
    // The same chain listed twice must list the same rules.
    if (earlier) expect(rules).toEqual(earlier);
    chains.set(chain, rules);
    chain = undefined;
  };
  for (const line of text.split('\n')) {
    const header = /^Chain (\S+) \(/.exec(line);
    if (header) {
      finish();
      chain = header[1];
      rules = [];
      continue;
    }
    if (chain === undefined) continue;
    const row = /^\s*\d+\s+\S+\s+(\S+)\s+(\S+)\s+--\s+(\S+)\s+(\S+)\s+(\S+)\s+(\S+)\s*(.*)$/.exec(line);
    if (!row) {
      // A blank line or the column header ends nothing; prose after a listing ends it.
      if (line.trim() !== '' && !/^\s*pkts bytes target/.test(line)) finish();
      continue;
    }
    const [, target, prot, inIface, outIface, source, destination, rest] = row as unknown as string[];
    const parts = [`-A ${chain}`];
    if (source !== '0.0.0.0/0') parts.push(`-s ${source}`);
    if (destination !== '0.0.0.0/0') parts.push(`-d ${destination}`);
    if (inIface !== '*') parts.push(`-i ${inIface}`);
    if (outIface !== '*') parts.push(`-o ${outIface}`);
    if (prot !== 'all') parts.push(`-p ${prot}`);
    let extra = (rest as string).trim();
    let targetOptions = '';
    const take = (pattern: RegExp): RegExpExecArray | null => {
      const m = pattern.exec(extra);
      if (m) extra = extra.slice(m[0].length).trim();
      return m;
    };
    for (;;) {
      let m: RegExpExecArray | null;
      if ((m = take(/^multiport dports (\S+)/))) parts.push(`-m multiport --dports ${m[1]}`);
      else if ((m = take(/^owner UID match (\d+)/))) parts.push(`-m owner --uid-owner ${m[1]}`);
      else if ((m = take(/^\/\* (.*?) \*\//))) parts.push(`-m comment --comment "${m[1]}"`);
      else if ((m = take(/^redir ports (\d+)/))) targetOptions = ` --to-ports ${m[1]}`;
      else break;
    }
    expect(extra, `unread listing text in: ${line}`).toBe('');
    parts.push(`-j ${target}${targetOptions}`);
    rules.push(parts.join(' '));
  }
  finish();
  return chains;
}

describe('the iptables plan for the pod of the proxy-init walkthrough (seed 001)', () => {
  it.skipIf(!seedFile && !seedRequired)('equals the rules the walkthrough lists, chain by chain and in order', () => {
    expect(seedFile, `no 001_* seed in ${seeds}`).toBeDefined();
    const listed = listingAsSaveRules(readFileSync(join(seeds, seedFile as string), 'utf8'));
    expect([...listed.keys()].sort()).toEqual(['OUTPUT', 'PREROUTING', 'PROXY_INIT_OUTPUT', 'PROXY_INIT_REDIRECT']);
    // The walkthrough's rules skip outbound 443 and 6443 (the Kubernetes API ports its control-plane pod skips);
    // its `kubectl describe` excerpt prints that argument as "443,443", which the listed rules contradict.
    const plan = iptablesPlan(renderedInit({ 'config.linkerd.io/skip-outbound-ports': '443,6443' }));
    for (const [chain, rules] of listed) expect(rulesOf(plan.ipv4, chain)).toEqual(rules);
    expect(plan.ipv4.filter((l) => l.startsWith('-A '))).toHaveLength([...listed.values()].flat().length);
    expect(plan.ipv6).toEqual([]);
  });
});

describe('the iptables plan of a default pod', () => {
  it('lists the chains, then the jumps, the output chain and the redirect chain, as iptables-save prints them', () => {
    expect(iptablesPlan(renderedInit()).ipv4).toEqual([
      ':PREROUTING ACCEPT [0:0]',
      ':INPUT ACCEPT [0:0]',
      ':OUTPUT ACCEPT [0:0]',
      ':POSTROUTING ACCEPT [0:0]',
      ':PROXY_INIT_OUTPUT - [0:0]',
      ':PROXY_INIT_REDIRECT - [0:0]',
      '-A PREROUTING -m comment --comment "proxy-init/install-proxy-init-prerouting" -j PROXY_INIT_REDIRECT',
      '-A OUTPUT -m comment --comment "proxy-init/install-proxy-init-output" -j PROXY_INIT_OUTPUT',
      '-A PROXY_INIT_OUTPUT -m owner --uid-owner 2102 -m comment --comment "proxy-init/ignore-proxy-user-id" -j RETURN',
      '-A PROXY_INIT_OUTPUT -o lo -m comment --comment "proxy-init/ignore-loopback" -j RETURN',
      '-A PROXY_INIT_OUTPUT -p tcp -m multiport --dports 4567,4568 -m comment --comment "proxy-init/ignore-port-4567,4568" -j RETURN',
      '-A PROXY_INIT_OUTPUT -p tcp -m comment --comment "proxy-init/redirect-all-outgoing-to-proxy-port" -j REDIRECT --to-ports 4140',
      '-A PROXY_INIT_REDIRECT -p tcp -m multiport --dports 4190,4191,4567,4568 -m comment --comment "proxy-init/ignore-port-4190,4191,4567,4568" -j RETURN',
      '-A PROXY_INIT_REDIRECT -p tcp -m comment --comment "proxy-init/redirect-all-incoming-to-proxy-port" -j REDIRECT --to-ports 4143',
    ]);
  });

  it('leaves ip6tables alone only when the engine renders --ipv6=false', () => {
    expect(iptablesPlan(renderedInit()).ipv6).toEqual([]);
    const dual = iptablesPlan(renderedInit({}, (v) => (v.disableIPv6 = false)));
    expect(dual.ipv6).toEqual(dual.ipv4);
    expect(dual.ipv6.length).toBeGreaterThan(6);
  });

  it('is the same for the nft backend, which writes the same rules through other binaries', () => {
    const nft = renderedInit({}, (v) => (v.proxyInit.iptablesMode = 'nft'));
    expect(nft.args).toContain('iptables-nft');
    expect(iptablesPlan(nft)).toEqual(iptablesPlan(renderedInit()));
  });

  it('follows the proxy ports, uid and gid the engine renders', () => {
    const plan = iptablesPlan(
      renderedInit({
        'config.linkerd.io/proxy-uid': '3000',
        'config.linkerd.io/proxy-gid': '3001',
        'config.linkerd.io/inbound-port': '5143',
        'config.linkerd.io/outbound-port': '5140',
      }),
    ).ipv4;
    expect(rulesOf(plan, 'PROXY_INIT_OUTPUT')).toEqual([
      '-A PROXY_INIT_OUTPUT -m owner --uid-owner 3000 -m comment --comment "proxy-init/ignore-proxy-user-id" -j RETURN',
      '-A PROXY_INIT_OUTPUT -m owner --gid-owner 3001 -m comment --comment "proxy-init/ignore-proxy-group-id" -j RETURN',
      '-A PROXY_INIT_OUTPUT -o lo -m comment --comment "proxy-init/ignore-loopback" -j RETURN',
      '-A PROXY_INIT_OUTPUT -p tcp -m multiport --dports 4567,4568 -m comment --comment "proxy-init/ignore-port-4567,4568" -j RETURN',
      '-A PROXY_INIT_OUTPUT -p tcp -m comment --comment "proxy-init/redirect-all-outgoing-to-proxy-port" -j REDIRECT --to-ports 5140',
    ]);
    expect(plan.at(-1)).toMatch(/--to-ports 5143$/);
  });
});

describe('ignored ports', () => {
  it('writes ranges with a colon, condenses n-n to n, and keeps the order given', () => {
    const rules = rulesOf(planOf('--outbound-ports-to-ignore', '25,8000-8100,3306-3306,+7').ipv4, 'PROXY_INIT_OUTPUT');
    expect(rules[2]).toBe(
      '-A PROXY_INIT_OUTPUT -p tcp -m multiport --dports 25,8000:8100,3306,7 -m comment --comment "proxy-init/ignore-port-25,8000:8100,3306,7" -j RETURN',
    );
  });

  it('splits into rules of at most 15 port references, a range counting as two', () => {
    const sixteen = Array.from({ length: 16 }, (_, i) => String(10000 + i));
    const single = rulesOf(planOf('--inbound-ports-to-ignore', sixteen.join(',')).ipv4, 'PROXY_INIT_REDIRECT');
    expect(single.map((r) => /--dports (\S+)/.exec(r)?.[1])).toEqual([sixteen.slice(0, 15).join(','), '10015', undefined]);

    // 7 ranges are 14 references; one more port fits, the next range does not.
    const ranges = Array.from({ length: 7 }, (_, i) => `${20000 + i * 10}-${20005 + i * 10}`);
    const mixed = [...ranges, '30000', '30001-30002', '30003'];
    const groups = rulesOf(planOf('--inbound-ports-to-ignore', mixed.join(',')).ipv4, 'PROXY_INIT_REDIRECT')
      .map((r) => /--dports (\S+)/.exec(r)?.[1])
      .filter((g) => g !== undefined);
    expect(groups).toEqual([
      [...ranges.map((r) => r.replace('-', ':')), '30000'].join(','),
      '30001:30002,30003',
    ]);
    for (const group of groups) {
      const refs = group.split(',').reduce((n, item) => n + (item.includes(':') ? 2 : 1), 0);
      expect(refs).toBeLessThanOrEqual(15);
    }
  });

  it('drops items proxy-init cannot read, as it does (spaces are not trimmed)', () => {
    const rules = rulesOf(planOf('--inbound-ports-to-ignore', '4190, 4191,abc,70000,9-8,4192').ipv4, 'PROXY_INIT_REDIRECT');
    expect(rules[0]).toContain('--dports 4190,4192 ');
  });

  it('refuses a list with no readable port, for which proxy-init writes a rule iptables rejects', () => {
    expectRefused(init(...base, '--outbound-ports-to-ignore', 'http,https'), /no valid port/);
  });

  it('takes an empty list as no list', () => {
    expect(planOf('--inbound-ports-to-ignore', '')).toEqual(planOf());
    expect(rulesOf(planOf().ipv4, 'PROXY_INIT_REDIRECT')).toHaveLength(1);
  });

  it('appends the items of a repeated list flag, as pflag does', () => {
    expect(planOf('--inbound-ports-to-ignore', '1,2', '--inbound-ports-to-ignore=3')).toEqual(
      planOf('--inbound-ports-to-ignore', '1,2,3'),
    );
  });
});

describe('ignored subnets and listed ports', () => {
  it('returns inbound traffic from each subnet, printed masked to its prefix with the comment as given', () => {
    const rules = rulesOf(planOf('--subnets-to-ignore', '10.1.2.3/8, 192.0.2.7/32,0.0.0.0/0').ipv4, 'PROXY_INIT_REDIRECT');
    expect(rules.slice(0, 3)).toEqual([
      '-A PROXY_INIT_REDIRECT -s 10.0.0.0/8 -m comment --comment "proxy-init/ignore-subnet-10.1.2.3/8" -j RETURN',
      '-A PROXY_INIT_REDIRECT -s 192.0.2.7/32 -m comment --comment "proxy-init/ignore-subnet-192.0.2.7/32" -j RETURN',
      '-A PROXY_INIT_REDIRECT -m comment --comment "proxy-init/ignore-subnet-0.0.0.0/0" -j RETURN',
    ]);
    // Subnets never reach the output chain: proxy-init matches them as sources of inbound traffic only.
    expect(rulesOf(planOf('--subnets-to-ignore', '10.0.0.0/8').ipv4, 'PROXY_INIT_OUTPUT')).toEqual(
      rulesOf(planOf().ipv4, 'PROXY_INIT_OUTPUT'),
    );
  });

  it('refuses an IPv6 subnet, which iptables rejects before ip6tables ever runs', () => {
    const dual = ['--incoming-proxy-port', '4143', '--outgoing-proxy-port', '4140'];
    expectRefused(init(...dual, '--subnets-to-ignore', 'fd00::1/8'), /iptables refuses the IPv6 subnet fd00::1\/8/);
    expectRefused(init(...base, '--subnets-to-ignore', '::ffff:192.0.2.1/128'), /iptables refuses the IPv6 subnet/);
  });

  it('refuses any subnet when ip6tables runs too, since proxy-init gives both tools every subnet', () => {
    const dual = ['--incoming-proxy-port', '4143', '--outgoing-proxy-port', '4140'];
    expectRefused(init(...dual, '--subnets-to-ignore', '10.0.0.0/8'), /ip6tables refuses the IPv4 subnet 10\.0\.0\.0\/8/);
    // Without subnets both tables get the same rules: 6 chains, 2 jumps, loopback and 2 redirects.
    expect(iptablesPlan(init(...dual)).ipv6).toHaveLength(11);
  });

  it('refuses what Go does not read as a CIDR', () => {
    const bad = ['10.0.0.0', '10.0.0.0/33', '010.0.0.0/8', '10.0.0/8', 'fd00::/129', 'fd00:::1/64', 'x/8', 'fe80::1%eth0/64'];
    for (const subnet of [...bad, '10.0.0.0/8,', '10.0.0.0/8, ,192.0.2.0/24', ' ', '\ufeff10.0.0.0/8']) {
      expectRefused(init(...base, '--subnets-to-ignore', subnet), /is not a valid CIDR address, so linkerd-init would fail$/);
    }
  });

  it('trims each subnet as Go trims it before reading it', () => {
    const plain = planOf('--subnets-to-ignore', '10.0.0.0/8,192.0.2.0/24');
    expect(planOf('--subnets-to-ignore', ' 10.0.0.0/8\t,\u0085192.0.2.0/24\u3000')).toEqual(plain);
  });

  it('reads the first line of the list, as pflag reads one CSV record', () => {
    const plain = planOf('--subnets-to-ignore', '192.0.2.0/24');
    expect(planOf('--subnets-to-ignore', '192.0.2.0/24\n')).toEqual(plain);
    expect(planOf('--subnets-to-ignore', '\r\n\n192.0.2.0/24\r\n10.0.0.0/8')).toEqual(plain);
    expect(planOf('--subnets-to-ignore', '192.0.2.0/24\r')).toEqual(plain);
    expectRefused(init(...base, '--subnets-to-ignore', '\n\n'), /invalid argument "\\n\\n" for --subnets-to-ignore: EOF/);
  });

  it('prints a prefix length with a leading 0 as iptables reads it, in octal, and refuses it where iptables does', () => {
    const source = (subnet: string): string | undefined =>
      rulesOf(planOf('--subnets-to-ignore', subnet).ipv4, 'PROXY_INIT_REDIRECT')[0]?.split(' -m comment')[0];
    // iptables-save printed these after `iptables -A ... -s <subnet>` (legacy and nft alike).
    expect(source('10.0.0.0/010')).toBe('-A PROXY_INIT_REDIRECT -s 10.0.0.0/8');
    expect(source('10.0.0.0/0032')).toBe('-A PROXY_INIT_REDIRECT -s 10.0.0.0/26');
    expect(source('10.1.2.3/07')).toBe('-A PROXY_INIT_REDIRECT -s 10.0.0.0/7');
    expect(source('10.0.0.0/00')).toBe('-A PROXY_INIT_REDIRECT');
    // The comment keeps the subnet as written.
    expect(rulesOf(planOf('--subnets-to-ignore', '10.0.0.0/010').ipv4, 'PROXY_INIT_REDIRECT')[0]).toContain(
      '"proxy-init/ignore-subnet-10.0.0.0/010"',
    );
    // Go reads these in decimal, so proxy-init passes them on; iptables says "invalid mask".
    for (const subnet of ['10.0.0.0/08', '10.0.0.0/09', '10.0.0.0/0000000008', '10.0.0.0/019']) {
      expectRefused(init(...base, '--subnets-to-ignore', subnet), /reads the prefix length of .* as octal \(it starts with 0\) and refuses it/);
    }
  });

  it('redirects only the listed inbound ports when --ports-to-redirect is given', () => {
    const rules = rulesOf(planOf('--ports-to-redirect', '80,8080', '-r', '9090').ipv4, 'PROXY_INIT_REDIRECT');
    expect(rules).toEqual(
      [80, 8080, 9090].map(
        (p) =>
          `-A PROXY_INIT_REDIRECT -p tcp -m tcp --dport ${p} -m comment --comment "proxy-init/redirect-port-${p}-to-proxy-port" -j REDIRECT --to-ports 4143`,
      ),
    );
  });
});

describe('arguments the way proxy-init reads them', () => {
  it('accepts --flag=value, --flag value, -p value, -pvalue and -p=value alike', () => {
    const long = planOf();
    const spellings = [
      ['--ipv6=false', '--incoming-proxy-port=4143', '--outgoing-proxy-port=4140', '--proxy-uid=2102'],
      ['--ipv6=false', '-p', '4143', '-o4140', '-u=2102'],
      ['--ipv6=f', '-wp4143', '-o', '4140', '-u', '2102', 'stray'],
    ];
    for (const args of spellings) expect(iptablesPlan(init(...args))).toEqual(long);
  });

  it('skips the owner rules for uid and gid 0 or unset', () => {
    const rules = iptablesPlan(init('--ipv6=false', '-p', '4143', '-o', '4140', '-u', '0', '-g', '0')).ipv4;
    expect(rules.some((r) => r.includes('owner'))).toBe(false);
  });

  it('writes no rule at all under --simulate', () => {
    expect(planOf('--simulate')).toEqual({ ipv4: [], ipv6: [] });
  });

  it('refuses containers and arguments proxy-init would refuse, with the reason', () => {
    expectRefused({ name: 'app', args: base }, /expected the linkerd-init container, got "app"/);
    expectRefused({ args: base }, /without a name/);
    expectRefused({ name: 'linkerd-init', args: 'x' }, /args must be a list of strings/);
    expectRefused(init('--outgoing-proxy-port', '4140'), /--incoming-proxy-port must be a valid TCP port number/);
    expectRefused(init('-p', '4143', '-o', '70000'), /--outgoing-proxy-port must be a valid TCP port number/);
    expectRefused(init(...base, '--no-such-flag'), /unknown flag: --no-such-flag/);
    expectRefused(init(...base, '-z'), /unknown shorthand flag: 'z'/);
    expectRefused(init(...base, '--proxy-uid'), /flag needs an argument: --proxy-uid/);
    expectRefused(init(...base, '--proxy-uid', 'root'), /invalid argument "root" for --proxy-uid/);
    expectRefused(init(...base, '--ipv6=maybe'), /not a boolean/);
    expectRefused(init(...base, '--ports-to-redirect', '80, 81'), /" 81" is not an integer/);
    expectRefused(init(...base, '--ports-to-redirect', '70000'), /refuse --ports-to-redirect port 70000/);
    expectRefused(init(...base, '--proxy-uid', '4294967295'), /refuse --proxy-uid 4294967295/);
    expectRefused(init(...base, '--iptables-mode', 'ebpf'), /--iptables-mode must be/);
    expectRefused(init(...base, '--firewall-bin-path', '/sbin/iptables'), /--firewall-bin-path must be/);
    expectRefused(init(...base, '--log-level', 'loud'), /not a valid log level/);
    expectRefused(init(...base, '--inbound-ports-to-ignore', '"4190,4191"'), /quotes are not supported in a list/);
    expectRefused(init(...base, '--outbound-ports-to-ignore', '\n\r\n'), /--outbound-ports-to-ignore: EOF/);
  });

  it('lets --iptables-mode override an unknown --firewall-bin-path, as proxy-init does', () => {
    expect(planOf('--iptables-mode', 'plain', '--firewall-bin-path', '/sbin/iptables')).toEqual(planOf());
  });
});
