/** ResourceQuota admission against the containers the injector adds, with and without LimitRange defaults. */
import { describe, expect, it } from 'vitest';
import { inject, quotaRisks } from '../../src/engine/index.js';
import { pod, testConfig } from '../support/engine.js';

const quota = (hard: Record<string, string>, more: Record<string, unknown> = {}) => ({ kind: 'ResourceQuota', metadata: { name: 'compute' }, spec: { hard, ...more } });
const limitRange = (item: Record<string, unknown>) => ({ kind: 'LimitRange', metadata: { name: 'defaults' }, spec: { limits: [{ type: 'Container', ...item }] } });

/** An injected pod: the app states its resources, linkerd-init and the proxy state `resources` (none by default). */
function injectedPod(resources?: Record<string, unknown>) {
  const own = resources === undefined ? {} : { resources };
  return {
    initContainers: [{ name: 'linkerd-init', image: 'proxy', ...own }],
    containers: [
      { name: 'linkerd-proxy', image: 'proxy', ...own },
      { name: 'app', image: 'app', resources: { limits: { cpu: '1', memory: '1Gi' }, requests: { cpu: '500m', memory: '1Gi' } } },
    ],
  };
}

describe('quotaRisks', () => {
  it('a quota on limits and requests refuses linkerd-init and the proxy, which state none by default', () => {
    const risks = quotaRisks(injectedPod(), [quota({ 'limits.cpu': '4', 'limits.memory': '4Gi', 'requests.cpu': '2', pods: '10' })], []);
    expect(risks).toEqual([
      {
        code: 'resource_quota_needs_resources',
        container: 'linkerd-init,linkerd-proxy',
        text:
          'ResourceQuota "compute" obliges every container to state limits.cpu, limits.memory, requests.cpu, and the injected ones do not ' +
          '(limits.cpu for linkerd-init, linkerd-proxy; limits.memory for linkerd-init, linkerd-proxy; requests.cpu for linkerd-init, linkerd-proxy): ' +
          'the API server refuses the pod',
        fix: expect.stringContaining('config.linkerd.io/proxy-cpu-request'),
      },
    ]);
  });

  it("the fix names the init container the pod gets: linkerd-init, or under the CNI plugin the network validator", () => {
    const withInit = quotaRisks(injectedPod(), [quota({ 'limits.cpu': '4' })], [])[0]?.fix;
    expect(withInit).toMatch(/; linkerd-init takes the same\)/);
    const cni = injectedPod();
    cni.initContainers = [{ name: 'linkerd-network-validator', image: 'proxy' }];
    const risk = quotaRisks(cni, [quota({ 'limits.cpu': '4' })], [])[0];
    expect(risk?.container).toBe('linkerd-network-validator,linkerd-proxy');
    expect(risk?.fix).toMatch(/; linkerd-network-validator takes the same\)/);
    expect(risk?.fix).not.toContain('linkerd-init');
  });

  it('`cpu` and `memory` in a quota mean requests; a limit stands as the request the API server defaults from it', () => {
    expect(quotaRisks(injectedPod(), [quota({ cpu: '2' })], [])[0]?.text).toContain('state requests.cpu,');
    expect(quotaRisks(injectedPod({ limits: { cpu: '1', memory: '256Mi' } }), [quota({ cpu: '2', memory: '2Gi', 'limits.cpu': '4' })], [])).toEqual([]);
    expect(quotaRisks(injectedPod({ requests: { cpu: '100m' } }), [quota({ 'limits.cpu': '4' })], [])[0]?.text).toContain('(limits.cpu for linkerd-init, linkerd-proxy)');
  });

  it('LimitRange defaults answer for containers that state nothing, with the defaults the API server fills in', () => {
    const hard = { 'limits.cpu': '4', 'limits.memory': '4Gi', 'requests.cpu': '2', 'requests.memory': '2Gi' };
    expect(quotaRisks(injectedPod(), [quota(hard)], [limitRange({ default: { cpu: '100m', memory: '64Mi' } })])).toEqual([]);
    const requestsOnly = quotaRisks(injectedPod(), [quota(hard)], [limitRange({ defaultRequest: { cpu: '100m', memory: '64Mi' } })]);
    expect(requestsOnly[0]?.text).toContain('(limits.cpu for linkerd-init, linkerd-proxy; limits.memory for linkerd-init, linkerd-proxy)');
    // A `max` stands as the default limit (and so request), a `min` as the default request; resource by resource.
    expect(quotaRisks(injectedPod(), [quota(hard)], [limitRange({ max: { cpu: '1', memory: '1Gi' } })])).toEqual([]);
    const minOnly = quotaRisks(injectedPod(), [quota({ 'requests.memory': '2Gi', 'limits.memory': '4Gi' })], [limitRange({ min: { memory: '32Mi' } })]);
    expect(minOnly[0]?.text).toContain('(limits.memory for linkerd-init, linkerd-proxy)');
    const mixed = limitRange({ defaultRequest: { cpu: '100m' }, default: { memory: '64Mi' } });
    expect(quotaRisks(injectedPod(), [quota({ 'requests.cpu': '2', 'requests.memory': '2Gi', 'limits.memory': '4Gi' })], [mixed])).toEqual([]);
    // A LimitRange for pods (not containers) gives no defaults.
    expect(quotaRisks(injectedPod(), [quota(hard)], [{ spec: { limits: [{ type: 'Pod', default: { cpu: '1' } }] } }])).toHaveLength(1);
  });

  it('quotas on other resources and the app containers are not the injector`s to report', () => {
    expect(quotaRisks(injectedPod(), [quota({ pods: '10', 'requests.storage': '10Gi', 'limits.ephemeral-storage': '1Gi' })], [])).toEqual([]);
    // An empty scope selector takes in every pod, as no scopes do.
    expect(quotaRisks(injectedPod(), [quota({ 'limits.cpu': '4' }, { scopeSelector: { matchExpressions: [] } })], [])).toHaveLength(1);
    const appWithout = { containers: [{ name: 'linkerd-proxy', resources: { limits: { cpu: '1' } } }, { name: 'app' }], initContainers: [{ name: 'linkerd-init', resources: { limits: { cpu: '1' } } }] };
    expect(quotaRisks(appWithout, [quota({ 'limits.cpu': '4' })], [])).toEqual([]);
  });

  describe('a quota with scopes counts only the pods they take in, as the API server matches them', () => {
    const limited = (scope: Record<string, unknown>) => [quota({ 'limits.cpu': '4' }, scope)];
    const refused = (spec: Record<string, unknown>, scope: Record<string, unknown>) => quotaRisks(spec, limited(scope), []).length > 0;
    const selector = (scopeName: string, operator: string, values?: string[]) => ({ scopeSelector: { matchExpressions: [{ scopeName, operator, ...(values && { values }) }] } });
    const bare = { initContainers: [{ name: 'linkerd-init' }], containers: [{ name: 'linkerd-proxy' }, { name: 'app' }] };

    it('BestEffort and NotBestEffort, by the QoS class of the injected pod', () => {
      // The app states resources: the pod is Burstable.
      expect(refused(injectedPod(), { scopes: ['NotBestEffort'] })).toBe(true);
      expect(refused(injectedPod(), { scopes: ['BestEffort'] })).toBe(false);
      // Nothing states any: BestEffort, which a NotBestEffort quota does not count.
      expect(refused(bare, { scopes: ['NotBestEffort'] })).toBe(false);
      // The proxy's own request makes the pod Burstable; a zero quantity does not count.
      const proxyRequest = { ...bare, containers: [{ name: 'linkerd-proxy', resources: { requests: { memory: '20Mi' } } }, { name: 'app' }] };
      expect(refused(proxyRequest, { scopes: ['NotBestEffort'] })).toBe(true);
      const zero = { ...bare, containers: [{ name: 'linkerd-proxy' }, { name: 'app', resources: { requests: { cpu: '0' } } }] };
      expect(refused(zero, { scopes: ['NotBestEffort'] })).toBe(false);
      // A LimitRange default makes every container state resources, which then answers the quota too.
      expect(quotaRisks(bare, limited({ scopes: ['NotBestEffort'] }), [limitRange({ default: { cpu: '100m' } })])).toEqual([]);
    });

    it('a NotBestEffort quota that counts the pod only because of the proxy`s resources obliges the app containers too', () => {
      // The app states nothing; linkerd-init and the proxy state a CPU limit (and so a request): the pod is Burstable.
      const withLimits = { limits: { cpu: '1' } };
      const injected = {
        initContainers: [{ name: 'linkerd-init', resources: withLimits }],
        containers: [{ name: 'linkerd-proxy', resources: withLimits }, { name: 'app' }],
      };
      const [risk, ...more] = quotaRisks(injected, limited({ scopes: ['NotBestEffort'] }), []);
      expect(more).toEqual([]);
      expect(risk).toMatchObject({
        container: 'app',
        text:
          "ResourceQuota \"compute\" counts the pod only once the injected containers' resources take it out of the BestEffort " +
          'class, and then obliges every container to state limits.cpu, which these do not (limits.cpu for app): the API server refuses the pod',
      });
      expect(risk?.fix).toMatch(/^give every container resources, the proxy's included/);
      // Without a scope the quota counted the pod anyway: the app's resources are its author's, not the injector's.
      expect(quotaRisks(injected, [quota({ 'limits.cpu': '4' })], [])).toEqual([]);
    });

    it('Terminating and NotTerminating, by activeDeadlineSeconds', () => {
      expect(refused(injectedPod(), { scopes: ['Terminating'] })).toBe(false);
      expect(refused(injectedPod(), { scopes: ['NotTerminating'] })).toBe(true);
      const deadline = { ...injectedPod(), activeDeadlineSeconds: 600 };
      expect(refused(deadline, { scopes: ['Terminating'] })).toBe(true);
      expect(refused(deadline, { scopes: ['NotTerminating'] })).toBe(false);
      // Every scope must take the pod in.
      expect(refused(deadline, { scopes: ['Terminating', 'NotBestEffort'] })).toBe(true);
      expect(refused(deadline, { scopes: ['Terminating', 'BestEffort'] })).toBe(false);
    });

    it('PriorityClass, as a label selector over the pod`s class', () => {
      const high = { ...injectedPod(), priorityClassName: 'high' };
      expect(refused(high, selector('PriorityClass', 'In', ['high', 'critical']))).toBe(true);
      expect(refused(injectedPod(), selector('PriorityClass', 'In', ['high']))).toBe(false);
      expect(refused(high, selector('PriorityClass', 'NotIn', ['high']))).toBe(false);
      expect(refused(injectedPod(), selector('PriorityClass', 'NotIn', ['high']))).toBe(true);
      expect(refused(high, selector('PriorityClass', 'Exists'))).toBe(true);
      expect(refused(injectedPod(), selector('PriorityClass', 'Exists'))).toBe(false);
      expect(refused(injectedPod(), selector('PriorityClass', 'DoesNotExist'))).toBe(true);
      expect(refused(high, selector('PriorityClass', 'DoesNotExist'))).toBe(false);
    });

    it('CrossNamespacePodAffinity, by a term that names namespaces or selects them; an unknown scope takes in nothing', () => {
      const term = (more: Record<string, unknown>) => ({ topologyKey: 'kubernetes.io/hostname', labelSelector: {}, ...more });
      const affinity = (a: Record<string, unknown>) => ({ ...injectedPod(), affinity: a });
      const scope = { scopes: ['CrossNamespacePodAffinity'] };
      expect(refused(injectedPod(), scope)).toBe(false);
      expect(refused(affinity({ podAffinity: { requiredDuringSchedulingIgnoredDuringExecution: [term({})] } }), scope)).toBe(false);
      expect(refused(affinity({ podAffinity: { requiredDuringSchedulingIgnoredDuringExecution: [term({ namespaces: ['db'] })] } }), scope)).toBe(true);
      const preferred = { preferredDuringSchedulingIgnoredDuringExecution: [{ weight: 1, podAffinityTerm: term({ namespaceSelector: {} }) }] };
      expect(refused(affinity({ podAntiAffinity: preferred }), scope)).toBe(true);
      expect(refused(injectedPod(), { scopes: ['SomethingNew'] })).toBe(false);
    });
  });

  it('pod-level resources free the containers from stating what a quota counts', () => {
    const podLevel = { ...injectedPod(), resources: { limits: { cpu: '2', memory: '2Gi' } } };
    expect(quotaRisks(podLevel, [quota({ 'limits.cpu': '4', 'requests.memory': '2Gi' })], [])).toEqual([]);
    const hugePages = { ...injectedPod(), resources: { limits: { 'hugepages-2Mi': '64Mi' } } };
    expect(quotaRisks(hugePages, [quota({ 'limits.cpu': '4' })], [])).toEqual([]);
    // Pod-level resources of another kind do not.
    const storage = { ...injectedPod(), resources: { limits: { 'ephemeral-storage': '1Gi' } } };
    expect(quotaRisks(storage, [quota({ 'limits.cpu': '4' })], [])).toHaveLength(1);
  });

  it('pod-level resources count only from Kubernetes 1.34, or when the release is unknown: before it the API server drops them', () => {
    const podLevel = { ...injectedPod(), resources: { limits: { cpu: '2', memory: '2Gi' } } };
    const quotas = [quota({ 'limits.cpu': '4' })];
    expect(quotaRisks(podLevel, quotas, [], { major: 1, minor: 34 })).toEqual([]);
    expect(quotaRisks(podLevel, quotas, [], { major: 1, minor: 37 })).toEqual([]);
    const dropped = quotaRisks(podLevel, quotas, [], { major: 1, minor: 33 });
    expect(dropped.map((r) => r.code)).toEqual(['resource_quota_needs_resources']);
    expect(dropped[0]?.text).toContain('(limits.cpu for linkerd-init, linkerd-proxy)');
    expect(quotaRisks(podLevel, quotas, [], { major: 1, minor: 28 })).toHaveLength(1);
  });

  it('a LimitRange whose max the proxy`s stated limit exceeds refuses linkerd-init and the proxy alike', () => {
    const risks = quotaRisks(injectedPod({ limits: { cpu: '1' }, requests: { cpu: '100m' } }), [], [limitRange({ max: { cpu: '500m' } })]);
    expect(risks).toEqual([
      {
        code: 'limit_range_refuses_resources',
        container: 'linkerd-init,linkerd-proxy',
        text: 'LimitRange "defaults": maximum cpu usage per Container is 500m, but limit is 1, for linkerd-init and linkerd-proxy: the API server refuses the pod',
        fix: expect.stringContaining('proxy.resources in the values'),
      },
    ]);
    // A request above the max, within it, and a container that states nothing (the max becomes its default).
    expect(quotaRisks(injectedPod({ limits: { cpu: '500m' }, requests: { cpu: '600m' } }), [], [limitRange({ max: { cpu: '500m' } })])[0]?.text).toContain('but request is 600m');
    expect(quotaRisks(injectedPod({ limits: { cpu: '0.5' } }), [], [limitRange({ max: { cpu: '500m' } })])).toEqual([]);
    expect(quotaRisks(injectedPod(), [], [limitRange({ max: { cpu: '500m', memory: '1Gi' } })])).toEqual([]);
  });

  it('a min above the proxy`s request or limit refuses it; a container that states nothing gets the min as its request', () => {
    expect(quotaRisks(injectedPod({ requests: { memory: '20Mi' } }), [], [limitRange({ min: { memory: '32Mi' } })])[0]?.text).toContain(
      'minimum memory usage per Container is 32Mi, but request is 20Mi, for linkerd-init and linkerd-proxy',
    );
    expect(quotaRisks(injectedPod({ requests: { memory: '64Mi' }, limits: { memory: '16Mi' } }), [], [limitRange({ min: { memory: '32Mi' } })])[0]?.text).toContain('but limit is 16Mi');
    expect(quotaRisks(injectedPod(), [], [limitRange({ min: { memory: '32Mi' } })])).toEqual([]);
    expect(quotaRisks(injectedPod({ requests: { memory: '0.03125Gi' } }), [], [limitRange({ min: { memory: '32Mi' } })])).toEqual([]);
  });

  it('a limit-to-request ratio needs both stated, and a limit at most that many times the request', () => {
    const ratio = limitRange({ maxLimitRequestRatio: { cpu: '2' } });
    expect(quotaRisks(injectedPod(), [], [ratio])[0]?.text).toContain('cpu max limit to request ratio per Container is 2, and no request is specified');
    expect(quotaRisks(injectedPod({ requests: { cpu: '100m' } }), [], [ratio])[0]?.text).toContain('and no limit is specified');
    expect(quotaRisks(injectedPod({ requests: { cpu: '100m' }, limits: { cpu: '1' } }), [], [ratio])[0]?.text).toContain(
      'but the limit (1) is more than that many times the request (100m)',
    );
    expect(quotaRisks(injectedPod({ requests: { cpu: '500m' }, limits: { cpu: '1' } }), [], [ratio])).toEqual([]);
    // A limit alone stands as the request: a ratio of 1.
    expect(quotaRisks(injectedPod({ limits: { cpu: '1' } }), [], [ratio])).toEqual([]);
  });

  it('each quota that would refuse the pod is a risk of its own; objects that are not quotas are ignored', () => {
    const risks = quotaRisks(injectedPod(), [quota({ 'limits.cpu': '4' }), { metadata: { name: 'mem' }, spec: { hard: { 'requests.memory': '1Gi' } } }, null, 'text'], []);
    expect(risks.map((r) => r.text.slice(0, 22))).toEqual(['ResourceQuota "compute', 'ResourceQuota "mem" ob']);
  });
});

describe('inject with the namespace\'s resource constraints', () => {
  const enabled = () => pod({ annotations: { 'linkerd.io/inject': 'enabled' } });
  const codes = (request: Partial<Parameters<typeof inject>[0]>) =>
    inject({ object: enabled(), namespace: 'shop', config: testConfig(), origin: 'webhook', ...request }).risks.map((r) => r.code);

  it("reports the quota's and the limit range's refusals first, before the Pod Security one, on the containers it adds", () => {
    const constraints = { resourceQuotas: [quota({ 'limits.memory': '4Gi' })], limitRanges: [limitRange({ max: { cpu: '500m' } })] };
    expect(codes({ resourceConstraints: constraints, namespaceLabels: { 'pod-security.kubernetes.io/enforce': 'baseline' } })).toEqual([
      'resource_quota_needs_resources',
      'pod_security_refuses_init',
    ]);
    const annotated = pod({ annotations: { 'linkerd.io/inject': 'enabled', 'config.linkerd.io/proxy-cpu-limit': '1' } });
    const risks = inject({ object: annotated, namespace: 'shop', config: testConfig(), origin: 'webhook', resourceConstraints: constraints }).risks;
    expect(risks.map((r) => r.code)).toEqual(['resource_quota_needs_resources', 'limit_range_refuses_resources']);
    expect(risks[1]?.text).toBe(
      'LimitRange "defaults": maximum cpu usage per Container is 500m, but limit is 1, for linkerd-init and linkerd-proxy: the API server refuses the pod',
    );
  });

  it("matches a quota's scopes against the pod with its own containers: their resources make it Burstable", () => {
    const scoped = { resourceQuotas: [quota({ 'limits.cpu': '4' }, { scopes: ['NotBestEffort'] })], limitRanges: [] };
    expect(codes({ resourceConstraints: scoped })).toEqual([]);
    const app = { name: 'app', image: 'app:1', resources: { requests: { cpu: '100m' } } };
    const withResources = pod({ annotations: { 'linkerd.io/inject': 'enabled' }, spec: { containers: [app] } });
    expect(codes({ object: withResources, resourceConstraints: scoped })).toEqual(['resource_quota_needs_resources']);
  });

  it('names only containers, the app`s among them, when a NotBestEffort quota counts the pod because of the proxy', () => {
    const object = pod({ annotations: { 'linkerd.io/inject': 'enabled', 'config.linkerd.io/proxy-cpu-limit': '1' }, spec: { containers: [{ name: 'app', image: 'a' }] } });
    const constraints = { resourceQuotas: [quota({ 'limits.cpu': '4' }, { scopes: ['NotBestEffort'] })], limitRanges: [] };
    const risks = inject({ object, namespace: 'shop', config: testConfig(), origin: 'webhook', resourceConstraints: constraints }).risks;
    expect(risks.map((r) => r.container)).toEqual(['app']);
    expect(risks[0]?.text).toMatch(/\(limits\.cpu for app\): the API server refuses the pod$/);
  });

  it('reports nothing of constraints that are absent or empty', () => {
    expect(codes({})).toEqual([]);
    expect(codes({ resourceConstraints: { resourceQuotas: [], limitRanges: [] } })).toEqual([]);
  });
});
