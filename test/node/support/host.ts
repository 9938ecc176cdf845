/**
 * The machine the node suite runs on: running its commands, the Debian packages it needs, the locks it shares with
 * the other heavy jobs on the machine, and the addresses and ranges the one-node cluster uses.
 */
import { execFile, execFileSync, type ExecFileOptions } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
/** Linkerd's programs, charts and documents, read where they lie (never copied into the repository). */
export const SHARED = process.env['LINKERD_SHARED'] ?? resolve(REPO_ROOT, '..', 'shared');
export const LINKERD_BIN = join(SHARED, 'linkerd-bin');
export const LINKERD_CHARTS = join(SHARED, 'linkerd2', 'charts-src');
export const LINKERD_VERSION = 'edge-26.8.3';

/** Everything the suite writes on the host lives under this directory, removed at the end. */
export const WORK_DIR = process.env['NODE_SUITE_DIR'] ?? '/tmp/proxy-injector-node';
/** Built binaries and images, kept between runs (never inside the repository). */
export const CACHE_DIR = process.env['PROXY_INJECTOR_NODE_CACHE'] ?? join(process.env['HOME'] ?? '/root', '.cache', 'proxy-injector', 'node');

export const NODE_NAME = 'proxy-injector-node';
export const POD_CIDR = '10.244.0.0/24';
export const POD_GATEWAY = '10.244.0.1';
/** Services get addresses here; nothing answers them (no kube-proxy), so the range is a blackhole route. */
export const SERVICE_CIDR = '10.0.0.0/24';
/** The `kubernetes` Service's address, made a local address of the node so that pods and the CNI plugin reach the API server at it. */
export const API_SERVICE_IP = '10.0.0.1';
export const API_PORT = 443;
/**
 * A range routed into a bridge without ports, which discards every packet: a blackhole that the FORWARD chain still sees
 * (a `blackhole` route drops a packet before FORWARD), so a pod's packet to it shows in the drop rule's counters.
 * RFC 2544's benchmarking range, never routed on the Internet.
 */
export const SINK_CIDR = '198.18.0.0/24';
export const SINK_DEVICE = 'pi-sink0';
export const VALIDATOR_CONNECT_ADDR = '198.18.0.1:20001';
export const CLUSTER_DOMAIN = 'cluster.local';
/** The host cgroup (v2) every host process of the cluster runs in, for the OUTPUT guard. */
export const CGROUP_NAME = 'proxy-injector-node';
export const CGROUP_DIR = `/sys/fs/cgroup/unified/${CGROUP_NAME}`;

export const BENCH_LOCK = '/tmp/proxy-injector-bench.lock';
export const CLUSTER_LOCK = '/tmp/proxy-injector-cluster.lock';

export const log = (message: string): void => {
  process.stderr.write(`node-suite: ${message}\n`);
};

export class CommandError extends Error {
  constructor(
    readonly command: string,
    readonly code: number | string | null,
    readonly stdout: string,
    readonly stderr: string,
  ) {
    super(`${command} failed (${code}): ${stderr.trim() || stdout.trim()}`.slice(0, 4000));
  }
}

/** Runs a program and returns its stdout; throws a CommandError with its output when it fails. */
export function run(file: string, args: string[], options: ExecFileOptions & { input?: string } = {}): Promise<string> {
  return new Promise((resolveRun, reject) => {
    const child = execFile(file, args, { maxBuffer: 64 << 20, encoding: 'utf8', ...options }, (err, stdout, stderr) => {
      if (err) reject(new CommandError(`${file} ${args.join(' ')}`, (err as NodeJS.ErrnoException).code ?? null, String(stdout), String(stderr)));
      else resolveRun(String(stdout));
    });
    if (options.input !== undefined) child.stdin?.end(options.input);
  });
}

/** The same, synchronously, for teardown paths that must finish before the process exits. */
export function runSync(file: string, args: string[], options: { input?: string; env?: NodeJS.ProcessEnv } = {}): string {
  try {
    return execFileSync(file, args, { encoding: 'utf8', stdio: ['pipe', 'pipe', 'pipe'], maxBuffer: 64 << 20, ...options });
  } catch (err) {
    const e = err as { status?: number; stdout?: string; stderr?: string };
    throw new CommandError(`${file} ${args.join(' ')}`, e.status ?? null, String(e.stdout ?? ''), String(e.stderr ?? ''));
  }
}

/** Like runSync, but a failure is only logged: for undoing things that may already be gone. */
export function tryRunSync(file: string, args: string[]): string | undefined {
  try {
    return runSync(file, args);
  } catch (err) {
    log(`(ignored) ${(err as Error).message.split('\n')[0]}`);
    return undefined;
  }
}

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Why the suite cannot run here, or undefined when it can. */
export function unavailableReason(): string | undefined {
  if (process.platform !== 'linux') return 'it needs Linux';
  if (process.getuid?.() !== 0) return 'it needs root (it runs a kubelet, containerd and host firewall rules)';
  if (!existsSync(join(LINKERD_BIN, 'linkerd2-proxy'))) return `Linkerd's programs are not in ${LINKERD_BIN}`;
  if (!existsSync(join(LINKERD_CHARTS, 'linkerd-control-plane'))) return `Linkerd's charts are not in ${LINKERD_CHARTS}`;
  if (!existsSync(CGROUP_DIR.replace(`/${CGROUP_NAME}`, ''))) return 'it needs the cgroup v2 hierarchy at /sys/fs/cgroup/unified';
  return undefined;
}

/** The Debian packages the node needs, by a file each one installs. */
const PACKAGES: Array<[pkg: string, file: string]> = [
  ['containerd', '/usr/bin/containerd'],
  ['runc', '/usr/sbin/runc'],
  ['containernetworking-plugins', '/usr/lib/cni/bridge'],
  ['umoci', '/usr/bin/umoci'],
  ['busybox-static', '/bin/busybox'],
  ['iptables', '/usr/sbin/xtables-nft-multi'],
  ['nftables', '/usr/sbin/nft'],
  ['gcc', '/usr/bin/gcc'],
  ['libc6-dev', '/usr/lib/x86_64-linux-gnu/libc.a'],
  ['openssl', '/usr/bin/openssl'],
  ['mmdebstrap', '/usr/bin/mmdebstrap'],
  ['libcap2-bin', '/usr/sbin/setcap'],
  ['iproute2', '/usr/sbin/ip'],
  ['util-linux', '/usr/bin/nsenter'],
];

/** Installs the missing packages with one `apt-get update` and one `apt-get install`. */
export async function ensurePackages(): Promise<void> {
  const missing = PACKAGES.filter(([, file]) => !existsSync(file)).map(([pkg]) => pkg);
  if (missing.length === 0) return;
  log(`installing Debian packages: ${missing.join(' ')}`);
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  await run('apt-get', ['update', '-qq'], { env });
  await run('apt-get', ['install', '-y', '-qq', '--no-install-recommends', ...missing], { env });
}

/** Waits while another job's benchmark holds the machine (its lock file exists), polling every 30 s. */
export async function waitForBenchLock(what: string): Promise<void> {
  let said = false;
  while (existsSync(BENCH_LOCK)) {
    if (!said) log(`waiting for ${BENCH_LOCK} to go before ${what}`);
    said = true;
    await sleep(30_000);
  }
}

/** The node's own address: the first address of the default route's interface (kubelet refuses a loopback node IP). */
export function nodeIp(): string {
  const [route] = JSON.parse(runSync('ip', ['-4', '-j', 'route', 'show', 'default'])) as Array<{ dev?: string }>;
  if (!route?.dev) throw new Error('no IPv4 default route: the node needs an address that is not loopback');
  const [link] = JSON.parse(runSync('ip', ['-4', '-j', 'addr', 'show', 'dev', route.dev])) as Array<{ addr_info?: Array<{ local?: string }> }>;
  const address = link?.addr_info?.[0]?.local;
  if (!address) throw new Error(`no IPv4 address on ${route.dev}`);
  return address;
}

/** The program's dynamic libraries (as ldd lists them) and its loader, for copying into an image. */
export function sharedLibraries(program: string): string[] {
  let out: string;
  try {
    out = runSync('ldd', [program]);
  } catch (err) {
    if (err instanceof CommandError && /not a dynamic executable/.test(err.stderr + err.stdout)) return [];
    throw err;
  }
  const libs = new Set<string>();
  for (const line of out.split('\n')) {
    const m = /=>\s*(\/\S+)/.exec(line) ?? /^\s*(\/\S+)\s/.exec(line);
    if (m?.[1]) libs.add(m[1]);
  }
  return [...libs];
}

export const readText = (path: string): string => readFileSync(path, 'utf8');
