/** The few Kubernetes object shapes the engine reads and writes, typed as loosely as the API server's JSON allows. */

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
export type JsonObject = { [key: string]: Json };

export interface EnvVar {
  name: string;
  value?: string;
  valueFrom?: JsonObject;
}

export interface ContainerPort {
  containerPort?: number;
  name?: string;
  protocol?: string;
  hostPort?: number;
}

export interface HttpGetAction {
  port?: number | string;
  path?: string;
}

export interface Probe {
  httpGet?: HttpGetAction;
  [key: string]: unknown;
}

export interface VolumeMount {
  mountPath?: string;
  name?: string;
  readOnly?: boolean;
  [key: string]: unknown;
}

export interface Capabilities {
  add?: string[];
  drop?: string[];
}

export interface Container {
  name?: string;
  image?: string;
  ports?: ContainerPort[];
  readinessProbe?: Probe;
  livenessProbe?: Probe;
  volumeMounts?: VolumeMount[];
  securityContext?: { capabilities?: Capabilities; [key: string]: unknown };
  restartPolicy?: string;
  [key: string]: unknown;
}

export interface PodSpec {
  containers?: Container[];
  initContainers?: Container[];
  volumes?: Array<{ name?: string; [key: string]: unknown }>;
  hostNetwork?: boolean;
  automountServiceAccountToken?: boolean;
  [key: string]: unknown;
}

export interface ObjectMeta {
  name?: string;
  generateName?: string;
  namespace?: string;
  annotations?: Record<string, string>;
  labels?: Record<string, string>;
  ownerReferences?: Array<{ kind?: string; name?: string; [key: string]: unknown }>;
  [key: string]: unknown;
}

export interface PodTemplate {
  metadata?: ObjectMeta;
  spec?: PodSpec;
}

export interface KubeObject {
  apiVersion?: string;
  kind?: string;
  metadata?: ObjectMeta;
  spec?: Record<string, unknown>;
  [key: string]: unknown;
}

export interface ServicePort {
  port?: number;
  targetPort?: number | string;
  name?: string;
}

export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Whether a value is a map with at least one key, as Linkerd's `len(map) > 0`. */
export function hasKeys(value: unknown): boolean {
  if (!isObject(value)) return false;
  for (const _ in value) return true;
  return false;
}

/** Whether a value is a list with at least one item, as Linkerd's `len(list) > 0`. */
export function hasItems(value: unknown): boolean {
  return Array.isArray(value) && value.length > 0;
}

/**
 * Whether metadata is empty as Linkerd's injector sees it: absent, or holding only null, empty strings, zeros and an
 * empty annotations map (Linkerd decodes it, makes a missing annotations map an empty one, and compares the result
 * with empty metadata). An empty labels map or list counts as present, as a decoded empty map or list does there.
 */
export function emptyMetadata(value: unknown): boolean {
  if (!isObject(value)) return true;
  for (const key in value) {
    const field = value[key];
    if (field === null || field === '' || field === 0) continue;
    if (key === 'annotations' && isObject(field) && !hasKeys(field)) continue;
    return false;
  }
  return true;
}

/** The object entries of a list field (containers, ports, mounts); anything else in a malformed manifest is skipped. */
export function objectsIn<T extends object>(value: unknown): T[] {
  return Array.isArray(value) ? (value.filter(isObject) as T[]) : [];
}

/** A list of strings (capability names), ignoring anything that is not a string. */
export function stringsIn(value: unknown): string[] {
  return Array.isArray(value) ? value.filter((v): v is string => typeof v === 'string') : [];
}

/**
 * Sets `key` as an own data property. `out[key] = value` with the key `__proto__` (which YAML and JSON may carry as
 * an ordinary key) would replace the object's prototype instead, and the copy would inherit the entries under it.
 */
export function setOwn(out: Record<string, unknown>, key: string, value: unknown): void {
  if (key === '__proto__') Object.defineProperty(out, key, { value, writable: true, enumerable: true, configurable: true });
  else out[key] = value;
}

/**
 * Appends `items` to `out` one by one: spreading them into push() passes each as an argument, and a list as long as a
 * pod can make one (a port or env list in an annotation) overflows the stack.
 */
export function pushAll<T>(out: T[], items: readonly T[]): void {
  // By index: a for-of over a frozen array allocated an iterator result for every item.
  for (let i = 0; i < items.length; i++) out.push(items[i] as T);
}

/**
 * A deep copy of plain JSON-like data (objects, arrays, scalars), for the parts of the values a rendered container takes
 * and may then be changed: faster than `structuredClone`, which also copies what JSON has no form for.
 */
export function copyPlain<T>(value: T): T {
  if (Array.isArray(value)) return value.map(copyPlain) as T;
  if (typeof value === 'object' && value !== null) {
    const out: Record<string, unknown> = {};
    for (const key of Object.keys(value)) setOwn(out, key, copyPlain((value as Record<string, unknown>)[key]));
    return out as T;
  }
  return value;
}

/**
 * Whether `value` says everything `part` says: equal scalars, every key of an object `part` with a value it covers,
 * lists item by item and of the same length. What the API server fills in by default (a projected volume's
 * `defaultMode`, say) is in `value` only, so a field of the pod as stored covers the same field as the injector writes it.
 */
export function covers(value: unknown, part: unknown): boolean {
  if (Array.isArray(part)) return Array.isArray(value) && value.length === part.length && part.every((item, i) => covers(value[i], item));
  if (isObject(part)) return isObject(value) && !Array.isArray(value) && Object.keys(part).every((key) => Object.hasOwn(value, key) && covers(value[key], part[key]));
  return value === part;
}

/** A label selector, as webhooks and other objects of the API carry it. */
export interface LabelSelector {
  matchLabels?: Record<string, string>;
  matchExpressions?: Array<{ key: string; operator: string; values?: readonly unknown[] }>;
}

/** Whether labels match a selector as the API server matches them; no selector, or an empty one, matches all. */
export function selects(selector: LabelSelector | undefined, labels: Readonly<Record<string, string>>): boolean {
  for (const [key, value] of Object.entries(selector?.matchLabels ?? {})) if (labels[key] !== value) return false;
  return (selector?.matchExpressions ?? []).every(({ key, operator, values = [] }) => {
    const has = Object.hasOwn(labels, key);
    switch (operator) {
      case 'In':
        return has && values.includes(labels[key] as string);
      case 'NotIn':
        return !has || !values.includes(labels[key] as string);
      case 'Exists':
        return has;
      case 'DoesNotExist':
        return !has;
      default:
        // The API server refuses any other operator; a selector it would refuse selects nothing.
        return false;
    }
  });
}
