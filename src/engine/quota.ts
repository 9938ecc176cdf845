/**
 * Whether kube-apiserver's ResourceQuota admission will refuse an injected pod. A quota on the CPU or memory of a
 * namespace's pods obliges every container, init containers included, to state that resource; linkerd-init and the
 * proxy state none by default, so the pod is refused ("must specify limits.cpu for: linkerd-init,linkerd-proxy")
 * unless a LimitRange gives them defaults (LimitRanger runs again after the webhooks have changed the pod). Pure: it
 * reads the injected pod and the namespace's ResourceQuotas and LimitRanges as objects.
 */
import { INJECTED_CONTAINERS } from './names.js';
import { isObject, objectsIn, type Container, type PodSpec } from './k8s.js';
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

/** The keys (`requests.cpu`, `limits.memory`, ...) a container states, by its own resources or by defaults. */
type Stated = Set<string>;

const namesOf = (map: unknown): string[] => (isObject(map) ? Object.keys(map) : []);

/**
 * What the namespace's LimitRanges give a container that states nothing: `default` sets limits, `defaultRequest`
 * requests; a LimitRange with `default` alone also gets it as `defaultRequest` when the API server stores it.
 */
function defaultsOf(limitRanges: readonly unknown[]): Stated {
  const out: Stated = new Set();
  for (const lr of limitRanges) {
    const spec = isObject(lr) ? lr['spec'] : undefined;
    for (const item of objectsIn<Record<string, unknown>>(isObject(spec) ? spec['limits'] : undefined)) {
      if (item['type'] !== 'Container') continue;
      const requests = item['defaultRequest'] !== undefined ? item['defaultRequest'] : item['default'];
      for (const r of namesOf(item['default'])) out.add(`limits.${r}`);
      for (const r of namesOf(requests)) out.add(`requests.${r}`);
    }
  }
  return out;
}

/** The keys a container states: a limit without a request also stands as the request, as the API server defaults it. */
function statedBy(c: Container, defaults: Stated): Stated {
  const resources = isObject(c['resources']) ? c['resources'] : {};
  const out = new Set(defaults);
  for (const r of namesOf(resources['requests'])) out.add(`requests.${r}`);
  for (const r of namesOf(resources['limits'])) {
    out.add(`limits.${r}`);
    out.add(`requests.${r}`);
  }
  return out;
}

/**
 * The risk of each ResourceQuota that would refuse the pod for a container the injector added. Quotas with scopes
 * apply to some pods only and are left out, as are the app containers, which the pod's author answers for.
 */
export function quotaRisks(spec: PodSpec, resourceQuotas: readonly unknown[], limitRanges: readonly unknown[]): StartupRisk[] {
  const defaults = defaultsOf(limitRanges);
  const added = [...objectsIn<Container>(spec.initContainers), ...objectsIn<Container>(spec.containers)].filter((c) =>
    INJECTED_CONTAINERS.includes(String(c.name ?? '')),
  );
  const risks: StartupRisk[] = [];
  for (const quota of resourceQuotas) {
    const meta = isObject(quota) ? quota['metadata'] : undefined;
    const qspec = isObject(quota) ? quota['spec'] : undefined;
    if (!isObject(qspec) || qspec['scopes'] !== undefined || qspec['scopeSelector'] !== undefined) continue;
    const required = [...new Set(namesOf(qspec['hard']).flatMap((k) => CONTAINER_KEYS.get(k) ?? []))].sort();
    if (required.length === 0) continue;
    const missing = new Map<string, string[]>();
    for (const c of added) {
      const stated = statedBy(c, defaults);
      for (const key of required) if (!stated.has(key)) missing.set(key, [...(missing.get(key) ?? []), String(c.name)]);
    }
    if (missing.size === 0) continue;
    const name = isObject(meta) && typeof meta['name'] === 'string' ? meta['name'] : '';
    const what = [...missing].map(([key, containers]) => `${key} for ${containers.join(', ')}`).join('; ');
    risks.push({
      code: 'resource_quota_needs_resources',
      container: [...new Set([...missing.values()].flat())].join(','),
      text: `ResourceQuota ${JSON.stringify(name)} obliges every container to state ${required.join(', ')}, and the injected ones do not (${what}): the API server refuses the pod`,
      fix:
        'give the proxy resources (config.linkerd.io/proxy-cpu-request, -cpu-limit, -memory-request and -memory-limit on ' +
        'the namespace or the pod, or proxy.resources in the values; linkerd-init takes the same), or add a LimitRange ' +
        'with default requests and limits to the namespace',
    });
  }
  return risks;
}
