/** Linkerd configuration values: their types, the embedded defaults, and loading a values YAML document over them. */
import { createRequire } from 'node:module';
import { decodeCapabilities, decodeEnvList, PULL_POLICIES, securityContextProblem, VALUES_DECODER } from './api-types.js';
import { EngineError } from './errors.js';
import { pushAll, setOwn, type EnvVar } from './k8s.js';
import { subnetsRefusal } from './iptables.js';
import { XTABLES_LOCK_VOLUME } from './names.js';
import { parseCidr, parseQuantity } from './parsers.js';
import { clip, oneLine } from './text.js';

/**
 * The YAML parser, loaded when a values document is first read: a server given only trust anchors never needs it, and
 * loading it is a noticeable part of the time to ready. Node caches the module, so later reads pay nothing.
 */
function parseYaml(text: string): unknown {
  const { parse } = createRequire(import.meta.url)('yaml') as typeof import('yaml');
  // YAML 1.1 scalars, as Kubernetes and Helm read them.
  return parse(text, { version: '1.1', uniqueKeys: false, maxAliasCount: 1000 });
}

export interface ImageValues {
  name: string;
  pullPolicy: string;
  version: string;
}

export interface ResourceValues {
  limit: string;
  request: string;
}

/** Capabilities to add to and drop from a container, as in Linkerd's `proxy.capabilities` and `proxyInit.capabilities`. */
export interface CapabilityValues {
  add?: string[] | null;
  drop?: string[] | null;
}

export interface TracingValues {
  enabled: boolean;
  traceServiceName: string;
  protocol?: string;
  labels: Record<string, string>;
  collector: { endpoint: string; meshIdentity: { serviceAccountName: string; namespace: string } };
}

/** scope → protocol → parameter → value, e.g. server → http2 → keepAliveInterval → "10s". */
export type ProxyParams = Record<string, Record<string, Record<string, unknown>>>;

export interface ProxyValues {
  image: ImageValues;
  /** Not in Linkerd's chart defaults, but in its values type: replaced by the first app container's own, if any. */
  capabilities: CapabilityValues | null;
  ports: { admin: number; control: number; inbound: number; outbound: number };
  logLevel: string;
  logFormat: string;
  logHTTPHeaders: string;
  enableShutdownEndpoint: boolean;
  enableExternalProfiles: boolean;
  outboundConnectTimeout: string;
  inboundConnectTimeout: string;
  outboundDiscoveryCacheUnusedTimeout: string;
  inboundDiscoveryCacheUnusedTimeout: string;
  disableOutboundProtocolDetectTimeout: boolean;
  disableInboundProtocolDetectTimeout: boolean;
  /** Deprecated in favour of runtime.workers; still honoured first. */
  cores: number | null;
  runtime: { workers: { minimum: number | null; maximum: number | null; maximumCPURatio: number | null } };
  resources: { cpu: ResourceValues; memory: ResourceValues; 'ephemeral-storage': ResourceValues };
  uid: number;
  gid: number;
  securityContext: Record<string, unknown>;
  waitBeforeExitSeconds: number;
  await: boolean;
  requireIdentityOnInboundPorts: string;
  opaquePorts: string;
  shutdownGracePeriod: string;
  defaultInboundPolicy: string;
  nativeSidecar: boolean;
  livenessProbe: { initialDelaySeconds: number; timeoutSeconds: number };
  readinessProbe: { initialDelaySeconds: number; timeoutSeconds: number };
  startupProbe: { initialDelaySeconds: number; periodSeconds: number; failureThreshold: number };
  control: { streams: { initialTimeout: string; idleTimeout: string; lifetime: string } };
  metrics: { hostnameLabels: boolean };
  tracing: TracingValues | null;
  inbound: ProxyParams;
  outbound: ProxyParams;
  additionalEnv: EnvVar[];
  experimentalEnv: EnvVar[];
  accessLog: string;
}

export interface ProxyInitValues {
  /** Used only when neither `proxy.capabilities` nor the first app container set capabilities. */
  capabilities: CapabilityValues | null;
  /** "nft" or "legacy"; empty means legacy. */
  iptablesMode: string;
  ignoreInboundPorts: string;
  ignoreOutboundPorts: string;
  skipSubnets: string;
  logLevel: string;
  logFormat: string;
  closeWaitTimeoutSecs: number;
  privileged: boolean;
  runAsRoot: boolean;
  runAsUser: number;
  runAsGroup: number;
  xtMountPath: { mountPath: string; name: string };
}

export interface NetworkValidatorValues {
  logLevel: string;
  logFormat: string;
  connectAddr: string;
  listenAddr: string;
  timeout: string;
  securityContext: Record<string, unknown>;
}

/** The part of Linkerd's chart values that the injector reads. Other keys in a values document are ignored. */
export interface LinkerdValues {
  clusterDomain: string;
  clusterNetworks: string;
  imagePullPolicy: string;
  linkerdVersion: string;
  cniEnabled: boolean;
  disableIPv6: boolean;
  identityTrustAnchorsPEM: string;
  identityTrustDomain: string;
  proxy: ProxyValues;
  proxyInit: ProxyInitValues;
  networkValidator: NetworkValidatorValues;
  identity: { serviceAccountTokenProjection: boolean };
  debugContainer: { image: ImageValues };
}

/** The Linkerd release whose proxy images the embedded defaults name, and whose injector this one follows. */
export const DEFAULT_LINKERD_VERSION = 'edge-26.8.3';

/**
 * What to say when the values name another Linkerd release than the one this injector follows, or undefined when they
 * name that one: that release's injector may add to pods what this one does not know of.
 */
export function linkerdVersionMismatch(values: Pick<LinkerdValues, 'linkerdVersion'>): string | undefined {
  const configured = values.linkerdVersion;
  if (configured === DEFAULT_LINKERD_VERSION) return undefined;
  const named = clip(oneLine(configured), 64) || '(none)';
  return (
    `linkerd-config names Linkerd ${named}, but this injector follows Linkerd ${DEFAULT_LINKERD_VERSION}: it injects pods as ` +
    `${DEFAULT_LINKERD_VERSION}'s injector does, which may not be what ${named}'s does; install a proxy-injector that follows ${named}, ` +
    `or give injection back to Linkerd's injector until there is one (docs/swap.md)`
  );
}

const emptyResource = (): ResourceValues => ({ limit: '', request: '' });
const keepAlive = (): ProxyParams => ({ server: { http2: { keepAliveInterval: '10s', keepAliveTimeout: '3s' } } });

/**
 * Linkerd's chart defaults, except where Linkerd changed a default that the seed documents and existing clusters rely
 * on: the classic sidecar (proxy first in `containers`, held by the `linkerd-await` postStart hook) unless the values
 * or the pod ask for a native sidecar, and the legacy iptables backend unless `proxyInit.iptablesMode` says `nft`.
 * A returned object is fresh: callers may mutate it.
 */
export function defaultValues(): LinkerdValues {
  return {
    clusterDomain: 'cluster.local',
    clusterNetworks: '10.0.0.0/8,100.64.0.0/10,172.16.0.0/12,192.168.0.0/16,fd00::/8',
    imagePullPolicy: 'IfNotPresent',
    linkerdVersion: DEFAULT_LINKERD_VERSION,
    cniEnabled: false,
    disableIPv6: true,
    identityTrustAnchorsPEM: '',
    identityTrustDomain: '',
    proxy: {
      image: { name: 'cr.l5d.io/linkerd/proxy', pullPolicy: '', version: '' },
      capabilities: null,
      ports: { admin: 4191, control: 4190, inbound: 4143, outbound: 4140 },
      logLevel: 'warn,linkerd=info,hickory=error',
      logFormat: 'plain',
      logHTTPHeaders: 'off',
      enableShutdownEndpoint: false,
      enableExternalProfiles: false,
      outboundConnectTimeout: '1000ms',
      inboundConnectTimeout: '100ms',
      outboundDiscoveryCacheUnusedTimeout: '5s',
      inboundDiscoveryCacheUnusedTimeout: '90s',
      disableOutboundProtocolDetectTimeout: false,
      disableInboundProtocolDetectTimeout: false,
      cores: null,
      runtime: { workers: { minimum: 1, maximum: null, maximumCPURatio: null } },
      resources: { cpu: emptyResource(), memory: emptyResource(), 'ephemeral-storage': emptyResource() },
      uid: 2102,
      gid: -1,
      securityContext: {},
      waitBeforeExitSeconds: 0,
      await: true,
      requireIdentityOnInboundPorts: '',
      opaquePorts: '25,587,3306,4444,5432,6379,9300,11211',
      shutdownGracePeriod: '',
      defaultInboundPolicy: 'all-unauthenticated',
      nativeSidecar: false,
      livenessProbe: { initialDelaySeconds: 10, timeoutSeconds: 1 },
      readinessProbe: { initialDelaySeconds: 2, timeoutSeconds: 1 },
      startupProbe: { initialDelaySeconds: 0, periodSeconds: 1, failureThreshold: 120 },
      control: { streams: { initialTimeout: '3s', idleTimeout: '5m', lifetime: '1h' } },
      metrics: { hostnameLabels: false },
      tracing: {
        enabled: false,
        traceServiceName: 'linkerd-proxy',
        labels: {
          'k8s.pod.ip': '$(_pod_ip)',
          'k8s.pod.uid': '$(_pod_uid)',
          'k8s.container.name': '$(_pod_containerName)',
        },
        collector: { endpoint: '', meshIdentity: { serviceAccountName: '', namespace: '' } },
      },
      inbound: keepAlive(),
      outbound: keepAlive(),
      additionalEnv: [],
      experimentalEnv: [],
      accessLog: '',
    },
    proxyInit: {
      capabilities: null,
      iptablesMode: 'legacy',
      ignoreInboundPorts: '4567,4568',
      ignoreOutboundPorts: '4567,4568',
      skipSubnets: '',
      logLevel: '',
      logFormat: '',
      closeWaitTimeoutSecs: 0,
      privileged: false,
      runAsRoot: false,
      runAsUser: 65534,
      runAsGroup: 65534,
      xtMountPath: { mountPath: '/run', name: XTABLES_LOCK_VOLUME },
    },
    networkValidator: {
      logLevel: 'debug',
      logFormat: 'plain',
      connectAddr: '',
      listenAddr: '',
      timeout: '10s',
      securityContext: {
        allowPrivilegeEscalation: false,
        capabilities: { drop: ['ALL'] },
        readOnlyRootFilesystem: true,
        runAsGroup: 65534,
        runAsNonRoot: true,
        runAsUser: 65534,
        seccompProfile: { type: 'RuntimeDefault' },
      },
    },
    identity: { serviceAccountTokenProjection: true },
    debugContainer: { image: { name: 'cr.l5d.io/linkerd/debug', pullPolicy: '', version: '' } },
  };
}

type Kind = 'string' | 'number' | 'boolean' | 'map' | 'list';

/**
 * Keys whose default is null or absent, so their type cannot be read off the defaults, and maps that a values
 * document replaces whole (Linkerd reads them from the document alone, so its defaults never mix in).
 */
const DECLARED: Record<string, { kind: Kind; replace?: boolean }> = {
  'proxy.capabilities': { kind: 'map', replace: true },
  'proxyInit.capabilities': { kind: 'map', replace: true },
  'proxy.cores': { kind: 'number' },
  'proxy.runtime.workers.minimum': { kind: 'number' },
  'proxy.runtime.workers.maximum': { kind: 'number' },
  'proxy.runtime.workers.maximumCPURatio': { kind: 'number' },
  'proxy.tracing': { kind: 'map' },
  'proxy.tracing.protocol': { kind: 'string' },
  'proxy.inbound': { kind: 'map', replace: true },
  'proxy.outbound': { kind: 'map', replace: true },
  'proxy.securityContext': { kind: 'map', replace: true },
  'networkValidator.securityContext': { kind: 'map', replace: true },
};

function kindOf(value: unknown): Kind | 'null' {
  if (value === null || value === undefined) return 'null';
  if (Array.isArray(value)) return 'list';
  if (typeof value === 'object') return 'map';
  if (typeof value === 'string') return 'string';
  if (typeof value === 'number') return 'number';
  if (typeof value === 'boolean') return 'boolean';
  return 'string';
}

function isMap(value: unknown): value is Record<string, unknown> {
  return kindOf(value) === 'map';
}

/**
 * Merges `given` over `base` in place, checking each known key's type. Strings accept numbers and booleans (YAML
 * `ignoreInboundPorts: 4567` means the string "4567", as Linkerd reads it); a null leaves the default in place.
 */
function mergeInto(base: Record<string, unknown>, given: Record<string, unknown>, path: string): void {
  for (const [key, value] of Object.entries(given)) {
    const at = path ? `${path}.${key}` : key;
    if (value === null || value === undefined) continue;
    const declared = DECLARED[at];
    // Own entries only: `__proto__` (or `constructor`) in a values file is a key like any other, not Object.prototype.
    const current = Object.hasOwn(base, key) ? base[key] : undefined;
    const expected: Kind | 'null' = declared?.kind ?? kindOf(current);
    if (expected === 'null' && !Object.hasOwn(base, key)) {
      setOwn(base, key, value); // a key the injector does not read: kept, never interpreted
      continue;
    }
    const actual = kindOf(value);
    if (expected === 'string' && (actual === 'number' || actual === 'boolean')) {
      setOwn(base, key, String(value));
    } else if (expected === 'number' && actual === 'number' && !Number.isFinite(value as number)) {
      throw invalid(at, 'a finite number', value);
    } else if (expected === 'map' && actual === 'map') {
      if (declared?.replace || !isMap(current)) setOwn(base, key, structuredClone(value));
      else mergeInto(current, value as Record<string, unknown>, at);
    } else if (expected === actual || expected === 'null') {
      setOwn(base, key, structuredClone(value));
    } else {
      throw invalid(at, expected === 'map' ? 'a map' : expected === 'list' ? 'a list' : `a ${expected}`, value);
    }
  }
}

function invalid(path: string, expected: string, value: unknown): EngineError {
  const shown = printable(JSON.stringify(value) ?? String(value));
  const got = kindOf(value);
  return new EngineError(
    'INVALID_VALUES',
    `Linkerd values: ${path} must be ${expected}, got ${got === 'map' || got === 'list' ? `a ${got}` : shown}`,
  );
}

/**
 * Decodes the lists and objects that reach the pod as Kubernetes (and Linkerd's Go) types would decode them, so that a
 * values document the API server could not decode in a pod is refused here, naming the key.
 */
function decodeApiTypes(values: LinkerdValues): void {
  const fail = (message: string): never => {
    throw new EngineError('INVALID_VALUES', `Linkerd values: ${message}`);
  };
  const envList = (list: unknown, path: string): EnvVar[] => {
    const decoded = decodeEnvList(list, path, VALUES_DECODER);
    return typeof decoded === 'string' ? fail(decoded) : decoded;
  };
  values.proxy.additionalEnv = envList(values.proxy.additionalEnv, 'proxy.additionalEnv');
  values.proxy.experimentalEnv = envList(values.proxy.experimentalEnv, 'proxy.experimentalEnv');
  for (const owner of [values.proxy, values.proxyInit]) {
    if (owner.capabilities === null) continue;
    const path = `${owner === values.proxy ? 'proxy' : 'proxyInit'}.capabilities`;
    const decoded = decodeCapabilities(owner.capabilities, path);
    owner.capabilities = typeof decoded === 'string' ? fail(decoded) : decoded;
  }
  for (const [path, context] of [
    ['proxy.securityContext', values.proxy.securityContext],
    ['networkValidator.securityContext', values.networkValidator.securityContext],
  ] as const) {
    const problem = securityContextProblem(context, path);
    if (problem !== undefined) fail(problem);
  }
}

/**
 * Text from the document, fit for a one-line message: control characters and invalid UTF-8 (binary input) escaped as
 * JSON escapes them, and at most 120 characters.
 */
function printable(text: string): string {
  // eslint-disable-next-line no-control-regex
  const escaped = text.replace(/[\u0000-\u001f\u007f-\u009f\ufffd\u2028\u2029]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
  return clip(escaped, 120);
}

/**
 * Reads a Linkerd values YAML document (for instance the `values` key of the `linkerd-config` ConfigMap) and merges it
 * over the embedded defaults. YAML 1.1 scalars are used, as Kubernetes and Helm read them. Throws an
 * `EngineError('INVALID_VALUES')` naming the offending key when the document is not usable.
 */
export function loadValues(yamlText: string): LinkerdValues {
  let doc: unknown;
  try {
    doc = parseYaml(yamlText);
  } catch (err) {
    const message = (err as Error).message;
    // The yaml library's own advice here is to its callers, not to whoever wrote the file.
    if (message.includes('multiple documents')) throw new EngineError('INVALID_VALUES', 'Linkerd values must be one YAML document; this holds several (separated by ---)');
    throw new EngineError('INVALID_VALUES', `Linkerd values are not valid YAML: ${printable(message.split('\n')[0] ?? '').replace(/:$/, '')}`);
  }
  const most = Math.max(MIN_EXPANSION_BOUND, 2 * yamlText.length);
  if (expandsBeyond(doc, most)) {
    throw new EngineError('INVALID_VALUES', `Linkerd values use YAML aliases that expand them to more than ${most} bytes`);
  }
  return mergeValues(doc);
}

/**
 * What a values document may expand to through its aliases, at least: far more than Linkerd's own values, and more than
 * a ConfigMap holds. An alias repeats its anchor wherever it stands, and what the values hold is copied into every pod's
 * patch.
 */
const MIN_EXPANSION_BOUND = 4 * 1024 * 1024;

/**
 * Whether a parsed document, each alias counted wherever it stands, holds more than `bound` bytes: a string counts its
 * length, anything else one. Stops as soon as it knows.
 */
function expandsBeyond(doc: unknown, bound: number): boolean {
  let size = 0;
  const pending: unknown[] = [doc];
  while (pending.length > 0) {
    const value = pending.pop();
    size += typeof value === 'string' ? value.length : 1;
    if (size > bound) return true;
    if (Array.isArray(value)) pushAll(pending, value);
    else if (isMap(value)) for (const key in value) pending.push(key, value[key]);
  }
  return false;
}

/** Merges an already-parsed values document (a plain object, or null for "none") over the embedded defaults. */
export function mergeValues(doc: unknown): LinkerdValues {
  const values = defaultValues();
  if (doc === null || doc === undefined) return values;
  if (!isMap(doc)) {
    throw new EngineError('INVALID_VALUES', `Linkerd values must be a YAML map, got ${kindOf(doc)}`);
  }
  mergeInto(values as unknown as Record<string, unknown>, doc, '');
  decodeApiTypes(values);
  checkValues(values);
  return values;
}

const isPort = (n: number): boolean => Number.isInteger(n) && n >= 1 && n <= 65535;
const MAX_INT32 = 2147483647;
const isCount = (n: number): boolean => Number.isInteger(n) && n >= 0 && n <= MAX_INT32;

/**
 * Refuses values that Linkerd's templates would refuse to render, or that would give every injected pod an invalid
 * spec, naming the key so the operator can fix the configuration.
 */
export function checkValues(values: LinkerdValues): void {
  const fail = (message: string): never => {
    throw new EngineError('INVALID_VALUES', `Linkerd values: ${message}`);
  };
  const mode = values.proxyInit.iptablesMode;
  if (mode !== 'nft' && mode !== 'legacy' && mode !== '') {
    fail(`proxyInit.iptablesMode must be "nft" or "legacy", got ${JSON.stringify(mode)}`);
  }
  const headers = values.proxy.logHTTPHeaders;
  if (headers !== 'insecure' && headers !== 'off' && headers !== '') {
    fail(`proxy.logHTTPHeaders must be "insecure" or "off", got ${JSON.stringify(headers)}`);
  }
  if (values.proxyInit.closeWaitTimeoutSecs > 0 && !values.proxyInit.runAsRoot) {
    fail('proxyInit.closeWaitTimeoutSecs needs proxyInit.runAsRoot: true');
  }
  const tracing = values.proxy.tracing;
  if (tracing?.enabled) {
    if (!tracing.collector?.endpoint) fail('proxy.tracing.collector.endpoint is required when tracing is enabled');
    const mesh = tracing.collector.meshIdentity;
    if (!mesh?.serviceAccountName || !mesh?.namespace) {
      fail('proxy.tracing.collector.meshIdentity.serviceAccountName and .namespace are required when tracing is enabled');
    }
  }
  // Read as Linkerd's injector reads it before every patch, untrimmed: what it refuses denies every pod.
  for (const network of values.clusterNetworks.replace(/^,+|,+$/g, '').split(',')) {
    if (!parseCidr(network)) fail(`clusterNetworks: ${JSON.stringify(network)} is not a CIDR`);
  }
  const subnets = values.cniEnabled ? undefined : subnetsRefusal(values.proxyInit.skipSubnets, !values.disableIPv6);
  if (subnets !== undefined) {
    const shown = printable(JSON.stringify(values.proxyInit.skipSubnets));
    fail(`proxyInit.skipSubnets ${shown} would stop linkerd-init: ${subnets}`);
  }
  for (const [name, port] of Object.entries(values.proxy.ports)) {
    if (!isPort(port)) fail(`proxy.ports.${name} must be a port number (1-65535), got ${port}`);
  }
  if (!Number.isInteger(values.proxy.uid) || values.proxy.uid < 0) fail(`proxy.uid must be a user ID, got ${values.proxy.uid}`);
  if (!Number.isInteger(values.proxy.gid) || values.proxy.gid < -1) fail(`proxy.gid must be a group ID or -1, got ${values.proxy.gid}`);
  for (const key of ['runAsUser', 'runAsGroup'] as const) {
    const id = values.proxyInit[key];
    if (!Number.isInteger(id) || id < 0 || id > MAX_INT32) fail(`proxyInit.${key} must be an ID (0-${MAX_INT32}), got ${id}`);
  }
  // Probe settings are int32 fields of the pod: a fraction or a huge number would not decode.
  for (const probe of ['livenessProbe', 'readinessProbe', 'startupProbe'] as const) {
    for (const [key, n] of Object.entries(values.proxy[probe])) {
      if (!isCount(n)) fail(`proxy.${probe}.${key} must be a whole number (0-${MAX_INT32}), got ${n}`);
    }
  }
  if (!Number.isSafeInteger(values.proxy.waitBeforeExitSeconds) || values.proxy.waitBeforeExitSeconds < 0) {
    fail(`proxy.waitBeforeExitSeconds must be a whole number of seconds, got ${values.proxy.waitBeforeExitSeconds}`);
  }
  // Quantities the API server could not decode (or would refuse as negative) would break every injected pod.
  for (const [name, constraint] of Object.entries(values.proxy.resources)) {
    for (const field of ['request', 'limit'] as const) {
      const q = constraint?.[field] ?? '';
      const parsed = q === '' ? undefined : parseQuantity(q);
      if (q !== '' && (parsed === undefined || parsed.num < 0n)) {
        fail(`proxy.resources.${name}.${field} must be a non-negative quantity such as "100m" or "64Mi", got ${JSON.stringify(q)}`);
      }
    }
  }
  for (const [path, policy] of [
    ['imagePullPolicy', values.imagePullPolicy],
    ['proxy.image.pullPolicy', values.proxy.image.pullPolicy],
    ['debugContainer.image.pullPolicy', values.debugContainer.image.pullPolicy],
  ] as const) {
    if (policy !== '' && !PULL_POLICIES.includes(policy)) {
      fail(`${path} must be one of ${PULL_POLICIES.join(', ')}, got ${JSON.stringify(policy)}`);
    }
  }
}

/** Returns a copy of `values` whose trust anchors are exactly `pem` (the trust-roots file replaces the values' own). */
export function withTrustAnchors(values: LinkerdValues, pem: string): LinkerdValues {
  return { ...values, identityTrustAnchorsPEM: pem };
}
