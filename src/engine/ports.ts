/** Port lists: the pod's inbound ports, named-port resolution, and the opaque-ports annotation and its filtering. */
import { formatPortRange, parsePortRange } from './parsers.js';
import { sortDistinct } from './patch.js';
import { isObject, objectsIn, type Container, type ContainerPort, type PodSpec, type ServicePort } from './k8s.js';

/**
 * Calls `visit` for each object in a list field (containers, ports); anything else in a malformed manifest is skipped,
 * as `objectsIn` skips it. A loop rather than filtered copies: these run several times for every pod.
 */
function eachObject<T>(list: unknown, visit: (item: T) => void): void {
  if (!Array.isArray(list)) return;
  for (const item of list) if (isObject(item)) visit(item as T);
}

/** Each port of each container, init containers first. */
export function eachContainerPort(spec: PodSpec, visit: (port: ContainerPort, container: Container) => void): void {
  const inContainer = (c: Container): void => eachObject<ContainerPort>(c.ports, (p) => visit(p, c));
  eachObject(spec.initContainers, inContainer);
  eachObject(spec.containers, inContainer);
}

function portNumber(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isInteger(value) && value > 0 ? value : undefined;
}

/** Named container ports (init containers first; a later name wins), for resolving port names in annotations. */
export function namedPorts(spec: PodSpec): Map<string, number> {
  const names = new Map<string, number>();
  eachContainerPort(spec, (p) => {
    const port = portNumber(p.containerPort);
    if (port !== undefined && typeof p.name === 'string' && p.name !== '') names.set(p.name, port);
  });
  return names;
}

/**
 * The ports the proxy treats as the pod's own: every container port plus numeric HTTP readiness and liveness probe
 * ports, without duplicates, sorted as strings (so "11211" comes before "80", as Linkerd orders them).
 */
export function inboundPorts(spec: PodSpec): string {
  const ports = new Set<string>();
  const add = (value: unknown): void => {
    const port = portNumber(value);
    if (port !== undefined) ports.add(String(port));
  };
  const probePort = (probe: unknown): unknown => (isObject(probe) && isObject(probe['httpGet']) ? probe['httpGet']['port'] : undefined);
  const inContainer = (c: Container): void => {
    eachObject<ContainerPort>(c.ports, (p) => add(p.containerPort));
    add(probePort(c.readinessProbe));
    add(probePort(c.livenessProbe));
  };
  eachObject(spec.initContainers, inContainer);
  eachObject(spec.containers, inContainer);
  return sortDistinct([...ports]).join(',');
}

/** The items of a comma-separated list, trimmed, without empty ones. */
export function splitPortList(list: string): string[] {
  return list.split(',').map((item) => item.trim()).filter((item) => item !== '');
}

/**
 * The default opaque ports the pod actually exposes: each container port (init containers first, duplicates kept)
 * whose number exactly equals an item of the configured list. Ranges in the list never match a port.
 */
export function defaultOpaquePortsForPod(spec: PodSpec, configured: string): string {
  // A list, not a Set: the configured list is short, and building a Set of it cost more than the rest of a skip.
  const wanted = configured.split(',');
  const found: string[] = [];
  eachContainerPort(spec, (p) => {
    const port = portNumber(p.containerPort);
    if (port !== undefined && wanted.includes(String(port))) found.push(String(port));
  });
  return found.join(',');
}

/**
 * The default opaque ports a Service exposes: a port whose target port (or, with none, the port itself) is in the
 * configured list contributes its service `port`. Named target ports are skipped: their number is not known here.
 */
export function defaultOpaquePortsForService(ports: readonly ServicePort[], configured: string): string {
  const wanted = new Set(configured.split(','));
  const found: string[] = [];
  for (const p of objectsIn<ServicePort>(ports)) {
    const port = portNumber(p.port);
    if (port === undefined) continue;
    const target = p.targetPort;
    if (target === undefined || target === null || target === 0) {
      if (wanted.has(String(port))) found.push(String(port));
    } else if (typeof target === 'number' && wanted.has(String(target))) {
      found.push(String(port));
    }
  }
  return found.join(',');
}

export interface ParsedPortList {
  /** The valid items, rendered as "n" or "lo-hi", in the order given. */
  ports: string[];
  /** Items that are neither a known port name, a port, nor a range. */
  invalid: string[];
}

/** Parses an opaque-ports style list: port numbers, ranges "lo-hi", and names of the pod's container ports. */
export function parsePortList(list: string, names: ReadonlyMap<string, number> = new Map()): ParsedPortList {
  const ports: string[] = [];
  const invalid: string[] = [];
  for (const item of splitPortList(list)) {
    const named = names.get(item);
    if (named !== undefined) {
      ports.push(String(named));
      continue;
    }
    const range = parsePortRange(item);
    if (range) ports.push(formatPortRange(range));
    else invalid.push(item);
  }
  return { ports, invalid };
}
