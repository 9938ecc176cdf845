/** Start-up risks: what each configuration makes go wrong when the injected pod starts, and when nothing does. */
import { describe, expect, it } from 'vitest';
import { inject, riskWarning, type KubernetesVersion, type LinkerdValues, type StartupRisk, type StartupRiskCode } from '../../src/engine/index.js';
import { pod, testConfig } from '../support/engine.js';

type Spec = Record<string, unknown>;

const APP = { name: 'app', image: 'app:1', ports: [{ containerPort: 8080 }] };
/** An app container that meets Pod Security "restricted" on its own. */
const RESTRICTED_APP = {
  ...APP,
  securityContext: { allowPrivilegeEscalation: false, runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' }, capabilities: { drop: ['ALL'] } },
};

function risksOf(opts: {
  annotations?: Record<string, string>;
  spec?: Spec;
  cni?: boolean;
  owner?: string;
  namespaceLabels?: Record<string, string>;
  kubernetesVersion?: KubernetesVersion;
}) {
  const result = inject({
    ...(opts.namespaceLabels && { namespaceLabels: opts.namespaceLabels }),
    ...(opts.kubernetesVersion && { kubernetesVersion: opts.kubernetesVersion }),
    object: pod({ annotations: { 'linkerd.io/inject': 'enabled', ...opts.annotations }, spec: opts.spec ?? { containers: [APP] } }),
    config: testConfig((v) => {
      if (opts.cni) v.cniEnabled = true;
    }),
    ...(opts.owner && { owner: { kind: opts.owner, name: 'owner' } }),
  });
  return result.risks;
}
const codes = (risks: Array<{ code: StartupRiskCode }>): StartupRiskCode[] => risks.map((r) => r.code);

describe('startup risks', () => {
  it('a plain pod with the default configuration has none', () => {
    expect(risksOf({})).toEqual([]);
  });

  it("the pod's own volume or container with a name the injector adds, unless the volume says what the injector's does", () => {
    // As the API server stores the volume the injector adds, its defaults filled in: served as it is, not added again.
    const leftover = { name: 'linkerd-identity-end-entity', emptyDir: { medium: 'Memory', sizeLimit: '1Mi' } };
    expect(risksOf({ spec: { containers: [APP], volumes: [leftover] } })).toEqual([]);
    const other = { name: 'linkerd-identity-end-entity', emptyDir: {} };
    const risks = risksOf({ spec: { containers: [APP], volumes: [other] } });
    expect(codes(risks)).toEqual(['name_taken']);
    expect(risks[0]?.text).toMatch(/already has a volume named linkerd-identity-end-entity, unlike the one the injector adds under that name: the API server refuses/);
    expect(risks[0]?.container).toBeUndefined();
    // The debug container: an app container of that name is refused beside it; without the debug sidecar, nothing.
    const debug = { containers: [APP, { name: 'linkerd-debug', image: 'tools' }] };
    expect(risksOf({ spec: debug })).toEqual([]);
    const both = risksOf({ annotations: { 'config.linkerd.io/enable-debug-sidecar': 'true' }, spec: debug });
    expect(codes(both)).toEqual(['name_taken']);
    expect(both[0]?.container).toBe('linkerd-debug');
  });

  it('a native sidecar proxy on an API server older than 1.29: refused, with the gate named for 1.28 only', () => {
    const native = { 'config.linkerd.io/proxy-enable-native-sidecar': 'true' };
    const old = risksOf({ annotations: native, kubernetesVersion: { major: 1, minor: 27 } });
    expect(codes(old)).toEqual(['native_sidecar_unsupported']);
    expect(old[0]?.container).toBe('linkerd-proxy');
    expect(old[0]?.text).toBe("the API server, Kubernetes 1.27, drops the native sidecar proxy's restartPolicy: Always (native sidecars came in 1.29) and refuses the pod for the proxy's probes");
    expect(old[0]?.fix).toMatch(/^set config\.linkerd\.io\/proxy-enable-native-sidecar: "false" on the pod or its namespace .* Kubernetes 1\.29 or later$/);
    const gated = risksOf({ annotations: native, kubernetesVersion: { major: 1, minor: 28 } });
    expect(codes(gated)).toEqual(['native_sidecar_unsupported']);
    expect(gated[0]?.text).toContain('Kubernetes 1.28, drops the native sidecar proxy\'s restartPolicy: Always unless its SidecarContainers gate is on, and refuses');
    // From 1.29 on, for a classic sidecar, and when the release is unknown: nothing.
    expect(risksOf({ annotations: native, kubernetesVersion: { major: 1, minor: 29 } })).toEqual([]);
    expect(risksOf({ annotations: native, kubernetesVersion: { major: 2, minor: 0 } })).toEqual([]);
    expect(risksOf({ kubernetesVersion: { major: 1, minor: 20 } })).toEqual([]);
    expect(risksOf({ annotations: native })).toEqual([]);
  });

  it('an init container under the CNI plugin in classic mode has no network, and the fix names the proxy uid', () => {
    const risks = risksOf({ cni: true, spec: { initContainers: [{ name: 'fetch', image: 'curl' }], containers: [APP] } });
    expect(codes(risks)).toEqual(['init_container_network_under_cni']);
    expect(risks[0]?.container).toBe('fetch');
    expect(risks[0]?.fix).toContain('runAsUser: 2102');
  });

  it('the same init container is fine with linkerd-init, as the proxy uid, or with a native sidecar', () => {
    const init = { initContainers: [{ name: 'fetch', image: 'curl' }], containers: [APP] };
    expect(risksOf({ spec: init })).toEqual([]);
    const asProxy = { initContainers: [{ name: 'fetch', image: 'curl', securityContext: { runAsUser: 2102 } }], containers: [APP] };
    expect(risksOf({ cni: true, spec: asProxy })).toEqual([]);
    const podUid = { securityContext: { runAsUser: 2102 }, ...init };
    expect(codes(risksOf({ cni: true, spec: podUid }))).toEqual(['container_runs_as_proxy_uid']);
    expect(risksOf({ cni: true, spec: init, annotations: { 'config.linkerd.io/proxy-enable-native-sidecar': 'true' } })).toEqual([]);
  });

  it.each(['job', 'cronjob'])('a %s with a classic sidecar never completes; with a native sidecar it does', (kind) => {
    const risks = risksOf({ owner: kind, spec: { restartPolicy: 'Never', containers: [APP] } });
    expect(codes(risks)).toEqual(['proxy_never_exits']);
    expect(risks[0]?.text).toContain(kind === 'job' ? 'a Job' : 'a CronJob');
    expect(risks[0]?.fix).toContain('proxy-enable-native-sidecar');
    const native = { 'config.linkerd.io/proxy-enable-native-sidecar': 'true' };
    expect(risksOf({ owner: kind, annotations: native, spec: { restartPolicy: 'Never', containers: [APP] } })).toEqual([]);
  });

  describe('a Job that shuts its proxy down', () => {
    const SHUTDOWN = { 'config.linkerd.io/proxy-admin-shutdown': 'enabled' };
    const job = (container: Record<string, unknown>, annotations: Record<string, string> = SHUTDOWN) =>
      risksOf({ owner: 'job', annotations, spec: { restartPolicy: 'Never', containers: [{ name: 'job', image: 'job:1', ...container }] } });

    it('completes when its command runs linkerd-await --shutdown or posts to the admin port, with the endpoint enabled', () => {
      expect(job({ command: ['/linkerd-await', '--shutdown', '--', '/backup.py'] })).toEqual([]);
      expect(job({ command: ['/linkerd/linkerd-await'], args: ['-vS', '--timeout=2m', '--', '/backup.py'] })).toEqual([]);
      expect(job({ command: ['sh', '-c', "./migrate && curl -sf -X POST 'http://localhost:4191/shutdown'"] })).toEqual([]);
      expect(job({ args: ['sh', '-c', 'wget -q --post-data= http://127.0.0.1:4191/shutdown'] })).toEqual([]);
    });

    it('never completes when the shutdown endpoint is disabled, and the risk names the container and the annotation', () => {
      const risks = job({ command: ['linkerd-await', '-S', '--', 'run'] }, {});
      expect(codes(risks)).toEqual(['proxy_shutdown_fails']);
      expect(risks[0]).toMatchObject({
        container: 'job',
        text: 'container "job" asks the proxy to shut down (linkerd-await --shutdown), but the proxy\'s shutdown endpoint is disabled: the request is refused, the proxy keeps running and the pod never completes',
      });
      expect(risks[0]?.fix).toMatch(/^set config\.linkerd\.io\/proxy-admin-shutdown: enabled on the pod template/);
    });

    it('never completes when it asks another port than the proxy\'s admin port', () => {
      const moved = { ...SHUTDOWN, 'config.linkerd.io/admin-port': '5191' };
      // linkerd-await calls 4191 unless told otherwise.
      const risks = job({ command: ['linkerd-await', '--shutdown', '--', 'run'] }, moved);
      expect(codes(risks)).toEqual(['proxy_shutdown_fails']);
      expect(risks[0]?.text).toContain("on port 4191, but the proxy's admin server listens on 5191");
      expect(risks[0]?.fix).toMatch(/^ask port 5191 \(linkerd-await --port=5191\)/);
      expect(job({ command: ['linkerd-await', '--port', '5191', '--shutdown', '--', 'run'] }, moved)).toEqual([]);
      expect(job({ command: ['linkerd-await', '-Sp5191', '--', 'run'] }, moved)).toEqual([]);
      expect(codes(job({ command: ['sh', '-c', 'run; curl -XPOST localhost:4191/shutdown'] }, moved))).toEqual(['proxy_shutdown_fails']);
      // Disabled and on the wrong port: the fix asks for both.
      expect(job({ command: ['linkerd-await', '--shutdown', '--', 'run'] }, { 'config.linkerd.io/admin-port': '5191' })[0]?.fix).toContain(
        "and ask port 5191, the proxy's admin port, not 4191",
      );
    });

    it('is not seen asking when --shutdown belongs to the command linkerd-await runs, or linkerd-await waits only', () => {
      for (const command of [['linkerd-await', '--', 'run', '--shutdown'], ['linkerd-await', '--timeout', '2m', 'run'], ['run', '-S']]) {
        const risks = job({ command });
        expect(codes(risks)).toEqual(['proxy_never_exits']);
        // The endpoint is enabled, but nothing the injector can see calls it.
        expect(risks[0]?.text).toContain("the proxy's shutdown endpoint is enabled, but no container's command or args ask for it");
      }
    });

    it('a pod that does not run to completion is not concerned', () => {
      const spec = { restartPolicy: 'Always', containers: [{ name: 'app', image: 'a', command: ['linkerd-await', '--shutdown', '--', 'serve'] }] };
      expect(risksOf({ spec })).toEqual([]);
    });
  });

  it.each(['baseline', 'restricted'])('a namespace enforcing Pod Security %s refuses linkerd-init, and the fix is the CNI plugin', (level) => {
    const risks = risksOf({ namespaceLabels: { 'pod-security.kubernetes.io/enforce': level }, spec: { containers: [RESTRICTED_APP] } });
    expect(codes(risks)).toEqual(['pod_security_refuses_init']);
    expect(risks[0]).toMatchObject({
      container: 'linkerd-init',
      text: `the namespace enforces Pod Security "${level}", which forbids linkerd-init's NET_ADMIN and NET_RAW capabilities: the API server refuses the pod`,
    });
    expect(risks[0]?.fix).toContain('cniEnabled: true');
    // With the CNI plugin the pod gets the network validator, which adds no capability, and the proxy takes the app's.
    expect(risksOf({ cni: true, namespaceLabels: { 'pod-security.kubernetes.io/enforce': level }, spec: { containers: [RESTRICTED_APP] } })).toEqual([]);
  });

  describe('Pod Security restricted and the other injected containers', () => {
    const restricted = { 'pod-security.kubernetes.io/enforce': 'restricted' };
    const refusal = (risks: ReturnType<typeof risksOf>) => risks.filter((r) => r.code === 'pod_security_refuses_container');

    it('the proxy takes the first app container`s capabilities: one that drops nothing leaves the proxy refused too', () => {
      const risks = refusal(risksOf({ cni: true, namespaceLabels: restricted }));
      expect(risks).toEqual([
        {
          code: 'pod_security_refuses_container',
          container: 'linkerd-proxy',
          text: 'Pod Security "restricted" in this namespace refuses linkerd-proxy (unrestricted capabilities), and with it the pod',
          fix: expect.stringMatching(/^give the first app container securityContext\.capabilities\.drop: \[ALL\]/),
        },
      ]);
      // Adding more than NET_BIND_SERVICE is refused as well; adding it alone is not.
      const adds = (add: string[]) => ({ containers: [{ ...RESTRICTED_APP, securityContext: { ...RESTRICTED_APP.securityContext, capabilities: { drop: ['ALL'], add } } }] });
      expect(refusal(risksOf({ cni: true, namespaceLabels: restricted, spec: adds(['NET_BIND_SERVICE']) }))).toEqual([]);
      expect(refusal(risksOf({ cni: true, namespaceLabels: restricted, spec: adds(['NET_ADMIN']) }))[0]?.text).toContain('(unrestricted capabilities)');
    });

    it('the debug sidecar sets no securityContext: refused, with every check it fails, the pod`s own settings counted', () => {
      const debug = { 'config.linkerd.io/enable-debug-sidecar': 'true' };
      const [risk, ...others] = refusal(risksOf({ cni: true, namespaceLabels: restricted, annotations: debug, spec: { containers: [RESTRICTED_APP] } }));
      expect(others).toEqual([]);
      expect(risk?.container).toBe('linkerd-debug');
      expect(risk?.text).toBe(
        'Pod Security "restricted" in this namespace refuses linkerd-debug (allowPrivilegeEscalation != false, unrestricted capabilities, runAsNonRoot != true, seccompProfile), and with it the pod',
      );
      expect(risk?.fix).toMatch(/^remove config\.linkerd\.io\/enable-debug-sidecar/);
      // runAsNonRoot and seccompProfile may come from the pod's securityContext; a container saying otherwise wins.
      const podLevel = { securityContext: { runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' } }, containers: [RESTRICTED_APP] };
      expect(refusal(risksOf({ cni: true, namespaceLabels: restricted, annotations: debug, spec: podLevel }))[0]?.text).toContain('(allowPrivilegeEscalation != false, unrestricted capabilities)');
      const root = { securityContext: { runAsUser: 0, seccompProfile: { type: 'Unconfined' } }, containers: [RESTRICTED_APP] };
      expect(refusal(risksOf({ cni: true, namespaceLabels: restricted, annotations: debug, spec: root }))[0]?.text).toContain('runAsNonRoot != true, runAsUser=0, seccompProfile)');
      // Only restricted asks this of it.
      expect(refusal(risksOf({ cni: true, namespaceLabels: { 'pod-security.kubernetes.io/enforce': 'baseline' }, annotations: debug, spec: { containers: [RESTRICTED_APP] } }))).toEqual([]);
    });
  });

  it('Pod Security privileged, a warn or audit label, or no label at all is no risk', () => {
    for (const labels of [{ 'pod-security.kubernetes.io/enforce': 'privileged' }, { 'pod-security.kubernetes.io/warn': 'restricted', 'pod-security.kubernetes.io/audit': 'baseline' }, {}]) {
      expect(risksOf({ namespaceLabels: labels })).toEqual([]);
    }
  });

  it('a pod whose owner is unknown is recognised as running to completion by its restart policy', () => {
    expect(codes(risksOf({ spec: { restartPolicy: 'OnFailure', containers: [APP] } }))).toEqual(['proxy_never_exits']);
    expect(risksOf({ spec: { restartPolicy: 'Always', containers: [APP] } })).toEqual([]);
  });

  it('proxy-await disabled is a risk for a classic sidecar only', () => {
    expect(codes(risksOf({ annotations: { 'config.linkerd.io/proxy-await': 'disabled' } }))).toEqual(['proxy_await_disabled']);
    const native = { 'config.linkerd.io/proxy-await': 'disabled', 'config.linkerd.io/proxy-enable-native-sidecar': 'true' };
    expect(risksOf({ annotations: native })).toEqual([]);
  });

  it('a container port that is one of the proxy ports, as configured for this pod, is reported with the port', () => {
    const spec = { containers: [{ name: 'app', image: 'a', ports: [{ containerPort: 4191 }, { containerPort: 9000 }] }] };
    const risks = risksOf({ spec });
    expect(codes(risks)).toEqual(['container_port_is_proxy_port']);
    expect(risks[0]?.text).toContain("port 4191, the proxy's admin port");
    // Moving the proxy's admin port away removes the clash; moving its inbound port onto 9000 creates one.
    expect(risksOf({ spec, annotations: { 'config.linkerd.io/admin-port': '4192', 'config.linkerd.io/inbound-port': '9000' } }).map((r) => r.text))
      .toEqual([expect.stringContaining("port 9000, the proxy's inbound port")]);
  });

  it('a declared port skipped inbound and also required to present an identity or opaque conflicts', () => {
    const annotations = {
      'config.linkerd.io/skip-inbound-ports': '8000-8100',
      'config.linkerd.io/proxy-require-identity-inbound-ports': '8080',
      'config.linkerd.io/opaque-ports': 'http',
    };
    const spec = { containers: [{ name: 'app', image: 'a', ports: [{ name: 'http', containerPort: 8080 }] }] };
    expect(codes(risksOf({ annotations, spec }))).toEqual(['skipped_port_requires_identity', 'skipped_port_is_opaque']);
  });

  it('a port name in a list stands for the port it names in each pod, however often the list was read before', () => {
    const annotations = {
      'config.linkerd.io/skip-inbound-ports': '9000-9001',
      'config.linkerd.io/proxy-require-identity-inbound-ports': 'web',
    };
    const spec = (web: number, other: number) => ({
      containers: [{ name: 'app', image: 'a', ports: [{ name: 'web', containerPort: web }, { name: 'other', containerPort: other }] }],
    });
    const texts = (s: Spec) => risksOf({ annotations, spec: s }).map((r) => r.text);
    expect(texts(spec(9000, 9001))).toEqual([expect.stringContaining('port 9000 is in skip-inbound-ports')]);
    expect(texts(spec(9001, 9000))).toEqual([expect.stringContaining('port 9001 is in skip-inbound-ports')]);
  });

  it('a port name that reads as a number stands for the port it names in the configured skip list', () => {
    const annotations = { 'config.linkerd.io/proxy-require-identity-inbound-ports': '9000' };
    const spec = { containers: [{ name: 'app', image: 'a', ports: [{ name: '4567', containerPort: 9000 }] }] };
    expect(risksOf({ annotations, spec }).map((r) => r.text)).toEqual([expect.stringContaining('port 9000 is in skip-inbound-ports')]);
  });

  it('a skipped port that is opaque only by the default list is not reported', () => {
    const spec = { containers: [{ name: 'db', image: 'mysql', ports: [{ containerPort: 3306 }] }] };
    expect(risksOf({ annotations: { 'config.linkerd.io/skip-inbound-ports': '3306' }, spec })).toEqual([]);
  });

  describe('a rule iptables refuses stops linkerd-init', () => {
    const risksWith = (annotations: Record<string, string>, change: (v: LinkerdValues) => void = () => {}) =>
      inject({ object: pod({ annotations: { 'linkerd.io/inject': 'enabled', ...annotations } }), config: testConfig(change) }).risks;
    const SUBNETS = 'config.linkerd.io/skip-subnets';

    it('an IPv6 subnet, which iptables refuses before ip6tables runs', () => {
      const risks = risksWith({ [SUBNETS]: '10.0.0.0/8,fd00::/8' });
      expect(risks).toEqual([
        {
          code: 'iptables_refuses_init_rule',
          container: 'linkerd-init',
          text: 'iptables refuses the IPv6 subnet fd00::/8 from --subnets-to-ignore: linkerd-init stops with an error and the pod never starts',
          fix: expect.stringMatching(/^list only IPv4 subnets, each prefix length without a leading 0 \(10\.0\.0\.0\/8\), in config\.linkerd\.io\/skip-subnets/),
        },
      ]);
      expect(riskWarning(risks[0] as StartupRisk)).toMatch(/^start-up risk \(iptables_refuses_init_rule\): iptables refuses the IPv6 subnet/);
    });

    it('an IPv4-mapped address too: written with colons, it is an IPv6 subnet to iptables', () => {
      expect(risksWith({ [SUBNETS]: '::ffff:192.0.2.0/120' }).map((r) => r.text)).toEqual([expect.stringMatching(/^iptables refuses the IPv6 subnet ::ffff:192\.0\.2\.0\/120 /)]);
    });

    it('any subnet with IPv6 on, since proxy-init gives every subnet to iptables and ip6tables alike', () => {
      const risks = risksWith({ [SUBNETS]: '10.0.0.0/8' }, (v) => (v.disableIPv6 = false));
      expect(codes(risks)).toEqual(['iptables_refuses_init_rule']);
      expect(risks[0]?.text).toMatch(/^ip6tables refuses the IPv4 subnet 10\.0\.0\.0\/8 from --subnets-to-ignore \(proxy-init gives every subnet/);
      expect(risks[0]?.fix).toMatch(/^remove config\.linkerd\.io\/skip-subnets .*with IPv6 on \(disableIPv6: false\)/);
    });

    it('a prefix length with a leading 0 that iptables reads in octal and refuses', () => {
      expect(risksWith({ [SUBNETS]: '10.0.0.0/08' }).map((r) => r.text)).toEqual([
        expect.stringMatching(/^iptables reads the prefix length of 10\.0\.0\.0\/08 from --subnets-to-ignore as octal/),
      ]);
    });

    it('skipped outbound ports of which proxy-init reads none, leaving iptables an empty port list', () => {
      for (const ports of [' 443', ',', ' ', '\n']) {
        const risks = risksWith({ 'config.linkerd.io/skip-outbound-ports': ports });
        expect(codes(risks), JSON.stringify(ports)).toEqual(['iptables_refuses_init_rule']);
        expect(risks[0]?.fix).toMatch(/^give config\.linkerd\.io\/skip-outbound-ports ports or ranges/);
      }
    });

    it('quotes only the start of what the pod wrote, since the risk goes into an Event', () => {
      const [risk] = risksWith({ 'config.linkerd.io/skip-outbound-ports': ' 1,'.repeat(5000) });
      expect(risk?.text).toBe(
        `--outbound-ports-to-ignore "${' 1,'.repeat(20)}..." has no valid port, and iptables refuses an empty port list: ` +
          'linkerd-init stops with an error and the pod never starts',
      );
    });

    it('none for subnets iptables applies, nor under the CNI plugin, which renders no linkerd-init', () => {
      expect(risksWith({ [SUBNETS]: ' 10.0.0.0/8 ,192.0.2.0/010\n' })).toEqual([]);
      expect(risksWith({ 'config.linkerd.io/skip-outbound-ports': '443, 8443' })).toEqual([]);
      expect(risksWith({ [SUBNETS]: 'fd00::/8', 'config.linkerd.io/skip-outbound-ports': ' ' }, (v) => (v.cniEnabled = true))).toEqual([]);
    });
  });

  it('a pod that is not injected has no risks', () => {
    const result = inject({ object: pod(), config: testConfig() });
    expect(result.outcome).toBe('skipped');
    expect(result.risks).toEqual([]);
  });

  it('a warning line names the risk', () => {
    const [risk] = risksOf({ annotations: { 'config.linkerd.io/proxy-await': 'disabled' } });
    expect(risk && riskWarning(risk)).toMatch(/^start-up risk \(proxy_await_disabled\): config\.linkerd\.io\/proxy-await is disabled/);
  });
});
