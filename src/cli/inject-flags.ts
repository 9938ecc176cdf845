/**
 * The proxy configuration flags of `inject`, named as `linkerd inject` names them, each written to the pod template as
 * the `config.linkerd.io/*` annotation it stands for.
 */
import { INBOUND_POLICIES, names, POD_SECURITY_LEVELS, refusal, type LinkerdValues, type PodSecurityDefaults } from '../engine/index.js';
import { parseCommandArgs, UsageError } from './command-io.js';

const { ANNOTATIONS, INJECT_ANNOTATION, INJECT_INGRESS, NAMESPACE_INHERITED_ANNOTATIONS } = names;

/** A repeatable flag's values, each of which may also be a comma-separated list: trimmed, empty ones dropped. */
export function listFlag(values: unknown): string[] {
  return (Array.isArray(values) ? values : []).flatMap((v) => String(v).split(',')).map((v) => v.trim()).filter(Boolean);
}

/**
 * `--pod-security-default` and `--pod-security-exempt`, as `serve` and `explain` take them; `label` names the first in
 * an error (as the environment variable it came from, for serve).
 */
export function podSecurityFlags(level: unknown, exempt: unknown, label = '--pod-security-default'): PodSecurityDefaults {
  if (level !== undefined && (typeof level !== 'string' || !POD_SECURITY_LEVELS.includes(level))) {
    throw new UsageError(`${label} ${JSON.stringify(level)}: expected ${POD_SECURITY_LEVELS.join(', ')}`);
  }
  return { enforce: level, exemptNamespaces: listFlag(exempt) };
}

interface ProxyFlag {
  name: string;
  short?: string;
  type: 'string' | 'boolean';
  /** Repeatable, and each occurrence may be a comma-separated list (Linkerd's string slices). */
  list?: boolean;
  metavar?: string;
  help: string;
  annotation: string;
  /** The annotation value for what was given; the flag's text by default, "true"/"false" for booleans. */
  value?: (given: string | boolean) => string | undefined;
  /**
   * Why the value is refused, beyond what the annotation's own rule refuses (every value first goes through the rule the
   * webhook applies to the annotation); undefined when it is fine.
   */
  check?: (text: string) => string | undefined;
  /** The installed configuration's value, in the annotation's terms; undefined when it has none to compare with. */
  installed?: (v: LinkerdValues) => string | undefined;
  /** The flag is an old name kept by Linkerd: the one to use instead. */
  deprecated?: string;
}

const oneOf = (choices: readonly string[]) => (text: string): string | undefined =>
  choices.includes(text) ? undefined : `expected one of ${choices.join(', ')}`;
const notEmpty = (text: string): string | undefined => (text === '' ? 'must not be empty' : undefined);
const bool = (b: string | boolean): string => String(b === true);

const resource = (field: 'cpu' | 'memory' | 'ephemeral-storage', which: 'request' | 'limit') => (v: LinkerdValues) =>
  v.proxy.resources[field][which];

type Extra = Partial<Pick<ProxyFlag, 'short' | 'list' | 'check' | 'installed' | 'value' | 'deprecated'>>;

/** A flag that takes a value (METAVAR) and writes it to `annotation` as given. */
function valued(name: string, metavar: string, annotation: string, help: string, extra: Extra): ProxyFlag {
  return { name, type: 'string', metavar, annotation, help, ...extra };
}

/** A boolean flag; `--flag=false` and `--no-flag` give false. */
function toggle(name: string, annotation: string, help: string, extra: Extra): ProxyFlag {
  return { name, type: 'boolean', annotation, help, value: bool, ...extra };
}

const quantityFlag = (name: string, annotation: string, help: string, installed: NonNullable<ProxyFlag['installed']>): ProxyFlag =>
  valued(name, 'AMOUNT', annotation, help, { installed });

/** Every proxy configuration flag, in the order `--help` lists them. */
export const PROXY_FLAGS: readonly ProxyFlag[] = [
  valued('proxy-version', 'TAG', ANNOTATIONS.proxyVersion, 'tag of the proxy image (also used by linkerd-init)', {
    short: 'v',
    installed: (v) => v.proxy.image.version || v.linkerdVersion,
  }),
  valued('proxy-image', 'NAME', ANNOTATIONS.proxyImage, 'proxy image name, without the tag', { installed: (v) => v.proxy.image.name }),
  valued('image-pull-policy', 'POLICY', ANNOTATIONS.imagePullPolicy, 'pull policy of the injected containers: Always, IfNotPresent or Never', {
    installed: (v) => v.proxy.image.pullPolicy || v.imagePullPolicy,
  }),
  valued('inbound-port', 'PORT', ANNOTATIONS.inboundPort, 'proxy port for inbound traffic', {
    installed: (v) => String(v.proxy.ports.inbound),
  }),
  valued('outbound-port', 'PORT', ANNOTATIONS.outboundPort, 'proxy port for outbound traffic', {
    installed: (v) => String(v.proxy.ports.outbound),
  }),
  valued('control-port', 'PORT', ANNOTATIONS.controlPort, 'proxy port for control', {
    installed: (v) => String(v.proxy.ports.control),
  }),
  valued('admin-port', 'PORT', ANNOTATIONS.adminPort, 'proxy port for metrics and probes', {
    installed: (v) => String(v.proxy.ports.admin),
  }),
  valued('skip-inbound-ports', 'PORTS', ANNOTATIONS.skipInboundPorts, 'ports and ranges (a-b) that bypass the proxy inbound', {
    list: true,
    installed: (v) => v.proxyInit.ignoreInboundPorts,
  }),
  valued('skip-outbound-ports', 'PORTS', ANNOTATIONS.skipOutboundPorts, 'ports and ranges that bypass the proxy outbound', {
    list: true,
    installed: (v) => v.proxyInit.ignoreOutboundPorts,
  }),
  valued('skip-subnets', 'CIDRS', ANNOTATIONS.skipSubnets, 'networks whose traffic bypasses the proxy', {
    list: true,
    installed: (v) => v.proxyInit.skipSubnets,
  }),
  valued('opaque-ports', 'PORTS', ANNOTATIONS.opaquePorts, 'ports, ranges or port names proxied without protocol detection', {
    list: true,
    installed: (v) => v.proxy.opaquePorts,
  }),
  valued('require-identity-on-inbound-ports', 'PORTS', ANNOTATIONS.proxyRequireIdentityInboundPorts, 'inbound ports on which the proxy requires a client identity', {
    list: true,
    // The proxy reads this list itself and the webhook passes it on as written; here it is checked like the skip lists.
    check: (text) => refusal(ANNOTATIONS.skipInboundPorts, text),
    installed: (v) => v.proxy.requireIdentityOnInboundPorts,
  }),
  valued('proxy-uid', 'UID', ANNOTATIONS.proxyUid, 'user ID the proxy runs as', { installed: (v) => String(v.proxy.uid) }),
  valued('proxy-gid', 'GID', ANNOTATIONS.proxyGid, 'group ID the proxy runs as (-1 for none)', {
    installed: (v) => String(v.proxy.gid),
  }),
  valued('proxy-log-level', 'LEVEL', ANNOTATIONS.proxyLogLevel, 'proxy log level, e.g. warn,linkerd=info', {
    check: notEmpty,
    installed: (v) => v.proxy.logLevel,
  }),
  valued('proxy-log-format', 'FORMAT', ANNOTATIONS.proxyLogFormat, 'proxy log format: plain or json', {
    check: oneOf(['plain', 'json']),
    installed: (v) => v.proxy.logFormat,
  }),
  quantityFlag('proxy-cpu-request', ANNOTATIONS.proxyCpuRequest, 'CPU the proxy requests (also sets its minimum worker threads)', resource('cpu', 'request')),
  quantityFlag('proxy-cpu-limit', ANNOTATIONS.proxyCpuLimit, 'CPU limit of the proxy (also sets its maximum worker threads)', resource('cpu', 'limit')),
  quantityFlag('proxy-memory-request', ANNOTATIONS.proxyMemoryRequest, 'memory the proxy requests', resource('memory', 'request')),
  quantityFlag('proxy-memory-limit', ANNOTATIONS.proxyMemoryLimit, 'memory limit of the proxy', resource('memory', 'limit')),
  quantityFlag('proxy-ephemeral-storage-request', ANNOTATIONS.proxyEphemeralStorageRequest, 'ephemeral storage the proxy requests', resource('ephemeral-storage', 'request')),
  quantityFlag('proxy-ephemeral-storage-limit', ANNOTATIONS.proxyEphemeralStorageLimit, 'ephemeral storage limit of the proxy', resource('ephemeral-storage', 'limit')),
  valued('default-inbound-policy', 'POLICY', ANNOTATIONS.defaultInboundPolicy, `policy for inbound connections: ${INBOUND_POLICIES.join(', ')}`, {
    installed: (v) => v.proxy.defaultInboundPolicy,
  }),
  valued('access-log', 'FORMAT', ANNOTATIONS.accessLog, 'HTTP access log of the proxy: apache or json', { installed: (v) => v.proxy.accessLog }),
  valued('wait-before-exit-seconds', 'N', ANNOTATIONS.alphaProxyWaitBeforeExitSeconds, 'seconds the proxy stays up after the pod is told to stop (classic sidecar only)', {
    installed: (v) => String(v.proxy.waitBeforeExitSeconds),
  }),
  valued('close-wait-timeout', 'DURATION', ANNOTATIONS.closeWaitTimeout, 'conntrack close-wait timeout set by linkerd-init (needs proxyInit.runAsRoot in the values)', {
    installed: (v) => `${v.proxyInit.closeWaitTimeoutSecs}s`,
  }),
  toggle('enable-external-profiles', ANNOTATIONS.enableExternalProfiles, 'use service profiles for non-Kubernetes services', {
    installed: (v) => String(v.proxy.enableExternalProfiles),
  }),
  // The values have no switch for the debug sidecar: it is off unless a pod asks for it.
  toggle('enable-debug-sidecar', ANNOTATIONS.enableDebugSidecar, 'add the linkerd-debug container', { installed: () => 'false' }),
  toggle('native-sidecar', ANNOTATIONS.proxyEnableNativeSidecar, 'run the proxy as a native sidecar (an init container that keeps running)', {
    installed: (v) => String(v.proxy.nativeSidecar),
  }),
  toggle('await', ANNOTATIONS.proxyAwait, 'hold the app containers until the proxy is ready (--no-await or --await=false: the proxy goes last, without the hook)', {
    value: (b) => (b === true ? 'enabled' : 'disabled'),
    installed: (v) => (v.proxy.await ? 'enabled' : 'disabled'),
  }),
  toggle('ingress', INJECT_ANNOTATION, 'run the proxy in ingress mode (linkerd.io/inject: ingress)', {
    value: (b) => (b === true ? INJECT_INGRESS : undefined),
  }),
  // Linkerd's deprecated names; listed last because, as in Linkerd, they win over the new names when both are given.
  valued('proxy-cpu', 'AMOUNT', ANNOTATIONS.proxyCpuRequest, 'deprecated: use --proxy-cpu-request', {
    installed: resource('cpu', 'request'),
    deprecated: 'proxy-cpu-request',
  }),
  valued('proxy-memory', 'AMOUNT', ANNOTATIONS.proxyMemoryRequest, 'deprecated: use --proxy-memory-request', {
    installed: resource('memory', 'request'),
    deprecated: 'proxy-memory-request',
  }),
];

/** The variable that changes the image registry as --registry does. */
export const REGISTRY_ENV = 'LINKERD_DOCKER_REGISTRY';

/** An image name moved to another registry, as Linkerd does it: the registry replaces everything before the last "/". */
export function withRegistry(image: string, registry: string): string {
  if (image === '') return image;
  const prefix = registry !== '' && !registry.endsWith('/') ? `${registry}/` : registry;
  return prefix + image.slice(image.lastIndexOf('/') + 1);
}

/** Flags of Linkerd's whole CLI for reaching a cluster: accepted so that scripts keep working, with no effect here. */
const CLUSTER_FLAGS = ['kubeconfig', 'context', 'as', 'as-group', 'api-addr', 'cni-namespace'] as const;

/** Options of `inject` that are not proxy configuration. */
export const GENERAL_OPTIONS = {
  manual: { type: 'boolean' },
  output: { type: 'string', short: 'o' },
  verbose: { type: 'boolean' },
  values: { type: 'string' },
  'trust-anchors': { type: 'string' },
  'linkerd-namespace': { type: 'string', short: 'L' },
  'ignore-cluster': { type: 'boolean' },
  registry: { type: 'string' },
  'disable-identity': { type: 'boolean' },
  kubeconfig: { type: 'string' },
  context: { type: 'string' },
  as: { type: 'string' },
  'as-group': { type: 'string', multiple: true },
  'api-addr': { type: 'string' },
  'cni-namespace': { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

export type ParsedOptions = Record<string, string | boolean | string[] | undefined>;

type OptionSpec = { type: 'string' | 'boolean'; short?: string; multiple?: boolean };

export function proxyFlagOptions(): Record<string, OptionSpec> {
  const options: Record<string, OptionSpec> = {};
  for (const f of PROXY_FLAGS) {
    options[f.name] = { type: f.type, ...(f.short && { short: f.short }), ...(f.list && { multiple: true }) };
  }
  return options;
}

/**
 * Rewrites `--flag=true` / `--flag=false` for boolean flags into `--flag` / `--no-flag`, which is how users of
 * `linkerd inject` (pflag) write them and node's parseArgs does not accept.
 */
export function normalizeBooleanArgs(args: readonly string[], booleans: ReadonlySet<string>): string[] {
  const out: string[] = [];
  for (const arg of args) {
    if (arg === '--') {
      out.push(...args.slice(args.indexOf(arg)));
      break;
    }
    const m = /^--([a-z0-9-]+)=(.*)$/.exec(arg);
    if (m && booleans.has(m[1] ?? '')) {
      const value = (m[2] ?? '').toLowerCase();
      if (['true', '1', 't', 'yes'].includes(value)) out.push(`--${m[1]}`);
      else if (['false', '0', 'f', 'no'].includes(value)) out.push(`--no-${m[1]}`);
      else throw new UsageError(`--${m[1]}: expected true or false, got ${JSON.stringify(m[2])}`);
    } else {
      out.push(arg);
    }
  }
  return out;
}

export interface FlagAnnotations {
  /** Every proxy flag given, as its annotation and value (except --ingress). */
  given: Record<string, string>;
  /** The flags given whose value differs from the installed configuration (--values or defaults). */
  differing: Record<string, string>;
  /** --ingress was given: `linkerd.io/inject: ingress` instead of `enabled`. */
  ingress: boolean;
  /** What the report should say about the flags: deprecated names, flags that no longer do anything. */
  notes: string[];
}

/** Checks the proxy flags given and turns them into annotations. */
export function flagAnnotations(parsed: ParsedOptions, values: LinkerdValues, env: NodeJS.ProcessEnv = {}): FlagAnnotations {
  const given: Record<string, string> = {};
  const differing: Record<string, string> = {};
  const notes: string[] = [];
  let ingress = false;
  /** The last flag for an annotation wins; it is written when it differs from the installed value. */
  const set = (annotation: string, value: string, installed: string | undefined): void => {
    given[annotation] = value;
    if (installed !== value) differing[annotation] = value;
    else delete differing[annotation];
  };
  for (const f of PROXY_FLAGS) {
    const raw = parsed[f.name];
    if (raw === undefined) continue;
    const text = Array.isArray(raw) ? listFlag(raw).join(',') : raw;
    if (typeof text === 'string') {
      const problem = refusal(f.annotation, text) ?? f.check?.(text);
      if (problem) throw new UsageError(`--${f.name} ${JSON.stringify(text)}: ${problem}`);
    }
    const value = f.value ? f.value(text) : String(text);
    if (value === undefined) continue;
    if (f.annotation === INJECT_ANNOTATION) {
      ingress = true;
      continue;
    }
    if (f.deprecated) notes.push(`--${f.name} is deprecated: use --${f.deprecated}`);
    set(f.annotation, value, f.installed?.(values));
  }

  // --registry (or Linkerd's variable for it) moves the proxy and debug images, after --proxy-image as in Linkerd.
  const registry = typeof parsed['registry'] === 'string' ? parsed['registry'] : env[REGISTRY_ENV] || undefined;
  if (registry !== undefined) {
    set(ANNOTATIONS.proxyImage, withRegistry(given[ANNOTATIONS.proxyImage] ?? values.proxy.image.name, registry), values.proxy.image.name);
    set(ANNOTATIONS.debugImage, withRegistry(values.debugContainer.image.name, registry), values.debugContainer.image.name);
  }
  if (parsed['disable-identity'] === true) {
    throw new UsageError('--disable-identity is no longer supported; identity is always required');
  }
  if (parsed['disable-identity'] === false) notes.push('--disable-identity=false has no effect: identity is always on');
  for (const name of CLUSTER_FLAGS) {
    if (parsed[name] !== undefined) notes.push(`--${name} has no effect: this command reads no cluster`);
  }
  return { given, differing, ingress, notes };
}

/**
 * The flag annotations to write on an object whose own annotations are `own`: those that differ from the installed
 * configuration, and those the object carries with another value (a flag always wins over the manifest, so
 * `--native-sidecar=false` undoes an earlier `--native-sidecar` even when false is the configured default).
 * Namespaces get only the annotations pods inherit from their namespace.
 */
export function annotationsFor(flags: FlagAnnotations, own: Record<string, string>, kind: 'template' | 'namespace'): Record<string, string> {
  const out: Record<string, string> = { ...flags.differing };
  for (const [k, v] of Object.entries(flags.given)) if (k in own && own[k] !== v) out[k] = v;
  if (kind === 'namespace') for (const k of Object.keys(out)) if (!NAMESPACE_INHERITED_ANNOTATIONS.includes(k)) delete out[k];
  return out;
}

const BOOLEAN_OPTIONS: ReadonlySet<string> = new Set([
  ...PROXY_FLAGS.filter((f) => f.type === 'boolean').map((f) => f.name),
  ...Object.entries(GENERAL_OPTIONS)
    .filter(([, o]) => o.type === 'boolean')
    .map(([name]) => name),
]);

/**
 * Parses the arguments of a manifest command: the general options, every proxy flag, and the command's own `extra`
 * options. Unknown or malformed options throw; the commands report that as a usage error.
 */
export function parseManifestArgs(argv: readonly string[], extra: Record<string, OptionSpec> = {}): { opts: ParsedOptions; inputs: string[] } {
  const booleans = new Set([...BOOLEAN_OPTIONS, ...Object.keys(extra).filter((k) => extra[k]?.type === 'boolean')]);
  const parsed = parseCommandArgs({
    args: normalizeBooleanArgs(argv, booleans),
    options: { ...GENERAL_OPTIONS, ...proxyFlagOptions(), ...extra },
    allowPositionals: true,
    allowNegative: true,
    strict: true,
  });
  return { opts: parsed.values as ParsedOptions, inputs: parsed.positionals };
}

const flagNames = (f: ProxyFlag): string =>
  `${f.short ? `-${f.short}, ` : '    '}--${f.name}${f.type === 'string' ? ` ${f.metavar ?? 'VALUE'}` : ''}`;

/** Help for the proxy flags: names, then the description and the annotation, wrapped under a column. */
function proxyFlagHelp(): string {
  // The column of the general options above; the longest flag still leaves a space.
  const column = Math.max(48, ...PROXY_FLAGS.map((f) => flagNames(f).length + 3));
  const width = 110 - column;
  const wrap = (text: string): string[] => {
    const lines: string[] = [];
    let line = '';
    for (const word of text.split(' ')) {
      if (line !== '' && line.length + 1 + word.length > width) {
        lines.push(line);
        line = word;
      } else line = line === '' ? word : `${line} ${word}`;
    }
    return [...lines, line];
  };
  return PROXY_FLAGS.map((f) => {
    const [first, ...rest] = [...wrap(f.help), `[${f.annotation}]`];
    const pad = ' '.repeat(column);
    return [`  ${flagNames(f).padEnd(column - 2)}${first}`, ...rest.map((l) => `${pad}${l}`)].join('\n');
  }).join('\n');
}

export const INJECT_HELP = `Usage: proxy-injector inject [--manual] [flags] FILE|DIR|URL|- ...

Adds Linkerd to Kubernetes manifests read from files, directories (walked recursively in lexical order,
*.yaml, *.yml and *.json) or stdin ("-"): YAML or JSON, multi-document streams and List objects. Pods,
Deployments, StatefulSets, DaemonSets, ReplicaSets, ReplicationControllers, Jobs and CronJobs get
'linkerd.io/inject: enabled' on their pod template, and Namespaces on themselves, so that the proxy
injector adds the proxy when the pods are created. With --manual the proxy is added here instead, as
'linkerd inject --manual' does: the manifest is first uninjected, so injecting it again gives the same
result. Other objects pass through unchanged. Comments, key order and layout are kept.

The transformed manifests go to stdout, a report to stderr. If any object cannot be injected (host
network, a proxy of another mesh, no usable service-account token), the report says why and nothing is
written to stdout. A pod template annotated 'linkerd.io/inject: disabled' is left as it is.

Exit status: 0 done; 1 an object could not be injected or the input is invalid; 2 usage error.

Options:
      --manual                                  add the proxy to the manifests (default: the annotation only)
  -o, --output yaml|json                        output format (default yaml; JSON input is printed as YAML
                                                unless -o json). With json, one object is printed as it is,
                                                several as the items of a v1 List
      --verbose                                 report every check, not only warnings and failures
      --values FILE                             Linkerd values YAML, e.g. the 'values' key of ConfigMap
                                                linkerd-config (default: embedded defaults)
      --trust-anchors FILE                      identity trust anchors PEM (default: identityTrustAnchorsPEM
                                                from the values, else the bundled demo root, with a warning)
  -L, --linkerd-namespace NS                    namespace of the Linkerd control plane (default linkerd)
      --registry REGISTRY                       registry of the proxy and debug images, e.g. my.registry/linkerd
                                                (default: $LINKERD_DOCKER_REGISTRY, else as configured); written
                                                as config.linkerd.io/proxy-image and debug-image when they change
      --ignore-cluster                          accepted for compatibility with 'linkerd inject': this
                                                command never contacts a cluster. So are --kubeconfig,
                                                --context, --as, --as-group, --api-addr and --cni-namespace,
                                                with a note that they have no effect
      --disable-identity                        refused, as Linkerd refuses it: identity is always required
                                                (--disable-identity=false is accepted, with a note)
  -h, --help                                    this help

Proxy configuration. Each flag given is written to every pod template as the annotation named after it,
when its value differs from the configuration (--values or defaults), so the manifest records it.
Namespaces get the ones pods inherit; Services get --opaque-ports. Booleans take --flag, --no-flag or
--flag=true|false; list flags may be repeated or comma-separated.
${proxyFlagHelp()}
`;
