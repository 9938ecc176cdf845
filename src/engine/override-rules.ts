/**
 * One rule per `config.linkerd.io/*` annotation: how its text is read (a value, or why it cannot be used) and where the
 * value goes. The webhook's overrides and the command line's flags both read their values through these rules, so an
 * annotation and the flag that writes it accept the same texts and refuse the others with the same reason.
 */
import { ANNOTATION_DECODER, decodeEnvList, PULL_POLICIES } from './api-types.js';
import type { EnvVar } from './k8s.js';
import { memoizeText } from './memo.js';
import { ANNOTATIONS } from './names.js';
import {
  durationToMillis,
  durationToSeconds,
  GO_BOOL_TEXTS,
  parseGoBool,
  parseGoDuration,
  parseGoInt,
  parseGoUint,
  parseQuantity,
  quantityToWholeCores,
} from './parsers.js';
import { parsePortList } from './ports.js';
import { subnetsRefusal } from './iptables.js';
import type { LinkerdValues, ResourceValues } from './values.js';

export const INBOUND_POLICIES = [
  'all-unauthenticated',
  'all-authenticated',
  'cluster-unauthenticated',
  'cluster-authenticated',
  'deny',
  'audit',
] as const;

/** What a text means: a value (and the list items that had to be left out, and why), or why none of it can be used. */
export type Parsed<T> = { value: T; dropped?: { items: readonly string[]; reason: string } } | { reason: string };

export interface ParseContext {
  /**
   * The pod's named container ports, for port names in `opaque-ports`. Absent when no pod is known yet (a command-line
   * flag): a name is then accepted as written, to be resolved against each pod later.
   */
  namedPorts?: ReadonlyMap<string, number>;
}

/** What the overrides change: a copy of the values, and the pod-level switches the values have no place for. */
export interface OverrideTarget {
  values: LinkerdValues;
  isGateway: boolean;
  debugSidecar: boolean;
}

export interface OverrideRule<T = unknown> {
  annotation: string;
  parse(text: string, context: ParseContext): Parsed<T>;
  /** The texts the annotation is known to take, when they are few: metric labels report these and any other as one. */
  known?: readonly string[];
  /**
   * Puts a usable value in place. Absent for the annotations whose effect depends on other fields (the native-sidecar
   * keys, additional env, the close-wait timeout): `applyOverrides` writes those itself, reading them with `parse`.
   */
  apply?(target: OverrideTarget, value: T): void;
}

const MAX_PORT = 65535;
const MAX_ID = 2147483647;
/** A Kubernetes port name (an IANA service name): what a container may declare. */
const PORT_NAME = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

const ok = <T>(value: T): Parsed<T> => ({ value });
const no = (reason: string): { reason: string } => ({ reason });

/** Items quoted in a reason: at most this many, then how many more, so that a reason grows with nothing a pod chooses. */
const MAX_ITEMS_SHOWN = 10;

/** The first items of a list, comma-separated, and how many more there were. */
export function someItems(items: readonly string[]): string {
  const shown = items.slice(0, MAX_ITEMS_SHOWN).join(', ');
  return items.length > MAX_ITEMS_SHOWN ? `${shown} and ${items.length - MAX_ITEMS_SHOWN} more` : shown;
}

/** A parse, and the few texts it is known to take (see OverrideRule.known). */
type Parse<T> = OverrideRule<T>['parse'] & { known?: readonly string[] };
const knowing = <T>(known: readonly string[], parse: Parse<T>): Parse<T> => Object.assign(parse, { known });

const text = (): Parse<string> => (t) => ok(t);

const oneOf = (choices: readonly string[], reason: string): Parse<string> =>
  knowing(
    choices.filter((c) => c !== ''),
    (t) => (choices.includes(t) ? ok(t) : no(reason)),
  );

const bool: Parse<boolean> = knowing(GO_BOOL_TEXTS, (t) => {
  const b = parseGoBool(t);
  return b === undefined ? no('not a boolean') : ok(b);
});

const enabledDisabled: Parse<boolean> = knowing(['enabled', 'disabled'], (t) =>
  t === 'enabled' ? ok(true) : t === 'disabled' ? ok(false) : no('must be "enabled" or "disabled"'),
);

const port: OverrideRule<number>['parse'] = (t) => {
  const n = parseGoInt(t, 32);
  return n === undefined || n < 1 || n > MAX_PORT ? no('not a port number (1-65535)') : ok(n);
};

// The parsers below that do big-integer or list work remember what each text meant (see memo.ts): the same texts
// come back pod after pod.
const duration = <T>(render: (ns: bigint) => T): OverrideRule<T>['parse'] =>
  memoizeText((t) => {
    const ns = parseGoDuration(t);
    return ns === undefined || ns < 0n ? no('not a duration such as "500ms" or "2s"') : ok(render(ns));
  });

const id =
  (min: number, what: string): OverrideRule<number>['parse'] =>
  (t) => {
    const n = parseGoInt(t, 64);
    return n === undefined || n < min || n > MAX_ID ? no(`not a ${what}`) : ok(n);
  };

/** A quantity as written (the pod spec carries the text), and the whole cores it stands for. */
const quantity: OverrideRule<{ text: string; cores: number }>['parse'] = memoizeText((t) => {
  const q = parseQuantity(t);
  if (q === undefined || q.num < 0n) return no('not a non-negative Kubernetes quantity such as "100m" or "64Mi"');
  return ok({ text: t, cores: quantityToWholeCores(q) });
});

/** Ports and ranges, kept as written: proxy-init receives the list as given. */
const portList: OverrideRule<string>['parse'] = memoizeText((t) => {
  const { invalid } = parsePortList(t);
  return invalid.length === 0 ? ok(t) : no(`not a comma-separated list of ports and port ranges (${someItems(invalid)})`);
});

/** Ports, ranges and container port names; the items that are none of these are left out and the rest kept. */
const opaquePorts: OverrideRule<string>['parse'] = (t, context) => {
  const { ports, invalid } = parsePortList(t, context.namedPorts);
  const items = context.namedPorts ? invalid : invalid.filter((item) => !PORT_NAME.test(item));
  const value = context.namedPorts ? ports.join(',') : t;
  return { value, ...(items.length > 0 && { dropped: { items, reason: 'not a port, a range or a container port name' } }) };
};

/** Subnets as proxy-init reads its `--subnets-to-ignore`, which Linkerd renders as written. */
const cidrs: OverrideRule<string>['parse'] = memoizeText((t) =>
  subnetsRefusal(t) === undefined ? ok(t) : no('not a comma-separated list of CIDRs'),
);

/** A decimal number, optionally with an exponent; no part of it can match in two ways, so no input backtracks. */
const DECIMAL = /^[+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?$/;

const ratio: OverrideRule<number>['parse'] = (t) => {
  const r = t.length <= 64 && DECIMAL.test(t) ? Number(t) : NaN;
  return r > 0 && r < 1 ? ok(r) : no('must be a number between 0 and 1');
};

const seconds: OverrideRule<number>['parse'] = (t) => {
  const n = parseGoUint(t, Number.MAX_SAFE_INTEGER);
  return n === undefined ? no('not a whole number of seconds') : ok(n);
};

/**
 * A `proxy-additional-env` value: a JSON list of Kubernetes env vars, each decoded as the API server would decode it.
 * Empty and `null` mean no entries, as for Linkerd. Remembered per text and frozen, as the parsers above.
 */
export const parseAdditionalEnv: (t: string) => Parsed<readonly EnvVar[]> = memoizeText(decodeAdditionalEnv);

function decodeAdditionalEnv(t: string): Parsed<EnvVar[]> {
  if (t === '') return ok([]);
  let parsed: unknown;
  try {
    parsed = JSON.parse(t);
  } catch (err) {
    return no(`not JSON: ${(err as Error).message}`);
  }
  if (parsed === null) return ok([]);
  if (!Array.isArray(parsed)) return no('not a JSON list of env vars');
  const decoded = decodeEnvList(parsed, 'entry', ANNOTATION_DECODER);
  return typeof decoded === 'string' ? no(decoded) : ok(decoded);
}

const pullPolicy = oneOf(['', ...PULL_POLICIES], `must be one of ${PULL_POLICIES.join(', ')}`);

function rule<T>(annotation: string, parse: Parse<T>, apply?: OverrideRule<T>['apply']): OverrideRule<T> {
  return { annotation, parse, ...(apply && { apply }), ...(parse.known && { known: parse.known }) };
}

const resource = (
  annotation: string,
  pick: (v: LinkerdValues) => ResourceValues,
  field: 'request' | 'limit',
  cores?: (v: LinkerdValues, n: number) => void,
): OverrideRule<{ text: string; cores: number }> =>
  rule(annotation, quantity, ({ values }, q) => {
    pick(values)[field] = q.text;
    cores?.(values, q.cores);
  });

/** Every proxy annotation, in the order the overrides apply them (and report what they ignore). */
export const OVERRIDE_RULES: readonly OverrideRule<never>[] = [
  rule(ANNOTATIONS.proxyImage, text(), ({ values }, v) => (values.proxy.image.name = v)),
  rule(ANNOTATIONS.proxyVersion, text(), ({ values }, v) => (values.proxy.image.version = v)),
  rule(ANNOTATIONS.imagePullPolicy, pullPolicy, ({ values }, v) => (values.proxy.image.pullPolicy = v)),
  rule(ANNOTATIONS.controlPort, port, ({ values }, v) => (values.proxy.ports.control = v)),
  rule(ANNOTATIONS.inboundPort, port, ({ values }, v) => (values.proxy.ports.inbound = v)),
  rule(ANNOTATIONS.adminPort, port, ({ values }, v) => (values.proxy.ports.admin = v)),
  rule(ANNOTATIONS.outboundPort, port, ({ values }, v) => (values.proxy.ports.outbound = v)),
  rule(ANNOTATIONS.proxyAdminShutdown, enabledDisabled, ({ values }, v) => (values.proxy.enableShutdownEndpoint = v)),
  // The proxy's plain levels are known; a filter ("warn,linkerd=debug") is taken too.
  rule(ANNOTATIONS.proxyLogLevel, knowing(['trace', 'debug', 'info', 'warn', 'error', 'off'], text()), ({ values }, v) => (values.proxy.logLevel = v)),
  rule(ANNOTATIONS.proxyLogHttpHeaders, oneOf(['insecure', 'off', ''], 'must be "insecure" or "off"'), ({ values }, v) => {
    values.proxy.logHTTPHeaders = v;
  }),
  rule(ANNOTATIONS.proxyLogFormat, knowing(['plain', 'json'], text()), ({ values }, v) => (values.proxy.logFormat = v)),
  rule(ANNOTATIONS.proxyRequireIdentityInboundPorts, text(), ({ values }, v) => (values.proxy.requireIdentityOnInboundPorts = v)),
  rule(ANNOTATIONS.proxyMetricsHostnameLabels, bool, ({ values }, v) => (values.proxy.metrics.hostnameLabels = v)),
  rule(ANNOTATIONS.proxyOutboundConnectTimeout, duration(durationToMillis), ({ values }, v) => (values.proxy.outboundConnectTimeout = v)),
  rule(ANNOTATIONS.proxyInboundConnectTimeout, duration(durationToMillis), ({ values }, v) => (values.proxy.inboundConnectTimeout = v)),
  rule(ANNOTATIONS.proxyOutboundDiscoveryCacheUnusedTimeout, duration(durationToSeconds), ({ values }, v) => {
    values.proxy.outboundDiscoveryCacheUnusedTimeout = v;
  }),
  rule(ANNOTATIONS.proxyInboundDiscoveryCacheUnusedTimeout, duration(durationToSeconds), ({ values }, v) => {
    values.proxy.inboundDiscoveryCacheUnusedTimeout = v;
  }),
  rule(ANNOTATIONS.proxyDisableOutboundProtocolDetectTimeout, bool, ({ values }, v) => (values.proxy.disableOutboundProtocolDetectTimeout = v)),
  rule(ANNOTATIONS.proxyDisableInboundProtocolDetectTimeout, bool, ({ values }, v) => (values.proxy.disableInboundProtocolDetectTimeout = v)),
  rule(ANNOTATIONS.shutdownGracePeriod, duration(durationToMillis), ({ values }, v) => (values.proxy.shutdownGracePeriod = v)),
  rule(ANNOTATIONS.enableExternalProfiles, bool, ({ values }, v) => (values.proxy.enableExternalProfiles = v)),
  rule(ANNOTATIONS.defaultInboundPolicy, oneOf(INBOUND_POLICIES, `must be one of ${INBOUND_POLICIES.join(', ')}`), ({ values }, v) => {
    values.proxy.defaultInboundPolicy = v;
  }),
  rule(ANNOTATIONS.accessLog, knowing(['apache', 'json'], text()), ({ values }, v) => (values.proxy.accessLog = v)),
  rule(ANNOTATIONS.opaquePorts, opaquePorts, ({ values }, v) => (values.proxy.opaquePorts = v)),
  rule(ANNOTATIONS.skipInboundPorts, portList, ({ values }, v) => (values.proxyInit.ignoreInboundPorts = v)),
  rule(ANNOTATIONS.skipOutboundPorts, portList, ({ values }, v) => (values.proxyInit.ignoreOutboundPorts = v)),
  rule(ANNOTATIONS.skipSubnets, cidrs, ({ values }, v) => (values.proxyInit.skipSubnets = v)),
  rule(ANNOTATIONS.proxyUid, id(0, `user ID (0-${MAX_ID})`), ({ values }, v) => (values.proxy.uid = v)),
  rule(ANNOTATIONS.proxyGid, id(-1, `group ID (-1 for none, or 0-${MAX_ID})`), ({ values }, v) => (values.proxy.gid = v)),
  // A CPU request sets the proxy's minimum worker threads and a limit its maximum, in whole cores.
  resource(ANNOTATIONS.proxyCpuRequest, (v) => v.proxy.resources.cpu, 'request', (v, n) => (v.proxy.runtime.workers.minimum = n)),
  resource(ANNOTATIONS.proxyCpuLimit, (v) => v.proxy.resources.cpu, 'limit', (v, n) => (v.proxy.runtime.workers.maximum = n)),
  resource(ANNOTATIONS.proxyMemoryRequest, (v) => v.proxy.resources.memory, 'request'),
  resource(ANNOTATIONS.proxyMemoryLimit, (v) => v.proxy.resources.memory, 'limit'),
  resource(ANNOTATIONS.proxyEphemeralStorageRequest, (v) => v.proxy.resources['ephemeral-storage'], 'request'),
  resource(ANNOTATIONS.proxyEphemeralStorageLimit, (v) => v.proxy.resources['ephemeral-storage'], 'limit'),
  rule(ANNOTATIONS.proxyCpuRatioLimit, ratio, ({ values }, v) => (values.proxy.runtime.workers.maximumCPURatio = v)),
  rule(ANNOTATIONS.proxyAwait, enabledDisabled, ({ values }, v) => (values.proxy.await = v)),
  rule(ANNOTATIONS.proxyEnableNativeSidecar, bool),
  rule(ANNOTATIONS.betaProxyEnableNativeSidecar, bool),
  rule(ANNOTATIONS.alphaProxyEnableNativeSidecar, bool),
  rule(ANNOTATIONS.alphaProxyWaitBeforeExitSeconds, seconds, ({ values }, v) => (values.proxy.waitBeforeExitSeconds = v)),
  rule(ANNOTATIONS.proxyAdditionalEnv, parseAdditionalEnv),
  rule(ANNOTATIONS.enableGateway, bool, (target, v) => (target.isGateway = v)),
  rule(ANNOTATIONS.enableDebugSidecar, bool, (target, v) => (target.debugSidecar = v)),
  rule(ANNOTATIONS.debugImage, text(), ({ values }, v) => (values.debugContainer.image.name = v)),
  rule(ANNOTATIONS.debugImageVersion, text(), ({ values }, v) => (values.debugContainer.image.version = v)),
  rule(ANNOTATIONS.debugImagePullPolicy, pullPolicy, ({ values }, v) => (values.debugContainer.image.pullPolicy = v)),
  rule(ANNOTATIONS.closeWaitTimeout, duration((ns) => Number(ns / 1_000_000_000n))),
] as OverrideRule<never>[];

const BY_ANNOTATION: ReadonlyMap<string, OverrideRule<never>> = new Map(OVERRIDE_RULES.map((r) => [r.annotation, r]));

/** The rule for an annotation, if it has one. */
export function overrideRule(annotation: string): OverrideRule<unknown> | undefined {
  return BY_ANNOTATION.get(annotation) as OverrideRule<unknown> | undefined;
}

/**
 * Why a text cannot be used for an annotation, or undefined when it can (or the annotation has no rule). Items a list
 * would leave out count as a reason here: a flag is checked before any pod is seen, and whoever typed them meant them.
 */
export function refusal(annotation: string, t: string, context: ParseContext = {}): string | undefined {
  const parsed = overrideRule(annotation)?.parse(t, context);
  if (parsed === undefined) return undefined;
  if ('reason' in parsed) return parsed.reason;
  return parsed.dropped && `${parsed.dropped.reason}: ${someItems(parsed.dropped.items)}`;
}
