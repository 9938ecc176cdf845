/**
 * `proxy-injector explain`: for each pod or workload in some manifests, what the webhook will decide and why, how the
 * pod will start (linkerd-init and its iptables rules, or the CNI validator; the proxy; the await hook; the app), and
 * what may go wrong at start-up, with the fix.
 */
import {
  ignoredAnnotation,
  isEngineError,
  iptablesPlan,
  inject,
  locate,
  runAsUser,
  type InjectionResult,
  type IptablesPlan,
  type SkipReasonCode,
  type StartupRisk,
  isObject,
  objectName,
  parseKubernetesVersion,
  type KubernetesVersion,
  isWorkloadKind,
  names,
  podSecurityLabels,
  type PodSecurityDefaults,
  objectsIn,
  stringMap,
  misplacedText,
  templateAnnotationsPath,
  type Container,
  type PodSpec,
} from '../engine/index.js';
import { inputFailure, runOnProcess, UsageError, usageFailure, type CliIo, type CliResult } from './command-io.js';
import { annotationsFor, flagAnnotations, parseManifestArgs, podSecurityFlags, type FlagAnnotations, type ParsedOptions } from './inject-flags.js';
import { annotationOps, configure, EMBEDDED_DEFAULTS_NOTE, noContainersText, notAnObjectText, type Configured } from './inject.js';
import { applyToValue, InputError, listItems, readDocuments } from '../manifests/index.js';
import { inputReader } from './remote-inputs.js';

const { ANNOTATIONS, DEBUG_CONTAINER, INIT_CONTAINER, INJECT_ANNOTATION, INJECT_INGRESS, PROXY_CONTAINER, VALIDATOR_CONTAINER } = names;

/** One step of the pod's start-up, in the order the kubelet takes them. */
export interface StartupStep {
  /** `init`: runs to completion before the next; `sidecar`: a native sidecar; `container`: a regular container. */
  phase: 'init' | 'sidecar' | 'container';
  container: string;
  /** Who added it: the injector, or the workload's own. */
  from: 'linkerd' | 'workload';
  what: string;
  /** linkerd-init's nat rules. */
  iptables?: IptablesPlan;
}

/** One reason of a decision; `ignored` lists the pod template's configuration annotations whose values were ignored. */
interface Reason {
  code: string;
  text: string;
  fix?: string;
  ignored?: string[];
}

/** What `explain` says about one object; `--output json` prints these. */
export interface Explanation {
  source: string;
  kind: string;
  name: string;
  namespace: string;
  decision: {
    outcome: InjectionResult['outcome'];
    /** Why, as sentences: the reasons not to inject, or what asked for injection. */
    reasons: Reason[];
    annotationAt: InjectionResult['annotationAt'];
  };
  /** How the injected pod starts; empty when it is not injected. */
  startup: StartupStep[];
  /** linkerd-init's nat rules (also under its step), when the pod gets linkerd-init. */
  iptables?: IptablesPlan;
  risks: StartupRisk[];
  /** Configuration values that were ignored, with why. */
  warnings: string[];
}

const REASON_FIX: Partial<Record<SkipReasonCode, string>> = {
  injection_enable_annotation_absent: `annotate the pod template or its namespace with ${INJECT_ANNOTATION}: enabled (--namespace-annotation ${INJECT_ANNOTATION}=enabled to see the namespace's effect)`,
  injection_disable_annotation_present: `remove ${INJECT_ANNOTATION}: disabled from the pod template`,
  invalid_inject_annotation_at_workload: `set ${INJECT_ANNOTATION} to enabled, ingress or disabled`,
  invalid_inject_annotation_at_ns: `set the namespace's ${INJECT_ANNOTATION} to enabled, ingress or disabled`,
  host_network_enabled: 'pods on the host network cannot be meshed: drop hostNetwork, or leave the pod unmeshed',
  sidecar_already_exists: 'the pod has a proxy already (maybe injected manually): uninject it first (proxy-injector uninject)',
  disabled_automount_service_account_token_account:
    'set automountServiceAccountToken: true, or identity.serviceAccountTokenProjection: true in the Linkerd values',
  udp_ports_enabled: 'UDP is not proxied; the pod is still injected from the webhook',
  mirror_pod:
    'a static pod cannot be meshed: the kubelet runs it from a file on its node, without a service account; run it as a DaemonSet or Deployment to mesh it',
  windows_pod: 'Linkerd has no proxy for Windows: leave the pod unmeshed (annotate it linkerd.io/inject: disabled to say so)',
};

const EXPLAIN_HELP = `Usage: proxy-injector explain [flags] FILE|DIR|URL|- ...

For each Pod, Deployment, StatefulSet, DaemonSet, ReplicaSet, ReplicationController, Job and CronJob in the
manifests, says what the admission webhook will do when its pods are created: whether they are injected and
every reason; how the pod will start (linkerd-init with the iptables rules it writes, or the CNI network
validator; the proxy and its linkerd-await hook or native-sidecar start; the app containers); and the
start-up risks, each with its fix. Other objects are not reported; Namespaces in the input supply the
annotations and labels of their pods' namespace, and its ResourceQuotas and LimitRanges say whether the
API server will accept the containers the injector adds.

Inputs are files, directories, https:// URLs (fetched within 30 s, up to 64 MiB, following up to 10
redirects; plain http is refused) or stdin ("-"). Configuration and proxy flags are those of
'proxy-injector inject' (see 'inject --help'); a proxy flag acts as the annotation it writes. Also:
      --namespace-annotation K=V                an annotation of the pods' namespace (repeatable; wins over a
                                                Namespace in the input)
      --namespace-label K=V                     a label of the pods' namespace, such as
                                                pod-security.kubernetes.io/enforce=baseline (repeatable; wins
                                                over a Namespace in the input)
      --pod-security-default LEVEL              the level kube-apiserver's own PodSecurity configuration
                                                enforces where a namespace has no enforce label (as serve
                                                takes it)
      --pod-security-exempt NS                  a namespace that configuration exempts (repeatable)
      --cni                                     as if the Linkerd CNI plugin is installed (cniEnabled: true)
      --kubectl-default-container               as serve --kubectl-default-container: when the proxy goes
                                                first, the app's first container stays kubectl's default
      --kubernetes-version X.Y                  the API server's release (kubectl version prints it): one
                                                before 1.29 refuses a pod whose proxy is a native sidecar
                                                (serve reads it from the API server)
  -o, --output text|json                        a report (default), or a JSON array with one record per object

Exit status: 0 explained; 1 the input or configuration is invalid; 2 usage error.
`;

/** Reads the `K=V` of `flag`, keeping any further `=` in the value. */
function parseKeyValue(flag: string, text: string): [string, string] {
  const eq = text.indexOf('=');
  if (eq <= 0) throw new UsageError(`--${flag} ${JSON.stringify(text)}: expected KEY=VALUE`);
  return [text.slice(0, eq), text.slice(eq + 1)];
}

/** Every `K=V` given to a repeatable flag, as a map. */
function keyValues(opts: ParsedOptions, flag: string): Record<string, string> {
  const given = opts[flag];
  return Object.fromEntries((Array.isArray(given) ? given : []).map((text) => parseKeyValue(flag, String(text))));
}

const argsOf = (c: Container): string[] => (Array.isArray(c['args']) ? c['args'].filter((a): a is string => typeof a === 'string') : []);

function argValue(args: readonly string[], flag: string): string | undefined {
  const i = args.indexOf(flag);
  if (i >= 0) return args[i + 1];
  const inline = args.find((a) => a.startsWith(`${flag}=`));
  return inline?.slice(flag.length + 1);
}

function postStartCommand(c: Container): string | undefined {
  const lifecycle = isObject(c['lifecycle']) ? c['lifecycle'] : undefined;
  const postStart = lifecycle && isObject(lifecycle['postStart']) ? lifecycle['postStart'] : undefined;
  const exec = postStart && isObject(postStart['exec']) ? postStart['exec'] : undefined;
  return Array.isArray(exec?.['command']) ? exec['command'].join(' ') : undefined;
}

interface SequenceContext {
  cni: boolean;
  native: boolean;
  proxyUid: number;
  spec: PodSpec;
  /** The injected pod's `kubectl.kubernetes.io/default-container`, if it has one. */
  defaultContainer: string | undefined;
}

/** The pod's start-up, read from the injected pod spec in the order the kubelet runs it. */
function startupSequence(inits: Container[], containers: Container[], ctx: SequenceContext): { steps: StartupStep[]; errors: string[] } {
  const steps: StartupStep[] = [];
  const errors: string[] = [];
  let proxyStarted = false;
  let redirected = false;
  for (const c of inits) {
    const name = c.name ?? '';
    if (name === INIT_CONTAINER) {
      const step: StartupStep = {
        phase: 'init',
        container: name,
        from: 'linkerd',
        what: 'writes the nat rules below, which send the pod\'s TCP traffic through the proxy, then exits',
      };
      try {
        step.iptables = iptablesPlan(c);
      } catch (err) {
        if (!isEngineError(err)) throw err;
        errors.push(`linkerd-init's arguments: ${err.message}`);
      }
      steps.push(step);
      redirected = true;
    } else if (name === VALIDATOR_CONTAINER) {
      const args = argsOf(c);
      steps.push({
        phase: 'init',
        container: name,
        from: 'linkerd',
        what:
          `checks that the Linkerd CNI plugin already redirected the pod's traffic: it listens on ${argValue(args, '--listen-addr') ?? 'the outbound port'} ` +
          `and connects to ${argValue(args, '--connect-addr') ?? 'an address outside the pod'}, which must reach it; if not, it fails after ` +
          `${argValue(args, '--timeout') ?? 'its timeout'} and the pod stays in Init:CrashLoopBackOff (check the node with 'proxy-injector check cni')`,
      });
      redirected = true;
    } else if (name === PROXY_CONTAINER) {
      steps.push({
        phase: 'sidecar',
        container: name,
        from: 'linkerd',
        what:
          'starts as a native sidecar (restartPolicy: Always); the kubelet waits for its startup probe before the next ' +
          'container, and stops it after the app containers have exited',
      });
      proxyStarted = true;
    } else {
      let network: string;
      if (proxyStarted) network = 'its traffic goes through the proxy, which is running';
      else if (redirected || ctx.cni) {
        network =
          runAsUser(c, ctx.spec) === ctx.proxyUid
            ? `it runs as the proxy's uid ${ctx.proxyUid}, so its traffic bypasses the redirect (unmeshed)`
            : 'its traffic is already redirected to the proxy, which has not started: it has no network';
      } else network = 'the rules are not written yet: its traffic is not meshed';
      steps.push({ phase: 'init', container: name, from: 'workload', what: `runs to completion; ${network}` });
    }
  }
  let held = false;
  for (const c of containers) {
    const name = c.name ?? '';
    if (name === PROXY_CONTAINER) {
      const hook = postStartCommand(c);
      steps.push({
        phase: 'container',
        container: name,
        from: 'linkerd',
        what: hook
          ? `starts first; its postStart hook (${hook}) holds the containers after it until the proxy is ready; ${firstContainerNote(ctx.defaultContainer)}`
          : 'starts with the app containers, after them in the list: nothing waits for it to be ready',
      });
      if (hook) held = true;
      continue;
    }
    const linkerd = name === DEBUG_CONTAINER;
    const when = held ? 'starts once the proxy is ready' : ctx.native ? 'starts once the proxy sidecar has started' : 'starts';
    steps.push({ phase: 'container', container: name, from: linkerd ? 'linkerd' : 'workload', what: when });
  }
  return { steps, errors };
}

/** What kubectl logs and exec reach without -c in a pod whose first container is the proxy. */
function firstContainerNote(defaultContainer: string | undefined): string {
  return defaultContainer === undefined
    ? `being first, it is what kubectl logs and exec reach without -c (serve --kubectl-default-container names the app's first container instead)`
    : `kubectl logs and exec without -c reach ${defaultContainer}, which the pod's ${names.KUBECTL_DEFAULT_CONTAINER_ANNOTATION} names`;
}

interface ExplainSettings {
  configured: Configured;
  flags: FlagAnnotations;
  controlPlaneNamespace: string;
  namespaceFlags: { annotations: Record<string, string>; labels: Record<string, string> };
  /** The level kube-apiserver's own PodSecurity configuration enforces without a label, and the namespaces it exempts. */
  podSecurity: PodSecurityDefaults;
  namespaces: Map<string, { annotations: Record<string, string>; labels: Record<string, string> }>;
  /** ResourceQuotas and LimitRanges in the input, by namespace. */
  quotas: Map<string, { resourceQuotas: unknown[]; limitRanges: unknown[] }>;
  /** As serve --kubectl-default-container. */
  kubectlDefaultContainer: boolean;
  /** The API server's release, when given. */
  kubernetesVersion: KubernetesVersion | undefined;
}

/**
 * The annotations the injector reads on a pod (linkerd.io/inject and the proxy's config.* ones, those a namespace can
 * also give) that a workload carries on its own metadata and not on its pod template: a common slip
 * (linkerd/linkerd2#4125), silently ignored.
 */
function misplacedAnnotations(object: Record<string, unknown>, template: Readonly<Record<string, string>>): string[] {
  const metadata = object['metadata'];
  const annotations = stringMap(isObject(metadata) ? metadata['annotations'] : undefined);
  return Object.keys(annotations)
    .filter((key) => names.NAMESPACE_INHERITED_ANNOTATIONS.includes(key) && !(key in template))
    .sort();
}

/** Explains one workload, or returns undefined for an object that is not one. */
export function explainObject(object: unknown, source: string, s: ExplainSettings): Explanation | undefined {
  if (!isObject(object)) return undefined;
  const kind = typeof object['kind'] === 'string' ? object['kind'].toLowerCase() : '';
  if (!isWorkloadKind(kind)) return undefined;
  const located = locate(object);
  const template = located.template ?? {};
  const own = stringMap(isObject(template.metadata) ? template.metadata.annotations : undefined);
  const requested = annotationsFor(s.flags, own, 'template');
  if (s.flags.ingress) requested[INJECT_ANNOTATION] = INJECT_INGRESS;
  const flagged = applyToValue(structuredClone(object), annotationOps(template as Record<string, unknown>, `${located.prefix}/metadata`, requested));
  const namespace = located.namespace || 'default';
  const known = s.namespaces.get(namespace);
  const namespaceAnnotations = { ...known?.annotations, ...s.namespaceFlags.annotations };
  const namespaceLabels = podSecurityLabels({ ...known?.labels, ...s.namespaceFlags.labels }, namespace, s.podSecurity) ?? {};

  const constraints = s.quotas.get(namespace);
  const result = inject({
    object: flagged,
    namespace,
    namespaceAnnotations,
    namespaceLabels,
    ...(constraints && { resourceConstraints: constraints }),
    ...(s.kubectlDefaultContainer && { kubectlDefaultContainer: true }),
    ...(s.kubernetesVersion && { kubernetesVersion: s.kubernetesVersion }),
    origin: 'webhook',
    config: { values: s.configured.values, controlPlaneNamespace: s.controlPlaneNamespace },
  });
  const explanation: Explanation = {
    source,
    kind,
    name: objectName(object),
    namespace,
    decision: { outcome: result.outcome, reasons: [], annotationAt: result.annotationAt },
    startup: [],
    risks: result.risks,
    warnings: [...result.warnings],
  };
  // Annotations on a workload's own metadata, where the injector never looks (it sees the pods): said, with where they go.
  const misplaced = located.prefix === '' ? [] : misplacedAnnotations(object, own);
  const templatePath = templateAnnotationsPath(kind);
  // When the pod is skipped for want of linkerd.io/inject and the workload carries it, the fix says where it goes.
  const moveInject = misplaced.includes(INJECT_ANNOTATION) && result.reasons.some((r) => r.code === 'injection_enable_annotation_absent');
  for (const key of misplaced) {
    if (key === INJECT_ANNOTATION && moveInject) continue;
    explanation.warnings.push(misplacedText([key], `the ${kind}'s own metadata`, templatePath));
  }
  if (result.outcome !== 'injected') {
    explanation.decision.reasons = result.reasons.map((r) => {
      const fix =
        moveInject && r.code === 'injection_enable_annotation_absent'
          ? `${misplacedText([INJECT_ANNOTATION], `the ${kind}'s own metadata`, templatePath)}; or annotate the namespace`
          : REASON_FIX[r.code];
      return { ...r, ...(fix && { fix }) };
    });
    return explanation;
  }
  explanation.decision.reasons = whyInjected(result, own, namespaceAnnotations);
  const empty = noContainersText(kind, template);
  if (empty !== undefined) explanation.warnings.push(empty);
  if (result.udp) {
    explanation.decision.reasons.push({ code: 'udp_ports_enabled', text: 'the pod declares UDP ports: UDP traffic does not go through the proxy' });
  }
  const injected = locate(applyToValue(flagged, result.patch)).template ?? {};
  const spec: PodSpec = isObject(injected.spec) ? injected.spec : {};
  const inits = objectsIn<Container>(spec.initContainers);
  const containers = objectsIn<Container>(spec.containers);
  const proxy = [...inits, ...containers].find((c) => c.name === PROXY_CONTAINER);
  const { steps, errors } = startupSequence(inits, containers, {
    cni: result.proxy?.cni ?? false,
    native: result.proxy?.nativeSidecar ?? false,
    // The uid the proxy was rendered with, which the pod's annotations may have changed.
    proxyUid: (proxy && runAsUser(proxy, spec)) ?? s.configured.values.proxy.uid,
    spec,
    defaultContainer: stringMap(isObject(injected.metadata) ? injected.metadata.annotations : undefined)[names.KUBECTL_DEFAULT_CONTAINER_ANNOTATION],
  });
  explanation.startup = steps;
  explanation.warnings.push(...errors);
  const plan = steps.find((st) => st.iptables)?.iptables;
  if (plan) explanation.iptables = plan;
  return explanation;
}

/** What asked for injection, in words. */
function whyInjected(result: InjectionResult, own: Record<string, string>, ns: Record<string, string>): Reason[] {
  const where = result.annotationAt === 'namespace' ? 'the namespace' : 'the pod template';
  const value = result.annotationAt === 'namespace' ? ns[INJECT_ANNOTATION] : own[INJECT_ANNOTATION];
  const mode = result.proxy;
  const out: Reason[] = [{ code: 'inject_annotation', text: `${INJECT_ANNOTATION}: ${value ?? 'enabled'} on ${where}` }];
  // A value the engine ignored configures nothing: said so here, as the warnings below the report say why.
  const ignored = Object.entries(result.workloadConfiguration)
    .filter(([k, v]) => ignoredAnnotation(result.warnings, k, v))
    .map(([k]) => k);
  const config = Object.entries(result.workloadConfiguration).map(([k, v]) => `${k}: ${v}${ignored.includes(k) ? ' (ignored)' : ''}`);
  if (config.length > 0) {
    out.push({ code: 'workload_configuration', text: `configured by the pod template: ${config.join(', ')}`, ...(ignored.length > 0 && { ignored }) });
  }
  if (mode) {
    const how = mode.nativeSidecar
      ? 'native sidecar'
      : `classic sidecar${mode.await ? ' with linkerd-await' : ` without linkerd-await (${ANNOTATIONS.proxyAwait}: disabled)`}`;
    out.push({ code: 'proxy_mode', text: `${how}; traffic redirected by ${mode.cni ? 'the Linkerd CNI plugin' : 'linkerd-init'}` });
  }
  return out;
}

const MARK = { injected: '√', annotated: '×', skipped: '×' } as const;

/** The human report: one block per object. */
export function renderExplanations(list: readonly Explanation[]): string {
  const out: string[] = [];
  for (const e of list) {
    if (out.length > 0) out.push('');
    out.push(`${e.kind} ${JSON.stringify(e.name || '(unnamed)')} in namespace ${JSON.stringify(e.namespace)} (${e.source})`);
    const verdict = e.decision.outcome === 'injected' ? 'injected' : 'not injected';
    out.push(`  decision: ${verdict}`);
    for (const r of e.decision.reasons) {
      out.push(`    ${r.code === 'udp_ports_enabled' || r.ignored ? '‼' : MARK[e.decision.outcome]} ${r.text}`);
      if (r.fix) out.push(`      fix: ${r.fix}`);
    }
    if (e.startup.length > 0) {
      out.push('  start-up:');
      e.startup.forEach((st, i) => {
        const label = st.phase === 'container' ? 'container' : st.phase === 'sidecar' ? 'init (sidecar)' : 'init';
        out.push(`    ${i + 1}. ${label} ${st.container}: ${st.what}`);
        if (st.iptables) {
          for (const [family, lines] of [['iptables', st.iptables.ipv4], ['ip6tables', st.iptables.ipv6]] as const) {
            if (lines.length === 0) continue;
            out.push(`         ${family} -t nat:`);
            for (const line of lines) out.push(`           ${line}`);
          }
        }
      });
    }
    if (e.risks.length > 0) {
      out.push('  risks:');
      for (const r of e.risks) {
        out.push(`    ‼ ${r.text}`);
        out.push(`      fix: ${r.fix}`);
      }
    } else if (e.decision.outcome === 'injected') {
      out.push('  risks: none found');
    }
    for (const w of e.warnings) out.push(`  ‼ ${w}`);
  }
  return out.length > 0 ? `${out.join('\n')}\n` : '';
}

/** Runs `explain`; nothing is written anywhere, the caller prints the result. */
export async function runExplain(argv: readonly string[], io: CliIo = {}): Promise<CliResult> {
  const cwd = io.cwd ?? process.cwd();
  let opts: ParsedOptions;
  let inputs: string[];
  let json: boolean;
  let namespaceFlags: ExplainSettings['namespaceFlags'];
  let podSecurity: PodSecurityDefaults;
  let kubernetesVersion: KubernetesVersion | undefined;
  try {
    ({ opts, inputs } = parseManifestArgs(argv, {
      'namespace-annotation': { type: 'string', multiple: true },
      'namespace-label': { type: 'string', multiple: true },
      'pod-security-default': { type: 'string' },
      'pod-security-exempt': { type: 'string', multiple: true },
      cni: { type: 'boolean' },
      'kubectl-default-container': { type: 'boolean' },
      'kubernetes-version': { type: 'string' },
    }));
    if (opts['help'] === true) return { stdout: EXPLAIN_HELP, stderr: '', code: 0 };
    const output = opts['output'];
    if (output !== undefined && output !== 'text' && output !== 'json') {
      throw new UsageError(`--output ${JSON.stringify(output)}: expected text or json`);
    }
    json = output === 'json';
    if (inputs.length === 0) throw new UsageError('no input: give files, directories, or - for stdin');
    namespaceFlags = { annotations: keyValues(opts, 'namespace-annotation'), labels: keyValues(opts, 'namespace-label') };
    podSecurity = podSecurityFlags(opts['pod-security-default'], opts['pod-security-exempt']);
    const release = opts['kubernetes-version'];
    if (release !== undefined) {
      kubernetesVersion = typeof release === 'string' ? parseKubernetesVersion(release) : undefined;
      if (!kubernetesVersion) throw new UsageError(`--kubernetes-version ${JSON.stringify(release)}: expected a release such as 1.28 or v1.28.5`);
    }
  } catch (err) {
    return usageFailure('explain', (err as Error).message, EXPLAIN_HELP);
  }
  let configured: Configured;
  let flags: FlagAnnotations;
  /** Each document's objects (a List's items), with where the document is. */
  const documents: Array<{ source: string; index: number; objects: unknown[] }> = [];
  const warnings: string[] = [];
  try {
    // The proxy is rendered, so it needs trust anchors; the demo root does not change how the pod starts.
    configured = configure(opts, cwd, true);
    // The embedded defaults change how a pod starts; the demo trust root does not.
    if (configured.warnings.includes(EMBEDDED_DEFAULTS_NOTE)) warnings.push(EMBEDDED_DEFAULTS_NOTE);
    if (opts['cni'] === true) configured.values.cniEnabled = true;
    flags = flagAnnotations(opts, configured.values);
    for await (const m of readDocuments(inputs, inputReader(io, cwd), warnings)) {
      documents.push({ source: m.source, index: m.index, objects: (listItems(m.value) ?? [m.value]).filter((o) => o !== null) });
    }
  } catch (err) {
    if (err instanceof UsageError) return usageFailure('explain', err.message, EXPLAIN_HELP);
    if (err instanceof InputError || isEngineError(err)) return inputFailure('explain', err);
    throw err;
  }

  // Namespaces, ResourceQuotas and LimitRanges in the input first: they count for the pods of their namespace,
  // wherever they appear.
  const namespaces: ExplainSettings['namespaces'] = new Map();
  const quotas: ExplainSettings['quotas'] = new Map();
  for (const object of documents.flatMap((d) => d.objects)) {
    if (!isObject(object)) continue;
    const meta = isObject(object['metadata']) ? object['metadata'] : {};
    if (object['kind'] === 'Namespace' && typeof meta['name'] === 'string') {
      namespaces.set(meta['name'], { annotations: { ...stringMap(meta['annotations']) }, labels: { ...stringMap(meta['labels']) } });
    }
    if (object['kind'] === 'ResourceQuota' || object['kind'] === 'LimitRange') {
      const ns = typeof meta['namespace'] === 'string' && meta['namespace'] !== '' ? meta['namespace'] : 'default';
      const held = quotas.get(ns) ?? { resourceQuotas: [], limitRanges: [] };
      (object['kind'] === 'ResourceQuota' ? held.resourceQuotas : held.limitRanges).push(object);
      quotas.set(ns, held);
    }
  }
  const settings: ExplainSettings = {
    configured,
    flags,
    controlPlaneNamespace: (opts['linkerd-namespace'] as string | undefined) || 'linkerd',
    namespaceFlags,
    podSecurity,
    namespaces,
    quotas,
    kubectlDefaultContainer: opts['kubectl-default-container'] === true,
    kubernetesVersion,
  };
  const explanations: Explanation[] = [];
  const problems: string[] = [];
  // How many documents each input holds, counted once: a source with several names each by its index.
  const perSource = new Map<string, number>();
  for (const d of documents) perSource.set(d.source, (perSource.get(d.source) ?? 0) + 1);
  for (const d of documents) {
    const source = `${d.source}${(perSource.get(d.source) ?? 0) > 1 ? `#${d.index}` : ''}`;
    for (const object of d.objects) {
      // As inject refuses it: a scalar or a list at the top is nothing kubectl would apply.
      if (!isObject(object)) {
        problems.push(`${source}: ${notAnObjectText(object)}`);
        continue;
      }
      try {
        const e = explainObject(object, source, settings);
        if (e) explanations.push(e);
      } catch (err) {
        // A document the yaml library reads may still nest deeper than the explanation can recurse.
        if (err instanceof RangeError) {
          problems.push(`${source}: collections nested too deeply to process`);
          continue;
        }
        if (!isEngineError(err)) throw err;
        problems.push(`${source}: ${isObject(object) ? `${String(object['kind'])} ${JSON.stringify(objectName(object))}: ` : ''}${err.message}`);
      }
    }
  }
  if (problems.length > 0) return { stdout: '', stderr: problems.map((p) => `proxy-injector explain: ${p}\n`).join(''), code: 1 };
  const notes = warnings.map((w) => `proxy-injector explain: ${w}\n`).join('');
  const stderr = notes + (explanations.length === 0 ? 'proxy-injector explain: no pods or workloads in the input\n' : '');
  const stdout = json ? `${JSON.stringify(explanations, null, 2)}\n` : renderExplanations(explanations);
  return { stdout, stderr, code: 0 };
}

/** `proxy-injector explain` on the process's stdin, stdout and stderr. */
export async function runExplainCommand(args: string[]): Promise<number> {
  return runOnProcess(runExplain, args);
}
