/** The proxy container's environment, in the exact order Linkerd renders it. */
import { copyPlain, pushAll, type EnvVar } from '../k8s.js';
import { compareCodeUnits } from '../text.js';
import { deepFreeze, memoizeText } from '../memo.js';
import type { LinkerdValues, ProxyParams } from '../values.js';

export interface EnvInput {
  values: LinkerdValues;
  controlPlaneNamespace: string;
  inboundPorts: string;
  isIngress: boolean;
  isGateway: boolean;
  /** The parts rendered once for the configuration; used only where the values they came from are still in force. */
  prepared?: PreparedEnv | undefined;
}

/**
 * The parts of the environment that no annotation changes, rendered once per configuration (by `prepareConfig`) instead
 * of for every pod. They are frozen and shared by every patch built with that configuration.
 */
export interface PreparedEnv {
  /** The values and control-plane namespace they were rendered for. */
  values: LinkerdValues;
  controlPlaneNamespace: string;
  inbound: readonly EnvVar[];
  outbound: readonly EnvVar[];
  /** From LINKERD2_PROXY_DESTINATION_CONTEXT to LINKERD2_PROXY_POLICY_SVC_NAME: identity and control-plane names. */
  identity: readonly EnvVar[];
}

/** Renders the parts of the environment that depend on the configuration alone. */
export function prepareEnv(values: LinkerdValues, controlPlaneNamespace: string): PreparedEnv {
  return deepFreeze({
    values,
    controlPlaneNamespace,
    inbound: paramsEnv('INBOUND', values.proxy.inbound),
    outbound: paramsEnv('OUTBOUND', values.proxy.outbound),
    identity: identityEnv(values, controlPlaneNamespace),
  });
}

const field = (name: string, fieldPath: string): EnvVar => ({ name, valueFrom: { fieldRef: { fieldPath } } });
const env = (name: string, value: string): EnvVar => ({ name, value });

/** Renders a scalar the way a Helm `quote` does for the values Linkerd uses (numbers in plain decimal). */
function quote(value: unknown): string {
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  return JSON.stringify(value);
}

/** camelCase → SNAKE_CASE as Sprig's snakecase does it for parameter names ("keepAliveInterval", "http2"). */
export const snakeUpper = memoizeText(toSnakeUpper);

function toSnakeUpper(name: string): string {
  return name
    .replace(/([a-z0-9])([A-Z])/g, '$1_$2')
    .replace(/([A-Z]+)([A-Z][a-z])/g, '$1_$2')
    .replace(/[-\s]+/g, '_')
    .toUpperCase();
}

const sortedEntries = <T>(map: Record<string, T>): Array<[string, T]> =>
  Object.entries(map).sort(([a], [b]) => compareCodeUnits(a, b));

/** `LINKERD2_PROXY_<DIR>_<SCOPE>_<PROTO>_<PARAM>` for each nested parameter, every level in key order. */
function paramsEnv(direction: 'INBOUND' | 'OUTBOUND', params: ProxyParams): EnvVar[] {
  const out: EnvVar[] = [];
  for (const [scope, protos] of sortedEntries(params ?? {})) {
    if (typeof protos !== 'object' || protos === null) continue;
    for (const [proto, settings] of sortedEntries(protos)) {
      if (typeof settings !== 'object' || settings === null) continue;
      for (const [param, value] of sortedEntries(settings)) {
        const name = [direction, scope, proto, param].map(snakeUpper).join('_');
        out.push(env(`LINKERD2_PROXY_${name}`, quote(value)));
      }
    }
  }
  return out;
}

// Entries that are the same in every proxy's environment; shared by every patch, hence frozen.
const POLICY_WORKLOAD: EnvVar = deepFreeze(env('LINKERD2_PROXY_POLICY_WORKLOAD', '{"ns":"$(_pod_ns)", "pod":"$(_pod_name)"}\n'));
const INBOUND_IPS: EnvVar = deepFreeze(field('LINKERD2_PROXY_INBOUND_IPS', 'status.podIPs'));
const KEEPALIVES: readonly EnvVar[] = deepFreeze([
  env('LINKERD2_PROXY_INBOUND_ACCEPT_KEEPALIVE', '10000ms'),
  env('LINKERD2_PROXY_OUTBOUND_CONNECT_KEEPALIVE', '10000ms'),
  env('LINKERD2_PROXY_INBOUND_ACCEPT_USER_TIMEOUT', '30s'),
  env('LINKERD2_PROXY_OUTBOUND_CONNECT_USER_TIMEOUT', '30s'),
]);

/** The first entries of every proxy's environment. */
const POD_FIELDS: readonly EnvVar[] = deepFreeze([
  field('_pod_name', 'metadata.name'),
  field('_pod_ns', 'metadata.namespace'),
  field('_pod_uid', 'metadata.uid'),
  field('_pod_ip', 'status.podIP'),
  field('_pod_nodeName', 'spec.nodeName'),
  env('_pod_containerName', 'linkerd-proxy'),
]);

/** The proxy's environment. Optional entries appear only when their setting is given, as in Linkerd's template. */
export function proxyEnv(input: EnvInput): EnvVar[] {
  const { values, controlPlaneNamespace: cp } = input;
  const proxy = values.proxy;
  const cd = values.clusterDomain;
  const td = values.identityTrustDomain || cd;
  const any = values.disableIPv6 ? '0.0.0.0' : '[::]';
  const ports = proxy.ports;
  const out: EnvVar[] = [];
  pushAll(out, POD_FIELDS);

  const workers = proxy.runtime.workers;
  if (proxy.cores) {
    out.push(env('LINKERD2_PROXY_CORES', quote(proxy.cores)), env('LINKERD2_PROXY_CORES_MIN', quote(proxy.cores)));
  } else if (workers.minimum || workers.maximum || workers.maximumCPURatio) {
    const min = quote(workers.minimum || 1);
    out.push(env('LINKERD2_PROXY_CORES', min), env('LINKERD2_PROXY_CORES_MIN', min));
    if (workers.maximum) out.push(env('LINKERD2_PROXY_CORES_MAX', quote(workers.maximum)));
    if (workers.maximumCPURatio) out.push(env('LINKERD2_PROXY_CORES_MAX_RATIO', quote(workers.maximumCPURatio)));
  }
  if (proxy.requireIdentityOnInboundPorts) {
    out.push(env('LINKERD2_PROXY_INBOUND_PORTS_REQUIRE_IDENTITY', proxy.requireIdentityOnInboundPorts));
  }
  const headers = proxy.logHTTPHeaders === 'insecure' ? '' : ',[{headers}]=off,[{request}]=off';
  out.push(
    env('LINKERD2_PROXY_SHUTDOWN_ENDPOINT_ENABLED', String(proxy.enableShutdownEndpoint)),
    env('LINKERD2_PROXY_LOG', `${proxy.logLevel}${headers}`),
    env('LINKERD2_PROXY_LOG_FORMAT', proxy.logFormat),
    env('LINKERD2_PROXY_DESTINATION_SVC_ADDR', `linkerd-dst-headless.${cp}.svc.${cd}.:8086`),
    env('LINKERD2_PROXY_DESTINATION_PROFILE_NETWORKS', values.clusterNetworks),
    env('LINKERD2_PROXY_POLICY_SVC_ADDR', `linkerd-policy.${cp}.svc.${cd}.:8090`),
    POLICY_WORKLOAD,
    env('LINKERD2_PROXY_INBOUND_DEFAULT_POLICY', proxy.defaultInboundPolicy),
    env('LINKERD2_PROXY_POLICY_CLUSTER_NETWORKS', values.clusterNetworks),
    env('LINKERD2_PROXY_CONTROL_STREAM_INITIAL_TIMEOUT', proxy.control.streams.initialTimeout ?? ''),
    env('LINKERD2_PROXY_CONTROL_STREAM_IDLE_TIMEOUT', proxy.control.streams.idleTimeout ?? ''),
    env('LINKERD2_PROXY_CONTROL_STREAM_LIFETIME', proxy.control.streams.lifetime ?? ''),
  );
  optional(out, 'LINKERD2_PROXY_INBOUND_CONNECT_TIMEOUT', proxy.inboundConnectTimeout);
  optional(out, 'LINKERD2_PROXY_OUTBOUND_CONNECT_TIMEOUT', proxy.outboundConnectTimeout);
  optional(out, 'LINKERD2_PROXY_OUTBOUND_DISCOVERY_IDLE_TIMEOUT', proxy.outboundDiscoveryCacheUnusedTimeout);
  optional(out, 'LINKERD2_PROXY_INBOUND_DISCOVERY_IDLE_TIMEOUT', proxy.inboundDiscoveryCacheUnusedTimeout);
  optional(out, 'LINKERD2_PROXY_OUTBOUND_DETECT_TIMEOUT', proxy.disableOutboundProtocolDetectTimeout ? '365d' : '');
  optional(out, 'LINKERD2_PROXY_INBOUND_DETECT_TIMEOUT', proxy.disableInboundProtocolDetectTimeout ? '365d' : '');
  const outbound = `127.0.0.1:${ports.outbound}`;
  out.push(
    env('LINKERD2_PROXY_CONTROL_LISTEN_ADDR', `${any}:${ports.control}`),
    env('LINKERD2_PROXY_ADMIN_LISTEN_ADDR', `${any}:${ports.admin}`),
    env('LINKERD2_PROXY_OUTBOUND_LISTEN_ADDR', outbound),
    env('LINKERD2_PROXY_OUTBOUND_LISTEN_ADDRS', values.disableIPv6 ? outbound : `${outbound},[::1]:${ports.outbound}`),
    env('LINKERD2_PROXY_INBOUND_LISTEN_ADDR', `${any}:${ports.inbound}`),
    INBOUND_IPS,
    env('LINKERD2_PROXY_INBOUND_PORTS', input.inboundPorts),
  );
  if (input.isGateway) out.push(env('LINKERD2_PROXY_INBOUND_GATEWAY_SUFFIXES', `svc.${cd}.`));
  if (input.isIngress) out.push(env('LINKERD2_PROXY_INGRESS_MODE', 'true'));
  out.push(env('LINKERD2_PROXY_DESTINATION_PROFILE_SUFFIXES', proxy.enableExternalProfiles ? '.' : `svc.${cd}.`));
  pushAll(out, KEEPALIVES);
  out.push(env('LINKERD2_PROXY_OUTBOUND_METRICS_HOSTNAME_LABELS', String(proxy.metrics.hostnameLabels)));
  const tracing = proxy.tracing;
  if (tracing?.enabled) {
    const mesh = tracing.collector.meshIdentity;
    const attributes = sortedEntries(tracing.labels ?? {})
      .map(([k, v]) => `${k}=${v}\n`)
      .join('');
    out.push(
      env('LINKERD2_PROXY_TRACE_ATTRIBUTES_PATH', '/var/run/linkerd/podinfo/labels'),
      env('LINKERD2_PROXY_TRACE_ANNOTATIONS_PATH', '/var/run/linkerd/podinfo/annotations'),
      env('LINKERD2_PROXY_TRACE_PROTOCOL', tracing.protocol || 'opentelemetry'),
      env('LINKERD2_PROXY_TRACE_SERVICE_NAME', tracing.traceServiceName),
      env('LINKERD2_PROXY_TRACE_COLLECTOR_SVC_ADDR', tracing.collector.endpoint),
      env(
        'LINKERD2_PROXY_TRACE_COLLECTOR_SVC_NAME',
        `${mesh.serviceAccountName}.${mesh.namespace}.serviceaccount.identity.${cp}.${td}`,
      ),
      env('LINKERD2_PROXY_TRACE_EXTRA_ATTRIBUTES', attributes),
    );
  }
  // The overrides copy the values for each pod but share what no annotation changes: where that is still the
  // configuration's own, so is its rendering.
  const fixed = input.prepared?.controlPlaneNamespace === cp ? input.prepared : undefined;
  const configured = fixed?.values;
  pushAll(out, fixed && configured?.proxy.inbound === proxy.inbound ? fixed.inbound : paramsEnv('INBOUND', proxy.inbound));
  pushAll(out, fixed && configured?.proxy.outbound === proxy.outbound ? fixed.outbound : paramsEnv('OUTBOUND', proxy.outbound));
  if (proxy.opaquePorts) out.push(env('LINKERD2_PROXY_INBOUND_PORTS_DISABLE_PROTOCOL_DETECTION', proxy.opaquePorts));
  const sameIdentity =
    configured !== undefined &&
    configured.clusterDomain === values.clusterDomain &&
    configured.identityTrustDomain === values.identityTrustDomain &&
    configured.identityTrustAnchorsPEM === values.identityTrustAnchorsPEM &&
    configured.identity.serviceAccountTokenProjection === values.identity.serviceAccountTokenProjection;
  pushAll(out, fixed && sameIdentity ? fixed.identity : identityEnv(values, cp));
  if (proxy.accessLog) out.push(env('LINKERD2_PROXY_ACCESS_LOG', proxy.accessLog));
  if (proxy.shutdownGracePeriod) out.push(env('LINKERD2_PROXY_SHUTDOWN_GRACE_PERIOD', proxy.shutdownGracePeriod));
  pushAll(out, copyPlain(proxy.additionalEnv));
  pushAll(out, copyPlain(proxy.experimentalEnv));
  return out;
}

/** An entry that appears only when its setting is given. */
function optional(out: EnvVar[], name: string, value: string): void {
  if (value) out.push(env(name, value));
}

/** The identity and control-plane entries, which depend on the cluster's names and trust anchors only. */
function identityEnv(values: LinkerdValues, cp: string): EnvVar[] {
  const cd = values.clusterDomain;
  const td = values.identityTrustDomain || cd;
  const identity = `serviceaccount.identity.${cp}.${td}`;
  return [
    env(
      'LINKERD2_PROXY_DESTINATION_CONTEXT',
      '{"ns":"$(_pod_ns)", "nodeName":"$(_pod_nodeName)", "pod":"$(_pod_name)"}\n',
    ),
    field('_pod_sa', 'spec.serviceAccountName'),
    env('_l5d_ns', cp),
    env('_l5d_trustdomain', td),
    env('LINKERD2_PROXY_IDENTITY_DIR', '/var/run/linkerd/identity/end-entity'),
    env('LINKERD2_PROXY_IDENTITY_TRUST_ANCHORS', `${values.identityTrustAnchorsPEM.trim()}\n`),
    env(
      'LINKERD2_PROXY_IDENTITY_TOKEN_FILE',
      values.identity.serviceAccountTokenProjection
        ? '/var/run/secrets/tokens/linkerd-identity-token'
        : '/var/run/secrets/kubernetes.io/serviceaccount/token',
    ),
    env('LINKERD2_PROXY_IDENTITY_SVC_ADDR', `linkerd-identity-headless.${cp}.svc.${cd}.:8080`),
    env('LINKERD2_PROXY_IDENTITY_LOCAL_NAME', `$(_pod_sa).$(_pod_ns).${identity}`),
    env('LINKERD2_PROXY_IDENTITY_SVC_NAME', `linkerd-identity.${cp}.${identity}`),
    env('LINKERD2_PROXY_DESTINATION_SVC_NAME', `linkerd-destination.${cp}.${identity}`),
    env('LINKERD2_PROXY_POLICY_SVC_NAME', `linkerd-destination.${cp}.${identity}`),
  ];
}
