/**
 * Whether kube-apiserver will refuse an injected pod for the resources of the containers the injector adds, under the
 * namespace's ResourceQuotas and LimitRanges:
 * - a quota on the CPU or memory of the namespace's pods obliges every container, init containers included, to state
 *   that resource; linkerd-init and the proxy state none by default ("must specify limits.cpu for:
 *   linkerd-init,linkerd-proxy") unless a LimitRange gives them defaults (LimitRanger runs again after the webhooks
 *   have changed the pod);
 * - a LimitRange's `min`, `max` and `maxLimitRequestRatio` apply to them like to any container, with the resources
 *   the proxy's annotations or values give them ("maximum cpu usage per Container is 500m, but limit is 1").
 * Pure: it reads the injected pod and the namespace's ResourceQuotas and LimitRanges as objects.
 */
import { compareVersions, POD_LEVEL_RESOURCES_RELEASE, type KubernetesVersion } from './kubernetes-version.js';
import { INJECTED_CONTAINERS } from './names.js';
import { isObject, objectsIn, selects, stringsIn, type Container, type PodSpec } from './k8s.js';
import { parseQuantity, quantityLess, type Quantity } from './parsers.js';
import type { StartupRisk } from './risks.js';

/** The quota keys that oblige each container to state a resource: only CPU and memory do, for old compatibility. */
const CONTAINER_KEYS: ReadonlyMap<string, string> = new Map([
  ['cpu', 'requests.cpu'],
  ['requests.cpu', 'requests.cpu'],
  ['memory', 'requests.memory'],
  ['requests.memory', 'requests.memory'],
  ['limits.cpu', 'limits.cpu'],
  ['limits.memory', 'limits.memory'],
]);

/** Resource name to quantity text. */
type ResourceList = Map<string, string>;

const listOf = (map: unknown): ResourceList => {
  const out: ResourceList = new Map();
  if (isObject(map)) for (const [k, v] of Object.entries(map)) out.set(k, typeof v === 'number' ? String(v) : String(v ?? ''));
  return out;
};

/** One `type: Container` item of a LimitRange, with the defaults the API server fills in when it stores it. */
interface ContainerLimits {
  limitRange: string;
  min: ResourceList;
  max: ResourceList;
  ratio: ResourceList;
  defaultLimits: ResourceList;
  defaultRequests: ResourceList;
}

/**
 * The Container items of the LimitRanges, as stored: resource by resource, a `max` stands as the `default`, a
 * `default` as the `defaultRequest`, and a `min` as the `defaultRequest` when neither gives one.
 */
function containerLimits(limitRanges: readonly unknown[]): ContainerLimits[] {
  const out: ContainerLimits[] = [];
  for (const lr of limitRanges) {
    if (!isObject(lr)) continue;
    const meta = lr['metadata'];
    const spec = lr['spec'];
    const name = isObject(meta) && typeof meta['name'] === 'string' ? meta['name'] : '';
    for (const item of objectsIn<Record<string, unknown>>(isObject(spec) ? spec['limits'] : undefined)) {
      if (item['type'] !== 'Container') continue;
      const min = listOf(item['min']);
      const max = listOf(item['max']);
      const defaultLimits = listOf(item['default']);
      for (const [r, q] of max) if (!defaultLimits.has(r)) defaultLimits.set(r, q);
      const defaultRequests = listOf(item['defaultRequest']);
      for (const [r, q] of defaultLimits) if (!defaultRequests.has(r)) defaultRequests.set(r, q);
      for (const [r, q] of min) if (!defaultRequests.has(r)) defaultRequests.set(r, q);
      out.push({ limitRange: name, min, max, ratio: listOf(item['maxLimitRequestRatio']), defaultLimits, defaultRequests });
    }
  }
  return out;
}

/**
 * A container's requests and limits as the API server will hold them: its own, a limit also standing as the missing
 * request (the Pod's defaulting), then each LimitRange's defaults for what is still missing.
 */
function effective(c: Container, limits: readonly ContainerLimits[]): { requests: ResourceList; limits: ResourceList } {
  const resources = isObject(c['resources']) ? c['resources'] : {};
  const ownLimits = listOf(resources['limits']);
  const requests = listOf(resources['requests']);
  for (const [r, q] of ownLimits) if (!requests.has(r)) requests.set(r, q);
  for (const item of limits) {
    for (const [r, q] of item.defaultLimits) if (!ownLimits.has(r)) ownLimits.set(r, q);
    for (const [r, q] of item.defaultRequests) if (!requests.has(r)) requests.set(r, q);
  }
  return { requests, limits: ownLimits };
}

/** a < b, for quantities; false when either does not parse (the API server would have refused it first). */
const less = (a: Quantity | undefined, b: Quantity | undefined): boolean => a !== undefined && b !== undefined && quantityLess(a, b);

/**
 * Why a LimitRange item refuses a container's resources, in the API server's words, or undefined. A `min` always finds
 * a request and a `max` a limit: the defaults filled in from them give one to a container that states none.
 */
function limitRangeFault(item: ContainerLimits, requests: ResourceList, limits: ResourceList): string | undefined {
  for (const [r, bound] of item.min) {
    const min = parseQuantity(bound);
    const request = requests.get(r) ?? '';
    const limit = limits.get(r);
    if (less(parseQuantity(request), min)) return `minimum ${r} usage per Container is ${bound}, but request is ${request}`;
    if (limit !== undefined && less(parseQuantity(limit), min)) return `minimum ${r} usage per Container is ${bound}, but limit is ${limit}`;
  }
  for (const [r, bound] of item.max) {
    const max = parseQuantity(bound);
    const request = requests.get(r);
    const limit = limits.get(r) ?? '';
    if (less(max, parseQuantity(limit))) return `maximum ${r} usage per Container is ${bound}, but limit is ${limit}`;
    if (request !== undefined && less(max, parseQuantity(request))) return `maximum ${r} usage per Container is ${bound}, but request is ${request}`;
  }
  for (const [r, bound] of item.ratio) {
    const ratio = parseQuantity(bound);
    const request = parseQuantity(requests.get(r) ?? '');
    const limit = parseQuantity(limits.get(r) ?? '');
    if (request === undefined || request.num === 0n) return `${r} max limit to request ratio per Container is ${bound}, and no request is specified`;
    if (limit === undefined || limit.num === 0n) return `${r} max limit to request ratio per Container is ${bound}, and no limit is specified`;
    if (ratio !== undefined && quantityLess({ num: ratio.num * request.num, den: ratio.den * request.den }, limit)) {
      return `${r} max limit to request ratio per Container is ${bound}, but the limit (${limits.get(r)}) is more than that many times the request (${requests.get(r)})`;
    }
  }
  return undefined;
}

/** How to give the proxy resources; the init container the pod gets (linkerd-init, or the CNI's validator) takes the same. */
const resourcesFix = (init: string): string =>
  'config.linkerd.io/proxy-cpu-request, -cpu-limit, -memory-request and -memory-limit on the namespace or the pod, or ' +
  `proxy.resources in the values; ${init} takes the same`;

/** A namespace's ResourceQuotas and LimitRanges, as the API serves them. */
export interface ResourceConstraints {
  resourceQuotas: readonly unknown[];
  limitRanges: readonly unknown[];
}

/** Whether a quantity is above zero; false when it does not parse. */
function positive(text: string): boolean {
  const q = parseQuantity(text);
  return q !== undefined && q.num > 0n;
}

/** The QoS resources: a pod is BestEffort when none of its containers requests or limits either. */
const QOS_RESOURCES = ['cpu', 'memory'] as const;

/**
 * Whether the pod states resources for the whole pod (`spec.resources`; CPU, memory or huge pages) that the API server
 * keeps: it then no longer asks each container to state the CPU and memory that a quota counts. Before 1.34 the API
 * server drops them (1.32 and 1.33 keep them only behind the PodLevelResources gate, off by default); when the release
 * is unknown they are taken to be kept.
 */
function podLevelResources(spec: PodSpec, release: KubernetesVersion | undefined): boolean {
  if (release !== undefined && compareVersions(release, POD_LEVEL_RESOURCES_RELEASE) < 0) return false;
  const resources = spec['resources'];
  if (!isObject(resources)) return false;
  const podLevel = (name: string): boolean => name === 'cpu' || name === 'memory' || name.startsWith('hugepages-');
  return [resources['requests'], resources['limits']].some((list) => isObject(list) && Object.keys(list).some(podLevel));
}

/** Whether a pod (anti-)affinity term of the pod looks at other namespaces (`namespaces` or a `namespaceSelector`). */
function crossNamespaceAffinity(spec: PodSpec): boolean {
  const affinity = isObject(spec['affinity']) ? spec['affinity'] : {};
  const crosses = (term: unknown): boolean =>
    isObject(term) && ((Array.isArray(term['namespaces']) && term['namespaces'].length > 0) || isObject(term['namespaceSelector']));
  return ['podAffinity', 'podAntiAffinity'].some((kind) => {
    const a = affinity[kind];
    if (!isObject(a)) return false;
    return (
      objectsIn(a['requiredDuringSchedulingIgnoredDuringExecution']).some(crosses) ||
      objectsIn<Record<string, unknown>>(a['preferredDuringSchedulingIgnoredDuringExecution']).some((w) => crosses(w['podAffinityTerm']))
    );
  });
}

/** What a quota's scopes read of the injected pod. */
interface ScopedPod {
  spec: PodSpec;
  bestEffort: boolean;
}

/**
 * Whether one scope of a quota (from `scopes`, which mean `Exists`, or `scopeSelector`) takes in the pod, as
 * kube-apiserver's quota admission decides it. A scope it does not know takes in nothing.
 */
function scopeMatches(scope: Record<string, unknown>, pod: ScopedPod): boolean {
  const deadline = pod.spec['activeDeadlineSeconds'];
  const terminating = typeof deadline === 'number' && deadline >= 0;
  switch (scope['scopeName']) {
    case 'Terminating':
      return terminating;
    case 'NotTerminating':
      return !terminating;
    case 'BestEffort':
      return pod.bestEffort;
    case 'NotBestEffort':
      return !pod.bestEffort;
    case 'CrossNamespacePodAffinity':
      return crossNamespaceAffinity(pod.spec);
    case 'PriorityClass': {
      // A label selector over {PriorityClass: <the pod's class>}, the label absent when the pod names no class.
      const name = typeof pod.spec['priorityClassName'] === 'string' ? pod.spec['priorityClassName'] : '';
      const values: unknown[] = Array.isArray(scope['values']) ? scope['values'] : [];
      const operator = typeof scope['operator'] === 'string' ? scope['operator'] : '';
      return selects({ matchExpressions: [{ key: 'PriorityClass', operator, values }] }, name === '' ? {} : { PriorityClass: name });
    }
    default:
      return false;
  }
}

/** Whether a quota counts the pod: every one of its scopes takes it in (a quota without scopes counts every pod). */
function quotaApplies(qspec: Record<string, unknown>, pod: ScopedPod): boolean {
  const scopes: Array<Record<string, unknown>> = stringsIn(qspec['scopes']).map((scopeName) => ({ scopeName, operator: 'Exists' }));
  const selector = qspec['scopeSelector'];
  if (isObject(selector)) scopes.push(...objectsIn<Record<string, unknown>>(selector['matchExpressions']));
  return scopes.every((scope) => scopeMatches(scope, pod));
}

/**
 * The risks of each ResourceQuota and LimitRange that would refuse the pod for a container the injector added. `spec`
 * is the injected pod's: a quota's scopes are matched against it, with its QoS class as the API server will compute
 * it (after the LimitRange defaults, the injected containers' resources included). The app containers are left out,
 * which the pod's author answers for, unless the quota counts the pod only because of the injected containers.
 * `release`, the API server's when known, says whether it keeps the pod's own resources (see podLevelResources).
 */
export function quotaRisks(spec: PodSpec, resourceQuotas: readonly unknown[], limitRanges: readonly unknown[], release?: KubernetesVersion): StartupRisk[] {
  const limits = containerLimits(limitRanges);
  const all = [...objectsIn<Container>(spec.initContainers), ...objectsIn<Container>(spec.containers)].map((c) => ({
    name: String(c.name ?? ''),
    ...effective(c, limits),
  }));
  const isAdded = (c: { name: string }): boolean => INJECTED_CONTAINERS.includes(c.name);
  const added = all.filter(isAdded);
  const RESOURCES_FIX = resourcesFix(added.find((c) => c.name === 'linkerd-network-validator') ? 'linkerd-network-validator' : 'linkerd-init');
  const stated = (c: { requests: ResourceList; limits: ResourceList }): boolean =>
    QOS_RESOURCES.some((r) => positive(c.requests.get(r) ?? '') || positive(c.limits.get(r) ?? ''));
  const pod: ScopedPod = { spec, bestEffort: !all.some(stated) };
  // The same pod before injection: a BestEffort pod that the proxy's resources make Burstable comes under a
  // NotBestEffort quota only because it was injected, and then every container of it must state what the quota counts.
  const before: ScopedPod = { spec, bestEffort: !all.some((c) => !isAdded(c) && stated(c)) };
  const risks: StartupRisk[] = [];
  for (const quota of podLevelResources(spec, release) ? [] : resourceQuotas) {
    const meta = isObject(quota) ? quota['metadata'] : undefined;
    const qspec = isObject(quota) ? quota['spec'] : undefined;
    if (!isObject(qspec) || !quotaApplies(qspec, pod)) continue;
    const broughtUnder = !quotaApplies(qspec, before);
    const required = [...new Set([...listOf(qspec['hard']).keys()].flatMap((k) => CONTAINER_KEYS.get(k) ?? []))].sort();
    const missing = new Map<string, string[]>();
    for (const c of broughtUnder ? all : added) {
      for (const key of required) {
        const [kind, resource] = key.split('.') as [string, string];
        if (!(kind === 'limits' ? c.limits : c.requests).has(resource)) missing.set(key, [...(missing.get(key) ?? []), c.name]);
      }
    }
    if (missing.size === 0) continue;
    const name = isObject(meta) && typeof meta['name'] === 'string' ? meta['name'] : '';
    const what = [...missing].map(([key, containers]) => `${key} for ${containers.join(', ')}`).join('; ');
    const containers = [...new Set([...missing.values()].flat())];
    const obliges = `obliges every container to state ${required.join(', ')}`;
    risks.push({
      code: 'resource_quota_needs_resources',
      container: containers.join(','),
      text: broughtUnder
        ? `ResourceQuota ${JSON.stringify(name)} counts the pod only once the injected containers' resources take it out of ` +
          `the BestEffort class, and then ${obliges}, which these do not (${what}): the API server refuses the pod`
        : `ResourceQuota ${JSON.stringify(name)} ${obliges}, and the injected ones do not (${what}): the API server refuses the pod`,
      fix: containers.some((c) => !INJECTED_CONTAINERS.includes(c))
        ? `give every container resources, the proxy's included (${RESOURCES_FIX}), or add a LimitRange with default requests and limits to the namespace`
        : `give the proxy resources (${RESOURCES_FIX}), or add a LimitRange with default requests and limits to the namespace`,
    });
  }
  for (const item of limits) {
    // linkerd-init takes the proxy's resources, so both usually meet the same fault: one risk names them together.
    const byFault = new Map<string, string[]>();
    for (const c of added) {
      const fault = limitRangeFault(item, c.requests, c.limits);
      if (fault !== undefined) byFault.set(fault, [...(byFault.get(fault) ?? []), c.name]);
    }
    for (const [fault, containers] of byFault) {
      risks.push({
        code: 'limit_range_refuses_resources',
        container: containers.join(','),
        text: `LimitRange ${JSON.stringify(item.limitRange)}: ${fault}, for ${containers.join(' and ')}: the API server refuses the pod`,
        fix: `bring the proxy's resources within the LimitRange (${RESOURCES_FIX})`,
      });
    }
  }
  return risks;
}
