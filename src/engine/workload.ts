/** Where each workload kind keeps its pod template, and the JSON-patch prefix that reaches it. */
import { EngineError } from './errors.js';
import { isObject, setOwn, type KubeObject, type ObjectMeta, type PodTemplate } from './k8s.js';

/** Kinds whose objects carry a pod template, lowercased as the engine reports them. */
export const WORKLOAD_KINDS = [
  'pod',
  'deployment',
  'replicaset',
  'replicationcontroller',
  'statefulset',
  'daemonset',
  'job',
  'cronjob',
] as const;
export type WorkloadKind = (typeof WORKLOAD_KINDS)[number];

/** The pointer prefix of the pod template inside each kind's object. */
export function templatePrefix(kind: WorkloadKind): string {
  if (kind === 'pod') return '';
  if (kind === 'cronjob') return '/spec/jobTemplate/spec/template';
  return '/spec/template';
}

/** Where a kind's pods take their annotations from, as a dotted path: `spec.template.metadata.annotations`. */
export function templateAnnotationsPath(kind: WorkloadKind): string {
  const prefix = templatePrefix(kind);
  return prefix === '' ? 'metadata.annotations' : `${prefix.slice(1).replaceAll('/', '.')}.metadata.annotations`;
}

/**
 * What to say of annotations a workload carries where the injector never reads them (it sees only the pods;
 * linkerd/linkerd2#4125): which, where they are, what follows from it, and where they belong.
 */
export function misplacedText(keys: readonly string[], where: string, belongs: string, consequence?: (them: string) => string): string {
  const [verb, them] = keys.length === 1 ? ['is', 'it'] : ['are', 'them'];
  const follows = consequence ? `, ${consequence(them)}` : '';
  return `${keys.join(', ')} ${verb} on ${where}, which the injector never reads (it sees only the pods)${follows}: move ${them} to ${belongs}`;
}

export function isWorkloadKind(kind: string): kind is WorkloadKind {
  return (WORKLOAD_KINDS as readonly string[]).includes(kind);
}

export interface Located {
  /** Lowercased kind: from the object when it names one, else the kind the caller gave. */
  kind: string;
  /** The object's name, or its generateName for a pod that has no name yet. */
  name: string;
  /** The object's own namespace ("" when it has none). */
  namespace: string;
  /** The pod template, when the kind has one (a Pod is its own template). */
  template?: PodTemplate;
  /** The JSON-pointer prefix of the template; "" for a Pod. */
  prefix: string;
}

/** The object's name, or its generateName while it has none (a pod its ReplicaSet has just created); '' when neither is set. */
export function objectName(object: unknown): string {
  const metadata = isObject(object) ? object['metadata'] : undefined;
  if (!isObject(metadata)) return '';
  const { name, generateName } = metadata;
  if (typeof name === 'string' && name !== '') return name;
  return typeof generateName === 'string' ? generateName : '';
}

/**
 * Annotation and label maps as strings, the way the API server stores them (YAML `true` becomes "true"). A map whose
 * values are all strings already (every map from the API server) is returned as it is, not copied: an admission reads
 * the maps several times, and a pod may carry thousands of annotations.
 */
export function stringMap(value: unknown): Readonly<Record<string, string>> {
  if (!isObject(value)) return {};
  for (const k in value) {
    if (typeof value[k] !== 'string') return stringCopy(value);
  }
  return value as Record<string, string>;
}

/**
 * The keys of `map` that are among `names` (which has no duplicates), in the order of `names`. A pod carries a few
 * annotations and the lists of names the engine looks for have around fifty, so the map's keys are visited and
 * placed by their position in the list; a map with more keys than the list has names is searched name by name.
 */
export function keysAmong(map: Readonly<Record<string, string>>, names: readonly string[]): string[] {
  const position = positions(names);
  const found: number[] = [];
  let visited = 0;
  for (const key in map) {
    if (++visited > names.length) return names.filter((name) => name in map);
    const at = position.get(key);
    if (at === undefined) continue;
    // Insertion in order: the list found is a handful of positions.
    let i = found.length;
    for (; i > 0 && (found[i - 1] as number) > at; i--) found[i] = found[i - 1] as number;
    found[i] = at;
  }
  const keys: string[] = [];
  for (const at of found) keys.push(names[at] as string);
  return keys;
}

/** Each name's position in its list, worked out once per list (the lists are the engine's own constants). */
const positionsOf = new WeakMap<readonly string[], ReadonlyMap<string, number>>();

function positions(names: readonly string[]): ReadonlyMap<string, number> {
  let known = positionsOf.get(names);
  if (known === undefined) {
    known = new Map(names.map((name, at) => [name, at]));
    positionsOf.set(names, known);
  }
  return known;
}

function stringCopy(value: Record<string, unknown>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(value)) setOwn(out, k, asString(v));
  return out;
}

/** A map value as `stringMap` reads it. */
const asString = (v: unknown): string =>
  v === null || v === undefined ? '' : typeof v === 'string' ? v : typeof v === 'object' ? JSON.stringify(v) : String(v);

/**
 * One entry of an annotation or label map, as `stringMap` would read it, without a pass over the others (a pass over
 * a pod may carry thousands of annotations); undefined when the map does not have it.
 */
export function mapValue(map: unknown, key: string): string | undefined {
  return isObject(map) && Object.hasOwn(map, key) ? asString(map[key]) : undefined;
}

function walk(root: unknown, path: readonly string[]): unknown {
  let at = root;
  for (const key of path) {
    if (!isObject(at)) return undefined;
    at = at[key];
  }
  return at;
}

/**
 * Finds the kind, name and pod template of an object. Throws `INVALID_OBJECT` when the value is not a Kubernetes
 * object, or when a workload kind has no pod template (a Pod without `spec` is still a Pod).
 */
export function locate(object: unknown, fallbackKind?: string): Located {
  if (!isObject(object)) {
    throw new EngineError('INVALID_OBJECT', 'the object is not a JSON object');
  }
  const obj = object as KubeObject;
  const declared = typeof obj.kind === 'string' && obj.kind !== '' ? obj.kind : (fallbackKind ?? '');
  const kind = declared.toLowerCase();
  const meta: ObjectMeta = isObject(obj.metadata) ? obj.metadata : {};
  const name = objectName(obj);
  const namespace = typeof meta.namespace === 'string' ? meta.namespace : '';
  if (!isWorkloadKind(kind)) return { kind, name: String(name), namespace, prefix: '' };

  if (kind === 'pod') {
    return { kind, name: String(name), namespace, template: obj as PodTemplate, prefix: '' };
  }
  const templatePath =
    kind === 'cronjob' ? ['spec', 'jobTemplate', 'spec', 'template'] : ['spec', 'template'];
  const template = walk(obj, templatePath);
  if (!isObject(template)) {
    throw new EngineError(
      'INVALID_OBJECT',
      `${declared} ${String(name) || '(unnamed)'} has no pod template at ${templatePath.join('.')}`,
    );
  }
  return { kind, name: String(name), namespace, template: template as PodTemplate, prefix: templatePrefix(kind) };
}
