/**
 * Whether an object may be injected: Linkerd's skip reasons, in Linkerd's order, with its codes and texts, and two of
 * this injector's own after them (mirror pods, Windows pods).
 */
import { INJECT_ANNOTATION, INJECT_DISABLED, INJECT_ENABLED, INJECT_INGRESS, MIRROR_POD_ANNOTATION, SERVICE_ACCOUNT_MOUNT_PATH } from './names.js';
import { isObject, objectsIn, type Container, type ContainerPort, type PodSpec, type VolumeMount } from './k8s.js';

export type SkipReasonCode =
  | 'host_network_enabled'
  | 'sidecar_already_exists'
  | 'unsupported_resource'
  | 'injection_enable_annotation_absent'
  | 'injection_disable_annotation_present'
  | 'invalid_inject_annotation_at_workload'
  | 'invalid_inject_annotation_at_ns'
  | 'disabled_automount_service_account_token_account'
  | 'udp_ports_enabled'
  | 'mirror_pod'
  | 'windows_pod';

/** The human texts Linkerd puts in events and logs (and this injector's, for mirror and Windows pods). */
export const SKIP_REASON_TEXT: Record<SkipReasonCode, string> = {
  host_network_enabled: 'hostNetwork is enabled',
  sidecar_already_exists: 'pod has a sidecar injected already',
  unsupported_resource: 'this resource kind is unsupported',
  injection_enable_annotation_absent:
    'neither the namespace nor the pod have the annotation "linkerd.io/inject:enabled"',
  injection_disable_annotation_present: 'pod has the annotation "linkerd.io/inject:disabled"',
  invalid_inject_annotation_at_workload: 'invalid value for annotation "linkerd.io/inject" at workload',
  invalid_inject_annotation_at_ns: 'invalid value for annotation "linkerd.io/inject" at namespace',
  disabled_automount_service_account_token_account:
    'automountServiceAccountToken set to "false", with Values.identity.serviceAccountTokenProjection set to "false"',
  udp_ports_enabled: 'UDP port(s) configured on pod spec',
  mirror_pod: 'pod is the mirror of a static pod, which the kubelet runs from its manifest file',
  windows_pod: 'pod runs on Windows, where the Linux proxy cannot run',
};

export interface SkipReason {
  code: SkipReasonCode;
  text: string;
}

export function reason(code: SkipReasonCode): SkipReason {
  return { code, text: SKIP_REASON_TEXT[code] };
}

/** Who asked for injection: the admission webhook, or a person running the manual-injection command. */
export type Origin = 'webhook' | 'cli';

/** Where the deciding `linkerd.io/inject` annotation was found, as Linkerd's metrics label it. */
export type AnnotationAt = 'namespace' | 'workload' | '';

export interface InjectAnnotationDecision {
  disabled: boolean;
  reason?: SkipReasonCode;
  at: AnnotationAt;
  /** The value that decided, e.g. "enabled" or "ingress". */
  value: string;
}

const VALID_INJECT = new Set(['', INJECT_ENABLED, INJECT_DISABLED, INJECT_INGRESS]);
const ENABLING = new Set([INJECT_ENABLED, INJECT_INGRESS]);

/**
 * Linkerd's reading of `linkerd.io/inject` on the namespace and the workload. From the webhook the namespace can enable
 * and the workload can only opt out of an enabled namespace; from the command line only a workload's `disabled` counts.
 */
export function injectAnnotationDecision(
  origin: Origin,
  workloadAnnotations: Record<string, string>,
  namespaceAnnotations: Record<string, string>,
): InjectAnnotationDecision {
  const pod = workloadAnnotations[INJECT_ANNOTATION] ?? '';
  if (origin === 'cli') {
    return pod === INJECT_DISABLED
      ? { disabled: true, reason: 'injection_disable_annotation_present', at: 'workload', value: pod }
      : { disabled: false, at: pod === '' ? '' : 'workload', value: pod };
  }
  const ns = namespaceAnnotations[INJECT_ANNOTATION] ?? '';
  if (!VALID_INJECT.has(ns)) return { disabled: true, reason: 'invalid_inject_annotation_at_ns', at: '', value: ns };
  if (!VALID_INJECT.has(pod)) {
    return { disabled: true, reason: 'invalid_inject_annotation_at_workload', at: '', value: pod };
  }
  if (ENABLING.has(ns)) {
    return pod === INJECT_DISABLED
      ? { disabled: true, reason: 'injection_disable_annotation_present', at: 'workload', value: pod }
      : { disabled: false, at: 'namespace', value: ns };
  }
  if (ENABLING.has(pod)) return { disabled: false, at: 'workload', value: pod };
  return { disabled: true, reason: 'injection_enable_annotation_absent', at: '', value: pod };
}

const PROXY_IMAGES = ['cr.l5d.io/linkerd/proxy:', 'gcr.io/istio-release/proxyv2:'];
const PROXY_NAMES = ['linkerd-proxy', 'istio-proxy'];
const INIT_IMAGES = ['cr.l5d.io/linkerd/proxy-init:', 'gcr.io/istio-release/proxy_init:'];
const INIT_NAMES = ['linkerd-init', 'istio-init'];

function isProxy(c: Container): boolean {
  const image = typeof c.image === 'string' ? c.image : '';
  return PROXY_IMAGES.some((p) => image.startsWith(p)) || PROXY_NAMES.includes(String(c.name ?? ''));
}

function isProxyInit(c: Container): boolean {
  const image = typeof c.image === 'string' ? c.image : '';
  return INIT_IMAGES.some((p) => image.startsWith(p)) || INIT_NAMES.includes(String(c.name ?? ''));
}

/** A Linkerd or Istio proxy already in the pod (in either container list), or their iptables init container. */
export function hasExistingSidecar(spec: PodSpec): boolean {
  const containers = objectsIn<Container>(spec.containers);
  const inits = objectsIn<Container>(spec.initContainers);
  return containers.some(isProxy) || inits.some(isProxy) || inits.some(isProxyInit);
}

/** The first app container, whose capabilities and token mount Linkerd copies; none when it is not an object. */
export function firstContainer(spec: PodSpec): Container | undefined {
  const first: unknown = Array.isArray(spec.containers) ? spec.containers[0] : undefined;
  return typeof first === 'object' && first !== null && !Array.isArray(first) ? (first as Container) : undefined;
}

/** Any app container (not an init container) that declares a UDP port. */
export function hasUdpPorts(spec: PodSpec): boolean {
  return objectsIn<Container>(spec.containers).some((c) =>
    objectsIn<ContainerPort>(c.ports).some((p) => p.protocol === 'UDP'),
  );
}

/**
 * Whether the pod mounts a service-account token the proxy can use, when Linkerd is told not to project its own. From
 * the webhook, a first container without the token mount counts as "off" even if the field is unset.
 */
export function automountsServiceAccountToken(origin: Origin, spec: PodSpec): boolean {
  let automount = spec.automountServiceAccountToken !== false;
  if (origin === 'webhook') {
    const mounted = objectsIn<VolumeMount>(firstContainer(spec)?.volumeMounts).some(
      (m) => m.mountPath === SERVICE_ACCOUNT_MOUNT_PATH,
    );
    if (!mounted) automount = false;
  }
  return automount;
}

export interface ReportInput {
  origin: Origin;
  hasTemplate: boolean;
  spec: PodSpec;
  workloadAnnotations: Record<string, string>;
  namespaceAnnotations: Record<string, string>;
  serviceAccountTokenProjection: boolean;
}

export interface Report {
  reasons: SkipReason[];
  annotation: InjectAnnotationDecision;
  hostNetwork: boolean;
  sidecar: boolean;
  udp: boolean;
  /** A static pod's mirror: left as it is, opaque-ports annotation included, whatever the reasons. */
  mirror: boolean;
}

/** Whether a pod's annotations (a map as read from the object, whatever its values) mark it as a static pod's mirror. */
export const isMirrorPod = (annotations: unknown): boolean => isObject(annotations) && Object.hasOwn(annotations, MIRROR_POD_ANNOTATION);

/**
 * Whether a pod runs on Windows: its `spec.os.name`, or a node selector that asks for Windows nodes. Linkerd's images
 * are built for Linux alone, and kube-apiserver refuses a pod with `os.name: windows` whose containers set the Linux
 * security-context fields the proxy and linkerd-init set (user, capabilities, seccomp, read-only root...).
 */
export function runsOnWindows(spec: PodSpec): boolean {
  const os = spec['os'];
  if (isObject(os) && os['name'] === 'windows') return true;
  const selector = spec['nodeSelector'];
  return isObject(selector) && selector['kubernetes.io/os'] === 'windows';
}

/**
 * All the reasons not to inject, in Linkerd's order: hostNetwork, sidecar, unsupported, annotation, automount. When
 * none applies, two kinds of pod that Linkerd injects although the result cannot be created or cannot run:
 * - a mirror pod: what the API shows of a pod that the kubelet runs from a file on its node. A patch changes only the
 *   copy, and kube-apiserver refuses a mirror that projects a service-account token, as the proxy's identity volume
 *   does, so the kubelet could not create it;
 * - a Windows pod (see runsOnWindows).
 * Only then, so that a pod Linkerd skips too (most mirrors are on the host network) is reported as Linkerd reports it.
 */
export function report(input: ReportInput): Report {
  const { spec, hasTemplate } = input;
  const annotation = hasTemplate
    ? injectAnnotationDecision(input.origin, input.workloadAnnotations, input.namespaceAnnotations)
    : { disabled: false, at: '' as const, value: '' };
  const hostNetwork = hasTemplate && spec.hostNetwork === true;
  const sidecar = hasTemplate && hasExistingSidecar(spec);
  const reasons: SkipReason[] = [];
  if (hostNetwork) reasons.push(reason('host_network_enabled'));
  if (sidecar) reasons.push(reason('sidecar_already_exists'));
  if (!hasTemplate) reasons.push(reason('unsupported_resource'));
  if (annotation.disabled && annotation.reason) reasons.push(reason(annotation.reason));
  if (hasTemplate && !input.serviceAccountTokenProjection && !automountsServiceAccountToken(input.origin, spec)) {
    reasons.push(reason('disabled_automount_service_account_token_account'));
  }
  const mirror = hasTemplate && isMirrorPod(input.workloadAnnotations);
  if (reasons.length === 0 && mirror) reasons.push(reason('mirror_pod'));
  if (reasons.length === 0 && hasTemplate && runsOnWindows(spec)) reasons.push(reason('windows_pod'));
  return { reasons, annotation, hostNetwork, sidecar, udp: hasTemplate && hasUdpPorts(spec), mirror };
}
