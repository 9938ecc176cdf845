import { describe, expect, it } from 'vitest';
import { defaultValues, loadValues, mergeValues, withTrustAnchors } from '../../src/engine/index.js';

describe('embedded defaults', () => {
  it('are Linkerd’s chart defaults with the classic sidecar and legacy iptables', () => {
    const v = defaultValues();
    expect(v.proxy.nativeSidecar).toBe(false);
    expect(v.proxy.await).toBe(true);
    expect(v.proxyInit.iptablesMode).toBe('legacy');
    expect(v.cniEnabled).toBe(false);
    expect(v.disableIPv6).toBe(true);
    expect(v.proxy.ports).toEqual({ admin: 4191, control: 4190, inbound: 4143, outbound: 4140 });
    expect(v.proxy.opaquePorts).toBe('25,587,3306,4444,5432,6379,9300,11211');
    expect(v.identity.serviceAccountTokenProjection).toBe(true);
  });

  it('are a fresh object each time', () => {
    const a = defaultValues();
    a.proxy.ports.admin = 1;
    expect(defaultValues().proxy.ports.admin).toBe(4191);
  });
});

describe('loadValues', () => {
  it('deep-merges a document over the defaults', () => {
    const v = loadValues('cniEnabled: true\nproxy:\n  ports:\n    admin: 5191\n  nativeSidecar: true\n');
    expect(v.cniEnabled).toBe(true);
    expect(v.proxy.ports).toEqual({ admin: 5191, control: 4190, inbound: 4143, outbound: 4140 });
    expect(v.proxy.nativeSidecar).toBe(true);
    expect(v.proxy.logLevel).toBe('warn,linkerd=info,hickory=error');
  });

  it('an empty document or explicit nulls keep the defaults', () => {
    expect(loadValues('')).toEqual(defaultValues());
    expect(loadValues('proxy:\n  cores:\n  logLevel: ~\n').proxy.logLevel).toBe('warn,linkerd=info,hickory=error');
  });

  it('reads numbers and booleans where strings are expected, as Kubernetes YAML does', () => {
    const v = loadValues('proxyInit:\n  ignoreOutboundPorts: 443\nproxy:\n  logLevel: true\n');
    expect(v.proxyInit.ignoreOutboundPorts).toBe('443');
    expect(v.proxy.logLevel).toBe('true');
  });

  it('uses YAML 1.1 booleans', () => {
    expect(loadValues('cniEnabled: yes\n').cniEnabled).toBe(true);
  });

  it('replaces the proxy parameter maps whole instead of merging them', () => {
    const v = loadValues('proxy:\n  inbound:\n    server:\n      http2:\n        maxConcurrentStreams: 100\n');
    expect(v.proxy.inbound).toEqual({ server: { http2: { maxConcurrentStreams: 100 } } });
    expect(v.proxy.outbound).toEqual({ server: { http2: { keepAliveInterval: '10s', keepAliveTimeout: '3s' } } });
  });

  it('refuses aliases that expand the values beyond 4 MiB (or twice the text), and keeps those that do not', () => {
    const anchored = (aliases: number): string =>
      `note: &big "${'x'.repeat(100_000)}"\nproxy:\n  additionalEnv:\n${'  - {name: A, value: *big}\n'.repeat(aliases)}`;
    expect(loadValues(anchored(10)).proxy.additionalEnv).toHaveLength(10);
    expect(() => loadValues(anchored(50))).toThrow(/^Linkerd values use YAML aliases that expand them to more than 4194304 bytes$/);
    // Without aliases, a large document is its own size.
    expect(loadValues(`note: "${'x'.repeat(5_000_000)}"\n`)).toBeDefined();
  });

  it('keeps keys it does not read without interpreting them', () => {
    const v = loadValues('controllerReplicas: 3\nproxy:\n  outboundTransportMode: transport-header\n') as unknown as Record<string, any>;
    expect(v['controllerReplicas']).toBe(3);
    expect(v['proxy']['outboundTransportMode']).toBe('transport-header');
  });

  it.each([
    ['not YAML', 'proxy: [unclosed', /not valid YAML/],
    ['not a map', '- a\n- b\n', /must be a YAML map, got list/],
    ['a map where a scalar belongs', 'cniEnabled:\n  a: 1\n', /cniEnabled must be a boolean, got a map/],
    ['a string where a number belongs', 'proxy:\n  ports:\n    admin: "4191"\n', /proxy\.ports\.admin must be a number, got "4191"/],
    ['a scalar where a map belongs', 'proxy: 3\n', /^Linkerd values: proxy must be a map, got 3$/],
    ['a list of env without names', 'proxy:\n  additionalEnv:\n    - value: x\n', /proxy\.additionalEnv\[0\]\.name must be a non-empty string/],
    ['an unknown iptables mode', 'proxyInit:\n  iptablesMode: ebpf\n', /proxyInit\.iptablesMode must be "nft" or "legacy"/],
    ['an unknown header-logging mode', 'proxy:\n  logHTTPHeaders: all\n', /proxy\.logHTTPHeaders/],
    ['close-wait without root', 'proxyInit:\n  closeWaitTimeoutSecs: 10\n', /needs proxyInit\.runAsRoot/],
    ['tracing without a collector', 'proxy:\n  tracing:\n    enabled: true\n', /collector\.endpoint is required/],
    ['a bad cluster network', 'clusterNetworks: "10.0.0.0/8,banana"\n', /"banana" is not a CIDR/],
    // Linkerd's injector reads clusterNetworks with Go's net.ParseCIDR, untrimmed, and denies every pod on a refusal.
    ['a cluster network with a zone', 'clusterNetworks: "10.0.0.0/8,fe80::1%eth0/64"\n', /^Linkerd values: clusterNetworks: "fe80::1%eth0\/64" is not a CIDR$/],
    ['a cluster network after a space', 'clusterNetworks: "10.0.0.0/8, fd00::/8"\n', /clusterNetworks: " fd00::\/8" is not a CIDR/],
    ['a cluster network with a leading zero', 'clusterNetworks: "010.0.0.0/8"\n', /clusterNetworks: "010\.0\.0\.0\/8" is not a CIDR/],
    ['a skipped subnet proxy-init refuses', 'proxyInit:\n  skipSubnets: "10.0.0.0/8,fe80::1%eth0/64"\n', /^Linkerd values: proxyInit\.skipSubnets "10\.0\.0\.0\/8,fe80::1%eth0\/64" would stop linkerd-init: fe80::1%eth0\/64 is not a valid CIDR address$/],
    ['an empty skipped subnet', 'proxyInit:\n  skipSubnets: "10.0.0.0/8,"\n', /proxyInit\.skipSubnets "10\.0\.0\.0\/8," would stop linkerd-init:  is not a valid CIDR address/],
    ['an IPv6 skipped subnet', 'proxyInit:\n  skipSubnets: "fd00::/8"\n', /would stop linkerd-init: iptables refuses the IPv6 subnet fd00::\/8/],
    ['a skipped subnet with IPv6 on', 'disableIPv6: false\nproxyInit:\n  skipSubnets: "10.0.0.0/8"\n', /would stop linkerd-init: ip6tables refuses the IPv4 subnet 10\.0\.0\.0\/8/],
    ['a skipped subnet iptables reads in octal', 'proxyInit:\n  skipSubnets: "10.0.0.0/08"\n', /iptables reads the prefix length of 10\.0\.0\.0\/08 .* as octal/],
    ['a port out of range', 'proxy:\n  ports:\n    inbound: 70000\n', /proxy\.ports\.inbound must be a port number/],
    // What the API server could not decode in a pod is refused here rather than breaking every injected pod.
    ['a list as an env value', 'proxy:\n  experimentalEnv:\n    - name: A\n      value: [x]\n', /proxy\.experimentalEnv\[0\]\.value must be a string, got a list/],
    ['an object env value', 'proxy:\n  additionalEnv:\n    - name: A\n      value: {x: y}\n', /proxy\.additionalEnv\[0\]\.value must be a string, got an object/],
    ['an env list that is a map', 'proxy:\n  additionalEnv: {A: x}\n', /proxy\.additionalEnv must be a list/],
    ['an empty valueFrom', 'proxy:\n  additionalEnv:\n    - name: A\n      valueFrom: {}\n', /proxy\.additionalEnv\[0\]\.valueFrom must name exactly one/],
    ['capabilities that are not lists', 'proxy:\n  capabilities:\n    add: NET_ADMIN\n', /proxy\.capabilities\.add must be a list of strings/],
    ['a capability that is not a string', 'proxyInit:\n  capabilities:\n    drop: [{a: 1}]\n', /proxyInit\.capabilities\.drop\[0\] must be a string, got an object/],
    ['capabilities that are a list', 'proxy:\n  capabilities: [NET_ADMIN]\n', /proxy\.capabilities must be a map/],
    ['a string user in a securityContext', 'proxy:\n  securityContext:\n    runAsUser: "1000"\n', /proxy\.securityContext\.runAsUser must be an integer \(int64\), got "1000"/],
    ['a string flag in the validator securityContext', 'networkValidator:\n  securityContext:\n    runAsNonRoot: "yes"\n', /networkValidator\.securityContext\.runAsNonRoot must be a boolean/],
    ['a securityContext capability list that is a string', 'proxy:\n  securityContext:\n    capabilities: {drop: ALL}\n', /proxy\.securityContext\.capabilities\.drop must be a list of strings/],
    ['a quantity that does not parse', 'proxy:\n  resources:\n    cpu:\n      request: lots\n', /proxy\.resources\.cpu\.request must be a non-negative quantity/],
    ['a negative quantity', 'proxy:\n  resources:\n    memory:\n      limit: -1Mi\n', /proxy\.resources\.memory\.limit must be a non-negative quantity/],
    ['a fractional probe delay', 'proxy:\n  livenessProbe:\n    initialDelaySeconds: 1.5\n', /proxy\.livenessProbe\.initialDelaySeconds must be a whole number/],
    ['a negative probe timeout', 'proxy:\n  readinessProbe:\n    timeoutSeconds: -1\n', /proxy\.readinessProbe\.timeoutSeconds must be a whole number/],
    ['a fractional init user', 'proxyInit:\n  runAsUser: 1.5\n', /proxyInit\.runAsUser must be an ID/],
    ['a fractional wait before exit', 'proxy:\n  waitBeforeExitSeconds: 0.5\n', /proxy\.waitBeforeExitSeconds must be a whole number/],
    ['an unknown pull policy', 'imagePullPolicy: Sometimes\n', /imagePullPolicy must be one of Always, IfNotPresent, Never/],
    ['an unknown proxy pull policy', 'proxy:\n  image:\n    pullPolicy: always\n', /proxy\.image\.pullPolicy must be one of/],
  ])('refuses %s with an error naming the key', (_what, yaml, message) => {
    expect(() => loadValues(yaml)).toThrowError(message);
    try {
      loadValues(yaml);
    } catch (err) {
      expect((err as { code?: string }).code).toBe('INVALID_VALUES');
    }
  });

  it('reads proxy.capabilities and proxyInit.capabilities as Linkerd’s Go type does', () => {
    const v = loadValues('proxy:\n  capabilities:\n    ADD: [NET_ADMIN]\n    drop: [ALL]\n    other: 1\nproxyInit:\n  capabilities:\n    drop: null\n');
    expect(v.proxy.capabilities).toEqual({ add: ['NET_ADMIN'], drop: ['ALL'] });
    expect(v.proxyInit.capabilities).toEqual({});
    expect(defaultValues().proxy.capabilities).toBeNull();
  });

  it('reads numbers and booleans in additional env as strings, as Linkerd reads its values file', () => {
    const v = loadValues('proxy:\n  additionalEnv:\n    - name: A\n      value: 1\n  experimentalEnv:\n    - name: B\n      value: true\n');
    expect(v.proxy.additionalEnv).toEqual([{ name: 'A', value: '1' }]);
    expect(v.proxy.experimentalEnv).toEqual([{ name: 'B', value: 'true' }]);
  });

  it('writes additional env back as Go does: no empty value, no unknown keys', () => {
    const v = loadValues(
      'proxy:\n  additionalEnv:\n    - name: A\n      value: ""\n      note: x\n    - name: B\n      valueFrom:\n        fieldRef: {fieldPath: metadata.name, apiVersion: ""}\n',
    );
    expect(v.proxy.additionalEnv).toEqual([{ name: 'A' }, { name: 'B', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } }]);
  });

  it('accepts a complete, valid tracing block', () => {
    const v = loadValues(
      'proxy:\n  tracing:\n    enabled: true\n    collector:\n      endpoint: collector.tracing:4317\n      meshIdentity:\n        serviceAccountName: collector\n        namespace: tracing\n',
    );
    expect(v.proxy.tracing?.enabled).toBe(true);
    expect(v.proxy.tracing?.traceServiceName).toBe('linkerd-proxy');
  });

  it('accepts the networks Go reads as CIDRs, and the skipped subnets linkerd-init applies', () => {
    expect(loadValues('clusterNetworks: ",10.0.0.0/08,::ffff:10.0.0.0/104,fd00::/8,"\n').clusterNetworks).toBe(
      ',10.0.0.0/08,::ffff:10.0.0.0/104,fd00::/8,',
    );
    // proxy-init trims each subnet; iptables reads 010 as 8.
    expect(loadValues('proxyInit:\n  skipSubnets: " 10.0.0.0/8\\t,192.0.2.0/010"\n').proxyInit.skipSubnets).toBe(' 10.0.0.0/8\t,192.0.2.0/010');
    // Under the CNI plugin there is no linkerd-init, and the injector renders no subnet.
    expect(loadValues('cniEnabled: true\nproxyInit:\n  skipSubnets: "fd00::/8"\n').proxyInit.skipSubnets).toBe('fd00::/8');
  });

  it('mergeValues accepts an already-parsed document and null', () => {
    expect(mergeValues(null)).toEqual(defaultValues());
    expect(mergeValues({ clusterDomain: 'example.org' }).clusterDomain).toBe('example.org');
  });

  it('withTrustAnchors replaces the anchors without touching the rest', () => {
    const base = defaultValues();
    const v = withTrustAnchors(base, 'PEM');
    expect(v.identityTrustAnchorsPEM).toBe('PEM');
    expect(base.identityTrustAnchorsPEM).toBe('');
  });
});
