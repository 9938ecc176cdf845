/**
 * Start-up risks of an injected pod: configurations that Linkerd injects without complaint but that make the pod fail
 * to start, never finish, or quietly bypass the proxy. Each comes with the change that avoids it. Pure: it reads the
 * pod as the user wrote it and the configuration in force for it (values after the pod's annotations).
 */
import { ANNOTATIONS, DEBUG_CONTAINER, INIT_CONTAINER, VALIDATOR_CONTAINER } from './names.js';
import { isObject, objectsIn, stringsIn, type Container, type PodSpec } from './k8s.js';
import { portListRefusal, subnetsRefusal } from './iptables.js';
import { parsePortRange, type PortRange } from './parsers.js';
import { compareVersions, NATIVE_SIDECAR_GATED_RELEASE, NATIVE_SIDECAR_RELEASE, versionText, type KubernetesVersion } from './kubernetes-version.js';
import { memoizeText } from './memo.js';
import { eachContainerPort, namedPorts, splitPortList } from './ports.js';
import type { LinkerdValues } from './values.js';

export type StartupRiskCode =
  | 'pod_security_refuses_init'
  | 'resource_quota_needs_resources'
  | 'limit_range_refuses_resources'
  | 'init_container_network_under_cni'
  | 'iptables_refuses_init_rule'
  | 'proxy_never_exits'
  | 'proxy_shutdown_fails'
  | 'proxy_await_disabled'
  | 'container_port_is_proxy_port'
  | 'skipped_port_requires_identity'
  | 'skipped_port_is_opaque'
  | 'container_runs_as_proxy_uid'
  | 'name_taken'
  | 'native_sidecar_unsupported'
  | 'pod_security_refuses_container';

export interface StartupRisk {
  code: StartupRiskCode;
  /** The container concerned, when there is one. */
  container?: string;
  /** What will go wrong. */
  text: string;
  /** What to change so that it does not. */
  fix: string;
}

export interface StartupRiskInput {
  /** The pod spec as written, before injection. */
  spec: PodSpec;
  /** The configuration in force for this pod: the installed values with the pod's and namespace's annotations. */
  values: LinkerdValues;
  /** Lowercased kind of the workload that creates the pod ("job", "cronjob", "deployment", "pod", ...). */
  workloadKind: string;
  /** `config.linkerd.io/opaque-ports` as the pod or its namespace set it; absent when only the default applies. */
  explicitOpaquePorts?: string | undefined;
  /** `namedPorts(spec)`, when the caller has it already. */
  namedPorts?: ReadonlyMap<string, number>;
  /** The Pod Security level the namespace enforces (its `pod-security.kubernetes.io/enforce` label), when known. */
  podSecurityEnforce?: string | undefined;
  /** The release of the API server the pod is created through, when known. */
  kubernetesVersion?: KubernetesVersion | undefined;
  /** The containers the injection adds, as the patch writes them; needed only where Pod Security is `restricted`. */
  injectedContainers?: readonly Container[] | undefined;
}

/** The Pod Security levels that forbid capabilities beyond Docker's default set, NET_ADMIN and NET_RAW among them. */
const CAPABILITY_RESTRICTING_LEVELS = new Set(['baseline', 'restricted']);

const JOB_KINDS = new Set(['job', 'cronjob']);

/** The capabilities the `restricted` Pod Security level lets a container add: this one alone, after dropping ALL. */
const RESTRICTED_ADDS = new Set(['NET_BIND_SERVICE']);
const CONFINING_SECCOMP = new Set(['RuntimeDefault', 'Localhost']);

/**
 * What the `restricted` Pod Security level refuses in a container, named as the PodSecurity admission plugin names
 * each check in its refusal; the pod's own securityContext stands in where the container's says nothing (for
 * runAsNonRoot, runAsUser and seccompProfile, as the plugin reads them). Empty when it passes.
 */
function restrictedViolations(c: Container, spec: PodSpec): string[] {
  const own = isObject(c.securityContext) ? c.securityContext : {};
  const pod = isObject(spec['securityContext']) ? spec['securityContext'] : {};
  const out: string[] = [];
  if (own['privileged'] === true) out.push('privileged');
  if (own['allowPrivilegeEscalation'] !== false) out.push('allowPrivilegeEscalation != false');
  const caps = isObject(own['capabilities']) ? own['capabilities'] : {};
  if (!stringsIn(caps['drop']).includes('ALL') || stringsIn(caps['add']).some((cap) => !RESTRICTED_ADDS.has(cap))) out.push('unrestricted capabilities');
  const nonRoot = typeof own['runAsNonRoot'] === 'boolean' ? own['runAsNonRoot'] : pod['runAsNonRoot'];
  if (nonRoot !== true) out.push('runAsNonRoot != true');
  if (runAsUser(c, spec) === 0) out.push('runAsUser=0');
  const seccomp = (ctx: Record<string, unknown>): unknown => (isObject(ctx['seccompProfile']) ? ctx['seccompProfile']['type'] : undefined);
  const profile = seccomp(own) ?? seccomp(pod);
  if (typeof profile !== 'string' || !CONFINING_SECCOMP.has(profile)) out.push('seccompProfile');
  return out;
}

/** What to change so that an injected container meets the `restricted` level. */
function restrictedFix(container: string): string {
  if (container === DEBUG_CONTAINER) return `remove ${ANNOTATIONS.enableDebugSidecar} (the debug sidecar sets no securityContext), or debug in a namespace that enforces less`;
  if (container === VALIDATOR_CONTAINER) return `set networkValidator.securityContext in Linkerd's values to meet it`;
  return (
    `give the first app container securityContext.capabilities.drop: [ALL] (the proxy takes its capabilities), or set ` +
    `proxy.capabilities or proxy.securityContext in Linkerd's values to meet it`
  );
}

/** The uid a container runs as: its own securityContext, else the pod's; undefined when the image decides. */
export function runAsUser(c: Container, spec: PodSpec): number | undefined {
  const own = isObject(c.securityContext) ? c.securityContext['runAsUser'] : undefined;
  if (typeof own === 'number') return own;
  const pod = isObject(spec['securityContext']) ? spec['securityContext']['runAsUser'] : undefined;
  return typeof pod === 'number' ? pod : undefined;
}

/** One item of a port list: its text (which may name a container port) and the range it reads as, if any. */
interface PortListItem {
  item: string;
  range: PortRange | undefined;
}

/**
 * The items of a port list, remembered per text: the configured skip-inbound-ports ("4567,4568" by default) is read for
 * every pod that declares a port. Only names depend on the pod, and those are looked up per pod (`ranges`).
 */
const portListItems = memoizeText((list: string): PortListItem[] =>
  splitPortList(list).map((item) => ({ item, range: parsePortRange(item) })),
);

/**
 * The ranges of a port list for a pod, as `parsePortList` reads it: an item that names one of the pod's ports stands
 * for that port (before any reading as a number), other items for the range they read as, the rest for nothing.
 */
function ranges(list: string, names: ReadonlyMap<string, number>): PortRange[] {
  const out: PortRange[] = [];
  const items = portListItems(list);
  // By index: a for-of over the remembered (frozen) items allocated an iterator result for each.
  for (let i = 0; i < items.length; i++) {
    const { item, range } = items[i] as PortListItem;
    const named = names.get(item);
    // A named port is rendered and read back as a range, which drops numbers beyond 65535.
    const r = named === undefined ? range : parsePortRange(String(named));
    if (r) out.push(r);
  }
  return out;
}

/**
 * A list's ranges sorted by their start, overlapping ones merged, so that `within` finds a port by bisection: every
 * declared port against every item of the list was the product of two lists a pod chooses. Ranges that only touch
 * stay apart, since a declared port need not be a whole number.
 */
function merged(list: readonly PortRange[]): PortRange[] {
  const sorted = [...list].sort((a, b) => a.lo - b.lo);
  const out: PortRange[] = [];
  for (const r of sorted) {
    const last = out[out.length - 1];
    if (last !== undefined && r.lo <= last.hi) last.hi = Math.max(last.hi, r.hi);
    else out.push({ lo: r.lo, hi: r.hi });
  }
  return out;
}

/** Whether `port` falls in one of `list`'s ranges; `list` as `merged` makes it. A NaN port falls in none. */
function within(port: number, list: readonly PortRange[]): boolean {
  let lo = 0;
  let hi = list.length - 1;
  let found = -1;
  while (lo <= hi) {
    const mid = (lo + hi) >>> 1;
    if ((list[mid] as PortRange).lo <= port) {
      found = mid;
      lo = mid + 1;
    } else {
      hi = mid - 1;
    }
  }
  return found >= 0 && port <= (list[found] as PortRange).hi;
}

/** Every TCP port the pod's containers declare, with the container that declares it. */
function declaredPorts(spec: PodSpec): Array<{ port: number; container: string }> {
  const out: Array<{ port: number; container: string }> = [];
  eachContainerPort(spec, (p, c) => {
    if (typeof p.containerPort !== 'number' || (p.protocol !== undefined && p.protocol !== 'TCP')) return;
    out.push({ port: p.containerPort, container: c.name ?? '' });
  });
  return out;
}

/** Which of the proxy's ports `port` is, the first in this order, if any. */
function proxyPortName(ports: LinkerdValues['proxy']['ports'], port: number): string | undefined {
  if (ports.inbound === port) return 'inbound';
  if (ports.outbound === port) return 'outbound';
  if (ports.admin === port) return 'admin';
  return ports.control === port ? 'control' : undefined;
}

/** linkerd-await's own default for its `--port`: the proxy's admin port as Linkerd installs it. */
const AWAIT_DEFAULT_PORT = 4191;

/** A container that asks the proxy to shut down when it is done, how it does, and on which port. */
interface ShutdownCall {
  container: string;
  how: string;
  port: number;
}

/** A request to the proxy's shutdown endpoint over loopback, as `curl -X POST http://localhost:4191/shutdown` makes it. */
const LOOPBACK_SHUTDOWN = /(?:localhost|127\.0\.0\.1|\[::1\]):(\d{1,5})\/shutdown\b/;

/** Whether a character code is a quote that `words` strips from either end of a word. */
const isQuote = (code: number): boolean => code === 0x22 || code === 0x27;

/**
 * The command line's words, shell scripts (`sh -c "..."`) split at blanks and shell separators and stripped of quotes:
 * enough to find a program and its flags, not a shell's parse. The quotes are stripped by two scans rather than a
 * regex, which tried a run of quotes inside a word from each of its positions.
 */
function words(texts: readonly string[]): string[] {
  const out: string[] = [];
  for (const text of texts) {
    for (const word of text.split(/[\s;&|()]+/)) {
      let start = 0;
      let end = word.length;
      while (start < end && isQuote(word.charCodeAt(start))) start++;
      while (end > start && isQuote(word.charCodeAt(end - 1))) end--;
      if (end > start) out.push(start === 0 && end === word.length ? word : word.slice(start, end));
    }
  }
  return out;
}

/** Whether a word runs linkerd-await: its last path segment is that name. */
const isAwait = (word: string): boolean => word === 'linkerd-await' || word.endsWith('/linkerd-await');

/**
 * Whether `linkerd-await` is run with `--shutdown` (`-S`, also among other short flags), and the admin port it will
 * call (`--port`, `-p`; 4191 by default; the last valid one given wins). Flags end at `--` or at the command it runs.
 *
 * Read from the last word back: what the flags from word i on say depends only on word i and what they say from the
 * word after it (or after its value), so every word is read once, however many of them name linkerd-await; reading
 * each linkerd-await's flags afresh read a line of such words once per word.
 */
function awaitShutdownPort(line: readonly string[]): number | undefined {
  let first = 0;
  while (first < line.length && !isAwait(line[first] as string)) first++;
  if (first === line.length) return undefined;
  // From word i on, read as flags: whether --shutdown is among them, and the port they give last (-1: none).
  const shutdownFrom = new Uint8Array(line.length + 2);
  const portFrom = new Int32Array(line.length + 2).fill(-1);
  for (let i = line.length - 1; i > first; i--) {
    const flags = awaitFlag(line, i);
    if (flags === undefined) continue;
    shutdownFrom[i] = flags.shutdown || shutdownFrom[flags.next] === 1 ? 1 : 0;
    portFrom[i] = (portFrom[flags.next] as number) >= 0 ? (portFrom[flags.next] as number) : flags.port;
  }
  for (let at = first; at < line.length; at++) {
    if (!isAwait(line[at] as string) || shutdownFrom[at + 1] !== 1) continue;
    const port = portFrom[at + 1] as number;
    return port >= 0 ? port : AWAIT_DEFAULT_PORT;
  }
  return undefined;
}

/**
 * What word `i` says as one of linkerd-await's flags: whether it asks for --shutdown, the port it gives (-1: none), and
 * the index of the next flag (after its value, when it takes the next word). Undefined when the flags end there.
 */
function awaitFlag(line: readonly string[], i: number): { shutdown: boolean; port: number; next: number } | undefined {
  const word = line[i] as string;
  if (word === '--' || !word.startsWith('-') || word === '-') return undefined;
  let next = i + 1;
  let shutdown = false;
  let value: string | undefined;
  let flag: string;
  if (word.startsWith('--')) {
    const eq = word.indexOf('=');
    flag = eq < 0 ? word.slice(2) : word.slice(2, eq);
    value = eq < 0 ? undefined : word.slice(eq + 1);
    if (flag === 'shutdown') shutdown = true;
    // The flags that take a value; --timeout-fatal takes it only after '='.
    if ((flag === 'port' || flag === 'backoff' || flag === 'timeout') && value === undefined) value = line[next++];
  } else {
    // Short flags may be grouped (-vS); -p, -b and -t take the rest of the word, or the next word, as their value.
    flag = '';
    for (let k = 1; k < word.length; k++) {
      const letter = word[k] as string;
      if (letter === 'S') shutdown = true;
      if (letter === 'p' || letter === 'b' || letter === 't') {
        flag = letter === 'p' ? 'port' : letter;
        value = k + 1 < word.length ? word.slice(k + 1) : line[next++];
        break;
      }
    }
  }
  const valid = flag === 'port' && value !== undefined && value.length <= 5 && /^\d{1,5}$/.test(value);
  return { shutdown, port: valid ? Number(value) : -1, next };
}

/**
 * A container name as a risk quotes it: at most 63 characters, the most a valid name has. Risks go into Events, which
 * anyone able to reach the webhook could otherwise fill with a name of their choosing.
 */
function named(name: string): string {
  return JSON.stringify(name.length > 63 ? `${name.slice(0, 63)}...` : name);
}

/** The app containers that ask the proxy to shut down, in their order. */
function shutdownCalls(apps: readonly Container[]): ShutdownCall[] {
  const out: ShutdownCall[] = [];
  for (const c of apps) {
    const texts = [...stringsIn(c.command), ...stringsIn(c.args)];
    const container = c.name ?? '';
    // A command line is cut into words only when it names linkerd-await: a long one made of many words costs more in
    // the strings it makes than in reading them.
    const awaitPort = texts.some((text) => text.includes('linkerd-await')) ? awaitShutdownPort(words(texts)) : undefined;
    if (awaitPort !== undefined) {
      out.push({ container, how: 'linkerd-await --shutdown', port: awaitPort });
      continue;
    }
    // Found in the text as in its words: the request has no blank, separator or quote that cutting or stripping touches.
    for (const text of texts) {
      const request = LOOPBACK_SHUTDOWN.exec(text);
      if (request) {
        out.push({ container, how: `a request to ${request[0]}`, port: Number(request[1]) });
        break;
      }
    }
  }
  return out;
}

const NATIVE_SIDECAR_FIX =
  'use a native sidecar proxy (config.linkerd.io/proxy-enable-native-sidecar: "true", Kubernetes 1.29+), which ' +
  'Kubernetes stops when the app containers finish';

/**
 * What keeps a pod that runs to completion (`what`) from completing with a classic proxy, which exits only when told
 * to: nothing tells it; or what tells it (`linkerd-await --shutdown`, a POST to the admin port's /shutdown) is refused
 * because the endpoint is disabled, or goes to another port. Undefined when a container asks the proxy's admin port
 * with the endpoint enabled. Only the pod's command and args are seen, not what the image's entrypoint does.
 */
function completionRisk(what: string, apps: readonly Container[], proxy: LinkerdValues['proxy']): StartupRisk | undefined {
  const admin = proxy.ports.admin;
  const calls = shutdownCalls(apps);
  const enabled = proxy.enableShutdownEndpoint;
  if (calls.length === 0) {
    const enable = `enable ${ANNOTATIONS.proxyAdminShutdown}: enabled and end the job's command with a POST to http://localhost:${admin}/shutdown (linkerd-await --shutdown -- CMD does this)`;
    return {
      code: 'proxy_never_exits',
      container: 'linkerd-proxy',
      text: enabled
        ? `the pod runs to completion (${what}) and the proxy's shutdown endpoint is enabled, but no container's command or args ` +
          `ask for it (linkerd-await --shutdown, or a POST to localhost:${admin}/shutdown): unless the image's own ` +
          `entrypoint does, the proxy never exits and the pod never completes`
        : `the pod runs to completion (${what}) but the proxy is a regular container that never exits: the pod never completes`,
      fix: enabled
        ? `end the job's command with linkerd-await --port=${admin} --shutdown -- CMD; or ${NATIVE_SIDECAR_FIX}`
        : `${NATIVE_SIDECAR_FIX}; or ${enable}`,
    };
  }
  if (enabled && calls.some((call) => call.port === admin)) return undefined;
  const call = calls[0] as ShutdownCall;
  const port = call.port === admin ? '' : ` and ask port ${admin}, the proxy's admin port, not ${call.port}`;
  return {
    code: 'proxy_shutdown_fails',
    container: call.container,
    text: enabled
      ? `container ${named(call.container)} asks the proxy to shut down (${call.how}) on port ${call.port}, but ` +
        `the proxy's admin server listens on ${admin}: the request fails, the proxy keeps running and the pod never completes`
      : `container ${named(call.container)} asks the proxy to shut down (${call.how}), but the proxy's shutdown ` +
        `endpoint is disabled: the request is refused, the proxy keeps running and the pod never completes`,
    fix: enabled
      ? `ask port ${admin} (linkerd-await --port=${admin}); or ${NATIVE_SIDECAR_FIX}`
      : `set ${ANNOTATIONS.proxyAdminShutdown}: enabled on the pod template (or proxy.enableShutdownEndpoint: true in the values)${port}; or ${NATIVE_SIDECAR_FIX}`,
  };
}

/** What the injector adds to a pod, by name: its containers and volumes. */
export interface AddedNames {
  initContainers: readonly string[];
  containers: readonly string[];
  volumes: readonly string[];
}

/**
 * The pod's own containers and volumes with a name that the injector adds too: the API server refuses a pod with two
 * of one name. `volumes` are those of the added volumes the pod has already with other contents (one that has the same
 * contents is not added again, and is not a risk). A container named after one the injector always adds
 * (linkerd-proxy, linkerd-init) makes the pod count as injected already, so only the others can meet here.
 */
export function takenNameRisks(spec: PodSpec, added: AddedNames, volumes: readonly string[]): StartupRisk[] {
  const risks: StartupRisk[] = [];
  const own = new Set([...objectsIn<Container>(spec.initContainers), ...objectsIn<Container>(spec.containers)].map((c) => c.name));
  for (const name of [...added.initContainers, ...added.containers]) {
    if (!own.has(name)) continue;
    risks.push({
      code: 'name_taken',
      container: name,
      text: `the pod already has a container named ${name}, which the injector adds: the API server refuses a pod with two of one name`,
      fix: `rename the pod's ${name} container, or remove it if an earlier injection left it`,
    });
  }
  for (const name of volumes) {
    risks.push({
      code: 'name_taken',
      text:
        `the pod already has a volume named ${name}, unlike the one the injector adds under that name: the API server ` +
        `refuses a pod with two volumes of one name`,
      fix: `rename the pod's ${name} volume, or remove it if an earlier injection left it`,
    });
  }
  return risks;
}

/** The start-up risks of a pod about to be injected with `values`, in the order the pod would meet them. */
export function startupRisks(input: StartupRiskInput): StartupRisk[] {
  const { spec, values } = input;
  const { proxy } = values;
  const native = proxy.nativeSidecar;
  const risks: StartupRisk[] = [];
  const userInits = objectsIn<Container>(spec.initContainers);
  const apps = objectsIn<Container>(spec.containers);

  // Before anything starts: an API server older than native sidecars drops the proxy's restartPolicy (1.28 keeps it only
  // behind its SidecarContainers gate, 1.27 and older do not know it), and then refuses the proxy's probes, which an
  // ordinary init container may not have.
  const version = input.kubernetesVersion;
  if (native && version !== undefined && compareVersions(version, NATIVE_SIDECAR_RELEASE) < 0) {
    const gated = compareVersions(version, NATIVE_SIDECAR_GATED_RELEASE) === 0;
    risks.push({
      code: 'native_sidecar_unsupported',
      container: 'linkerd-proxy',
      text:
        `the API server, Kubernetes ${versionText(version)}, drops the native sidecar proxy's restartPolicy: Always ` +
        `${gated ? 'unless its SidecarContainers gate is on,' : '(native sidecars came in 1.29)'} and refuses the pod for the proxy's probes`,
      fix:
        `set ${ANNOTATIONS.proxyEnableNativeSidecar}: "false" on the pod or its namespace (or proxy.nativeSidecar: false in ` +
        `Linkerd's values), or upgrade the cluster to Kubernetes ${versionText(NATIVE_SIDECAR_RELEASE)} or later`,
    });
  }

  // Before anything starts: kube-apiserver's PodSecurity admission refuses linkerd-init's capabilities at baseline and
  // above (the network validator adds none, and the proxy takes the first app container's).
  const level = input.podSecurityEnforce;
  if (!values.cniEnabled && level !== undefined && CAPABILITY_RESTRICTING_LEVELS.has(level)) {
    risks.push({
      code: 'pod_security_refuses_init',
      container: 'linkerd-init',
      text:
        `the namespace enforces Pod Security ${JSON.stringify(level)}, which forbids linkerd-init's NET_ADMIN and ` +
        `NET_RAW capabilities: the API server refuses the pod`,
      fix:
        `install the Linkerd CNI plugin (cniEnabled: true), which replaces linkerd-init with linkerd-network-validator, ` +
        `or set the namespace's pod-security.kubernetes.io/enforce to privileged`,
    });
  }

  // At restricted, every container must meet it, the injected ones too. linkerd-init never can (above); the proxy takes
  // the first app container's capabilities, so an app that meets the level brings the proxy with it, but the debug
  // sidecar sets no securityContext, and values may give the proxy or the validator one that does not.
  if (level === 'restricted') {
    for (const c of input.injectedContainers ?? []) {
      const container = c.name ?? '';
      if (container === INIT_CONTAINER) continue;
      const refused = restrictedViolations(c, spec);
      if (refused.length === 0) continue;
      risks.push({
        code: 'pod_security_refuses_container',
        container,
        text: `Pod Security "restricted" in this namespace refuses ${container} (${refused.join(', ')}), and with it the pod`,
        fix: restrictedFix(container),
      });
    }
  }

  // linkerd-init stops at the first iptables command that fails, and the pod with it.
  if (!values.cniEnabled) risks.push(...initRuleRisks(values));

  // Under the CNI plugin the redirect exists before any container runs, but a classic proxy starts only after the
  // init containers: their connections are redirected to a port nobody listens on yet.
  if (values.cniEnabled && !native) {
    for (const c of userInits) {
      if (runAsUser(c, spec) === proxy.uid) continue;
      risks.push({
        code: 'init_container_network_under_cni',
        container: c.name ?? '',
        text:
          `init container ${named(c.name ?? '')} runs before the proxy while the Linkerd CNI plugin already ` +
          `redirects the pod's traffic: any connection it opens fails (seen as a timeout or connection refused)`,
        fix:
          `if it needs the network, run it as the proxy's user (securityContext.runAsUser: ${proxy.uid}; its traffic ` +
          `is then not meshed), or skip its destination ports (config.linkerd.io/skip-outbound-ports), or use a native ` +
          `sidecar proxy (config.linkerd.io/proxy-enable-native-sidecar: "true", Kubernetes 1.29+), which starts first`,
      });
    }
  }

  const restartPolicy = typeof spec['restartPolicy'] === 'string' ? spec['restartPolicy'] : '';
  const runsToCompletion = JOB_KINDS.has(input.workloadKind) || restartPolicy === 'Never' || restartPolicy === 'OnFailure';
  if (runsToCompletion && !native) {
    const what = input.workloadKind === 'job' ? 'a Job' : input.workloadKind === 'cronjob' ? 'a CronJob' : `restartPolicy ${restartPolicy}`;
    const risk = completionRisk(what, apps, proxy);
    if (risk) risks.push(risk);
  }

  if (!proxy.await && !native) {
    risks.push({
      code: 'proxy_await_disabled',
      container: 'linkerd-proxy',
      text:
        `${ANNOTATIONS.proxyAwait} is disabled: the app containers start at the same time as the proxy, and connections they ` +
        `open before it is ready fail`,
      fix: `remove ${ANNOTATIONS.proxyAwait}: disabled (the default holds the app until the proxy is ready), or make the app retry its first connections`,
    });
  }

  const ports = declaredPorts(spec);
  for (const { port, container } of ports) {
    const clash = proxyPortName(proxy.ports, port);
    if (clash === undefined) continue;
    risks.push({
      code: 'container_port_is_proxy_port',
      container,
      text: `container ${named(container)} declares port ${port}, the proxy's ${clash} port: one of the two cannot listen on it`,
      fix: `move the container to another port, or move the proxy's (config.linkerd.io/${clash}-port)`,
    });
  }

  // The port lists are parsed only when they can matter: most pods declare no port that skips the proxy.
  const skipped = values.proxyInit.ignoreInboundPorts;
  const names = ports.length > 0 && skipped !== '' ? (input.namedPorts ?? namedPorts(spec)) : undefined;
  const skippedIn = names ? merged(ranges(skipped, names)) : [];
  let requireIdentity: PortRange[] | undefined;
  let explicitOpaque: PortRange[] | undefined;
  const seen = new Set<number>();
  for (const { port, container } of ports) {
    if (seen.has(port) || !within(port, skippedIn)) continue;
    seen.add(port);
    requireIdentity ??= merged(ranges(proxy.requireIdentityOnInboundPorts, names ?? new Map()));
    const opaque = input.explicitOpaquePorts;
    explicitOpaque ??= opaque === undefined ? [] : merged(ranges(opaque, names ?? new Map()));
    if (within(port, requireIdentity)) {
      risks.push({
        code: 'skipped_port_requires_identity',
        container,
        text:
          `port ${port} is in skip-inbound-ports and in require-identity-on-inbound-ports: its traffic bypasses the ` +
          `proxy, so the identity requirement is never enforced`,
        fix: `take ${port} out of ${ANNOTATIONS.skipInboundPorts} if clients must be authenticated there`,
      });
    }
    if (within(port, explicitOpaque)) {
      risks.push({
        code: 'skipped_port_is_opaque',
        container,
        text: `port ${port} is in skip-inbound-ports and in opaque-ports: its traffic bypasses the proxy, so it is neither meshed nor opaque`,
        fix: `to mesh it without protocol detection, take ${port} out of ${ANNOTATIONS.skipInboundPorts} and keep it in ${ANNOTATIONS.opaquePorts}`,
      });
    }
  }

  // linkerd-init (and the CNI plugin) exempt the proxy's uid from the outbound redirect: an app running as that uid
  // is never meshed.
  for (const c of apps) {
    if (runAsUser(c, spec) !== proxy.uid) continue;
    risks.push({
      code: 'container_runs_as_proxy_uid',
      container: c.name ?? '',
      text: `container ${named(c.name ?? '')} runs as uid ${proxy.uid}, the proxy's: its outbound traffic bypasses the proxy (no mTLS, no metrics)`,
      fix: `run it as another user, or change the proxy's (config.linkerd.io/proxy-uid)`,
    });
  }
  return risks;
}

// Remembered per text: the configured outbound list (4567,4568 by default) is read for every pod.
const outboundPortsRefusal = memoizeText((list: string) => portListRefusal('--outbound-ports-to-ignore', list));
const ipv4SubnetsRefusal = memoizeText((list: string) => subnetsRefusal(list, false));
const dualSubnetsRefusal = memoizeText((list: string) => subnetsRefusal(list, true));

/**
 * What iptables refuses of the rules linkerd-init writes for the configuration's skipped subnets and outbound ports,
 * which Linkerd renders as written; the plan (iptables.ts) refuses the same arguments for the same reasons.
 */
function initRuleRisks(values: LinkerdValues): StartupRisk[] {
  const { skipSubnets, ignoreOutboundPorts } = values.proxyInit;
  const risks: StartupRisk[] = [];
  const refused = (why: string | undefined, fix: string): void => {
    if (why === undefined) return;
    const text = `${why}: linkerd-init stops with an error and the pod never starts`;
    risks.push({ code: 'iptables_refuses_init_rule', container: INIT_CONTAINER, text, fix });
  };
  const subnetsRefused = values.disableIPv6 ? ipv4SubnetsRefusal : dualSubnetsRefusal;
  refused(
    skipSubnets === '' ? undefined : subnetsRefused(skipSubnets),
    values.disableIPv6
      ? `list only IPv4 subnets, each prefix length without a leading 0 (10.0.0.0/8), in ` +
          `${ANNOTATIONS.skipSubnets} (or proxyInit.skipSubnets in Linkerd's values)`
      : `remove ${ANNOTATIONS.skipSubnets} (and proxyInit.skipSubnets from Linkerd's values): with IPv6 on ` +
          `(disableIPv6: false) proxy-init gives every subnet to both iptables and ip6tables, and one of the two ` +
          'refuses each',
  );
  refused(
    ignoreOutboundPorts === '' ? undefined : outboundPortsRefusal(ignoreOutboundPorts),
    `give ${ANNOTATIONS.skipOutboundPorts} ports or ranges without spaces around them (443,8000-8100), or remove it`,
  );
  return risks;
}

/** A risk as one short line, for AdmissionResponse warnings and one-line reports. */
export function riskWarning(risk: StartupRisk): string {
  return `start-up risk (${risk.code}): ${risk.text}`;
}
