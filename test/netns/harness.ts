/**
 * Network namespaces for the netns suite: a "pod" and a "peer" joined by a veth pair and nothing else, agents running
 * inside them (test/netns/agent.py), and iptables applied in the pod. Addresses are from the documentation ranges
 * (RFC 5737, RFC 3849), assigned only inside these namespaces; neither namespace has a link to the host's network.
 */
import { execFileSync, spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { accessSync, constants } from 'node:fs';
import { delimiter, dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

export const POD_IP = '192.0.2.1';
export const PEER_IP = '192.0.2.2';
/** A second address of the peer, for traffic from a subnet the pod ignores. */
export const PEER_SECOND_IP = '192.0.2.3';
export const POD_IP6 = '2001:db8::1';
export const PEER_IP6 = '2001:db8::2';
/** Assigned nowhere: packets the pod sends there reach the peer and die, like traffic to the validator's 1.1.1.1. */
export const OUTSIDE_IP = '203.0.113.20';

export type Backend = 'legacy' | 'nft';

const AGENT = join(dirname(fileURLToPath(import.meta.url)), 'agent.py');
const NEEDED = ['ip', 'python3', 'iptables-legacy-restore', 'iptables-nft-restore', 'ip6tables-legacy-restore', 'ip6tables-nft-restore'];

function onPath(name: string): boolean {
  const dirs = (process.env['PATH'] ?? '').split(delimiter).concat(['/usr/sbin', '/sbin']);
  return dirs.some((dir) => {
    try {
      accessSync(join(dir, name), constants.X_OK);
      return true;
    } catch {
      return false;
    }
  });
}

/** Why the suite cannot run here, or undefined when it can. */
export function unavailableReason(): string | undefined {
  if (process.platform !== 'linux') return 'network namespaces need Linux';
  if (process.getuid?.() !== 0) return 'network namespaces and iptables need root';
  const missing = NEEDED.filter((name) => !onPath(name));
  if (missing.length > 0) return `missing ${missing.join(', ')} (Debian packages iptables, iproute2, python3)`;
  const probe = `proxy-injector-probe-${process.pid}-${randomBytes(3).toString('hex')}`;
  try {
    execFileSync('ip', ['netns', 'add', probe], { stdio: 'pipe' });
    execFileSync('ip', ['netns', 'del', probe], { stdio: 'pipe' });
  } catch (error) {
    return `cannot create a network namespace: ${String((error as { stderr?: Buffer }).stderr ?? error).trim()}`;
  }
  return undefined;
}

const live = new Set<PodNetwork>();
let exitHookInstalled = false;

/** A pod namespace and a peer namespace joined by a veth pair, with unique names so that parallel runs never clash. */
export class PodNetwork {
  readonly pod: string;
  readonly peer: string;
  private readonly agents: Agent[] = [];

  private constructor() {
    const id = `${PREFIX}${process.pid}-${randomBytes(4).toString('hex')}`;
    this.pod = `${id}-pod`;
    this.peer = `${id}-peer`;
  }

  static create(): PodNetwork {
    if (!exitHookInstalled) {
      // Namespaces outlive the process that made them: remove ours on exit, and those of earlier runs that were
      // killed before they could.
      process.on('exit', () => {
        for (const net of live) net.destroy();
      });
      exitHookInstalled = true;
      removeOrphans();
    }
    const net = new PodNetwork();
    live.add(net);
    try {
      // One `ip -batch` per namespace: process start-up is most of the set-up time on a busy machine.
      ipBatch([], [`netns add ${net.pod}`, `netns add ${net.peer}`]);
      ipBatch(
        ['-n', net.pod],
        [
          // Both ends are made inside the namespaces: the host's network never sees the pair.
          `link add eth0 type veth peer name eth0 netns ${net.peer}`,
          ...interfaceSetUp([POD_IP], POD_IP6),
          // A pod has a default route; without one, connecting outside fails before any iptables rule is consulted.
          `route add default via ${PEER_IP}`,
          `route add default via ${PEER_IP6}`,
        ],
      );
      ipBatch(['-n', net.peer], interfaceSetUp([PEER_IP, PEER_SECOND_IP], PEER_IP6));
      // A new namespace inherits the host's IPv4 forwarding, which a kubelet or container runtime turns on: the peer
      // would then answer traffic for the outside with "network unreachable" instead of dropping it, as a cluster
      // without egress does.
      net.exec(net.peer, ['sh', '-c', 'echo 0 > /proc/sys/net/ipv4/ip_forward']);
    } catch (error) {
      net.destroy();
      throw error;
    }
    return net;
  }

  /** Runs a command inside a namespace and returns its standard output. */
  exec(ns: string, argv: string[], input?: string): string {
    return execFileSync('ip', ['netns', 'exec', ns, ...argv], { input, stdio: 'pipe', timeout: 10_000 }).toString();
  }

  /** Applies nat-table lines (chain and -A lines) with iptables-restore, replacing the pod's nat table. */
  restore(backend: Backend, family: 4 | 6, lines: readonly string[]): void {
    this.exec(this.pod, [`${family === 4 ? 'ip' : 'ip6'}tables-${backend}-restore`], ['*nat', ...lines, 'COMMIT', ''].join('\n'));
  }

  /** Runs one iptables command in the pod. */
  iptables(backend: Backend, args: string[]): void {
    this.exec(this.pod, [`iptables-${backend}`, ...args]);
  }

  /** The pod's nat table as iptables-save prints it, without its comment, `*nat` and `COMMIT` lines. */
  save(backend: Backend, family: 4 | 6): string[] {
    return this.exec(this.pod, [`${family === 4 ? 'ip' : 'ip6'}tables-${backend}-save`, '-t', 'nat'])
      .split('\n')
      .filter((line) => line.startsWith(':') || line.startsWith('-A '));
  }

  /** Starts an agent in `ns`, as root or as the given user. */
  async agent(ns: string, user?: { uid: number; gid: number }): Promise<Agent> {
    const agent = await Agent.start(ns, user);
    this.agents.push(agent);
    return agent;
  }

  destroy(): void {
    for (const agent of this.agents.splice(0)) agent.close();
    for (const ns of [this.pod, this.peer]) {
      try {
        execFileSync('ip', ['netns', 'del', ns], { stdio: 'pipe' });
      } catch {
        // Not created, or already gone.
      }
    }
    live.delete(this);
  }
}

const PREFIX = 'proxy-injector-';

/** Deletes namespaces this suite named after a process that no longer runs. */
function removeOrphans(): void {
  const names = execFileSync('ip', ['netns', 'list'], { stdio: 'pipe' }).toString().split('\n');
  for (const line of names) {
    const match = new RegExp(`^(${PREFIX}(\\d+)-[0-9a-f]+-(?:pod|peer))\\b`).exec(line);
    if (!match || isRunning(Number(match[2]))) continue;
    try {
      execFileSync('ip', ['netns', 'del', match[1] as string], { stdio: 'pipe' });
    } catch {
      // Another run removed it first.
    }
  }
}

function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function ipBatch(options: string[], commands: string[]): void {
  execFileSync('ip', [...options, '-batch', '-'], { input: commands.join('\n'), stdio: 'pipe', timeout: 10_000 });
}

function interfaceSetUp(ipv4: string[], ipv6: string): string[] {
  return [
    'link set lo up',
    ...ipv4.map((a) => `addr add ${a}/24 dev eth0`),
    // No duplicate address detection: the address is usable at once, and nothing else is on the link.
    `addr add ${ipv6}/64 dev eth0 nodad`,
    'link set eth0 up',
  ];
}

let interpreter: string | undefined;

/**
 * The python3 the agents run on: Debian's when installed, else the real interpreter behind `python3` on the PATH.
 * A version manager's shim in front of it costs hundreds of milliseconds per agent on a busy machine.
 */
function python(): string {
  if (interpreter === undefined) {
    try {
      accessSync('/usr/bin/python3', constants.X_OK);
      interpreter = '/usr/bin/python3';
    } catch {
      interpreter = execFileSync('python3', ['-c', 'import sys; print(sys.executable)'], { stdio: 'pipe' }).toString().trim();
    }
  }
  return interpreter;
}

export interface Reply {
  ok: boolean;
  error?: string;
  elapsed?: number;
  reply?: { listener: string; original: string | null; client: string };
}

/** One agent process inside a namespace, spoken to in JSON lines. */
export class Agent {
  private readonly waiting = new Map<number, (reply: Reply) => void>();
  private nextId = 1;
  private stderr = '';

  private constructor(private readonly child: ChildProcessWithoutNullStreams) {}

  static start(ns: string, user?: { uid: number; gid: number }): Promise<Agent> {
    const userArgs = user ? ['--uid', String(user.uid), '--gid', String(user.gid)] : [];
    const child = spawn('ip', ['netns', 'exec', ns, python(), AGENT, ...userArgs], { stdio: 'pipe' });
    const agent = new Agent(child);
    child.stderr.on('data', (chunk: Buffer) => {
      agent.stderr = (agent.stderr + chunk.toString()).slice(-4000);
    });
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        agent.close();
        reject(new Error(`agent in ${ns} did not start within 10 s: ${agent.stderr}`));
      }, 10_000);
      let ready = false;
      child.on('exit', (code) => {
        clearTimeout(timer);
        if (!ready) reject(new Error(`agent in ${ns} exited with ${code}: ${agent.stderr}`));
        for (const settle of agent.waiting.values()) settle({ ok: false, error: `agent exited: ${agent.stderr}` });
        agent.waiting.clear();
      });
      createInterface({ input: child.stdout }).on('line', (line) => {
        const message = JSON.parse(line) as Reply & { id?: number; ready?: boolean };
        if (message.ready) {
          ready = true;
          clearTimeout(timer);
          resolve(agent);
          return;
        }
        const settle = agent.waiting.get(message.id ?? -1);
        agent.waiting.delete(message.id ?? -1);
        settle?.(message);
      });
    });
  }

  /** Sends one request; the answer is bounded by the request's own timeout plus a margin. */
  request(body: Record<string, unknown>, limitMs = 10_000): Promise<Reply> {
    const id = this.nextId++;
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.waiting.delete(id);
        resolve({ ok: false, error: `no answer from the agent within ${limitMs} ms` });
      }, limitMs);
      this.waiting.set(id, (reply) => {
        clearTimeout(timer);
        resolve(reply);
      });
      this.child.stdin.write(`${JSON.stringify({ ...body, id })}\n`);
    });
  }

  async listen(host: string, port: number, tag: string): Promise<void> {
    const reply = await this.request({ op: 'listen', host, port, tag });
    if (!reply.ok) throw new Error(`cannot listen on ${host} port ${port}: ${reply.error}`);
  }

  close(): void {
    this.child.kill('SIGKILL');
  }
}
