/**
 * `proxy-injector check cni`: whether a node's CNI configuration runs the Linkerd CNI plugin, chained after the
 * primary plugin, with its binary and kubeconfig where the configuration says. When it does not, the network
 * validator of every meshed pod on the node fails (Init:CrashLoopBackOff); this says why and which install flags fix it.
 */
import { accessSync, constants, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { compareCodeUnits } from '../engine/index.js';
import type { CliResult } from './command-io.js';
import { FAIL, OK, WARN, type Check } from './report.js';

export const DEFAULT_CONF_DIR = '/etc/cni/net.d';
export const DEFAULT_BIN_DIR = '/opt/cni/bin';
/** Where k3s (and so k3d) keeps its CNI configuration; its plugins are in /bin of the k3d node image. */
export const K3S_CONF_DIR = '/var/lib/rancher/k3s/agent/etc/cni/net.d';
export const K3S_BIN_DIR = '/bin';
/** Names the Linkerd CNI installer uses. */
const PLUGIN_TYPE = 'linkerd-cni';
const KUBECONFIG_FILE = 'ZZZ-linkerd-cni-kubeconfig';

export interface CniCheckOptions {
  /** The node's file system root, for checking a copy of a node's files; "/" on the node itself. */
  root: string;
  /** Given on the command line; otherwise the defaults, or the k3s layout when that is what the node has. */
  confDir?: string;
  binDir?: string;
}

export interface CniReport {
  confDir: string;
  binDir: string;
  k3s: boolean;
  checks: Check[];
  ok: boolean;
}

const isDir = (path: string): boolean => {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
};
const isFile = (path: string): boolean => {
  try {
    return statSync(path).isFile();
  } catch {
    return false;
  }
};
const isExecutable = (path: string): boolean => {
  try {
    accessSync(path, constants.X_OK);
    return isFile(path);
  } catch {
    return false;
  }
};

/** CNI configuration files as container runtimes read them: .conflist, .conf and .json, in lexical order. */
function configFiles(dir: string): string[] {
  return readdirSync(dir)
    .filter((name) => /\.(conflist|conf|json)$/.test(name) && isFile(join(dir, name)))
    .sort(compareCodeUnits);
}

interface PluginConf {
  type?: unknown;
  kubernetes?: { kubeconfig?: unknown };
  [key: string]: unknown;
}

function pluginsOf(conf: unknown): PluginConf[] | undefined {
  if (typeof conf !== 'object' || conf === null) return undefined;
  const plugins = (conf as { plugins?: unknown }).plugins;
  return Array.isArray(plugins) ? plugins.filter((p): p is PluginConf => typeof p === 'object' && p !== null) : undefined;
}

const typeOf = (p: PluginConf): string => (typeof p.type === 'string' ? p.type : '');

function installFlags(k3s: boolean, confDir: string, binDir: string): string {
  const net = k3s ? K3S_CONF_DIR : confDir;
  const bin = k3s ? K3S_BIN_DIR : binDir;
  return (
    `linkerd install-cni --dest-cni-net-dir ${net} --dest-cni-bin-dir ${bin} ` +
    `(Helm chart linkerd2-cni: --set destCNINetDir=${net},destCNIBinDir=${bin})`
  );
}

/** Checks a node's CNI configuration for the Linkerd CNI plugin. Reads files only. */
export function checkCni(options: CniCheckOptions): CniReport {
  const host = (path: string): string => join(options.root, path);
  const k3s = isDir(host(K3S_CONF_DIR));
  const confDir = options.confDir ?? (k3s ? K3S_CONF_DIR : DEFAULT_CONF_DIR);
  const binDir = options.binDir ?? (k3s ? K3S_BIN_DIR : DEFAULT_BIN_DIR);
  const checks: Check[] = [];
  const fix = installFlags(k3s, confDir, binDir);
  const report = (): CniReport => ({ confDir, binDir, k3s, checks, ok: !checks.some((c) => c.mark === FAIL) });

  if (k3s) {
    checks.push({ mark: OK, text: `k3s/k3d node: its CNI configuration is in ${K3S_CONF_DIR}, its plugins in ${K3S_BIN_DIR}` });
    // Linkerd's defaults on a k3s node: the plugin is installed where the runtime never looks (the validator times out).
    const stray = host(DEFAULT_CONF_DIR);
    if (confDir !== DEFAULT_CONF_DIR && isDir(stray) && readdirSync(stray).some((n) => n === KUBECONFIG_FILE || n.includes('linkerd'))) {
      checks.push({
        mark: FAIL,
        text: `linkerd-cni was installed into ${DEFAULT_CONF_DIR}, which k3s does not read; reinstall it with: ${installFlags(true, confDir, binDir)}`,
      });
    }
  }

  if (!isDir(host(confDir))) {
    checks.push({ mark: FAIL, text: `${confDir} does not exist: no CNI configuration here${k3s ? '' : ` (on k3s/k3d it is ${K3S_CONF_DIR})`}` });
    return report();
  }
  const files = configFiles(host(confDir));
  const active = files[0];
  if (active === undefined) {
    checks.push({ mark: FAIL, text: `${confDir} has no CNI configuration file (.conflist, .conf): the primary CNI plugin is not installed yet` });
    return report();
  }
  checks.push({ mark: OK, text: `${join(confDir, active)} is the configuration the container runtime uses (the first of ${files.length} in lexical order)` });

  let conf: unknown;
  try {
    conf = JSON.parse(readFileSync(join(host(confDir), active), 'utf8'));
  } catch (err) {
    checks.push({ mark: FAIL, text: `${active} is not valid JSON (${(err as Error).message}): the runtime cannot use it` });
    return report();
  }
  const plugins = pluginsOf(conf);
  const elsewhere = files.slice(1).filter((f) => {
    try {
      return (pluginsOf(JSON.parse(readFileSync(join(host(confDir), f), 'utf8'))) ?? []).some((p) => typeOf(p) === PLUGIN_TYPE);
    } catch {
      return false;
    }
  });
  if (!plugins) {
    checks.push({
      mark: FAIL,
      text:
        `${active} is a single-plugin configuration (type ${JSON.stringify(typeOf(conf as PluginConf))}) without linkerd-cni: ` +
        `the linkerd-cni DaemonSet rewrites it into a .conflist when it runs on the node; check that its pod is running here`,
    });
    return report();
  }
  const types = plugins.map(typeOf);
  const at = types.indexOf(PLUGIN_TYPE);
  const primary = types[0] ?? '';
  if (at < 0) {
    const more = elsewhere.length > 0 ? `; it is in ${elsewhere.join(', ')}, which the runtime does not use because ${active} comes first` : '';
    let hint = `check that the linkerd-cni DaemonSet runs on this node and watches ${confDir}: ${fix}`;
    if (primary === 'cilium-cni') hint = `Cilium removes other plugins unless installed with --set cni.exclusive=false; then restart the linkerd-cni pod`;
    checks.push({ mark: FAIL, text: `linkerd-cni is not in ${active} (plugins: ${types.join(', ')})${more}; ${hint}` });
    return report();
  }
  if (at === 0) {
    checks.push({ mark: FAIL, text: `linkerd-cni is the first plugin of ${active}: it must be chained after the primary plugin, which sets up the pod's network` });
  } else {
    checks.push({ mark: OK, text: `linkerd-cni is chained after the primary plugin ${primary} (plugins: ${types.join(', ')})` });
  }
  if (at < types.length - 1) {
    checks.push({
      mark: WARN,
      text:
        `linkerd-cni is not the last plugin (${types.slice(at + 1).join(', ')} after it): Linkerd's installer appends it last, ` +
        `so something rewrote ${active} since; restart the linkerd-cni pod on this node to re-append it`,
    });
  }
  if (primary === 'cilium-cni') {
    checks.push({ mark: WARN, text: 'Cilium: with kube-proxy replacement, install Cilium with --set socketLB.hostNamespaceOnly=true so that pod traffic reaches the iptables rules' });
  }

  const linkerd = plugins[at] ?? {};
  const kubeconfig = typeof linkerd.kubernetes?.kubeconfig === 'string' ? linkerd.kubernetes.kubeconfig : undefined;
  if (kubeconfig === undefined) {
    checks.push({ mark: FAIL, text: 'linkerd-cni has no kubernetes.kubeconfig: it cannot read the pods it configures' });
  } else if (!isFile(host(kubeconfig))) {
    checks.push({ mark: FAIL, text: `linkerd-cni's kubeconfig ${kubeconfig} does not exist: the plugin fails for every pod; ${fix}` });
  } else {
    checks.push({ mark: OK, text: `linkerd-cni's kubeconfig ${kubeconfig} exists` });
  }

  if (!isDir(host(binDir))) {
    checks.push({ mark: FAIL, text: `${binDir} does not exist: the runtime finds no CNI plugin binaries there; ${fix}` });
    return report();
  }
  const binary = join(binDir, PLUGIN_TYPE);
  if (isExecutable(host(binary))) checks.push({ mark: OK, text: `${binary} exists and is executable` });
  else {
    checks.push({
      mark: FAIL,
      text: `${binary} is missing or not executable: the runtime fails to run the plugin and no pod on this node starts; ${fix}`,
    });
  }
  if (primary !== '' && !isExecutable(host(join(binDir, primary)))) {
    checks.push({
      mark: WARN,
      text: `the primary plugin's binary ${primary} is not in ${binDir}: this may not be the directory the runtime reads plugins from`,
    });
  }
  return report();
}

const HELP = `Usage: proxy-injector check cni [--cni-conf-dir DIR] [--cni-bin-dir DIR] [--root DIR]
       proxy-injector check pods [--kubeconfig FILE] [-n NAMESPACE] [-o text|json]   (see 'check pods --help')

Checks this node's CNI configuration for the Linkerd CNI plugin: that the configuration file the container
runtime uses chains linkerd-cni after the primary plugin (Calico, Flannel, Cilium, ...), and that its binary
and kubeconfig are where that configuration says. Recognises the k3s/k3d layout and gives the install flags
that fix what it finds. Run it on the node (or in a pod that mounts the node's directories).

Options:
  --cni-conf-dir DIR   CNI configuration directory (default ${DEFAULT_CONF_DIR}, or ${K3S_CONF_DIR} on k3s)
  --cni-bin-dir DIR    CNI plugin directory (default ${DEFAULT_BIN_DIR}, or ${K3S_BIN_DIR} on k3s)
  --root DIR           where the node's file system is mounted (default /)
  -h, --help           this help

Exit status: 0 the plugin is installed; 1 something is missing or wrong; 2 usage error.
`;

/** Runs `check cni` (`check pods`, which reads a cluster, is runCheckPods). */
export function runCheck(argv: readonly string[]): CliResult {
  let opts: Record<string, string | boolean | undefined>;
  let positionals: string[];
  try {
    const parsed = parseArgs({
      args: [...argv],
      options: {
        'cni-conf-dir': { type: 'string' },
        'cni-bin-dir': { type: 'string' },
        root: { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
      allowPositionals: true,
      strict: true,
    });
    opts = parsed.values;
    positionals = parsed.positionals;
  } catch (err) {
    return { stdout: '', stderr: `proxy-injector check: ${(err as Error).message}\n${HELP}`, code: 2 };
  }
  if (opts['help'] === true) return { stdout: HELP, stderr: '', code: 0 };
  if (positionals.length !== 1 || positionals[0] !== 'cni') {
    return { stdout: '', stderr: `proxy-injector check: expected 'check cni' or 'check pods'\n${HELP}`, code: 2 };
  }
  const root = typeof opts['root'] === 'string' ? opts['root'] : '/';
  if (!isDir(root)) return { stdout: '', stderr: `proxy-injector check: --root ${root}: not a directory\n`, code: 1 };
  const result = checkCni({
    root,
    ...(typeof opts['cni-conf-dir'] === 'string' && { confDir: opts['cni-conf-dir'] }),
    ...(typeof opts['cni-bin-dir'] === 'string' && { binDir: opts['cni-bin-dir'] }),
  });
  const lines = result.checks.map((c) => `${c.mark} ${c.text}`);
  lines.push(result.ok ? 'Linkerd CNI plugin: installed' : 'Linkerd CNI plugin: not working on this node');
  return { stdout: `${lines.join('\n')}\n`, stderr: '', code: result.ok ? 0 : 1 };
}

export async function runCheckCommand(args: string[]): Promise<number> {
  const result = args[0] === 'pods' ? await (await import('./check-pods.js')).runCheckPods(args.slice(1)) : runCheck(args);
  process.stdout.write(result.stdout);
  process.stderr.write(result.stderr);
  return result.code;
}
