/** Annotation, label, container and volume names that Linkerd's data plane and tooling recognise. */

export const INJECT_ANNOTATION = 'linkerd.io/inject';
export const CREATED_BY_ANNOTATION = 'linkerd.io/created-by';
export const PROXY_VERSION_ANNOTATION = 'linkerd.io/proxy-version';
export const TRUST_ROOT_SHA256_ANNOTATION = 'linkerd.io/trust-root-sha256';

export const CONTROL_PLANE_NS_LABEL = 'linkerd.io/control-plane-ns';
export const WORKLOAD_NS_LABEL = 'linkerd.io/workload-ns';
/** On Linkerd's own control-plane components, which their chart injects: the injector leaves them alone. */
export const CONTROL_PLANE_COMPONENT_LABEL = 'linkerd.io/control-plane-component';
export const PROXY_LABEL_PREFIX = 'linkerd.io/proxy-';
/** Annotations whose name follows this prefix become tracing resource attributes of the pod's proxy. */
export const TRACING_ATTRIBUTE_PREFIX = 'resource.opentelemetry.io/';

/** Values of `linkerd.io/inject`. */
export const INJECT_ENABLED = 'enabled';
export const INJECT_DISABLED = 'disabled';
export const INJECT_INGRESS = 'ingress';

const CONFIG = 'config.linkerd.io/';
const ALPHA = 'config.alpha.linkerd.io/';
const BETA = 'config.beta.linkerd.io/';

/** Every `config.linkerd.io/*` key the injector reads as an override. */
export const ANNOTATIONS = {
  adminPort: `${CONFIG}admin-port`,
  controlPort: `${CONFIG}control-port`,
  enableDebugSidecar: `${CONFIG}enable-debug-sidecar`,
  enableExternalProfiles: `${CONFIG}enable-external-profiles`,
  imagePullPolicy: `${CONFIG}image-pull-policy`,
  inboundPort: `${CONFIG}inbound-port`,
  outboundPort: `${CONFIG}outbound-port`,
  podInboundPorts: `${CONFIG}pod-inbound-ports`,
  proxyCpuLimit: `${CONFIG}proxy-cpu-limit`,
  proxyCpuRequest: `${CONFIG}proxy-cpu-request`,
  proxyImage: `${CONFIG}proxy-image`,
  proxyAdminShutdown: `${CONFIG}proxy-admin-shutdown`,
  proxyLogFormat: `${CONFIG}proxy-log-format`,
  proxyLogLevel: `${CONFIG}proxy-log-level`,
  proxyLogHttpHeaders: `${CONFIG}proxy-log-http-headers`,
  proxyMemoryLimit: `${CONFIG}proxy-memory-limit`,
  proxyMemoryRequest: `${CONFIG}proxy-memory-request`,
  proxyEphemeralStorageLimit: `${CONFIG}proxy-ephemeral-storage-limit`,
  proxyEphemeralStorageRequest: `${CONFIG}proxy-ephemeral-storage-request`,
  proxyUid: `${CONFIG}proxy-uid`,
  proxyGid: `${CONFIG}proxy-gid`,
  proxyVersion: `${CONFIG}proxy-version`,
  proxyRequireIdentityInboundPorts: `${CONFIG}proxy-require-identity-inbound-ports`,
  skipInboundPorts: `${CONFIG}skip-inbound-ports`,
  opaquePorts: `${CONFIG}opaque-ports`,
  skipOutboundPorts: `${CONFIG}skip-outbound-ports`,
  proxyMetricsHostnameLabels: `${CONFIG}proxy-metrics-hostname-labels`,
  proxyOutboundConnectTimeout: `${CONFIG}proxy-outbound-connect-timeout`,
  proxyInboundConnectTimeout: `${CONFIG}proxy-inbound-connect-timeout`,
  proxyAwait: `${CONFIG}proxy-await`,
  defaultInboundPolicy: `${CONFIG}default-inbound-policy`,
  skipSubnets: `${CONFIG}skip-subnets`,
  accessLog: `${CONFIG}access-log`,
  shutdownGracePeriod: `${CONFIG}shutdown-grace-period`,
  proxyOutboundDiscoveryCacheUnusedTimeout: `${CONFIG}proxy-outbound-discovery-cache-unused-timeout`,
  proxyInboundDiscoveryCacheUnusedTimeout: `${CONFIG}proxy-inbound-discovery-cache-unused-timeout`,
  proxyDisableOutboundProtocolDetectTimeout: `${CONFIG}proxy-disable-outbound-protocol-detect-timeout`,
  proxyDisableInboundProtocolDetectTimeout: `${CONFIG}proxy-disable-inbound-protocol-detect-timeout`,
  proxyEnableNativeSidecar: `${CONFIG}proxy-enable-native-sidecar`,
  proxyAdditionalEnv: `${CONFIG}proxy-additional-env`,
  // Read from the workload only: never inherited from the namespace.
  proxyCpuRatioLimit: `${CONFIG}proxy-cpu-ratio-limit`,
  enableGateway: `${CONFIG}enable-gateway`,
  debugImage: `${CONFIG}debug-image`,
  debugImageVersion: `${CONFIG}debug-image-version`,
  debugImagePullPolicy: `${CONFIG}debug-image-pull-policy`,
  closeWaitTimeout: `${CONFIG}close-wait-timeout`,
  betaProxyEnableNativeSidecar: `${BETA}proxy-enable-native-sidecar`,
  // Alpha keys that are inherited from the namespace.
  alphaProxyWaitBeforeExitSeconds: `${ALPHA}proxy-wait-before-exit-seconds`,
  alphaProxyEnableNativeSidecar: `${ALPHA}proxy-enable-native-sidecar`,
} as const;

/**
 * The 40 proxy configuration annotations, in Linkerd's order. They are inherited from the namespace and each one is a
 * label of the admission metrics.
 */
export const PROXY_ANNOTATIONS: readonly string[] = [
  ANNOTATIONS.adminPort,
  ANNOTATIONS.controlPort,
  ANNOTATIONS.enableDebugSidecar,
  ANNOTATIONS.enableExternalProfiles,
  ANNOTATIONS.imagePullPolicy,
  ANNOTATIONS.inboundPort,
  ANNOTATIONS.outboundPort,
  ANNOTATIONS.podInboundPorts,
  ANNOTATIONS.proxyCpuLimit,
  ANNOTATIONS.proxyCpuRequest,
  ANNOTATIONS.proxyImage,
  ANNOTATIONS.proxyAdminShutdown,
  ANNOTATIONS.proxyLogFormat,
  ANNOTATIONS.proxyLogLevel,
  ANNOTATIONS.proxyLogHttpHeaders,
  ANNOTATIONS.proxyMemoryLimit,
  ANNOTATIONS.proxyMemoryRequest,
  ANNOTATIONS.proxyEphemeralStorageLimit,
  ANNOTATIONS.proxyEphemeralStorageRequest,
  ANNOTATIONS.proxyUid,
  ANNOTATIONS.proxyGid,
  ANNOTATIONS.proxyVersion,
  ANNOTATIONS.proxyRequireIdentityInboundPorts,
  ANNOTATIONS.skipInboundPorts,
  ANNOTATIONS.opaquePorts,
  ANNOTATIONS.skipOutboundPorts,
  ANNOTATIONS.proxyMetricsHostnameLabels,
  ANNOTATIONS.proxyOutboundConnectTimeout,
  ANNOTATIONS.proxyInboundConnectTimeout,
  ANNOTATIONS.proxyAwait,
  ANNOTATIONS.defaultInboundPolicy,
  ANNOTATIONS.skipSubnets,
  ANNOTATIONS.accessLog,
  ANNOTATIONS.shutdownGracePeriod,
  ANNOTATIONS.proxyOutboundDiscoveryCacheUnusedTimeout,
  ANNOTATIONS.proxyInboundDiscoveryCacheUnusedTimeout,
  ANNOTATIONS.proxyDisableOutboundProtocolDetectTimeout,
  ANNOTATIONS.proxyDisableInboundProtocolDetectTimeout,
  ANNOTATIONS.proxyEnableNativeSidecar,
  ANNOTATIONS.proxyAdditionalEnv,
];

/** Alpha annotations that are inherited from the namespace like the proxy annotations. */
export const PROXY_ALPHA_ANNOTATIONS: readonly string[] = [
  ANNOTATIONS.alphaProxyWaitBeforeExitSeconds,
  ANNOTATIONS.alphaProxyEnableNativeSidecar,
];

/** The keys a workload inherits from its namespace when it does not carry them itself. */
export const NAMESPACE_INHERITED_ANNOTATIONS: readonly string[] = [
  ...PROXY_ANNOTATIONS,
  ...PROXY_ALPHA_ANNOTATIONS,
  INJECT_ANNOTATION,
];

export const PROXY_CONTAINER = 'linkerd-proxy';
export const INIT_CONTAINER = 'linkerd-init';
export const VALIDATOR_CONTAINER = 'linkerd-network-validator';
export const DEBUG_CONTAINER = 'linkerd-debug';

export const XTABLES_LOCK_VOLUME = 'linkerd-proxy-init-xtables-lock';
export const END_ENTITY_VOLUME = 'linkerd-identity-end-entity';
export const IDENTITY_TOKEN_VOLUME = 'linkerd-identity-token';
export const PODINFO_VOLUME = 'linkerd-podinfo';

/** Every container and volume name the injector adds; `uninject` removes exactly these. */
export const INJECTED_CONTAINERS: readonly string[] = [
  PROXY_CONTAINER,
  INIT_CONTAINER,
  VALIDATOR_CONTAINER,
  DEBUG_CONTAINER,
];
export const INJECTED_VOLUMES: readonly string[] = [
  XTABLES_LOCK_VOLUME,
  END_ENTITY_VOLUME,
  IDENTITY_TOKEN_VOLUME,
  PODINFO_VOLUME,
];

export const SERVICE_ACCOUNT_MOUNT_PATH = '/var/run/secrets/kubernetes.io/serviceaccount';

/**
 * The annotation a kubelet puts on the API's copy (the mirror) of a static pod, which it runs from a manifest file on
 * its node; kube-apiserver refuses such a pod that projects a service-account token.
 */
export const MIRROR_POD_ANNOTATION = 'kubernetes.io/config.mirror';

/** The namespace label that sets the Pod Security level kube-apiserver enforces on its pods. */
export const POD_SECURITY_ENFORCE_LABEL = 'pod-security.kubernetes.io/enforce';

/**
 * The pod annotation that names the container kubectl logs, exec, attach and cp act on when none is given; without it
 * they take the first container, which a proxy placed first for its await hook would be.
 */
export const KUBECTL_DEFAULT_CONTAINER_ANNOTATION = 'kubectl.kubernetes.io/default-container';
