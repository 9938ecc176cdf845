/** Undoing an injection: the RFC 6902 `remove` operations that take Linkerd's containers, volumes and metadata out. */
import { CONTROL_PLANE_COMPONENT_LABEL, INJECT_ANNOTATION, INJECT_DISABLED, INJECTED_CONTAINERS, INJECTED_VOLUMES } from './names.js';
import { isObject, pushAll } from './k8s.js';
import { escapePointer } from './patch.js';
import { isWorkloadKind, templatePrefix } from './workload.js';

export interface RemoveOperation {
  op: 'remove';
  path: string;
}

/** What `uninject` takes out, by name, for reports. */
export interface Removed {
  annotations: string[];
  labels: string[];
  containers: string[];
  initContainers: string[];
  volumes: string[];
}

export interface Uninjected {
  /** `remove` operations against the object as given, in an order that applies cleanly one after the other. */
  patch: RemoveOperation[];
  removed: Removed;
}

export interface UninjectOptions {
  /** More volume names to remove, e.g. a linkerd-init xtables lock volume renamed by `proxyInit.xtMountPath.name`. */
  volumes?: readonly string[];
}

/** Every `linkerd.io/...` annotation and label key (a `config.linkerd.io/...` key does not start with it, and stays). */
const LINKERD_PREFIX = 'linkerd.io';

const remove = (path: string): RemoveOperation => ({ op: 'remove', path });

interface MetaChange {
  ops: RemoveOperation[];
  annotations: string[];
  labels: string[];
}

/**
 * Removes Linkerd's keys from one map. A map left empty is removed whole: the injector creates the map when the
 * object had none, and removing it is what gives back the object as it was.
 */
function stripMap(base: string, field: string, map: Record<string, unknown>, keep: (k: string, v: unknown) => boolean) {
  const keys = Object.keys(map);
  const gone = keys.filter((k) => !keep(k, map[k]));
  if (gone.length === 0) return { ops: [], gone, emptied: false };
  if (gone.length === keys.length) return { ops: [remove(`${base}/${field}`)], gone, emptied: true };
  return { ops: gone.map((k) => remove(`${base}/${field}/${escapePointer(k)}`)), gone, emptied: false };
}

function stripMetadata(owner: Record<string, unknown>, base: string): MetaChange {
  const none: MetaChange = { ops: [], annotations: [], labels: [] };
  const metadata = owner['metadata'];
  if (!isObject(metadata)) return none;
  const labels = isObject(metadata['labels']) ? metadata['labels'] : undefined;
  if (labels && CONTROL_PLANE_COMPONENT_LABEL in labels) return none;
  const path = `${base}/metadata`;
  const annotations = isObject(metadata['annotations']) ? metadata['annotations'] : undefined;
  const keepAnnotation = (k: string, v: unknown): boolean =>
    !k.startsWith(LINKERD_PREFIX) || (k === INJECT_ANNOTATION && String(v) === INJECT_DISABLED);
  const a = annotations ? stripMap(path, 'annotations', annotations, keepAnnotation) : { ops: [], gone: [], emptied: false };
  const l = labels ? stripMap(path, 'labels', labels, (k) => !k.startsWith(LINKERD_PREFIX)) : { ops: [], gone: [], emptied: false };
  const remaining = Object.keys(metadata).filter(
    (k) => !((k === 'annotations' && a.emptied) || (k === 'labels' && l.emptied)),
  );
  // Metadata left with nothing at all was the injector's too (a CronJob's job template often has none).
  const ops = remaining.length === 0 && (a.emptied || l.emptied) ? [remove(path)] : [...a.ops, ...l.ops];
  return { ops, annotations: a.gone, labels: l.gone };
}

/** Indices of the entries to remove, highest first, so that each removal leaves the next index valid. */
function stripList(
  spec: Record<string, unknown>,
  base: string,
  field: string,
  names: ReadonlySet<string>,
  dropEmpty: boolean,
): { ops: RemoveOperation[]; gone: string[] } {
  const list = spec[field];
  if (!Array.isArray(list)) return { ops: [], gone: [] };
  const hits: number[] = [];
  list.forEach((entry: unknown, i) => {
    if (isObject(entry) && typeof entry['name'] === 'string' && names.has(entry['name'])) hits.push(i);
  });
  if (hits.length === 0) return { ops: [], gone: [] };
  const gone = hits.map((i) => String((list[i] as { name: string }).name));
  if (dropEmpty && hits.length === list.length) return { ops: [remove(`${base}/${field}`)], gone };
  return { ops: hits.reverse().map((i) => remove(`${base}/${field}/${i}`)), gone };
}

/**
 * The operations that take an injection out of a workload, Namespace or Service, as `linkerd uninject` does: the
 * containers and init containers named linkerd-proxy, linkerd-init, linkerd-network-validator and linkerd-debug, the
 * volumes the injector adds, and every annotation and label whose key starts with `linkerd.io` (except
 * `linkerd.io/inject: disabled`), on the object and on its pod template. `config.linkerd.io/*` annotations stay: they
 * are the workload's configuration, not the injection. Annotation and label maps, init-container and volume lists,
 * and pod-template metadata that end up empty are removed. Other kinds get no operations.
 */
export function uninject(object: unknown, options: UninjectOptions = {}): Uninjected {
  const removed: Removed = { annotations: [], labels: [], containers: [], initContainers: [], volumes: [] };
  if (!isObject(object)) return { patch: [], removed };
  const kind = typeof object['kind'] === 'string' ? object['kind'].toLowerCase() : '';
  if (kind !== 'namespace' && kind !== 'service' && !isWorkloadKind(kind)) return { patch: [], removed };

  const patch: RemoveOperation[] = [];
  const meta = (owner: Record<string, unknown>, base: string): void => {
    const change = stripMetadata(owner, base);
    pushAll(patch, change.ops);
    pushAll(removed.annotations, change.annotations);
    pushAll(removed.labels, change.labels);
  };
  meta(object, '');
  if (!isWorkloadKind(kind)) return { patch, removed };

  let template: unknown = object;
  const prefix = templatePrefix(kind);
  if (kind !== 'pod') {
    for (const key of prefix.split('/').slice(1)) template = isObject(template) ? template[key] : undefined;
    if (!isObject(template)) return { patch, removed };
    meta(template, prefix);
  }
  const spec = isObject(template) ? template['spec'] : undefined;
  if (!isObject(spec)) return { patch, removed };
  const containers = new Set(INJECTED_CONTAINERS);
  const volumes = new Set([...INJECTED_VOLUMES, ...(options.volumes ?? [])]);
  const base = `${prefix}/spec`;
  const inits = stripList(spec, base, 'initContainers', containers, true);
  const apps = stripList(spec, base, 'containers', containers, false);
  const vols = stripList(spec, base, 'volumes', volumes, true);
  for (const list of [inits, apps, vols]) pushAll(patch, list.ops);
  pushAll(removed.initContainers, inits.gone);
  pushAll(removed.containers, apps.gone);
  pushAll(removed.volumes, vols.gone);
  return { patch, removed };
}
