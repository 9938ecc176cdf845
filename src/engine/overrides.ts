/** Workload and namespace annotations applied over the Linkerd values: the per-pod configuration of the proxy. */
import { ANNOTATIONS, INJECT_ANNOTATION, INJECT_INGRESS, NAMESPACE_INHERITED_ANNOTATIONS, TRACING_ATTRIBUTE_PREFIX } from './names.js';
import type { EnvVar } from './k8s.js';
import { OVERRIDE_RULES, overrideRule, parseAdditionalEnv, type OverrideRule, type OverrideTarget } from './override-rules.js';
import { memoizeText } from './memo.js';
import { parseQuantity, quantityLess } from './parsers.js';
import type { LinkerdValues } from './values.js';
import { keysAmong } from './workload.js';

/** The namespace's proxy annotations that the workload does not carry itself (presence of the key, not its value). */
export function inheritedNamespaceAnnotations(
  workloadAnnotations: Record<string, string>,
  namespaceAnnotations: Record<string, string>,
): Record<string, string> {
  const inherited: Record<string, string> = {};
  for (const key of keysAmong(namespaceAnnotations, NAMESPACE_INHERITED_ANNOTATIONS)) {
    if (!(key in workloadAnnotations)) inherited[key] = namespaceAnnotations[key] ?? '';
  }
  return inherited;
}

export interface OverrideInput {
  /** The values the cluster is configured with; never mutated. */
  values: LinkerdValues;
  /** The annotations in force: the template's own, plus (from the webhook) those inherited or added for the pod. */
  annotations: Record<string, string>;
  /**
   * The pod template's labels plus the labels the injector adds. Called only when tracing is enabled, the one thing
   * that reads them: merging them into a new map for every pod cost more than the rest of building the patch's labels.
   */
  labels: () => Record<string, string>;
  /** Named container ports, for port names in `opaque-ports`. */
  namedPorts: ReadonlyMap<string, number>;
  /** The namespace's `proxy-additional-env`, a layer between the values and the workload. */
  namespaceAdditionalEnv?: string | undefined;
}

export interface Overridden {
  values: LinkerdValues;
  isIngress: boolean;
  isGateway: boolean;
  debugSidecar: boolean;
  /** One line per annotation whose value was not usable and was ignored. */
  warnings: string[];
}

/** Most characters of an ignored value quoted in its warning: kubectl shows 240 of a warning in all. */
const MAX_QUOTED = 100;

/** An annotation as its warnings name it: `key="value"`, a long value clipped. */
function named(key: string, value: string): string {
  const quoted = value.length > MAX_QUOTED ? `${JSON.stringify(value.slice(0, MAX_QUOTED))}... (${value.length} characters)` : JSON.stringify(value);
  return `${key}=${quoted}`;
}

function ignored(warnings: string[], key: string, value: string, why: string): void {
  warnings.push(`ignored annotation ${named(key, value)}: ${why}`);
}

/**
 * Whether the warnings say that the annotation's whole value was ignored, alone or with the other of a request and
 * limit pair, rather than some items of its list: the one place that knows how the warnings name an annotation.
 */
export function ignoredAnnotation(warnings: readonly string[], key: string, value: string): boolean {
  const name = named(key, value);
  return warnings.some((w) => w.startsWith('ignored annotation') && (w.includes(` ${name}: `) || w.includes(` ${name} and `)));
}

/** Items a list leaves out that get a warning each; the rest are counted in one more. */
const MAX_DROPPED_WARNINGS = 10;

/** Linkerd's additional-env layering: entries replace earlier ones of the same name in place, others are appended. */
export function mergeAdditionalEnv(layers: ReadonlyArray<readonly EnvVar[]>): EnvVar[] {
  const merged: EnvVar[] = [];
  const at = new Map<string, number>();
  for (const layer of layers) {
    // By index: a layer parsed from an annotation is remembered frozen, and a for-of over a frozen array allocated an
    // iterator result for each entry.
    for (let i = 0; i < layer.length; i++) {
      const env = layer[i] as EnvVar;
      const index = at.get(env.name);
      if (index !== undefined) {
        merged[index] = env;
      } else {
        at.set(env.name, merged.length);
        merged.push(env);
      }
    }
  }
  return merged;
}

/**
 * A copy of the values in which every object the override rules write into is the copy's own, and everything else
 * is shared with the configuration, which nothing downstream writes into: a deep copy of the whole values for every
 * pod was a tenth of an admission and most of its garbage. A rule that writes somewhere new must be copied here;
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
 * Applies every `config.linkerd.io/*` (and alpha/beta) override in force to a copy of the values, each read by its
 * rule in OVERRIDE_RULES. A value that does not parse is ignored, as Linkerd ignores it, and reported in `warnings`.
 * Values Linkerd would refuse to render (an unknown header-logging mode, a close-wait timeout without a root init
 * container) are ignored the same way rather than failing pod creation. The rules that involve several fields follow
 * the loop: resource requests larger than their limits, which native-sidecar key decides, the additional-env layers,
 * the close-wait timeout's need for a root init container, and tracing.
 */
export function applyOverrides(input: OverrideInput): Overridden {
  const ann = input.annotations;
  const target: OverrideTarget = { values: writableValues(input.values), isGateway: false, debugSidecar: false };
  const { values } = target;
  const proxy = values.proxy;
  const warnings: string[] = [];
  const context = { namedPorts: input.namedPorts };
  /** The annotation's value when present and usable; undefined (with a warning when present) otherwise. */
  const read = <T>(rule: OverrideRule<T>): { value: T } | undefined => {
    if (!(rule.annotation in ann)) return undefined;
    const text = ann[rule.annotation] ?? '';
    const parsed = rule.parse(text, context);
    if ('reason' in parsed) {
      ignored(warnings, rule.annotation, text, parsed.reason);
      return undefined;
    }
    if (parsed.dropped) {
      const { items, reason } = parsed.dropped;
      for (const item of items.slice(0, MAX_DROPPED_WARNINGS)) ignored(warnings, rule.annotation, item, reason);
      if (items.length > MAX_DROPPED_WARNINGS) warnings.push(`ignored ${items.length - MAX_DROPPED_WARNINGS} more items of annotation ${rule.annotation}: ${reason}`);
    }
    return parsed;
  };

  // Only the rules of the annotations present, still in the rules' order (which orders the warnings too).
  for (const key of keysAmong(ann, RULE_ANNOTATIONS)) {
    const rule = overrideRule(key);
    if (!rule?.apply) continue;
    const got = read(rule);
    if (got) rule.apply(target, got.value);
  }

  // A request larger than its limit makes the API server refuse the pod, so the annotations of such a pair are
  // ignored (the configured pair and worker threads stay) rather than failing pod creation.
  for (const keys of RESOURCE_PAIRS) {
    // By index: destructuring each tuple allocated an iterator for every pod.
    const requestKey = keys[0];
    const limitKey = keys[1];
    const field = keys[2];
    const pair = proxy.resources[field];
    const configured = input.values.proxy.resources[field];
    if (pair.request === configured.request && pair.limit === configured.limit) continue;
    const request = quantityOf(pair.request);
    const limit = quantityOf(pair.limit);
    if (request === undefined || limit === undefined || !quantityLess(limit, request)) continue;
    const given = [requestKey, limitKey].filter((k) => k in ann).map((k) => named(k, ann[k] ?? ''));
    warnings.push(
      `ignored annotation${given.length > 1 ? 's' : ''} ${given.join(' and ')}: the request ${JSON.stringify(pair.request)} ` +
        `is larger than the limit ${JSON.stringify(pair.limit)}, which the API server refuses`,
    );
    proxy.resources[field] = { ...configured };
    if (field === 'cpu') {
      const workers = input.values.proxy.runtime.workers;
      proxy.runtime.workers.minimum = workers.minimum;
      proxy.runtime.workers.maximum = workers.maximum;
    }
  }

  // The GA key wins over the beta key, which wins over the alpha key; the highest one present decides.
  const native = NATIVE_SIDECAR_KEYS.find((k) => k in ann);
  if (native) {
    const got = read(ruleFor<boolean>(native));
    if (got) proxy.nativeSidecar = got.value;
  }

  const envLayers: Array<readonly EnvVar[]> = [proxy.additionalEnv];
  const envLayer = (where: string, text: string | undefined): void => {
    if (text === undefined) return;
    const parsed = parseAdditionalEnv(text);
    if ('reason' in parsed) ignored(warnings, ANNOTATIONS.proxyAdditionalEnv, text, `${parsed.reason} (${where} layer skipped)`);
    else envLayers.push(parsed.value);
  };
  envLayer('namespace', input.namespaceAdditionalEnv);
  envLayer('workload', ANNOTATIONS.proxyAdditionalEnv in ann ? (ann[ANNOTATIONS.proxyAdditionalEnv] ?? '') : undefined);
  proxy.additionalEnv = mergeAdditionalEnv(envLayers);

  const closeWait = read(ruleFor<number>(ANNOTATIONS.closeWaitTimeout));
  if (closeWait && !values.proxyInit.runAsRoot) {
    ignored(warnings, ANNOTATIONS.closeWaitTimeout, ann[ANNOTATIONS.closeWaitTimeout] ?? '', 'needs proxyInit.runAsRoot in the Linkerd values');
  } else if (closeWait) values.proxyInit.closeWaitTimeoutSecs = closeWait.value;

  if (proxy.tracing?.enabled) applyTracing(proxy.tracing.labels, ann, input.labels());

  const isIngress = ann[INJECT_ANNOTATION] === INJECT_INGRESS;
  return { values, isIngress, isGateway: target.isGateway, debugSidecar: target.debugSidecar, warnings };
}

const RULE_ANNOTATIONS: readonly string[] = OVERRIDE_RULES.map((rule) => rule.annotation);

/** The request and limit annotations of each resource, checked against each other after the loop. */
const RESOURCE_PAIRS = [
  [ANNOTATIONS.proxyCpuRequest, ANNOTATIONS.proxyCpuLimit, 'cpu'],
  [ANNOTATIONS.proxyMemoryRequest, ANNOTATIONS.proxyMemoryLimit, 'memory'],
  [ANNOTATIONS.proxyEphemeralStorageRequest, ANNOTATIONS.proxyEphemeralStorageLimit, 'ephemeral-storage'],
] as const;

/** The native-sidecar keys, the one that wins first. */
const NATIVE_SIDECAR_KEYS = [ANNOTATIONS.proxyEnableNativeSidecar, ANNOTATIONS.betaProxyEnableNativeSidecar, ANNOTATIONS.alphaProxyEnableNativeSidecar];

/** Quantities of the request/limit check, remembered per text: the configured ones come back for every pod. */
const quantityOf = memoizeText(parseQuantity);

function ruleFor<T>(annotation: string): OverrideRule<T> {
  const rule = overrideRule(annotation);
  if (!rule) throw new Error(`no override rule for ${annotation}`);
  return rule as OverrideRule<T>;
}

/**
 * Tracing attributes from OpenTelemetry resource annotations and the workload's instance or name label, as Linkerd
 * sets them: the instance label wins whenever it is there, even empty (an empty `service.name=`), and an annotation
 * named by the prefix alone gives an attribute with an empty name.
 */
function applyTracing(
  traceLabels: Record<string, string>,
  annotations: Record<string, string>,
  labels: Record<string, string>,
): void {
  const service = labels['app.kubernetes.io/instance'] ?? labels['app.kubernetes.io/name'];
  if (service !== undefined) traceLabels['service.name'] = service;
  for (const key in annotations) {
    if (key.startsWith(TRACING_ATTRIBUTE_PREFIX)) traceLabels[key.slice(TRACING_ATTRIBUTE_PREFIX.length)] = annotations[key] as string;
  }
}
