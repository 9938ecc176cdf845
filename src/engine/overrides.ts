/** Workload and namespace annotations applied over the Linkerd values: the per-pod configuration of the proxy. */
import { A, INJECT_ANNOTATION, INJECT_INGRESS, NAMESPACE_INHERITED_ANNOTATIONS } from './names.js';
import {
  durationToMillis,
  durationToSeconds,
  parseGoBool,
  parseGoDuration,
  parseGoInt,
  parseGoUint,
  parseQuantity,
  quantityToWholeCores,
} from './parsers.js';
import { parsePortList } from './ports.js';
import { ANNOTATION_DECODER, decodeEnvList, PULL_POLICIES } from './api-types.js';
import type { EnvVar } from './k8s.js';
import { isCidr, type LinkerdValues, type ResourceValues } from './values.js';

/** The namespace's proxy annotations that the workload does not carry itself (presence of the key, not its value). */
export function inheritedNamespaceAnnotations(
  workloadAnnotations: Record<string, string>,
  namespaceAnnotations: Record<string, string>,
): Record<string, string> {
  const inherited: Record<string, string> = {};
  for (const key of NAMESPACE_INHERITED_ANNOTATIONS) {
    if (key in namespaceAnnotations && !(key in workloadAnnotations)) {
      inherited[key] = namespaceAnnotations[key] ?? '';
    }
  }
  return inherited;
}

export const INBOUND_POLICIES = [
  'all-unauthenticated',
  'all-authenticated',
  'cluster-unauthenticated',
  'cluster-authenticated',
  'deny',
  'audit',
] as const;

export interface OverrideInput {
  /** The values the cluster is configured with; never mutated. */
  values: LinkerdValues;
  /** The annotations in force: the template's own, plus (from the webhook) those inherited or added for the pod. */
  annotations: Record<string, string>;
  /** The pod template's labels plus the labels the injector adds (read for tracing only). */
  labels: Record<string, string>;
  /** Named container ports, for port names in `opaque-ports`. */
  namedPorts: ReadonlyMap<string, number>;
  /** The namespace's `proxy-additional-env`, a layer between the values and the workload. */
  namespaceAdditionalEnv?: string;
}

export interface Overridden {
  values: LinkerdValues;
  isIngress: boolean;
  isGateway: boolean;
  debugSidecar: boolean;
  /** One line per annotation whose value was not usable and was ignored. */
  warnings: string[];
}

const MAX_PORT = 65535;
const MAX_ID = 2147483647;

function ignored(warnings: string[], key: string, value: string, why: string): void {
  warnings.push(`ignored annotation ${key}=${JSON.stringify(value)}: ${why}`);
}

/** Linkerd's additional-env layering: entries replace earlier ones of the same name in place, others are appended. */
export function mergeAdditionalEnv(layers: ReadonlyArray<readonly EnvVar[]>): EnvVar[] {
  const merged: EnvVar[] = [];
  for (const layer of layers) {
    for (const env of layer) {
      const at = merged.findIndex((e) => e.name === env.name);
      if (at >= 0) merged[at] = env;
      else merged.push(env);
    }
  }
  return merged;
}

/**
 * Parses a `proxy-additional-env` value: a JSON list of Kubernetes env vars, each decoded as the API server would
 * decode it (see `decodeEnvVar`). Empty and `null` mean no entries, as for Linkerd.
 */
export function parseAdditionalEnv(text: string): EnvVar[] | string {
  if (text === '') return [];
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    return `not JSON: ${(err as Error).message}`;
  }
  if (parsed === null) return [];
  if (!Array.isArray(parsed)) return 'not a JSON list of env vars';
  return decodeEnvList(parsed, 'entry', ANNOTATION_DECODER);
}

/** Validates a comma-separated list of ports and ranges without rewriting it (proxy-init receives it as written). */
function isPortList(text: string): boolean {
  const { invalid } = parsePortList(text);
  return invalid.length === 0;
}

/**
 * A copy of the values in which every object the overrides below write into is the copy's own, and everything else
 * is shared with the configuration, which nothing downstream writes into: a deep copy of the whole values for every
 * pod was a tenth of an admission and most of its garbage. An override that writes somewhere new must be copied here;
 * test/engine/overrides.test.ts applies every annotation to frozen values, so a missing copy fails there.
 */
function writableValues(values: LinkerdValues): LinkerdValues {
  const proxy = values.proxy;
  const resources = proxy.resources;
  return {
    ...values,
    proxy: {
      ...proxy,
      image: own(proxy.image),
      ports: own(proxy.ports),
      metrics: own(proxy.metrics),
      runtime: { ...proxy.runtime, workers: own(proxy.runtime?.workers) },
      resources: { ...resources, cpu: own(resources.cpu), memory: own(resources.memory), 'ephemeral-storage': own(resources['ephemeral-storage']) },
      tracing: proxy.tracing && { ...proxy.tracing, labels: own(proxy.tracing.labels) },
    },
    proxyInit: own(values.proxyInit),
    debugContainer: { ...values.debugContainer, image: own(values.debugContainer?.image) },
  };
}

/** A shallow copy of an object; anything else (null from a values file) as it is, as the deep copy kept it. */
function own<T>(value: T): T {
  return typeof value === 'object' && value !== null ? { ...value } : value;
}

/**
 * Applies every `config.linkerd.io/*` (and alpha/beta) override in force to a copy of the values. A value that does
 * not parse is ignored, as Linkerd ignores it, and reported in `warnings`. Values Linkerd would refuse to render
 * (an unknown header-logging mode, a close-wait timeout without a root init container) are ignored the same way
 * rather than failing pod creation.
 */
export function applyOverrides(input: OverrideInput): Overridden {
  const values = writableValues(input.values);
  const ann = input.annotations;
  const warnings: string[] = [];
  const proxy = values.proxy;
  const get = (key: string): string | undefined => (key in ann ? (ann[key] ?? '') : undefined);

  const str = (key: string, set: (v: string) => void): void => {
    const v = get(key);
    if (v !== undefined) set(v);
  };
  const bool = (key: string, set: (v: boolean) => void): void => {
    const v = get(key);
    if (v === undefined) return;
    const b = parseGoBool(v);
    if (b === undefined) ignored(warnings, key, v, 'not a boolean');
    else set(b);
  };
  const enabledDisabled = (key: string, set: (v: boolean) => void): void => {
    const v = get(key);
    if (v === undefined) return;
    if (v === 'enabled') set(true);
    else if (v === 'disabled') set(false);
    else ignored(warnings, key, v, 'must be "enabled" or "disabled"');
  };
  const port = (key: string, set: (v: number) => void): void => {
    const v = get(key);
    if (v === undefined) return;
    const n = parseGoInt(v, 32);
    if (n === undefined || n < 1 || n > MAX_PORT) ignored(warnings, key, v, 'not a port number (1-65535)');
    else set(n);
  };
  const duration = (key: string, render: (ns: bigint) => string, set: (v: string) => void): void => {
    const v = get(key);
    if (v === undefined) return;
    const ns = parseGoDuration(v);
    if (ns === undefined || ns < 0n) ignored(warnings, key, v, 'not a duration such as "500ms" or "2s"');
    else set(render(ns));
  };
  const quantity = (key: string, target: ResourceValues, field: 'request' | 'limit', cores?: (n: number) => void) => {
    const v = get(key);
    if (v === undefined) return;
    const q = parseQuantity(v);
    if (q === undefined || q.num < 0n) {
      ignored(warnings, key, v, 'not a non-negative Kubernetes quantity such as "100m" or "64Mi"');
      return;
    }
    target[field] = v;
    cores?.(quantityToWholeCores(q));
  };

  const inject = get(INJECT_ANNOTATION);
  const isIngress = inject === INJECT_INGRESS;

  str(A.proxyImage, (v) => (proxy.image.name = v));
  str(A.proxyVersion, (v) => (proxy.image.version = v));
  const pullPolicy = (key: string, set: (v: string) => void): void => {
    const v = get(key);
    if (v === undefined) return;
    if (v === '' || PULL_POLICIES.includes(v)) set(v);
    else ignored(warnings, key, v, `must be one of ${PULL_POLICIES.join(', ')}`);
  };
  pullPolicy(A.imagePullPolicy, (v) => (proxy.image.pullPolicy = v));
  port(A.controlPort, (v) => (proxy.ports.control = v));
  port(A.inboundPort, (v) => (proxy.ports.inbound = v));
  port(A.adminPort, (v) => (proxy.ports.admin = v));
  port(A.outboundPort, (v) => (proxy.ports.outbound = v));
  enabledDisabled(A.proxyAdminShutdown, (v) => (proxy.enableShutdownEndpoint = v));
  str(A.proxyLogLevel, (v) => (proxy.logLevel = v));
  {
    const v = get(A.proxyLogHttpHeaders);
    if (v !== undefined) {
      if (v === 'insecure' || v === 'off' || v === '') proxy.logHTTPHeaders = v;
      else ignored(warnings, A.proxyLogHttpHeaders, v, 'must be "insecure" or "off"');
    }
  }
  str(A.proxyLogFormat, (v) => (proxy.logFormat = v));
  str(A.proxyRequireIdentityInboundPorts, (v) => (proxy.requireIdentityOnInboundPorts = v));
  bool(A.proxyMetricsHostnameLabels, (v) => (proxy.metrics.hostnameLabels = v));
  duration(A.proxyOutboundConnectTimeout, durationToMillis, (v) => (proxy.outboundConnectTimeout = v));
  duration(A.proxyInboundConnectTimeout, durationToMillis, (v) => (proxy.inboundConnectTimeout = v));
  duration(A.proxyOutboundDiscoveryCacheUnusedTimeout, durationToSeconds, (v) => {
    proxy.outboundDiscoveryCacheUnusedTimeout = v;
  });
  duration(A.proxyInboundDiscoveryCacheUnusedTimeout, durationToSeconds, (v) => {
    proxy.inboundDiscoveryCacheUnusedTimeout = v;
  });
  bool(A.proxyDisableOutboundProtocolDetectTimeout, (v) => (proxy.disableOutboundProtocolDetectTimeout = v));
  bool(A.proxyDisableInboundProtocolDetectTimeout, (v) => (proxy.disableInboundProtocolDetectTimeout = v));
  duration(A.shutdownGracePeriod, durationToMillis, (v) => (proxy.shutdownGracePeriod = v));
  bool(A.enableExternalProfiles, (v) => (proxy.enableExternalProfiles = v));
  {
    const v = get(A.defaultInboundPolicy);
    if (v !== undefined) {
      if ((INBOUND_POLICIES as readonly string[]).includes(v)) proxy.defaultInboundPolicy = v;
      else ignored(warnings, A.defaultInboundPolicy, v, `must be one of ${INBOUND_POLICIES.join(', ')}`);
    }
  }
  str(A.accessLog, (v) => (proxy.accessLog = v));
  {
    const v = get(A.opaquePorts);
    if (v !== undefined) {
      const { ports, invalid } = parsePortList(v, input.namedPorts);
      for (const item of invalid) ignored(warnings, A.opaquePorts, item, 'not a port, a range or a container port name');
      proxy.opaquePorts = ports.join(',');
    }
  }
  for (const [key, field] of [
    [A.skipInboundPorts, 'ignoreInboundPorts'],
    [A.skipOutboundPorts, 'ignoreOutboundPorts'],
  ] as const) {
    const v = get(key);
    if (v === undefined) continue;
    if (isPortList(v)) values.proxyInit[field] = v;
    else ignored(warnings, key, v, 'not a comma-separated list of ports and port ranges');
  }
  {
    const v = get(A.skipSubnets);
    if (v !== undefined) {
      const items = v.split(',').map((s) => s.trim()).filter((s) => s !== '');
      if (items.every(isCidr)) values.proxyInit.skipSubnets = v;
      else ignored(warnings, A.skipSubnets, v, 'not a comma-separated list of CIDRs');
    }
  }
  {
    const v = get(A.proxyUid);
    if (v !== undefined) {
      const n = parseGoInt(v, 64);
      if (n === undefined || n < 0 || n > MAX_ID) ignored(warnings, A.proxyUid, v, `not a user ID (0-${MAX_ID})`);
      else proxy.uid = n;
    }
  }
  {
    const v = get(A.proxyGid);
    if (v !== undefined) {
      const n = parseGoInt(v, 64);
      if (n === undefined || n < -1 || n > MAX_ID) ignored(warnings, A.proxyGid, v, `not a group ID (-1 for none, or 0-${MAX_ID})`);
      else proxy.gid = n;
    }
  }
  const workers = proxy.runtime.workers;
  /**
   * A request larger than its limit makes the API server refuse the pod, so the annotations of such a pair are
   * ignored (the configured pair stays) rather than failing pod creation.
   */
  const resourcePair = (requestKey: string, limitKey: string, target: ResourceValues, cpu: boolean): void => {
    const before = { ...target };
    const workersBefore = { ...workers };
    quantity(requestKey, target, 'request', cpu ? (n) => (workers.minimum = n) : undefined);
    quantity(limitKey, target, 'limit', cpu ? (n) => (workers.maximum = n) : undefined);
    if (target.request === before.request && target.limit === before.limit) return;
    const request = parseQuantity(target.request);
    const limit = parseQuantity(target.limit);
    if (request === undefined || limit === undefined || request.num * limit.den <= limit.num * request.den) return;
    const given = [requestKey, limitKey].filter((k) => k in ann).map((k) => `${k}=${JSON.stringify(ann[k] ?? '')}`);
    warnings.push(
      `ignored annotation${given.length > 1 ? 's' : ''} ${given.join(' and ')}: the request ${JSON.stringify(target.request)} ` +
        `is larger than the limit ${JSON.stringify(target.limit)}, which the API server refuses`,
    );
    Object.assign(target, before);
    if (cpu) Object.assign(workers, workersBefore);
  };
  resourcePair(A.proxyCpuRequest, A.proxyCpuLimit, proxy.resources.cpu, true);
  resourcePair(A.proxyMemoryRequest, A.proxyMemoryLimit, proxy.resources.memory, false);
  resourcePair(A.proxyEphemeralStorageRequest, A.proxyEphemeralStorageLimit, proxy.resources['ephemeral-storage'], false);
  {
    const v = get(A.proxyCpuRatioLimit);
    if (v !== undefined) {
      const r = /^[+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/.test(v) ? Number(v) : NaN;
      if (r > 0 && r < 1) workers.maximumCPURatio = r;
      else ignored(warnings, A.proxyCpuRatioLimit, v, 'must be a number between 0 and 1');
    }
  }
  enabledDisabled(A.proxyAwait, (v) => (proxy.await = v));
  {
    // The GA key wins over the beta key, which wins over the alpha key; the highest one present decides.
    const key = [A.proxyEnableNativeSidecar, A.betaProxyEnableNativeSidecar, A.alphaProxyEnableNativeSidecar].find(
      (k) => get(k) !== undefined,
    );
    if (key) bool(key, (v) => (proxy.nativeSidecar = v));
  }
  {
    const v = get(A.alphaProxyWaitBeforeExitSeconds);
    if (v !== undefined) {
      const n = parseGoUint(v, Number.MAX_SAFE_INTEGER);
      if (n === undefined) ignored(warnings, A.alphaProxyWaitBeforeExitSeconds, v, 'not a whole number of seconds');
      else proxy.waitBeforeExitSeconds = n;
    }
  }
  {
    const layers: EnvVar[][] = [proxy.additionalEnv];
    for (const [where, text] of [
      ['namespace', input.namespaceAdditionalEnv],
      ['workload', get(A.proxyAdditionalEnv)],
    ] as const) {
      if (text === undefined) continue;
      const parsed = parseAdditionalEnv(text);
      if (typeof parsed === 'string') ignored(warnings, A.proxyAdditionalEnv, text, `${parsed} (${where} layer skipped)`);
      else layers.push(parsed);
    }
    proxy.additionalEnv = mergeAdditionalEnv(layers);
  }

  let isGateway = false;
  bool(A.enableGateway, (v) => (isGateway = v));
  let debugSidecar = false;
  {
    const v = get(A.enableDebugSidecar);
    if (v !== undefined) {
      const b = parseGoBool(v);
      if (b === undefined) ignored(warnings, A.enableDebugSidecar, v, 'not a boolean; the debug sidecar stays off');
      debugSidecar = b === true;
    }
  }
  str(A.debugImage, (v) => (values.debugContainer.image.name = v));
  str(A.debugImageVersion, (v) => (values.debugContainer.image.version = v));
  pullPolicy(A.debugImagePullPolicy, (v) => (values.debugContainer.image.pullPolicy = v));
  {
    const v = get(A.closeWaitTimeout);
    if (v !== undefined) {
      const ns = parseGoDuration(v);
      if (ns === undefined || ns < 0n) ignored(warnings, A.closeWaitTimeout, v, 'not a duration');
      else if (!values.proxyInit.runAsRoot) {
        ignored(warnings, A.closeWaitTimeout, v, 'needs proxyInit.runAsRoot in the Linkerd values');
      } else values.proxyInit.closeWaitTimeoutSecs = Number(ns / 1_000_000_000n);
    }
  }
  if (proxy.tracing?.enabled) applyTracing(proxy.tracing.labels, ann, input.labels);

  return { values, isIngress, isGateway, debugSidecar, warnings };
}

const OTEL_PREFIX = 'resource.opentelemetry.io/';

/** Tracing attributes from OpenTelemetry resource annotations and the workload's instance or name label. */
function applyTracing(
  traceLabels: Record<string, string>,
  annotations: Record<string, string>,
  labels: Record<string, string>,
): void {
  const service = labels['app.kubernetes.io/instance'] ?? labels['app.kubernetes.io/name'];
  if (service !== undefined && service !== '') traceLabels['service.name'] = service;
  for (const [key, value] of Object.entries(annotations)) {
    if (key.startsWith(OTEL_PREFIX) && key.length > OTEL_PREFIX.length) {
      traceLabels[key.slice(OTEL_PREFIX.length)] = value;
    }
  }
}
