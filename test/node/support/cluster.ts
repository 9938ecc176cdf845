/**
 * A one-node Kubernetes cluster on this machine: etcd, kube-apiserver, kube-controller-manager, kube-scheduler, a
 * kubelet on the suite's own containerd (its own socket, root and state), the CNI bridge, and CoreDNS serving
 * cluster.local only. Every host process runs in one cgroup, by whose PID it is stopped; every change to the host is
 * undone at the end, and the host is then compared with a snapshot taken before anything started.
 *
 * Nothing leaves the machine: before any pod starts, a FORWARD rule drops whatever the pod range sends anywhere but
 * the pod range or the node, an OUTPUT rule does the same for the cluster's host processes (by their cgroup), the
 * service range is a blackhole route, and the API server calls webhooks at their endpoints
 * (`--enable-aggregator-routing`), never at a ClusterIP.
 */
import { spawn } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, readdirSync, rmSync, rmdirSync, symlinkSync, unlinkSync, writeFileSync } from 'node:fs';
import { Resolver } from 'node:dns/promises';
import { join } from 'node:path';
import { freePorts, kubeconfigYaml, kubeRequest } from '../../e2e/support/control-plane.js';
import { describeState, differences, snapshot, suiteProcesses, PROCESS_MARKERS, type HostState } from './host-state.js';
import {
  API_PORT,
  API_SERVICE_IP,
  CGROUP_DIR,
  CGROUP_NAME,
  CLUSTER_DOMAIN,
  CLUSTER_LOCK,
  NODE_NAME,
  POD_CIDR,
  POD_GATEWAY,
  SERVICE_CIDR,
  SINK_CIDR,
  SINK_DEVICE,
  WORK_DIR,
  log,
  nodeIp as readNodeIp,
  run,
  runSync,
  sleep,
  tryRunSync,
} from './host.js';
import { clusterPki, type Credential } from './pki.js';

const STATE_FILE = `${WORK_DIR}.state.json`;
const POD_EGRESS_CHAIN = 'PI-NODE-POD-EGRESS';
const HOST_EGRESS_CHAIN = 'PI-NODE-HOST-EGRESS';
export const POD_DROP_COMMENT = 'node suite: nothing the pods send leaves the machine';
const HOST_DROP_COMMENT = 'node suite: nothing the cluster host processes send leaves the machine';
const HOST_PROBE_COMMENT = 'node suite: the isolation probe from the cluster cgroup';

export interface Binaries {
  /** etcd, kube-apiserver, kube-controller-manager (scripts/e2e-binaries.sh) */
  controlPlane: string;
  /** kubelet, kube-scheduler, kubectl, coredns (scripts/node-binaries.sh) */
  node: string;
}

/** Gets both binary directories from scripts/node-binaries.sh, which builds what is missing. */
export async function binaries(repoRoot: string): Promise<Binaries> {
  const out = await run('bash', [join(repoRoot, 'scripts', 'node-binaries.sh')], { env: { ...process.env }, maxBuffer: 1 << 20 });
  const [controlPlane, node] = out.trim().split('\n').slice(-2);
  if (!controlPlane || !node || !existsSync(join(node, 'kubelet'))) throw new Error(`scripts/node-binaries.sh printed ${JSON.stringify(out)}`);
  return { controlPlane, node };
}

interface ProcessRecord {
  name: string;
  pid: number;
  /** /proc/<pid>/stat's start time: a PID reused by another process is never signalled */
  started: string;
}

interface SuiteState {
  before: HostState;
  processes: ProcessRecord[];
  containerdSocket: string;
}

/** A cluster as data: what the global setup hands the test files. */
export interface ClusterInfo {
  nodeIp: string;
  /** when the isolation rules were in place (ISO time), before the kubelet started */
  isolatedAt: string;
  workDir: string;
  apiServerUrl: string;
  kubeconfigPath: string;
  ca: Credential;
  admin: Credential;
  cniConfDir: string;
  cniBinDir: string;
  conflistPath: string;
  containerdSocket: string;
  binaries: Binaries;
}

export interface Cluster extends ClusterInfo {
  info: ClusterInfo;
  kubectl(args: string[], options?: { input?: string }): Promise<string>;
  ctr(args: string[]): Promise<string>;
  /** A component's log file. */
  logPath(name: string): string;
  /** Stops everything, undoes every host change and compares the host with its state before; throws on a difference. */
  stop(): Promise<string>;
}

/** The helpers on a cluster's data; `stop` is the global setup's alone. */
export function clusterHelpers(info: ClusterInfo, stop: () => Promise<string>): Cluster {
  return {
    ...info,
    info,
    kubectl: (args, options = {}) => run(join(info.binaries.node, 'kubectl'), ['--kubeconfig', info.kubeconfigPath, ...args], options),
    ctr: (args) => run('ctr', ['-a', info.containerdSocket, '-n', 'k8s.io', ...args]),
    logPath: (name) => join(info.workDir, 'logs', `${name}.log`),
    stop,
  };
}

const startTimeOf = (pid: number): string | undefined => {
  try {
    return readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ')[19];
  } catch {
    return undefined;
  }
};
const alive = (p: ProcessRecord): boolean => startTimeOf(p.pid) === p.started;

function saveState(state: SuiteState): void {
  writeFileSync(STATE_FILE, JSON.stringify(state));
}

/** Starts a host component in the suite's cgroup (before it runs a single instruction of its own), detached, logging to a file. */
function startComponent(state: SuiteState, name: string, binary: string, args: string[], env: NodeJS.ProcessEnv = {}): ProcessRecord {
  const fd = openSync(join(WORK_DIR, 'logs', `${name}.log`), 'a');
  const child = spawn('/bin/sh', ['-c', 'echo $$ > "$SUITE_CGROUP_PROCS" && exec "$@"', name, binary, ...args], {
    detached: true,
    stdio: ['ignore', fd, fd],
    env: { PATH: '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin', HOME: WORK_DIR, ...env, SUITE_CGROUP_PROCS: join(CGROUP_DIR, 'cgroup.procs') },
  });
  closeSync(fd);
  child.unref();
  if (!child.pid) throw new Error(`${name} did not start`);
  const started = startTimeOf(child.pid) ?? '';
  const record = { name, pid: child.pid, started };
  state.processes.push(record);
  saveState(state);
  return record;
}

/** SIGTERM, then SIGKILL after `graceMs`; waits until the process is gone. */
async function stopProcess(p: ProcessRecord, graceMs = 10_000): Promise<void> {
  if (!alive(p)) return;
  try {
    process.kill(p.pid, 'SIGTERM');
  } catch {
    return;
  }
  const deadline = Date.now() + graceMs;
  while (alive(p) && Date.now() < deadline) await sleep(100);
  if (alive(p)) {
    log(`${p.name} (${p.pid}) ignored SIGTERM for ${graceMs} ms: SIGKILL`);
    try {
      process.kill(p.pid, 'SIGKILL');
    } catch {
      // gone meanwhile
    }
    while (alive(p)) await sleep(50);
  }
}

async function waitUntil(what: string, timeoutMs: number, check: () => Promise<boolean>, context: () => string = () => ''): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last = '';
  for (;;) {
    try {
      if (await check()) return;
    } catch (err) {
      last = (err as Error).message;
    }
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${last ? ` (last: ${last})` : ''}\n${context()}`);
    await sleep(250);
  }
}

const tail = (path: string, lines = 30): string => {
  try {
    return readFileSync(path, 'utf8').split('\n').slice(-lines).join('\n');
  } catch {
    return '';
  }
};

// ---------------------------------------------------------------------------------------------------------------
// isolation

/** Host changes that keep every packet on the machine; made before the first pod, undone by teardown. */
async function isolate(nodeIp: string): Promise<void> {
  await run('ip', ['route', 'add', 'blackhole', SERVICE_CIDR]);
  await run('ip', ['addr', 'add', `${API_SERVICE_IP}/32`, 'dev', 'lo']);
  // A bridge without ports: what is routed into it goes nowhere (this kernel has no dummy devices).
  await run('ip', ['link', 'add', SINK_DEVICE, 'type', 'bridge']);
  await run('ip', ['link', 'set', SINK_DEVICE, 'up']);
  await run('ip', ['route', 'add', SINK_CIDR, 'dev', SINK_DEVICE]);
  const ipt = (args: string[]) => run('iptables', ['-w', ...args]);
  await ipt(['-N', POD_EGRESS_CHAIN]);
  await ipt(['-A', POD_EGRESS_CHAIN, '-d', POD_CIDR, '-j', 'RETURN']);
  await ipt(['-A', POD_EGRESS_CHAIN, '-d', `${nodeIp}/32`, '-j', 'RETURN']);
  await ipt(['-A', POD_EGRESS_CHAIN, '-m', 'comment', '--comment', POD_DROP_COMMENT, '-j', 'DROP']);
  await ipt(['-I', 'FORWARD', '1', '-s', POD_CIDR, '-j', POD_EGRESS_CHAIN]);
  await ipt(['-N', HOST_EGRESS_CHAIN]);
  for (const dest of ['127.0.0.0/8', `${nodeIp}/32`, POD_CIDR]) await ipt(['-A', HOST_EGRESS_CHAIN, '-d', dest, '-j', 'RETURN']);
  await ipt(['-A', HOST_EGRESS_CHAIN, '-o', 'lo', '-j', 'RETURN']);
  // The isolation test's own probe from the cgroup goes to the sink range, counted apart from everything else.
  await ipt(['-A', HOST_EGRESS_CHAIN, '-d', SINK_CIDR, '-m', 'comment', '--comment', HOST_PROBE_COMMENT, '-j', 'DROP']);
  await ipt(['-A', HOST_EGRESS_CHAIN, '-m', 'comment', '--comment', HOST_DROP_COMMENT, '-j', 'DROP']);
  await ipt(['-I', 'OUTPUT', '1', '-m', 'cgroup', '--path', `/${CGROUP_NAME}`, '-j', HOST_EGRESS_CHAIN]);
  const ip6t = (args: string[]) => run('ip6tables', ['-w', ...args]);
  await ip6t(['-N', HOST_EGRESS_CHAIN]);
  await ip6t(['-A', HOST_EGRESS_CHAIN, '-o', 'lo', '-j', 'RETURN']);
  await ip6t(['-A', HOST_EGRESS_CHAIN, '-m', 'comment', '--comment', HOST_DROP_COMMENT, '-j', 'DROP']);
  await ip6t(['-I', 'OUTPUT', '1', '-m', 'cgroup', '--path', `/${CGROUP_NAME}`, '-j', HOST_EGRESS_CHAIN]);
  await ip6t(['-I', 'FORWARD', '1', '-i', 'cni0', '-m', 'comment', '--comment', POD_DROP_COMMENT, '-j', 'DROP']);
}

export interface DropCounters {
  /** packets the pod range sent elsewhere than the pod range or the node, dropped in FORWARD */
  pods: number;
  /** packets the cluster's host processes sent off the machine, dropped in OUTPUT (IPv4 + IPv6) */
  hosts: number;
  /** the isolation test's packets from the cluster's cgroup to the sink range, dropped in OUTPUT */
  hostProbe: number;
}

/** The drop rules' packet counters, each found by its comment. */
export async function dropCounters(): Promise<DropCounters> {
  const count = async (tool: string, chain: string, comment: string): Promise<number> => {
    const out = await run(tool, ['-w', '-L', chain, '-v', '-x', '-n']);
    const line = out.split('\n').find((l) => /\sDROP\s/.test(l) && l.includes(`/* ${comment} */`));
    if (!line) throw new Error(`no DROP rule "${comment}" in ${tool} ${chain}:\n${out}`);
    return Number(line.trim().split(/\s+/)[0]);
  };
  return {
    pods: await count('iptables', POD_EGRESS_CHAIN, POD_DROP_COMMENT),
    hosts: (await count('iptables', HOST_EGRESS_CHAIN, HOST_DROP_COMMENT)) + (await count('ip6tables', HOST_EGRESS_CHAIN, HOST_DROP_COMMENT)),
    hostProbe: await count('iptables', HOST_EGRESS_CHAIN, HOST_PROBE_COMMENT),
  };
}

/** The rules as iptables lists them, for the isolation test to read. */
export async function isolationRules(): Promise<{ forward: string; podChain: string; output: string; hostChain: string; routes: string }> {
  return {
    forward: await run('iptables', ['-w', '-S', 'FORWARD']),
    podChain: await run('iptables', ['-w', '-S', POD_EGRESS_CHAIN]),
    output: await run('iptables', ['-w', '-S', 'OUTPUT']),
    hostChain: await run('iptables', ['-w', '-S', HOST_EGRESS_CHAIN]),
    routes: await run('ip', ['route', 'show', 'table', 'all', 'type', 'blackhole']),
  };
}

// ---------------------------------------------------------------------------------------------------------------
// teardown

/** Mount points under `prefix`, deepest first. */
function mountsUnder(prefixes: string[]): string[] {
  const points = readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .map((l) => l.split(' ')[4] ?? '')
    .filter((p) => prefixes.some((prefix) => p === prefix || p.startsWith(`${prefix}/`)));
  return [...new Set(points)].sort((a, b) => b.length - a.length);
}

function removeCgroupTree(dir: string): void {
  let entries: string[] = [];
  try {
    entries = readdirSync(dir, { withFileTypes: true }).filter((e) => e.isDirectory()).map((e) => e.name);
  } catch {
    return;
  }
  for (const e of entries) removeCgroupTree(join(dir, e));
  try {
    rmdirSync(dir);
  } catch (err) {
    log(`(ignored) rmdir ${dir}: ${(err as Error).message}`);
  }
}

/**
 * Stops every process the suite started (by PID), then undoes every host change; with `api` (the cluster still up),
 * first deletes the webhooks and workloads and lets the kubelet tear the pods down.
 */
async function teardown(state: SuiteState, api?: { kubectl: Cluster['kubectl']; ctr: Cluster['ctr'] }): Promise<void> {
  const byName = (name: string) => state.processes.filter((p) => p.name === name);
  const stop = async (name: string, graceMs?: number) => {
    for (const p of byName(name)) await stopProcess(p, graceMs);
  };
  if (api) {
    // Webhooks and workload controllers first, so that nothing makes a pod again while the pods go.
    const steps: string[][] = [
      ['delete', 'mutatingwebhookconfigurations,validatingwebhookconfigurations', '--all', '--wait=false'],
      ['delete', 'deployments,daemonsets,statefulsets,replicasets,jobs,cronjobs', '--all', '--all-namespaces', '--wait=false', '--cascade=orphan'],
      ['delete', 'pods', '--all', '--all-namespaces', '--grace-period=1', '--wait=false'],
    ];
    for (const step of steps) {
      try {
        await api.kubectl(step);
      } catch (err) {
        log(`(teardown) kubectl ${step.join(' ')}: ${(err as Error).message.split('\n')[0]}`);
      }
    }
    try {
      await waitUntil('the kubelet to stop every pod', 60_000, async () => {
        const tasks = await api.ctr(['tasks', 'ls', '-q']);
        const pods = await api.kubectl(['get', 'pods', '--all-namespaces', '-o', 'name']);
        return tasks.trim() === '' && pods.trim() === '';
      });
    } catch (err) {
      log(`(teardown) ${(err as Error).message.split('\n')[0]}: stopping what is left directly`);
    }
  }
  await stop('kubelet');
  await stop('kube-scheduler');
  await stop('kube-controller-manager');
  await stop('coredns');
  // What the kubelet left: containers and sandboxes, deleted through containerd (which also ends their shims).
  const ctr = (args: string[]) => runSync('ctr', ['-a', state.containerdSocket, '-n', 'k8s.io', ...args]);
  if (byName('containerd').some(alive)) {
    try {
      for (const id of ctr(['tasks', 'ls', '-q']).split('\n').filter(Boolean)) {
        tryRunSync('ctr', ['-a', state.containerdSocket, '-n', 'k8s.io', 'tasks', 'kill', '-s', 'SIGKILL', id]);
      }
      await sleep(500);
      for (const id of ctr(['tasks', 'ls', '-q']).split('\n').filter(Boolean)) tryRunSync('ctr', ['-a', state.containerdSocket, '-n', 'k8s.io', 'tasks', 'rm', '-f', id]);
      for (const id of ctr(['containers', 'ls', '-q']).split('\n').filter(Boolean)) tryRunSync('ctr', ['-a', state.containerdSocket, '-n', 'k8s.io', 'containers', 'rm', id]);
    } catch (err) {
      log(`(teardown) ctr: ${(err as Error).message.split('\n')[0]}`);
    }
  }
  await stop('containerd');
  await stop('kube-apiserver');
  await stop('etcd');
  // containerd's shims outlive it when their containers were not deleted: found by the socket they were given.
  for (const line of suiteProcesses(PROCESS_MARKERS)) {
    const pid = Number(line.split(' ')[0]);
    log(`(teardown) process left: ${line}: SIGKILL`);
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // gone
    }
  }
  await sleep(200);

  const before = state.before;
  // Mounts: the kubelet's (its root dir on itself, pod volumes), containerd's (overlay roots, shm), network namespaces.
  const newMounts = mountsUnder([WORK_DIR, '/run/netns', '/var/run/netns', '/run/containerd', '/var/lib/kubelet']).filter((m) => !before.mounts.includes(m));
  for (const m of newMounts) {
    if (tryRunSync('umount', [m]) === undefined) tryRunSync('umount', ['-l', m]);
  }
  for (const dir of ['/run/netns', '/var/run/netns']) {
    for (const name of readdirSafe(dir)) if (!before.netns.includes(name)) rmSync(join(dir, name), { force: true });
  }
  // cgroups: the kubelet's kubepods trees and the suite's own group, deepest first.
  for (const hierarchy of readdirSafe('/sys/fs/cgroup')) {
    const root = join('/sys/fs/cgroup', hierarchy);
    for (const entry of readdirSafe(root)) {
      const path = join(root, entry);
      if (!before.cgroups.includes(path) && existsSync(path) && isDir(path)) removeCgroupTree(path);
    }
  }
  // Network: links (cni0, the sink, veths left behind), the service address, routes.
  const linkName = (l: string) => l.split(/[:@]/)[0]?.trim() ?? '';
  const beforeLinks = new Set(before.links.map(linkName));
  for (const link of snapshot().links.map(linkName)) {
    if (!beforeLinks.has(link)) tryRunSync('ip', ['link', 'delete', link]);
  }
  tryRunSync('ip', ['addr', 'del', `${API_SERVICE_IP}/32`, 'dev', 'lo']);
  tryRunSync('ip', ['route', 'del', 'blackhole', SERVICE_CIDR]);
  // iptables: the suite's rules, then any other difference (the kubelet's and the CNI plugins' chains) by restoring
  // the table as it was.
  for (const [tool, chains] of [
    ['iptables', [['FORWARD', '-s', POD_CIDR, '-j', POD_EGRESS_CHAIN], ['OUTPUT', '-m', 'cgroup', '--path', `/${CGROUP_NAME}`, '-j', HOST_EGRESS_CHAIN]]],
    ['ip6tables', [['OUTPUT', '-m', 'cgroup', '--path', `/${CGROUP_NAME}`, '-j', HOST_EGRESS_CHAIN], ['FORWARD', '-i', 'cni0', '-m', 'comment', '--comment', POD_DROP_COMMENT, '-j', 'DROP']]],
  ] as const) {
    for (const rule of chains) while (succeeds(tool, ['-w', '-C', ...rule])) tryRunSync(tool, ['-w', '-D', ...rule]);
  }
  for (const [tool, chain] of [['iptables', POD_EGRESS_CHAIN], ['iptables', HOST_EGRESS_CHAIN], ['ip6tables', HOST_EGRESS_CHAIN]] as const) {
    if (!succeeds(tool, ['-w', '-S', chain])) continue;
    tryRunSync(tool, ['-w', '-F', chain]);
    tryRunSync(tool, ['-w', '-X', chain]);
  }
  restoreIptables(before);
  // Sysctls the kubelet or the bridge plugin set (overcommit, panic, ip_forward, ...): written back.
  const now = snapshot();
  for (const [key, value] of Object.entries(before.sysctls)) {
    if (now.sysctls[key] !== undefined && now.sysctls[key] !== value) {
      try {
        writeFileSync(join('/proc/sys', ...key.split('.')), value);
        log(`(teardown) sysctl ${key} restored to ${value} (was ${now.sysctls[key]})`);
      } catch (err) {
        log(`(teardown) sysctl ${key}: ${(err as Error).message}`);
      }
    }
  }
  // Directories the kubelet, containerd and CNI create at fixed places.
  for (const path of [...now.paths].sort((a, b) => b.length - a.length)) {
    if (!before.paths.includes(path)) rmSync(path, { recursive: true, force: true });
  }
  rmSync(WORK_DIR, { recursive: true, force: true });
  try {
    rmdirSync(CGROUP_DIR);
  } catch {
    // already gone (or removed with the tree above)
  }
}

const succeeds = (file: string, args: string[]): boolean => {
  try {
    runSync(file, args);
    return true;
  } catch {
    return false;
  }
};

const readdirSafe = (dir: string): string[] => {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
};
const isDir = (path: string): boolean => {
  try {
    return readdirSync(path) !== undefined;
  } catch {
    return false;
  }
};

/** Restores each iptables table whose rules differ from the snapshot's, from the snapshot (with its counters zeroed). */
function restoreIptables(before: HostState): void {
  const now = snapshot();
  for (const saver of Object.keys(before.iptables)) {
    const was = before.iptables[saver] ?? [];
    const is = now.iptables[saver] ?? [];
    if (was.join('\n') === is.join('\n')) continue;
    const restorer = saver.replace('-save', '-restore');
    // Tables present before get their old rules back; tables that did not exist are removed (nft) or emptied (legacy,
    // whose tables always exist).
    const tables = new Set([...was, ...is].filter((l) => l.startsWith('*')).map((l) => l.slice(1)));
    for (const table of tables) {
      const section = tableSection(was, table);
      try {
        if (section.length === 0 && saver.includes('-nft-')) {
          log(`(teardown) nft: table ${table} (${saver.startsWith('ip6') ? 'ip6' : 'ip'}) removed, as it did not exist`);
          runSync('nft', ['delete', 'table', saver.startsWith('ip6') ? 'ip6' : 'ip', table]);
        } else {
          log(`(teardown) ${restorer}: table ${table} put back as it was`);
          runSync(restorer, ['-w', '-T', table], { input: `${(section.length > 0 ? section : emptyTable(is, table)).join('\n')}\n` });
        }
      } catch (err) {
        log(`(teardown) ${restorer} ${table}: ${(err as Error).message.split('\n')[0]}`);
      }
    }
  }
}

function tableSection(lines: string[], table: string): string[] {
  const start = lines.indexOf(`*${table}`);
  if (start < 0) return [];
  const end = lines.indexOf('COMMIT', start);
  return lines.slice(start, end + 1).map((l) => (l.startsWith(':') ? l.replace(/\s*$/, ' [0:0]') : l));
}

/** A table's built-in chains with their policies and no rules or user chains. */
function emptyTable(lines: string[], table: string): string[] {
  const section = tableSection(lines, table);
  const builtIn = section.filter((l) => l.startsWith(':') && !/ - \[/.test(l));
  return [`*${table}`, ...builtIn, 'COMMIT'];
}

/** Undoes a run that ended without its teardown (killed, crashed): its state file says what it started and saw. */
export async function cleanUpStaleRun(): Promise<void> {
  if (!existsSync(STATE_FILE)) return;
  log(`a previous run left ${STATE_FILE}: undoing it first`);
  const state = JSON.parse(readFileSync(STATE_FILE, 'utf8')) as SuiteState;
  await teardown(state);
  const diff = differences(state.before, snapshot());
  unlinkSync(STATE_FILE);
  rmSync(CLUSTER_LOCK, { force: true });
  if (diff.length > 0) throw new Error(`after undoing the previous run the host still differs from before it:\n  ${diff.join('\n  ')}`);
  log('the previous run undone: the host state equals the state before it');
}

// ---------------------------------------------------------------------------------------------------------------
// start

export async function startCluster(bins: Binaries): Promise<Cluster> {
  await cleanUpStaleRun();
  const nodeIp = readNodeIp();
  const before = snapshot();
  const state: SuiteState = { before, processes: [], containerdSocket: join(WORK_DIR, 'containerd', 'containerd.sock') };
  saveState(state);
  writeFileSync(CLUSTER_LOCK, `${process.pid}\n`);
  log(`host state before: ${describeState(before)}`);
  const dirs = ['logs', 'pki', 'etcd', 'kubelet', 'pod-logs', 'containerd/root', 'containerd/state', 'containerd/runc', 'containerd/opt', 'cni/net.d', 'cni/bin', 'cni/ipam', 'coredns'];
  for (const d of dirs) mkdirSync(join(WORK_DIR, d), { recursive: true });
  mkdirSync(CGROUP_DIR, { recursive: true });

  const adminKubeconfig = join(WORK_DIR, 'admin.kubeconfig');
  const logPath = (name: string) => join(WORK_DIR, 'logs', `${name}.log`);
  const describe = () => state.processes.map((p) => `--- ${p.name} (${alive(p) ? 'running' : 'exited'}):\n${tail(logPath(p.name), 15)}`).join('\n');
  const watched = (names: string[]) => async () => {
    const dead = state.processes.find((p) => names.includes(p.name) && !alive(p));
    if (dead) throw new Error(`${dead.name} exited:\n${tail(logPath(dead.name), 40)}`);
  };
  const kubectl = (args: string[], options: { input?: string } = {}) => run(join(bins.node, 'kubectl'), ['--kubeconfig', adminKubeconfig, ...args], options);
  const ctr = (args: string[]) => run('ctr', ['-a', state.containerdSocket, '-n', 'k8s.io', ...args]);
  const stop = async (): Promise<string> => {
    let apiUp = false;
    try {
      apiUp = (await kubectl(['get', '--raw', '/readyz'])).trim() === 'ok';
    } catch {
      apiUp = false;
    }
    await teardown(state, apiUp ? { kubectl, ctr } : undefined);
    const after = snapshot();
    const diff = differences(before, after);
    unlinkSync(STATE_FILE);
    rmSync(CLUSTER_LOCK, { force: true });
    if (diff.length > 0) throw new Error(`the host differs from its state before the suite:\n  ${diff.join('\n  ')}`);
    return `host state after the suite equals the state before it (${describeState(after)})`;
  };
  const cniConfDir = join(WORK_DIR, 'cni', 'net.d');
  const cniBinDir = join(WORK_DIR, 'cni', 'bin');
  const conflistPath = join(cniConfDir, '10-node-suite.conflist');

  try {
    // --- isolation, before anything that could send a packet
    await isolate(nodeIp);
    const isolatedAt = new Date().toISOString();

    // --- certificates and kubeconfigs
    const pki = await clusterPki(join(WORK_DIR, 'pki'), NODE_NAME, nodeIp, API_SERVICE_IP);
    const server = `https://${nodeIp}:${API_PORT}`;
    const cluster = clusterHelpers(
      { nodeIp, isolatedAt, workDir: WORK_DIR, apiServerUrl: server, kubeconfigPath: adminKubeconfig, ca: pki.ca, admin: pki.admin, cniConfDir, cniBinDir, conflistPath, containerdSocket: state.containerdSocket, binaries: bins },
      stop,
    );
    /** A kubeconfig for one of the suite's client certificates. */
    const kubeconfig = (user: Credential, name: string) => kubeconfigYaml(server, pki.ca.certPem, { ...user, name }, 'node-suite');
    writeFileSync(adminKubeconfig, kubeconfig(pki.admin, 'admin'), { mode: 0o600 });
    const kcmKubeconfig = join(WORK_DIR, 'controller-manager.kubeconfig');
    writeFileSync(kcmKubeconfig, kubeconfig(pki.controllerManager, 'controller-manager'), { mode: 0o600 });
    const schedulerKubeconfig = join(WORK_DIR, 'scheduler.kubeconfig');
    writeFileSync(schedulerKubeconfig, kubeconfig(pki.scheduler, 'scheduler'), { mode: 0o600 });
    const kubeletKubeconfig = join(WORK_DIR, 'kubelet.kubeconfig');
    writeFileSync(kubeletKubeconfig, kubeconfig(pki.kubeletClient, 'kubelet'), { mode: 0o600 });

    // --- CNI: the bridge as the primary network, in the suite's own directories
    for (const plugin of ['bridge', 'host-local', 'portmap', 'loopback']) symlinkSync(join('/usr/lib/cni', plugin), join(cluster.cniBinDir, plugin));
    writeFileSync(cluster.conflistPath, `${JSON.stringify(primaryConflist(join(WORK_DIR, 'cni', 'ipam')), null, 2)}\n`);

    // --- containerd
    const containerdConfig = join(WORK_DIR, 'containerd', 'config.toml');
    writeFileSync(containerdConfig, containerdToml(state.containerdSocket, cluster.cniBinDir, cluster.cniConfDir));
    startComponent(state, 'containerd', '/usr/bin/containerd', ['--config', containerdConfig]);
    await waitUntil('containerd', 30_000, async () => {
      await watched(['containerd'])();
      await ctr(['version']);
      return true;
    }, describe);

    // --- etcd and the API server
    const [etcdClient, etcdPeer] = (await freePorts(2)) as [number, number];
    const etcdUrl = `http://127.0.0.1:${etcdClient}`;
    startComponent(state, 'etcd', join(bins.controlPlane, 'etcd'), [
      '--name=node-suite',
      `--data-dir=${join(WORK_DIR, 'etcd')}`,
      `--listen-client-urls=${etcdUrl}`,
      `--advertise-client-urls=${etcdUrl}`,
      `--listen-peer-urls=http://127.0.0.1:${etcdPeer}`,
      `--initial-advertise-peer-urls=http://127.0.0.1:${etcdPeer}`,
      `--initial-cluster=node-suite=http://127.0.0.1:${etcdPeer}`,
      '--unsafe-no-fsync',
      '--log-level=warn',
    ]);
    startComponent(state, 'kube-apiserver', join(bins.controlPlane, 'kube-apiserver'), [
      `--etcd-servers=${etcdUrl}`,
      '--bind-address=0.0.0.0',
      `--secure-port=${API_PORT}`,
      `--advertise-address=${nodeIp}`,
      `--cert-dir=${join(WORK_DIR, 'pki', 'apiserver-generated')}`,
      `--tls-cert-file=${pki.apiServer.cert}`,
      `--tls-private-key-file=${pki.apiServer.key}`,
      `--client-ca-file=${pki.ca.cert}`,
      `--kubelet-client-certificate=${pki.apiServerKubeletClient.cert}`,
      `--kubelet-client-key=${pki.apiServerKubeletClient.key}`,
      `--kubelet-certificate-authority=${pki.ca.cert}`,
      '--kubelet-preferred-address-types=InternalIP',
      '--anonymous-auth=false',
      '--authorization-mode=Node,RBAC',
      '--enable-admission-plugins=NodeRestriction',
      `--service-account-key-file=${pki.serviceAccountPub}`,
      `--service-account-signing-key-file=${pki.serviceAccountKey}`,
      '--service-account-issuer=https://kubernetes.default.svc.cluster.local',
      `--service-cluster-ip-range=${SERVICE_CIDR}`,
      // Webhooks (and aggregated APIs) are called at their Service's endpoints, never at a ClusterIP.
      '--enable-aggregator-routing=true',
      '--allow-privileged=true',
      '--profiling=false',
    ]);
    await waitUntil('kube-apiserver /readyz', 120_000, async () => {
      await watched(['etcd', 'kube-apiserver'])();
      const r = await kubeRequest({ apiServerUrl: server, caPem: pki.ca.certPem, clientCertPem: pki.admin.certPem, clientKeyPem: pki.admin.keyPem }, 'GET', '/readyz', undefined, { timeoutMs: 5_000 });
      return r.status === 200;
    }, describe);

    // --- controllers and scheduler
    startComponent(state, 'kube-controller-manager', join(bins.controlPlane, 'kube-controller-manager'), [
      `--kubeconfig=${kcmKubeconfig}`,
      `--authentication-kubeconfig=${kcmKubeconfig}`,
      `--authorization-kubeconfig=${kcmKubeconfig}`,
      '--controllers=*,-bootstrapsigner,-tokencleaner',
      `--service-account-private-key-file=${pki.serviceAccountKey}`,
      `--root-ca-file=${pki.ca.cert}`,
      '--use-service-account-credentials=true',
      `--service-cluster-ip-range=${SERVICE_CIDR}`,
      '--leader-elect=false',
      '--bind-address=127.0.0.1',
      '--secure-port=0',
      '--profiling=false',
    ]);
    startComponent(state, 'kube-scheduler', join(bins.node, 'kube-scheduler'), [
      `--kubeconfig=${schedulerKubeconfig}`,
      `--authentication-kubeconfig=${schedulerKubeconfig}`,
      `--authorization-kubeconfig=${schedulerKubeconfig}`,
      '--leader-elect=false',
      '--bind-address=127.0.0.1',
      '--secure-port=0',
      '--profiling=false',
    ]);

    // --- CoreDNS: cluster.local only, on the node's address; no other name is answered or forwarded
    const corefile = join(WORK_DIR, 'coredns', 'Corefile');
    writeFileSync(corefile, `${CLUSTER_DOMAIN}:53 {\n  bind ${nodeIp}\n  errors\n  kubernetes ${CLUSTER_DOMAIN} {\n    kubeconfig ${adminKubeconfig}\n  }\n}\n`);
    startComponent(state, 'coredns', join(bins.node, 'coredns'), ['-conf', corefile]);

    // --- kubelet
    const kubeletConfig = join(WORK_DIR, 'kubelet-config.yaml');
    const resolvConf = join(WORK_DIR, 'resolv.conf');
    writeFileSync(resolvConf, `nameserver ${nodeIp}\n`);
    writeFileSync(kubeletConfig, kubeletYaml(nodeIp, pki, state.containerdSocket, resolvConf));
    startComponent(state, 'kubelet', join(bins.node, 'kubelet'), [
      `--config=${kubeletConfig}`,
      `--kubeconfig=${kubeletKubeconfig}`,
      `--root-dir=${join(WORK_DIR, 'kubelet')}`,
      `--hostname-override=${NODE_NAME}`,
      `--node-ip=${nodeIp}`,
      '--v=1',
    ]);
    await waitUntil('Node Ready', 120_000, async () => {
      await watched(['kubelet', 'containerd', 'kube-apiserver', 'kube-controller-manager', 'kube-scheduler', 'coredns'])();
      const out = await kubectl(['get', 'node', NODE_NAME, '-o', 'jsonpath={.status.conditions[?(@.type=="Ready")].status}']);
      return out.trim() === 'True';
    }, describe);
    await waitUntil('the default ServiceAccount and kube-root-ca.crt', 60_000, async () => {
      await kubectl(['-n', 'default', 'get', 'serviceaccount', 'default']);
      await kubectl(['-n', 'default', 'get', 'configmap', 'kube-root-ca.crt']);
      return true;
    }, describe);
    const resolver = new Resolver({ timeout: 1_000, tries: 1 });
    resolver.setServers([nodeIp]);
    await waitUntil('CoreDNS answering for kubernetes.default', 30_000, async () => (await resolver.resolve4(`kubernetes.default.svc.${CLUSTER_DOMAIN}`)).length > 0, describe);
    return cluster;
  } catch (err) {
    try {
      await stop();
    } catch (stopErr) {
      log(`cleaning up after a failed start: ${(stopErr as Error).message}`);
    }
    throw err;
  }
}

function primaryConflist(ipamDir: string): unknown {
  return {
    cniVersion: '0.4.0',
    name: 'node-suite',
    plugins: [
      {
        type: 'bridge',
        bridge: 'cni0',
        isGateway: true,
        ipMasq: false,
        hairpinMode: true,
        ipam: { type: 'host-local', ranges: [[{ subnet: POD_CIDR, gateway: POD_GATEWAY }]], routes: [{ dst: '0.0.0.0/0' }], dataDir: ipamDir },
      },
      { type: 'portmap', capabilities: { portMappings: true } },
    ],
  };
}

function containerdToml(socket: string, cniBin: string, cniConf: string): string {
  return `version = 2
root = "${join(WORK_DIR, 'containerd', 'root')}"
state = "${join(WORK_DIR, 'containerd', 'state')}"
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.internal.v1.tracing", "io.containerd.tracing.processor.v1.otlp"]

[grpc]
  address = "${socket}"

[ttrpc]
  address = "${socket}.ttrpc"

[plugins."io.containerd.internal.v1.opt"]
  path = "${join(WORK_DIR, 'containerd', 'opt')}"

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "registry.k8s.io/pause:3.6"
  # This machine drops CAP_SYS_RESOURCE: runc cannot lower oom_score_adj below the caller's, so it is never asked to.
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "${cniBin}"
    conf_dir = "${cniConf}"
    max_conf_num = 1
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        Root = "${join(WORK_DIR, 'containerd', 'runc')}"
`;
}

function kubeletYaml(nodeIp: string, pki: Awaited<ReturnType<typeof clusterPki>>, socket: string, resolvConf: string): string {
  return `apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: ${nodeIp}
readOnlyPort: 0
authentication:
  anonymous:
    enabled: false
  webhook:
    enabled: true
  x509:
    clientCAFile: ${pki.ca.cert}
authorization:
  mode: Webhook
tlsCertFile: ${pki.kubeletServing.cert}
tlsPrivateKeyFile: ${pki.kubeletServing.key}
containerRuntimeEndpoint: unix://${socket}
cgroupDriver: cgroupfs
failSwapOn: false
failCgroupV1: false
makeIPTablesUtilChains: false
clusterDNS: [${nodeIp}]
clusterDomain: ${CLUSTER_DOMAIN}
resolvConf: ${resolvConf}
podLogsDir: ${join(WORK_DIR, 'pod-logs')}
serializeImagePulls: false
evictionHard:
  memory.available: 100Mi
  nodefs.available: 1%
  imagefs.available: 1%
  nodefs.inodesFree: 1%
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
`;
}
