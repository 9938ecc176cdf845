/**
 * What the node suite could change on the host, read before it starts and after it has cleaned up: the two must be
 * equal, or the run fails. Sysctls, links, addresses, routes and rules, iptables (legacy and nft, IPv4 and IPv6) and
 * nftables, mounts, network namespaces, cgroups, the well-known directories a kubelet, containerd and the CNI plugins write, and
 * the processes of the programs it runs.
 */
import { existsSync, readdirSync, readFileSync, readlinkSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { CGROUP_NAME, WORK_DIR, runSync } from './host.js';

export interface HostState {
  sysctls: Record<string, string>;
  links: string[];
  addresses: string[];
  routes: string[];
  rules: string[];
  iptables: Record<string, string[]>;
  nftables: string[];
  mounts: string[];
  netns: string[];
  cgroups: string[];
  paths: string[];
  processes: string[];
}

/** Directories the kubelet, containerd and the CNI plugins use whatever their configuration says. */
const WELL_KNOWN_PATHS = [
  '/etc/cni',
  '/opt/cni',
  '/var/lib/cni',
  '/var/lib/kubelet',
  '/var/lib/containerd',
  '/var/log/containers',
  '/var/log/pods',
  '/run/containerd',
  '/run/netns',
  '/var/run/netns',
  '/etc/kubernetes',
];

/** Sysctls that move by themselves (counters, random, last PID): never compared. */
const VOLATILE_SYSCTL = [
  /^fs\.(dentry-state|file-nr|inode-nr|inode-state|quota\.)/,
  /^kernel\.(random\.|ns_last_pid|pty\.nr|sched_domain\.)/,
  /^net\.netfilter\.nf_conntrack_count$/,
  /^net\.ipv4\.route\.gc_/,
  /^vm\.(stat_|nr_)/,
];

const IPTABLES_SAVERS = ['iptables-legacy-save', 'ip6tables-legacy-save', 'iptables-nft-save', 'ip6tables-nft-save'];

function sysctls(): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (dir: string, prefix: string): void => {
    let entries: string[];
    try {
      entries = readdirSync(dir);
    } catch {
      return;
    }
    for (const name of entries) {
      const path = join(dir, name);
      const key = prefix ? `${prefix}.${name}` : name;
      let stat;
      try {
        stat = statSync(path);
      } catch {
        continue;
      }
      if (stat.isDirectory()) walk(path, key);
      else if (stat.mode & 0o444 && !VOLATILE_SYSCTL.some((re) => re.test(key))) {
        try {
          out[key] = readFileSync(path, 'utf8').trim().replace(/\s+/g, ' ');
        } catch {
          // write-only or refused: not comparable
        }
      }
    }
  };
  // The families the suite touches (and the kernel's, for the kubelet's panic and overcommit settings).
  for (const family of ['net', 'vm', 'kernel']) walk(join('/proc/sys', family), family);
  return out;
}

const lines = (text: string): string[] => text.split('\n').map((l) => l.trimEnd()).filter(Boolean);

/** iptables-save without its comments and counters: the rules only. */
function iptables(saver: string): string[] {
  try {
    return lines(runSync(saver, [])).filter((l) => !l.startsWith('#')).map((l) => l.replace(/\[\d+:\d+\]/g, ''));
  } catch {
    return [`(${saver} not available)`];
  }
}

/** nft's view of every table (iptables-nft's and any other), without counters and handles. */
function nftRuleset(): string[] {
  try {
    return lines(runSync('nft', ['list', 'ruleset'])).map((l) => l.replace(/ counter packets \d+ bytes \d+/g, '').trim());
  } catch {
    return ['(nft not available)'];
  }
}

function listDir(path: string): string[] {
  try {
    return readdirSync(path).sort();
  } catch {
    return [];
  }
}

/**
 * The top-level directories of each cgroup hierarchy, and everything below those the kubelet makes (kubepods) and the
 * suite's own. Below other top-level groups (the machine's own tooling makes a group per command it runs) is not ours.
 */
function cgroups(): string[] {
  const out: string[] = [];
  const walk = (dir: string): void => {
    for (const entry of listDir(dir)) {
      const path = join(dir, entry);
      if (!safeIsDir(path)) continue;
      out.push(path);
      walk(path);
    }
  };
  for (const hierarchy of listDir('/sys/fs/cgroup')) {
    const root = join('/sys/fs/cgroup', hierarchy);
    for (const top of listDir(root)) {
      const path = join(root, top);
      if (!safeIsDir(path)) continue;
      out.push(path);
      if (top.startsWith('kubepods') || top === CGROUP_NAME) walk(path);
    }
  }
  return out;
}

function safeIsDir(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}

/** Processes of the programs the suite runs (by executable), and any process in its cgroup, as "exe args". */
export function suiteProcesses(markers: string[]): string[] {
  const out: string[] = [];
  for (const pid of listDir('/proc')) {
    if (!/^\d+$/.test(pid) || Number(pid) === process.pid) continue;
    let exe = '';
    let cmdline = '';
    let cgroup = '';
    try {
      exe = readlinkSync(`/proc/${pid}/exe`);
      cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ').trim();
      cgroup = readFileSync(`/proc/${pid}/cgroup`, 'utf8');
    } catch {
      continue; // gone, or a kernel thread
    }
    if (markers.some((m) => exe.startsWith(m) || cmdline.includes(m)) || /proxy-injector-node|\/kubepods/.test(cgroup)) out.push(`${pid} ${exe} ${cmdline.slice(0, 200)}`);
  }
  return out.sort();
}

/**
 * The programs the suite starts, by an argument naming its work directory (every component's flags and containerd's
 * shims' socket do) or, for the containers, Linkerd's programs by path; besides, anything in its cgroup or the pods'.
 */
export const PROCESS_MARKERS = [WORK_DIR, '/usr/lib/linkerd/'];

export function snapshot(): HostState {
  return {
    sysctls: sysctls(),
    links: lines(runSync('ip', ['-o', 'link', 'show'])).map((l) => l.replace(/^\d+:\s*/, '').replace(/\s+link\/\S+\s+\S+\s+brd\s+\S+.*$/, '').replace(/ state \S+/, '')),
    addresses: lines(runSync('ip', ['-o', 'addr', 'show'])).map((l) => l.replace(/^\d+:\s*/, '').replace(/\\.*$/, '').replace(/\s+valid_lft.*$/, '')),
    routes: [...lines(runSync('ip', ['-4', 'route', 'show', 'table', 'all'])), ...lines(runSync('ip', ['-6', 'route', 'show', 'table', 'all']))].filter(
      // The kernel's own per-address local and broadcast routes of links that come and go are in "links"/"addresses".
      (l) => !/^(local|broadcast|multicast) .* dev (veth|cni0)/.test(l),
    ),
    rules: [...lines(runSync('ip', ['-4', 'rule', 'show'])), ...lines(runSync('ip', ['-6', 'rule', 'show']))],
    iptables: Object.fromEntries(IPTABLES_SAVERS.map((s) => [s, iptables(s)])),
    nftables: nftRuleset(),
    mounts: lines(readFileSync('/proc/self/mountinfo', 'utf8')).map((l) => l.split(' ')[4] ?? l).sort(),
    netns: [...listDir('/run/netns'), ...listDir('/var/run/netns')],
    cgroups: cgroups(),
    paths: WELL_KNOWN_PATHS.filter((p) => existsSync(p)).flatMap((p) => [p, ...listDir(p).map((e) => join(p, e))]),
    processes: suiteProcesses(PROCESS_MARKERS),
  };
}

/** Readable differences between two snapshots ("+" appeared, "-" disappeared, "~" changed); empty when equal. */
export function differences(before: HostState, after: HostState): string[] {
  const out: string[] = [];
  const keys = new Set([...Object.keys(before.sysctls), ...Object.keys(after.sysctls)]);
  for (const k of [...keys].sort()) {
    const a = before.sysctls[k];
    const b = after.sysctls[k];
    if (a === b) continue;
    if (a === undefined) out.push(`sysctl + ${k} = ${b}`);
    else if (b === undefined) out.push(`sysctl - ${k} (was ${a})`);
    else out.push(`sysctl ~ ${k}: ${a} -> ${b}`);
  }
  const list = (what: string, a: string[], b: string[]): void => {
    const sa = new Set(a);
    const sb = new Set(b);
    for (const x of b) if (!sa.has(x)) out.push(`${what} + ${x}`);
    for (const x of a) if (!sb.has(x)) out.push(`${what} - ${x}`);
  };
  list('link', before.links, after.links);
  list('address', before.addresses, after.addresses);
  list('route', before.routes, after.routes);
  list('rule', before.rules, after.rules);
  for (const saver of Object.keys(before.iptables)) list(saver, before.iptables[saver] ?? [], after.iptables[saver] ?? []);
  list('nft', before.nftables, after.nftables);
  list('mount', before.mounts, after.mounts);
  list('netns', before.netns, after.netns);
  list('cgroup', before.cgroups, after.cgroups);
  list('path', before.paths, after.paths);
  list('process', before.processes, after.processes);
  return out;
}

/** Sizes of a snapshot, for the closing line that says what was compared. */
export function describeState(s: HostState): string {
  const rules = Object.values(s.iptables).reduce((n, r) => n + r.length, 0);
  return `${Object.keys(s.sysctls).length} sysctls, ${s.links.length} links, ${s.addresses.length} addresses, ${s.routes.length} routes, ${rules} iptables lines, ${s.mounts.length} mounts, ${s.cgroups.length} cgroups, ${s.paths.length} paths, ${s.processes.length} suite processes`;
}
