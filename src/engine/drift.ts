/**
 * Whether a running pod's proxy is what the injector would give it now: the injection taken out with the engine's own
 * `uninject`, the pod injected again with the configuration in force, and what the injector controls compared with the
 * pod as the API server returns it.
 */
import jsonPatch, { type Operation } from 'fast-json-patch';
import { compareFields, byKey, type FieldDifference } from './drift-fields.js';
import { inject, type InjectionRequest, type InjectionResult, type Owner } from './inject.js';
import { isObject } from './k8s.js';
import {
  CREATED_BY_ANNOTATION,
  DEBUG_CONTAINER,
  INIT_CONTAINER,
  INJECT_ANNOTATION,
  INJECTED_CONTAINERS,
  INJECTED_VOLUMES,
  PROXY_CONTAINER,
  PROXY_LABEL_PREFIX,
  PROXY_VERSION_ANNOTATION,
  TRUST_ROOT_SHA256_ANNOTATION,
  VALIDATOR_CONTAINER,
} from './names.js';
import { compareCodeUnits, oneLine } from './text.js';
import { uninject } from './uninject.js';

/** What a difference is about, in words a user acts on; docs/drift.md describes each. */
export type DriftKind =
  | 'proxy_image'
  | 'trust_anchors'
  | 'startup_mode'
  | 'proxy_resources'
  | 'proxy_config'
  | 'pod_metadata'
  | 'not_injected';

/** A difference docs/differences-from-linkerd.md describes: a pod Linkerd injected is not called drifted blindly. */
export type DocumentedDifference = 'number_format';

export interface Drift {
  kind: DriftKind;
  /** The field, e.g. `containers[linkerd-proxy].env[LINKERD2_PROXY_LOG]`; list entries by their Kubernetes key. */
  path: string;
  /** What a fresh admission would write there, shortened; absent when it would write nothing. */
  expected?: string;
  /** What the pod carries there, shortened; absent when it carries nothing. */
  actual?: string;
  documented?: DocumentedDifference;
  /** For `not_injected`: the engine's skip reasons. */
  reasons?: string[];
}

export type DriftVerdict =
  | { verdict: 'current'; warnings: string[] }
  | { verdict: 'drifted'; differences: Drift[]; warnings: string[] }
  | { verdict: 'unreadable'; reason: string };

/** The pod as the API server returns it, and what `inject` would be given for it now. */
export type DriftRequest = Pick<
  InjectionRequest,
  'config' | 'namespace' | 'namespaceAnnotations' | 'origin' | 'kubectlDefaultContainer'
> & {
  pod: unknown;
  /**
   * The workload that owns the pod; by default the one its `linkerd.io/proxy-<kind>` label names. `null` when the
   * admission being compared with had none, so that the label cannot stand in for it.
   */
  owner?: Owner | null;
};

/** The longest value text a difference carries: a trust bundle or a hostile field would otherwise fill a report. */
const MAX_VALUE_TEXT = 200;

type ListName = 'containers' | 'initContainers';

/**
 * The verdict on one pod that has a proxy. The same pod and inputs give the same verdict, differences in path order;
 * a pod the comparison cannot read is `unreadable`, never `current`, and nothing it carries makes this throw.
 */
export function podDrift(request: DriftRequest): DriftVerdict {
  const problem = unreadable(request.pod);
  if (problem) return { verdict: 'unreadable', reason: problem };
  try {
    return compare(request, request.pod as Record<string, unknown>);
  } catch (err) {
    // The engine refusing the pod (annotations over the API server's limit, say) or the configuration: no verdict.
    return { verdict: 'unreadable', reason: oneLine(err) };
  }
}

function compare(request: DriftRequest, pod: Record<string, unknown>): DriftVerdict {
  const fresh = reinjected(request, pod);
  const { result } = fresh;
  if (fresh.expected === undefined) {
    const at = placed(mapAt(pod, 'spec'), PROXY_CONTAINER);
    const path = `${at?.list ?? 'containers'}[${PROXY_CONTAINER}]`;
    const reasons = result.reasons.map((r) => r.code);
    return { verdict: 'drifted', differences: [{ kind: 'not_injected', path, reasons }], warnings: result.warnings };
  }
  const expected = fresh.expected;
  const differences: Drift[] = [];
  compareMetadata(mapAt(expected, 'metadata'), mapAt(pod, 'metadata'), result.added, differences);
  compareContainers(mapAt(expected, 'spec'), mapAt(pod, 'spec'), differences);
  const xtablesLock = request.config.values.proxyInit.xtMountPath.name;
  compareVolumes(mapAt(expected, 'spec'), mapAt(pod, 'spec'), xtablesLock, differences);
  differences.sort((a, b) => compareCodeUnits(a.path, b.path) || compareCodeUnits(a.kind, b.kind));
  if (differences.length === 0) return { verdict: 'current', warnings: result.warnings };
  return { verdict: 'drifted', differences, warnings: result.warnings };
}

interface Reinjected {
  result: InjectionResult;
  /** The pod as a fresh admission would make it; absent when the engine would not inject it. */
  expected?: unknown;
}

/** The pod with its injection taken out and made again with the request's inputs; no pod when it would be skipped. */
function reinjected(request: DriftRequest, pod: Record<string, unknown>): Reinjected {
  // A pod from a list carries no kind; uninject and inject read it as a Pod whatever it says. Its status and the API
  // server's record of writers (managedFields, often most of a listed pod) are neither read nor compared.
  const { managedFields: _writers, ...metadata } = mapAt(pod, 'metadata');
  const copy = jsonPatch.deepClone({ kind: 'Pod', metadata, spec: pod['spec'] }) as Record<string, unknown>;
  const removal = uninject(copy, { volumes: [request.config.values.proxyInit.xtMountPath.name] });
  jsonPatch.applyPatch(copy, removal.patch as Operation[], false, true);
  restoreInjectAnnotation(copy, pod);
  const labelled = (): Owner | undefined => labelledOwner(mapAt(metadata, 'labels') as Record<string, string>);
  const owner = request.owner === null ? undefined : (request.owner ?? labelled());
  const result = inject({
    object: copy,
    kind: 'Pod',
    namespace: request.namespace ?? (typeof metadata['namespace'] === 'string' ? metadata['namespace'] : ''),
    config: request.config,
    ...(request.namespaceAnnotations && { namespaceAnnotations: request.namespaceAnnotations }),
    ...(owner && { owner }),
    ...(request.origin && { origin: request.origin }),
    ...(request.kubectlDefaultContainer !== undefined && { kubectlDefaultContainer: request.kubectlDefaultContainer }),
  });
  if (result.outcome !== 'injected') return { result };
  // The patch's values are the engine's, frozen and shared: the pod gets copies.
  const injection = jsonPatch.deepClone(result.patch) as Operation[];
  return { result, expected: jsonPatch.applyPatch(copy, injection, false, true).newDocument };
}

/** Why the comparison cannot read a pod, or undefined when it can. */
function unreadable(pod: unknown): string | undefined {
  if (!isObject(pod)) return 'the pod is not an object';
  const metadata = pod['metadata'];
  if (metadata !== undefined && !isObject(metadata)) return 'metadata is not a map';
  for (const field of ['annotations', 'labels']) {
    const map = isObject(metadata) ? metadata[field] : undefined;
    if (map === undefined || map === null) continue;
    const strings = isObject(map) && Object.values(map).every((v) => typeof v === 'string');
    if (!strings) return `metadata.${field} is not a map of strings`;
  }
  const spec = pod['spec'];
  if (!isObject(spec)) return 'spec is not a map';
  if (!Array.isArray(spec['containers'])) return 'spec.containers is not a list';
  for (const field of ['containers', 'initContainers', 'volumes']) {
    const list = spec[field];
    if (list === undefined || list === null) continue;
    if (!Array.isArray(list) || !list.every((item) => isObject(item) && typeof item['name'] === 'string')) {
      return `spec.${field} is not a list of named objects`;
    }
  }
  const containers = [...(spec['containers'] as unknown[]), ...((spec['initContainers'] ?? []) as unknown[])];
  const names = (containers as Array<{ name: string }>).map((c) => c.name);
  const injected = names.filter((n) => INJECTED_CONTAINERS.includes(n));
  if (!injected.includes(PROXY_CONTAINER)) return `the pod has no ${PROXY_CONTAINER} container`;
  if (new Set(injected).size !== injected.length) return 'the pod has two containers of one name the injector adds';
  return undefined;
}

const mapAt = (owner: unknown, key: string): Record<string, unknown> => {
  const value = isObject(owner) ? owner[key] : undefined;
  return isObject(value) ? value : {};
};

/**
 * Puts back the pod's `linkerd.io/inject`, which `uninject` takes out with the other `linkerd.io` keys: it is the pod's
 * own request to be injected, and without it a fresh admission would not inject the pod at all.
 */
function restoreInjectAnnotation(copy: Record<string, unknown>, pod: Record<string, unknown>): void {
  const value = mapAt(mapAt(pod, 'metadata'), 'annotations')[INJECT_ANNOTATION];
  if (typeof value !== 'string') return;
  const metadata = isObject(copy['metadata']) ? copy['metadata'] : (copy['metadata'] = {});
  const annotations = isObject(metadata['annotations']) ? metadata['annotations'] : (metadata['annotations'] = {});
  annotations[INJECT_ANNOTATION] = value;
}

/** The owner a `linkerd.io/proxy-<kind>: <name>` label names; the first in key order when a pod carries several. */
function labelledOwner(labels: Record<string, string>): Owner | undefined {
  let key: string | undefined;
  for (const k of Object.keys(labels)) {
    if (k.startsWith(PROXY_LABEL_PREFIX) && (key === undefined || k < key)) key = k;
  }
  return key === undefined ? undefined : { kind: key.slice(PROXY_LABEL_PREFIX.length), name: labels[key] ?? '' };
}

/** A value as a difference shows it: text as it is, anything else as JSON, both cut short. */
function shown(value: unknown): string | undefined {
  if (value === undefined) return undefined;
  let text: string;
  try {
    text = typeof value === 'string' ? value : (JSON.stringify(value) ?? String(value));
  } catch {
    // Nesting deeper than JSON.stringify's stack: say so rather than fail the verdict.
    text = '(too deeply nested to show)';
  }
  return text.length > MAX_VALUE_TEXT ? `${text.slice(0, MAX_VALUE_TEXT)}…` : text;
}

function drift(kind: DriftKind, field: FieldDifference): Drift {
  const out: Drift = { kind, path: field.path };
  const expected = shown(field.expected);
  const actual = shown(field.actual);
  if (expected !== undefined) out.expected = expected;
  if (actual !== undefined) out.actual = actual;
  if (field.numberFormat) out.documented = 'number_format';
  return out;
}

/**
 * The annotations and labels the injector sets: those the fresh injection adds, and every `linkerd.io` key the pod
 * carries. `linkerd.io/created-by` names the program and release that injected the pod, not what it runs: a pod
 * injected by Linkerd's injector or by `inject --manual` runs the same proxy, and the release shows as `proxy_image`.
 */
function compareMetadata(
  expected: Record<string, unknown>,
  actual: Record<string, unknown>,
  added: { annotations: Record<string, string>; labels: Record<string, string> },
  out: Drift[],
): void {
  for (const field of ['annotations', 'labels'] as const) {
    const want = mapAt(expected, field);
    const have = mapAt(actual, field);
    const keys = new Set(Object.keys(added[field]));
    for (const key of Object.keys(have)) if (key.startsWith('linkerd.io/')) keys.add(key);
    keys.delete(CREATED_BY_ANNOTATION);
    for (const key of keys) {
      const expectedValue = Object.hasOwn(want, key) ? want[key] : undefined;
      const actualValue = Object.hasOwn(have, key) ? have[key] : undefined;
      if (expectedValue === actualValue) continue;
      const path = `metadata.${field}[${key}]`;
      out.push(drift(metadataKind(key), { path, expected: expectedValue, actual: actualValue }));
    }
  }
}

function metadataKind(key: string): DriftKind {
  if (key === PROXY_VERSION_ANNOTATION) return 'proxy_image';
  return key === TRUST_ROOT_SHA256_ANNOTATION ? 'trust_anchors' : 'pod_metadata';
}

interface Placed {
  list: ListName;
  index: number;
  container: Record<string, unknown>;
}

function placed(spec: Record<string, unknown>, name: string): Placed | undefined {
  for (const list of ['initContainers', 'containers'] as const) {
    const items = Array.isArray(spec[list]) ? (spec[list] as unknown[]) : [];
    const index = items.findIndex((c) => isObject(c) && c['name'] === name);
    if (index >= 0) return { list, index, container: items[index] as Record<string, unknown> };
  }
  return undefined;
}

/**
 * Whether an image is the expected one pinned to a digest (`name:tag@sha256:...`), as admission policies that verify
 * images rewrite it: the same tag, not a drift.
 */
const pinned = (expected: unknown, actual: unknown): boolean =>
  typeof expected === 'string' && typeof actual === 'string' && /^@sha256:[0-9a-f]{64}$/.test(actual.slice(expected.length)) && actual.startsWith(expected);

/** The containers that run the proxy's image: a new image or version shows on each of them. */
const PROXY_IMAGE_CONTAINERS = new Set([PROXY_CONTAINER, INIT_CONTAINER, VALIDATOR_CONTAINER]);

/** The proxy's environment that its CPU resources decide (its worker threads), reported with the resources. */
const RESOURCE_ENV = /^\.env\[LINKERD2_PROXY_CORES(?:_MIN|_MAX|_MAX_RATIO)?\]/;

/** The kind of a field of an injected container, by the container and the field's path inside it. */
function containerFieldKind(name: string, field: string, difference: FieldDifference): DriftKind {
  const proxyImage = PROXY_IMAGE_CONTAINERS.has(name);
  if (proxyImage && field === '.image') return 'proxy_image';
  if (proxyImage && field.startsWith('.resources')) return 'proxy_resources';
  if (name !== PROXY_CONTAINER) return 'proxy_config';
  if (field.startsWith('.env[LINKERD2_PROXY_IDENTITY_TRUST_ANCHORS]')) return 'trust_anchors';
  if (RESOURCE_ENV.test(field)) return 'proxy_resources';
  if (STARTUP_FIELDS.some((f) => field.startsWith(f))) return 'startup_mode';
  if (field === '.lifecycle' && (hasPostStart(difference.expected) || hasPostStart(difference.actual))) {
    return 'startup_mode';
  }
  return 'proxy_config';
}

/** The await hook, the native sidecar's restart policy and its startup probe: how the proxy starts. */
const STARTUP_FIELDS = ['.lifecycle.postStart', '.startupProbe', '.restartPolicy'];

const hasPostStart = (lifecycle: unknown): boolean => isObject(lifecycle) && lifecycle['postStart'] !== undefined;

/** Whether a container's presence is how the proxy starts (linkerd-init or the validator, the proxy) or an extra. */
const presenceKind = (name: string): DriftKind => (name === DEBUG_CONTAINER ? 'proxy_config' : 'startup_mode');

function compareContainers(expected: Record<string, unknown>, actual: Record<string, unknown>, out: Drift[]): void {
  const inBoth = new Set<string>();
  for (const name of INJECTED_CONTAINERS) {
    const want = placed(expected, name);
    const have = placed(actual, name);
    if (!want && !have) continue;
    if (!want || !have) {
      const at = (want ?? have) as Placed;
      const where = `${at.list}[${at.index}]`;
      const sides = want ? { expected: where } : { actual: where };
      out.push(drift(presenceKind(name), { path: `${at.list}[${name}]`, ...sides }));
      continue;
    }
    const path = `${have.list}[${name}]`;
    if (want.list !== have.list) out.push(drift('startup_mode', { path, expected: want.list, actual: have.list }));
    else inBoth.add(name);
    const fields: FieldDifference[] = [];
    compareFields(want.container, have.container, path, fields);
    for (const f of fields) {
      if (f.path === `${path}.image` && pinned(f.expected, f.actual)) continue;
      out.push(drift(containerFieldKind(name, f.path.slice(path.length), f), f));
    }
  }
  for (const list of ['initContainers', 'containers'] as const) {
    const want = order(expected[list], inBoth);
    const have = order(actual[list], inBoth);
    if (want !== have) out.push(drift('startup_mode', { path: list, expected: want, actual: have }));
  }
}

/**
 * Where the injected containers sit in a list, the pod's own containers shown as `*`: `linkerd-proxy,*` is a proxy
 * started first for its await hook, `*,linkerd-proxy` one started last.
 */
function order(list: unknown, names: ReadonlySet<string>): string {
  const shape: string[] = [];
  for (const item of Array.isArray(list) ? list : []) {
    const name = isObject(item) ? item['name'] : undefined;
    if (typeof name === 'string' && names.has(name)) shape.push(name);
    else if (shape[shape.length - 1] !== '*') shape.push('*');
  }
  return shape.join(',');
}

/**
 * The volumes the injector adds, by name. The xtables lock is linkerd-init's: whether the pod has it follows the
 * start-up mode, as under the CNI plugin there is none.
 */
function compareVolumes(
  expected: Record<string, unknown>,
  actual: Record<string, unknown>,
  xtablesLock: string,
  out: Drift[],
): void {
  const want = byKey(Array.isArray(expected['volumes']) ? expected['volumes'] : [], 'name');
  const have = byKey(Array.isArray(actual['volumes']) ? actual['volumes'] : [], 'name');
  for (const name of new Set([...INJECTED_VOLUMES, xtablesLock])) {
    if (!want.has(name) && !have.has(name)) continue;
    const fields: FieldDifference[] = [];
    const path = `volumes[${name}]`;
    if (want.has(name) && have.has(name)) compareFields(want.get(name), have.get(name), path, fields);
    else fields.push({ path, ...(want.has(name) ? { expected: want.get(name) } : { actual: have.get(name) }) });
    for (const f of fields) out.push(drift(name === xtablesLock ? 'startup_mode' : 'proxy_config', f));
  }
}
