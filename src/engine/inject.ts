/** The engine's entry points: decide whether to inject an object, and build the JSON patch that does it. */
import { createHash } from 'node:crypto';
import { EngineError } from './errors.js';
import {
  ANNOTATIONS,
  CONTROL_PLANE_NS_LABEL,
  CREATED_BY_ANNOTATION,
  INJECT_ANNOTATION,
  KUBECTL_DEFAULT_CONTAINER_ANNOTATION,
  POD_SECURITY_ENFORCE_LABEL,
  PROXY_ANNOTATIONS,
  PROXY_LABEL_PREFIX,
  PROXY_VERSION_ANNOTATION,
  TRACING_ATTRIBUTE_PREFIX,
  TRUST_ROOT_SHA256_ANNOTATION,
  WORKLOAD_NS_LABEL,
} from './names.js';
import { firstContainer, report, type AnnotationAt, type Origin, type SkipReason } from './decision.js';
import { covers, emptyMetadata, hasItems, hasKeys, isObject, objectsIn, type Container, type EnvVar, type Json, type PodSpec, type PodTemplate, type ServicePort } from './k8s.js';
import { applyOverrides, inheritedNamespaceAnnotations } from './overrides.js';
import type { KubernetesVersion } from './kubernetes-version.js';
import { add, addMapEntries, opaquePortsAnnotationPatch, type AddOperation } from './patch.js';
import { defaultOpaquePortsForPod, defaultOpaquePortsForService, inboundPorts, namedPorts } from './ports.js';
import {
  appContext,
  debugContainer,
  initContainer,
  proxyContainer,
  validatorContainer,
  volumes,
} from './render/containers.js';
import { prepareEnv, proxyEnv, type PreparedEnv } from './render/env.js';
import { quotaRisks, type ResourceConstraints } from './quota.js';
import { startupRisks, takenNameRisks, type StartupRisk } from './risks.js';
import { checkValues, type LinkerdValues } from './values.js';
import { keysAmong, locate, stringMap, type Located } from './workload.js';

/** Owner kinds that give the pod a `linkerd.io/proxy-<kind>: <name>` label (CronJobs and bare pods do not). */
const LABELLED_OWNER_KINDS = new Set(['deployment', 'replicationcontroller', 'replicaset', 'job', 'daemonset', 'statefulset']);

/** From the command line the label names the manifest's own workload, which may also be a CronJob. */
const LABELLED_CLI_KINDS = new Set([...LABELLED_OWNER_KINDS, 'cronjob']);

export interface Owner {
  /** Lowercased kind, e.g. "deployment", "cronjob", "pod". */
  kind: string;
  name: string;
}

/** What the injector added to the pod template. */
export interface Added {
  annotations: Record<string, string>;
  labels: Record<string, string>;
  initContainers: string[];
  containers: string[];
  volumes: string[];
}

/** How the proxy was placed. */
export interface ProxyMode {
  nativeSidecar: boolean;
  await: boolean;
  cni: boolean;
  /** Where the proxy went, e.g. "containers[0]", "containers[-1]" (last) or "initContainers[1]". */
  placement: string;
}

export interface PodPatchInput {
  template: PodTemplate;
  /** JSON-pointer prefix of the template inside the object ("" for a Pod). */
  prefix: string;
  values: LinkerdValues;
  controlPlaneNamespace: string;
  origin: Origin;
  /** The workload that owns the pod, for the `linkerd.io/proxy-<kind>` label. */
  owner?: Owner;
  /** Value of the `linkerd.io/workload-ns` label. */
  workloadNamespace: string;
  /** Annotations the injector adds to the pod; from the webhook they also act as overrides. */
  pendingAnnotations: Record<string, string>;
  /** The namespace's annotations, for the namespace layer of `proxy-additional-env`. */
  namespaceAnnotations?: Record<string, string>;
  /** The namespace's labels, when known: its Pod Security level is a start-up risk. */
  namespaceLabels?: Record<string, string> | undefined;
  /** The namespace's ResourceQuotas and LimitRanges, when known: they may refuse the containers the patch adds. */
  resourceConstraints?: ResourceConstraints | undefined;
  /** The API server's release, when known: one without native sidecars refuses a pod whose proxy is one. */
  kubernetesVersion?: KubernetesVersion | undefined;
  /** What `prepareConfig` worked out for these values; used only when it was worked out for this very object. */
  prepared?: PreparedConfig | undefined;
  /** The template's annotations as `templateAnnotations` reads them, when the caller has read them already. */
  annotations?: TemplateAnnotations | undefined;
  /** Name the app's first container as kubectl's default when the proxy goes first (see InjectionRequest). */
  kubectlDefaultContainer?: boolean | undefined;
}

export interface PodPatch {
  patch: AddOperation[];
  added: Added;
  mode: ProxyMode;
  warnings: string[];
  /** What may go wrong when the injected pod starts, with the fix. */
  risks: StartupRisk[];
}

/** Lowercase hex SHA-256 of the trust anchors exactly as configured, as Linkerd annotates injected pods. */
export function trustRootSha256(pem: string): string {
  return createHash('sha256').update(pem, 'utf8').digest('hex');
}

/**
 * The annotations the overrides read (the inject annotation, config.* and the OpenTelemetry resource attributes that
 * tracing adds), the pending ones winning. Only those are copied: spreading every annotation of a pod with a thousand
 * of them into a new object cost more than the rest of the patch.
 */
function overridable(own: Readonly<Record<string, string>>, pending: Readonly<Record<string, string>>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const key in own) {
    if (readByOverrides(key)) out[key] = own[key] as string;
  }
  return Object.assign(out, pending);
}

/** Whether the overrides read an annotation: the inject annotation, the config.* ones and tracing's resource.opentelemetry.io/*. */
const readByOverrides = (key: string): boolean => key === INJECT_ANNOTATION || key.startsWith('config.') || key.startsWith(TRACING_ATTRIBUTE_PREFIX);

/** A template's annotations, as strings, and among them those the overrides read. */
export interface TemplateAnnotations {
  all: Readonly<Record<string, string>>;
  /** The inject annotation, the config.* ones and tracing's resource attributes. */
  proxy: Readonly<Record<string, string>>;
}

/**
 * Reads a template's annotations in one pass: a pod may carry thousands, which V8 keeps as a dictionary that is slow
 * to walk, so the later steps go over the few this pass picks (the proxy's) rather than over them all again.
 */
export function templateAnnotations(value: unknown): TemplateAnnotations {
  if (!isObject(value)) return { all: {}, proxy: {} };
  const proxy: Record<string, string> = {};
  for (const key in value) {
    const text = value[key];
    // A value that is not a string (from a manifest's YAML) makes stringMap copy the map; the rare case reads the copy.
    if (typeof text !== 'string') {
      const all = stringMap(value);
      return { all, proxy: overridable(all, {}) };
    }
    if (readByOverrides(key)) proxy[key] = text;
  }
  return { all: value as Record<string, string>, proxy };
}

function specOf(template: PodTemplate): PodSpec {
  return isObject(template.spec) ? (template.spec as PodSpec) : {};
}

/**
 * Builds the patch that injects the proxy into a pod template, in Linkerd's operation order. It does not decide
 * whether the pod should be injected: `inject` does. Throws `MISSING_TRUST_ANCHORS` or `INVALID_VALUES`.
 */
export function podPatch(input: PodPatchInput): PodPatch {
  const { template, prefix: P, controlPlaneNamespace: cp } = input;
  if (input.values.identityTrustAnchorsPEM.trim() === '') {
    throw new EngineError(
      'MISSING_TRUST_ANCHORS',
      'no identity trust anchors are configured (the ca-bundle.crt of ConfigMap linkerd-identity-trust-roots)',
    );
  }
  const prepared = input.prepared?.values === input.values ? input.prepared : undefined;
  if (!prepared) checkValues(input.values);
  const metadata = isObject(template.metadata) ? template.metadata : undefined;
  const own = input.annotations ?? templateAnnotations(metadata?.annotations);
  const spec = specOf(template);
  const labels = podLabels(input);
  const names = namedPorts(spec);
  const ownLabels = stringMap(metadata?.labels);
  const overridden = applyOverrides({
    values: input.values,
    annotations: input.origin === 'cli' ? own.all : overridable(own.proxy, input.pendingAnnotations),
    labels: () => ({ ...ownLabels, ...labels }),
    namedPorts: names,
    namespaceAdditionalEnv: input.namespaceAnnotations?.[ANNOTATIONS.proxyAdditionalEnv],
  });
  const values = overridden.values;
  const annotations = podAnnotations(input, values, prepared, own.all, spec);

  const ops: AddOperation[] = [];
  // Each list or map is added first when absent or empty, as Linkerd decides by length: the pod is the same either way.
  const rootMetadata = emptyMetadata(template.metadata);
  if (rootMetadata) ops.push(add(`${P}/metadata`, {}));
  addMapEntries(`${P}/metadata/annotations`, annotations, !rootMetadata && hasKeys(metadata?.annotations), ops);
  addMapEntries(`${P}/metadata/labels`, labels, !rootMetadata && hasKeys(metadata?.labels), ops);
  if (!isObject(template.spec)) ops.push(add(`${P}/spec`, {}));
  if (!hasItems(spec.volumes)) ops.push(add(`${P}/spec/volumes`, []));
  if (!hasItems(spec.initContainers)) ops.push(add(`${P}/spec/initContainers`, []));
  if (!Array.isArray(spec.containers)) ops.push(add(`${P}/spec/containers`, []));

  const added: Added = { annotations, labels, initContainers: [], containers: [], volumes: [] };
  const env = proxyEnv({
    values,
    controlPlaneNamespace: cp,
    inboundPorts: inboundPorts(spec),
    isIngress: overridden.isIngress,
    isGateway: overridden.isGateway,
    prepared: prepared?.env,
  });
  const { placement, takenVolumes } = addContainers(ops, added, { prefix: P, spec, values, debugSidecar: overridden.debugSidecar, env });
  const risks = podRisks(input, { spec, values, names, ownAnnotations: own.all }, ops, added, takenVolumes);
  return {
    patch: ops,
    added,
    mode: { nativeSidecar: values.proxy.nativeSidecar, await: values.proxy.await, cni: values.cniEnabled, placement },
    warnings: overridden.warnings,
    risks,
  };
}

/** The labels the injector gives the pod: the control plane's namespace, its workload and the workload's namespace. */
function podLabels(input: PodPatchInput): Record<string, string> {
  const labels: Record<string, string> = { [CONTROL_PLANE_NS_LABEL]: input.controlPlaneNamespace };
  const labelled = input.origin === 'cli' ? LABELLED_CLI_KINDS : LABELLED_OWNER_KINDS;
  if (input.owner && labelled.has(input.owner.kind)) labels[`${PROXY_LABEL_PREFIX}${input.owner.kind}`] = input.owner.name;
  labels[WORKLOAD_NS_LABEL] = input.workloadNamespace;
  return labels;
}

/** The annotations the injector gives the pod: those pending, the proxy's version and the trust roots' hash. */
function podAnnotations(
  input: PodPatchInput,
  values: LinkerdValues,
  prepared: PreparedConfig | undefined,
  ownAnnotations: Readonly<Record<string, string>>,
  spec: PodSpec,
): Record<string, string> {
  const proxy = values.proxy;
  const annotations: Record<string, string> = {
    ...input.pendingAnnotations,
    [PROXY_VERSION_ANNOTATION]: proxy.image.version || values.linkerdVersion,
    [TRUST_ROOT_SHA256_ANNOTATION]:
      prepared?.trustRootPEM === values.identityTrustAnchorsPEM ? prepared.trustRootSha256 : trustRootSha256(values.identityTrustAnchorsPEM),
  };
  // A proxy placed first for its await hook would become kubectl's default container: the app's first one stays so.
  if (input.kubectlDefaultContainer && !proxy.nativeSidecar && proxy.await && ownAnnotations[KUBECTL_DEFAULT_CONTAINER_ANNOTATION] === undefined) {
    const first = firstContainer(spec)?.name;
    if (typeof first === 'string' && first !== '') annotations[KUBECTL_DEFAULT_CONTAINER_ANNOTATION] = first;
  }
  return annotations;
}

/**
 * Adds the volumes and containers: linkerd-init (or the CNI's validator), the debug sidecar when asked for, and the
 * proxy where its mode puts it. Says where the proxy went, and which volumes the pod already has under another form.
 */
function addContainers(
  ops: AddOperation[],
  added: Added,
  pod: { prefix: string; spec: PodSpec; values: LinkerdValues; debugSidecar: boolean; env: EnvVar[] },
): { placement: string; takenVolumes: string[] } {
  const { prefix: P, spec, values } = pod;
  const proxy = values.proxy;
  const app = appContext(firstContainer(spec));
  const native = proxy.nativeSidecar;
  // Native sidecars go first (linkerd-init, then the proxy); otherwise linkerd-init runs after the user's inits.
  let initIndex = native ? 0 : -1;
  const initPath = (): string => (initIndex < 0 ? `${P}/spec/initContainers/-` : `${P}/spec/initContainers/${initIndex++}`);
  const podVolumes = objectsIn<Record<string, Json>>(spec.volumes);
  const takenVolumes: string[] = [];
  const addVolume = (volume: { name: string } & Record<string, Json>): void => {
    const same = podVolumes.find((v) => v['name'] === volume.name);
    // The pod's own volume of that name (say, left by an uninject that kept it): a second one would make the API server
    // refuse the pod. One that already says all the injector's does (the API server's defaults aside) serves as it is.
    if (same && covers(same, volume)) return;
    if (same) takenVolumes.push(volume.name);
    ops.push(add(`${P}/spec/volumes/-`, volume));
    added.volumes.push(volume.name);
  };

  if (!values.cniEnabled) {
    addVolume(volumes.xtablesLock(values) as { name: string });
    ops.push(add(initPath(), initContainer(values, app)));
    added.initContainers.push('linkerd-init');
  } else {
    ops.push(add(initPath(), validatorContainer(values)));
    added.initContainers.push('linkerd-network-validator');
  }
  if (pod.debugSidecar) {
    ops.push(add(`${P}/spec/containers/-`, debugContainer(values)));
    added.containers.push('linkerd-debug');
  }
  addVolume(volumes.endEntity() as { name: string });
  if (proxy.tracing?.enabled) addVolume(volumes.podinfo() as { name: string });
  if (values.identity.serviceAccountTokenProjection) addVolume(volumes.identityToken() as { name: string });

  const container = proxyContainer({ values, env: pod.env, app });
  if (native) {
    // Right after linkerd-init (or the validator), before any init container of the user's.
    ops.push(add(`${P}/spec/initContainers/${initIndex}`, container));
    added.initContainers.push('linkerd-proxy');
    return { placement: `initContainers[${initIndex}]`, takenVolumes };
  }
  if (proxy.await) {
    ops.push(add(`${P}/spec/containers/0`, container));
    added.containers.unshift('linkerd-proxy');
    return { placement: 'containers[0]', takenVolumes };
  }
  ops.push(add(`${P}/spec/containers/-`, container));
  added.containers.push('linkerd-proxy');
  return { placement: 'containers[-1]', takenVolumes };
}

/**
 * What may go wrong when the injected pod starts: first what the API server itself refuses (a quota or limit range, a
 * name the pod already uses), then the start-up risks.
 */
function podRisks(
  input: PodPatchInput,
  pod: { spec: PodSpec; values: LinkerdValues; names: ReadonlyMap<string, number>; ownAnnotations: Readonly<Record<string, string>> },
  ops: readonly AddOperation[],
  added: Added,
  takenVolumes: string[],
): StartupRisk[] {
  const { spec, values } = pod;
  const P = input.prefix;
  // The containers the patch adds (the values of its other operations are volumes, annotations and empty lists).
  const addsContainer = (op: AddOperation): boolean => op.path.startsWith(`${P}/spec/initContainers/`) || op.path.startsWith(`${P}/spec/containers/`);
  const addedContainers = (): Container[] => objectsIn<Container>(ops.filter(addsContainer).map((op) => op.value));
  const podSecurityEnforce = input.namespaceLabels?.[POD_SECURITY_ENFORCE_LABEL];
  const risks = startupRisks({
    spec,
    values,
    workloadKind: input.owner?.kind ?? 'pod',
    namedPorts: pod.names,
    explicitOpaquePorts: pod.ownAnnotations[ANNOTATIONS.opaquePorts] ?? input.namespaceAnnotations?.[ANNOTATIONS.opaquePorts],
    podSecurityEnforce,
    injectedContainers: podSecurityEnforce === 'restricted' ? addedContainers() : undefined,
    kubernetesVersion: input.kubernetesVersion,
  });
  risks.unshift(...takenNameRisks(spec, added, takenVolumes));
  const constraints = input.resourceConstraints;
  if (constraints && (constraints.resourceQuotas.length > 0 || constraints.limitRanges.length > 0)) {
    // The pod as the API server will hold it, as far as quotas read it: its own containers and the ones the patch adds.
    const injected: PodSpec = { ...spec, containers: [...objectsIn<Container>(spec.containers), ...addedContainers()] };
    risks.unshift(...quotaRisks(injected, constraints.resourceQuotas, constraints.limitRanges, input.kubernetesVersion));
  }
  return risks;
}
export interface InjectorConfig {
  /** Linkerd values with the trust anchors in place. */
  values: LinkerdValues;
  /** Namespace of the Linkerd control plane (default "linkerd"). */
  controlPlaneNamespace: string;
  /** Version in `linkerd.io/created-by`; defaults to the configured `linkerdVersion`, as Linkerd's injector writes it. */
  injectorVersion?: string;
  /** What depends on the configuration alone, worked out once by `prepareConfig` instead of for every pod. */
  prepared?: PreparedConfig;
}

/** Work that depends only on the values: the checks they passed, the trust anchors' hash, the fixed environment. */
export interface PreparedConfig {
  /** The values this was worked out for; anything else (a copy, other values) is checked and hashed afresh. */
  values: LinkerdValues;
  trustRootPEM: string;
  trustRootSha256: string;
  /** The parts of the proxy's environment that no annotation changes. */
  env: PreparedEnv;
}

/**
 * The configuration with the work that depends on it alone done once, for a server that injects many pods with the
 * same configuration: the values' checks (throws `INVALID_VALUES` as injecting would), the trust anchors' hash and the
 * parts of the proxy's environment that no annotation changes.
 * The values must not be changed afterwards; the engine keeps nothing of the configuration itself, the returned object
 * carries it.
 */
export function prepareConfig(config: InjectorConfig): InjectorConfig {
  const values = config.values;
  checkValues(values);
  const pem = values.identityTrustAnchorsPEM;
  const env = prepareEnv(values, config.controlPlaneNamespace);
  return { ...config, prepared: { values, trustRootPEM: pem, trustRootSha256: trustRootSha256(pem), env } };
}

export interface InjectionRequest {
  /** The Kubernetes object: a Pod or Service from the webhook; any workload, Service or Namespace from the CLI. */
  object: unknown;
  /** The kind to assume when the object does not name one (an AdmissionRequest's `kind.kind`). */
  kind?: string;
  /** The namespace the object is created in (an AdmissionRequest's `namespace`); default: the object's own. */
  namespace?: string;
  /** The namespace's annotations; unknown (no cluster) is the same as none. */
  namespaceAnnotations?: Record<string, string>;
  /** The namespace's labels, when known (`explain` reads them from Namespaces); only start-up risks read them. */
  namespaceLabels?: Record<string, string>;
  /** The namespace's ResourceQuotas and LimitRanges, when known; only start-up risks read them. */
  resourceConstraints?: ResourceConstraints;
  /** The release of the API server the object is created through, when known; only start-up risks read it. */
  kubernetesVersion?: KubernetesVersion;
  /** The workload that owns the pod, resolved by the caller. */
  owner?: Owner;
  origin?: Origin;
  config: InjectorConfig;
  /**
   * When the proxy goes first (a classic sidecar with the await hook), annotate the pod with
   * `kubectl.kubernetes.io/default-container: <its first app container>`, unless it names one already, so that kubectl
   * logs and exec still reach the app. Off by default: Linkerd does not, and the pods are then Linkerd's.
   */
  kubectlDefaultContainer?: boolean;
}

export type Outcome = 'injected' | 'annotated' | 'skipped';

/**
 * One record per call, read by the webhook, the CLI, metrics, events and logs alike. `outcome` is injected (the proxy
 * patch, and how the proxy was placed), annotated (not injected, but the opaque-ports annotation is set) or skipped
 * (no change); only an injected record has `proxy`.
 */
export type InjectionResult =
  | (InjectionRecord & { outcome: 'injected'; proxy: ProxyMode })
  | (InjectionRecord & { outcome: 'annotated' | 'skipped'; proxy?: undefined });

/** What every record says, whatever the outcome. */
export interface InjectionRecord {
  kind: string;
  name: string;
  namespace: string;
  /** Why the proxy was not injected; empty when it was. */
  reasons: SkipReason[];
  /** Where the deciding `linkerd.io/inject` annotation was found. */
  annotationAt: AnnotationAt;
  patch: AddOperation[];
  added: Added;
  /** The workload's own values of the proxy configuration annotations (before namespace inheritance). */
  workloadConfiguration: Record<string, string>;
  /** UDP ports on app containers (the CLI warns about them). */
  udp: boolean;
  /** Annotation values that were ignored, with why. */
  warnings: string[];
  /** What may go wrong when the injected pod starts, each with its fix; empty when nothing is injected. */
  risks: StartupRisk[];
}

/** What the API server accepts of an object's annotations, keys and values together, in UTF-8 bytes. */
const MAX_ANNOTATION_BYTES = 256 * 1024;

/**
 * Refuses annotations larger than the API server accepts: it refuses such an object once the webhooks have answered,
 * and reading them (every override rule parses its annotation, and some values are copied into the patch several times)
 * is the one part of the work whose size a pod's author chooses freely.
 */
function checkAnnotationSize(annotations: Readonly<Record<string, string>>, located: Located): void {
  let chars = 0;
  for (const key in annotations) chars += key.length + (annotations[key]?.length ?? 0);
  // A UTF-16 code unit takes at most three bytes: below a third of the limit there is nothing to count.
  if (chars * 3 <= MAX_ANNOTATION_BYTES) return;
  let bytes = 0;
  for (const key in annotations) bytes += utf8Bytes(key) + utf8Bytes(annotations[key] ?? '');
  if (bytes > MAX_ANNOTATION_BYTES) {
    throw new EngineError(
      'INVALID_OBJECT',
      `the annotations of ${located.kind} ${located.name || '(unnamed)'} take ${bytes} bytes, more than the ${MAX_ANNOTATION_BYTES} (256 KiB) the API server accepts`,
    );
  }
}

/** The length of a text in UTF-8: one byte for ASCII, two up to U+07FF, three above, four for a surrogate pair. */
function utf8Bytes(text: string): number {
  let bytes = text.length;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c >= 0x80) bytes += c >= 0x800 && (c < 0xd800 || c > 0xdfff) ? 2 : 1;
  }
  return bytes;
}

const nothingAdded = (): Added => ({ annotations: {}, labels: {}, initContainers: [], containers: [], volumes: [] });

/**
 * Decides whether to inject the proxy into an object and returns the patch that does what was decided, following
 * Linkerd's webhook (or, with origin "cli", its manual injection): the created-by annotation, namespace inheritance and
 * the default opaque ports on injection; the opaque-ports annotation alone for objects that are not injected, mirror
 * pods apart.
 */
export function inject(request: InjectionRequest): InjectionResult {
  const origin = request.origin ?? 'webhook';
  const { values, controlPlaneNamespace } = request.config;
  const located = locate(request.object, request.kind);
  const namespace = request.namespace || located.namespace;
  const template = located.template;
  const metadata = isObject(template?.metadata) ? template.metadata : undefined;
  const own = templateAnnotations(metadata?.annotations);
  const ownAnnotations = own.all;
  const objectMetadata = isObject(request.object) ? request.object['metadata'] : undefined;
  checkAnnotationSize(template ? ownAnnotations : stringMap(isObject(objectMetadata) ? objectMetadata['annotations'] : undefined), located);
  const nsAnnotations = origin === 'cli' ? {} : (request.namespaceAnnotations ?? {});
  const spec = template ? specOf(template) : {};
  const decision = report({
    origin,
    hasTemplate: template !== undefined,
    spec,
    workloadAnnotations: ownAnnotations,
    namespaceAnnotations: nsAnnotations,
    serviceAccountTokenProjection: values.identity.serviceAccountTokenProjection,
  });
  const workloadConfiguration: Record<string, string> = {};
  // Every proxy annotation is a config.* one: looked for among those alone.
  for (const key of keysAmong(own.proxy, PROXY_ANNOTATIONS)) workloadConfiguration[key] = own.proxy[key] ?? '';
  const common: Common = {
    kind: located.kind,
    name: located.name,
    namespace,
    reasons: decision.reasons,
    annotationAt: decision.annotation.at,
    workloadConfiguration,
    udp: decision.udp,
  };

  if (template && decision.reasons.length === 0) {
    const version = request.config.injectorVersion ?? values.linkerdVersion;
    const pending: Record<string, string> = {
      [CREATED_BY_ANNOTATION]: origin === 'cli' ? `linkerd/cli ${version}` : `linkerd/proxy-injector ${version}`,
    };
    if (origin === 'webhook') {
      Object.assign(pending, inheritedNamespaceAnnotations(ownAnnotations, nsAnnotations));
      if (!(ANNOTATIONS.opaquePorts in ownAnnotations) && !(ANNOTATIONS.opaquePorts in pending)) {
        const ports = defaultOpaquePortsForPod(spec, values.proxy.opaquePorts);
        if (ports !== '') pending[ANNOTATIONS.opaquePorts] = ports;
      }
    }
    const owner = request.owner ?? (located.kind === 'pod' ? undefined : { kind: located.kind, name: located.name });
    const built = podPatch({
      template,
      prefix: located.prefix,
      values,
      controlPlaneNamespace,
      origin,
      ...(owner && { owner }),
      workloadNamespace: namespace,
      pendingAnnotations: pending,
      namespaceAnnotations: nsAnnotations,
      namespaceLabels: request.namespaceLabels,
      resourceConstraints: request.resourceConstraints,
      kubernetesVersion: request.kubernetesVersion,
      prepared: request.config.prepared,
      annotations: own,
      kubectlDefaultContainer: request.kubectlDefaultContainer,
    });
    return record(common, 'injected', built.patch, built.added, built.mode, built.warnings, built.risks);
  }

  // A mirror gets no opaque-ports annotation either: the API's copy of a static pod is left as the kubelet wrote it.
  const patch = origin === 'webhook' && !decision.mirror ? opaquePortsPatch(request.object, located.kind, nsAnnotations, values) : [];
  const added = nothingAdded();
  if (patch.length > 0) added.annotations[ANNOTATIONS.opaquePorts] = String(patch[patch.length - 1]?.value ?? '');
  return record(common, patch.length > 0 ? 'annotated' : 'skipped', patch, added, undefined, [], []);
}

/** What every record says, whatever the outcome. */
type Common = Pick<InjectionResult, 'kind' | 'name' | 'namespace' | 'reasons' | 'annotationAt' | 'workloadConfiguration' | 'udp'>;

/**
 * The record, written out field by field: spreading the common part into each outcome's record cost more than
 * deciding to skip a pod. `proxy` is undefined unless the proxy was injected.
 */
function record(common: Common, outcome: 'injected', patch: AddOperation[], added: Added, proxy: ProxyMode, warnings: string[], risks: StartupRisk[]): InjectionResult;
function record(common: Common, outcome: 'annotated' | 'skipped', patch: AddOperation[], added: Added, proxy: undefined, warnings: string[], risks: StartupRisk[]): InjectionResult;
function record(
  common: Common,
  outcome: Outcome,
  patch: AddOperation[],
  added: Added,
  proxy: ProxyMode | undefined,
  warnings: string[],
  risks: StartupRisk[],
): InjectionResult {
  // The overloads above pair the outcome with its proxy, which a single object literal cannot show the compiler.
  return {
    kind: common.kind,
    name: common.name,
    namespace: common.namespace,
    reasons: common.reasons,
    annotationAt: common.annotationAt,
    workloadConfiguration: common.workloadConfiguration,
    udp: common.udp,
    outcome,
    patch,
    added,
    proxy,
    warnings,
    risks,
  } as InjectionResult;
}

/**
 * The opaque-ports annotation for a Pod or Service that is not injected: nothing when the object sets it itself, the
 * namespace's value when the namespace sets it, else the configured default ports the object actually exposes.
 */
export function opaquePortsPatch(
  object: unknown,
  kind: string,
  namespaceAnnotations: Record<string, string>,
  values: LinkerdValues,
): AddOperation[] {
  if (!isObject(object)) return [];
  const metadata = isObject(object['metadata']) ? object['metadata'] : {};
  const annotations = stringMap(metadata['annotations']);
  if (ANNOTATIONS.opaquePorts in annotations) return [];
  const has = { metadata: isObject(object['metadata']), annotations: hasKeys(metadata['annotations']) };
  // The namespace's value is copied as it is, even when empty: the key's presence is what counts.
  if (ANNOTATIONS.opaquePorts in namespaceAnnotations) {
    return opaquePortsAnnotationPatch(namespaceAnnotations[ANNOTATIONS.opaquePorts] ?? '', has);
  }
  const spec = isObject(object['spec']) ? object['spec'] : {};
  const lower = kind.toLowerCase();
  let ports = '';
  if (lower === 'pod') ports = defaultOpaquePortsForPod(spec as PodSpec, values.proxy.opaquePorts);
  else if (lower === 'service') {
    const servicePorts = Array.isArray(spec['ports']) ? (spec['ports'] as ServicePort[]) : [];
    ports = defaultOpaquePortsForService(servicePorts, values.proxy.opaquePorts);
  }
  return ports === '' ? [] : opaquePortsAnnotationPatch(ports, has);
}
