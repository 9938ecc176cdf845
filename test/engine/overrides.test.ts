/**
 * Table-driven tests for annotation overrides and namespace inheritance, written from the spec
 * (linkerd-injector-spec.md 2.6, 2.7, 2.8, 6.3, traps 6, 7, 13) and the project's documented deviations: absurd
 * ports/uids/gids/negative quantities and values Linkerd would fail rendering on are ignored with a warning.
 */
import { describe, expect, it } from 'vitest';
import type { EnvVar } from '../../src/engine/k8s.js';
import {
  applyOverrides,
  inheritedNamespaceAnnotations,
  mergeAdditionalEnv,
  type OverrideInput,
  type Overridden,
} from '../../src/engine/overrides.js';
import { parseAdditionalEnv } from '../../src/engine/override-rules.js';
import { inject } from '../../src/engine/inject.js';
import { ANNOTATIONS } from '../../src/engine/names.js';
import { defaultValues, withTrustAnchors, type LinkerdValues } from '../../src/engine/values.js';
import { TRUST_ANCHORS } from '../support/engine.js';

const C = 'config.linkerd.io/';
const ALPHA = 'config.alpha.linkerd.io/';
const BETA = 'config.beta.linkerd.io/';

function run(
  annotations: Record<string, string>,
  opts: { values?: LinkerdValues; namedPorts?: Map<string, number>; namespaceAdditionalEnv?: string } = {},
): Overridden {
  const input: OverrideInput = {
    values: opts.values ?? defaultValues(),
    annotations,
    labels: () => ({}),
    namedPorts: opts.namedPorts ?? new Map(),
  };
  if (opts.namespaceAdditionalEnv !== undefined) input.namespaceAdditionalEnv = opts.namespaceAdditionalEnv;
  return applyOverrides(input);
}

function withValues(edit: (v: LinkerdValues) => void): LinkerdValues {
  const v = defaultValues();
  edit(v);
  return v;
}

/** Exactly one warning, and it names the annotation. */
function expectOneWarningAbout(out: Overridden, key: string): void {
  expect(out.warnings).toHaveLength(1);
  expect(out.warnings[0]).toContain(key);
}

describe('applyOverrides: no annotations', () => {
  it('returns the values unchanged, no flags, no warnings', () => {
    const out = run({});
    expect(out.values).toEqual(defaultValues());
    expect(out.isIngress).toBe(false);
    expect(out.isGateway).toBe(false);
    expect(out.debugSidecar).toBe(false);
    expect(out.warnings).toEqual([]);
  });

  it('project defaults: non-native sidecar and legacy iptables', () => {
    const out = run({});
    expect(out.values.proxy.nativeSidecar).toBe(false);
    expect(out.values.proxyInit.iptablesMode).toBe('legacy');
  });

  it('unknown config.linkerd.io keys are ignored silently', () => {
    const out = run({ [`${C}invalid-key`]: 'whatever', 'example.com/x': 'y' });
    expect(out.values).toEqual(defaultValues());
    expect(out.warnings).toEqual([]);
  });
});

// ---------------------------------------------------------------------------------------------------------------
// Durations (2.7, 6.3, trap 13)

describe('applyOverrides: durations', () => {
  type Field =
    | 'outboundConnectTimeout'
    | 'inboundConnectTimeout'
    | 'outboundDiscoveryCacheUnusedTimeout'
    | 'inboundDiscoveryCacheUnusedTimeout'
    | 'shutdownGracePeriod';
  const OUT_CONNECT = `${C}proxy-outbound-connect-timeout`;
  const IN_CONNECT = `${C}proxy-inbound-connect-timeout`;
  const OUT_CACHE = `${C}proxy-outbound-discovery-cache-unused-timeout`;
  const IN_CACHE = `${C}proxy-inbound-discovery-cache-unused-timeout`;
  const GRACE = `${C}shutdown-grace-period`;

  const valid: Array<{ key: string; field: Field; value: string; expected: string }> = [
    { key: OUT_CONNECT, field: 'outboundConnectTimeout', value: '6s5ms', expected: '6005ms' },
    { key: IN_CONNECT, field: 'inboundConnectTimeout', value: '2s5ms', expected: '2005ms' },
    { key: OUT_CONNECT, field: 'outboundConnectTimeout', value: '30s', expected: '30000ms' },
    { key: IN_CONNECT, field: 'inboundConnectTimeout', value: '30s', expected: '30000ms' },
    { key: OUT_CONNECT, field: 'outboundConnectTimeout', value: '1.5s', expected: '1500ms' },
    { key: IN_CONNECT, field: 'inboundConnectTimeout', value: '250ms', expected: '250ms' },
    { key: OUT_CONNECT, field: 'outboundConnectTimeout', value: '1m', expected: '60000ms' },
    { key: OUT_CONNECT, field: 'outboundConnectTimeout', value: '0', expected: '0ms' },
    { key: GRACE, field: 'shutdownGracePeriod', value: '30s', expected: '30000ms' },
    { key: GRACE, field: 'shutdownGracePeriod', value: '2m5s', expected: '125000ms' },
    { key: OUT_CACHE, field: 'outboundDiscoveryCacheUnusedTimeout', value: '6s5000ms', expected: '11s' },
    { key: IN_CACHE, field: 'inboundDiscoveryCacheUnusedTimeout', value: '6000ms', expected: '6s' },
    { key: OUT_CACHE, field: 'outboundDiscoveryCacheUnusedTimeout', value: '500ms', expected: '0s' },
    { key: IN_CACHE, field: 'inboundDiscoveryCacheUnusedTimeout', value: '1500ms', expected: '1s' },
    { key: IN_CACHE, field: 'inboundDiscoveryCacheUnusedTimeout', value: '2m', expected: '120s' },
    { key: OUT_CACHE, field: 'outboundDiscoveryCacheUnusedTimeout', value: '1h', expected: '3600s' },
  ];

  it.each(valid)('$key: "$value" -> "$expected"', ({ key, field, value, expected }) => {
    const out = run({ [key]: value });
    expect(out.values.proxy[field]).toBe(expected);
    expect(out.warnings).toEqual([]);
  });

  const invalid: Array<{ key: string; field: Field; value: string }> = [
    { key: OUT_CONNECT, field: 'outboundConnectTimeout', value: '6000' },
    { key: IN_CONNECT, field: 'inboundConnectTimeout', value: '50' },
    { key: OUT_CACHE, field: 'outboundDiscoveryCacheUnusedTimeout', value: '6000' },
    { key: IN_CACHE, field: 'inboundDiscoveryCacheUnusedTimeout', value: '50' },
    { key: GRACE, field: 'shutdownGracePeriod', value: '50' },
    { key: OUT_CONNECT, field: 'outboundConnectTimeout', value: '6s5' },
    { key: OUT_CONNECT, field: 'outboundConnectTimeout', value: '5 s' },
    { key: OUT_CONNECT, field: 'outboundConnectTimeout', value: '5d' },
    { key: OUT_CONNECT, field: 'outboundConnectTimeout', value: 'abc' },
    { key: OUT_CONNECT, field: 'outboundConnectTimeout', value: '' },
  ];

  it.each(invalid)('$key: invalid "$value" keeps the default and warns', ({ key, field, value }) => {
    const out = run({ [key]: value });
    expect(out.values.proxy[field]).toBe(defaultValues().proxy[field]);
    expectOneWarningAbout(out, key);
  });

  it('defaults are the chart defaults', () => {
    const p = defaultValues().proxy;
    expect([p.outboundConnectTimeout, p.inboundConnectTimeout]).toEqual(['1000ms', '100ms']);
    expect([p.outboundDiscoveryCacheUnusedTimeout, p.inboundDiscoveryCacheUnusedTimeout]).toEqual(['5s', '90s']);
    expect(p.shutdownGracePeriod).toBe('');
  });
});

// ---------------------------------------------------------------------------------------------------------------
// Quantities (2.7, trap 13)

describe('applyOverrides: quantities', () => {
  const CPU_REQ = `${C}proxy-cpu-request`;
  const CPU_LIM = `${C}proxy-cpu-limit`;

  const cores: Array<{ value: string; cores: number }> = [
    { value: '1', cores: 1 },
    { value: '1m', cores: 1 },
    { value: '1000m', cores: 1 },
    { value: '1001m', cores: 2 },
    { value: '0.15', cores: 1 },
    { value: '1.5', cores: 2 },
    { value: '3', cores: 3 },
    { value: '2500m', cores: 3 },
  ];

  it.each(cores)('proxy-cpu-request "$value": raw string kept, workers.minimum = $cores', ({ value, cores: n }) => {
    const out = run({ [CPU_REQ]: value });
    expect(out.values.proxy.resources.cpu.request).toBe(value);
    expect(out.values.proxy.resources.cpu.limit).toBe('');
    expect(out.values.proxy.runtime.workers.minimum).toBe(n);
    expect(out.values.proxy.runtime.workers.maximum).toBeNull();
    expect(out.warnings).toEqual([]);
  });

  it.each(cores)('proxy-cpu-limit "$value": raw string kept, workers.maximum = $cores', ({ value, cores: n }) => {
    const out = run({ [CPU_LIM]: value });
    expect(out.values.proxy.resources.cpu.limit).toBe(value);
    expect(out.values.proxy.resources.cpu.request).toBe('');
    expect(out.values.proxy.runtime.workers.maximum).toBe(n);
    expect(out.values.proxy.runtime.workers.minimum).toBe(1);
    expect(out.warnings).toEqual([]);
  });

  it('6.3: cpu request 0.15 and limit 1.5 -> workers min stays 1, max 2', () => {
    const out = run({ [CPU_REQ]: '0.15', [CPU_LIM]: '1.5' });
    expect(out.values.proxy.resources.cpu).toEqual({ request: '0.15', limit: '1.5' });
    expect(out.values.proxy.runtime.workers).toMatchObject({ minimum: 1, maximum: 2 });
  });

  it('the raw string is not canonicalised ("0.5" stays "0.5", not "500m")', () => {
    expect(run({ [CPU_REQ]: '0.5' }).values.proxy.resources.cpu.request).toBe('0.5');
  });

  type Res = 'cpu' | 'memory' | 'ephemeral-storage';
  const raw: Array<{ key: string; res: Res; field: 'request' | 'limit'; value: string }> = [
    { key: `${C}proxy-memory-request`, res: 'memory', field: 'request', value: '64Mi' },
    { key: `${C}proxy-memory-limit`, res: 'memory', field: 'limit', value: '1Gi' },
    { key: `${C}proxy-memory-limit`, res: 'memory', field: 'limit', value: '0.5Gi' },
    { key: `${C}proxy-memory-request`, res: 'memory', field: 'request', value: '128974848' },
    { key: `${C}proxy-memory-request`, res: 'memory', field: 'request', value: '129e6' },
    { key: `${C}proxy-memory-request`, res: 'memory', field: 'request', value: '123M' },
    { key: `${C}proxy-ephemeral-storage-request`, res: 'ephemeral-storage', field: 'request', value: '10Mi' },
    { key: `${C}proxy-ephemeral-storage-limit`, res: 'ephemeral-storage', field: 'limit', value: '2G' },
  ];

  it.each(raw)('$key "$value" stored raw', ({ key, res, field, value }) => {
    const out = run({ [key]: value });
    expect(out.values.proxy.resources[res][field]).toBe(value);
    expect(out.warnings).toEqual([]);
  });

  it('memory and storage quantities do not touch the worker counts', () => {
    const out = run({ [`${C}proxy-memory-request`]: '3Gi', [`${C}proxy-ephemeral-storage-limit`]: '5G' });
    expect(out.values.proxy.runtime.workers).toEqual(defaultValues().proxy.runtime.workers);
  });

  const invalid: Array<{ key: string; res: Res; field: 'request' | 'limit'; value: string }> = [
    { key: `${C}proxy-memory-request`, res: 'memory', field: 'request', value: '1 Gi' },
    { key: `${C}proxy-memory-limit`, res: 'memory', field: 'limit', value: '1GB' },
    { key: CPU_REQ, res: 'cpu', field: 'request', value: 'abc' },
    { key: CPU_LIM, res: 'cpu', field: 'limit', value: '1 Gi' },
    { key: `${C}proxy-ephemeral-storage-request`, res: 'ephemeral-storage', field: 'request', value: '10 Mi' },
    // negative quantities: ignored by the project (deliberate deviation)
    { key: CPU_REQ, res: 'cpu', field: 'request', value: '-1' },
    { key: CPU_LIM, res: 'cpu', field: 'limit', value: '-500m' },
    { key: `${C}proxy-memory-request`, res: 'memory', field: 'request', value: '-64Mi' },
  ];

  it.each(invalid)('$key "$value" is ignored with a warning', ({ key, res, field, value }) => {
    const out = run({ [key]: value });
    expect(out.values.proxy.resources[res][field]).toBe('');
    expect(out.values.proxy.runtime.workers).toEqual(defaultValues().proxy.runtime.workers);
    expectOneWarningAbout(out, key);
  });

  it('a quantity longer than 128 characters is ignored with a warning, unread (megabytes of digits took seconds)', () => {
    expect(run({ [CPU_LIM]: `0.${'0'.repeat(125)}1` }).values.proxy.resources.cpu.limit).toBe(`0.${'0'.repeat(125)}1`);
    for (const value of ['1'.repeat(129), '1'.repeat(4 << 20)]) {
      const out = run({ [`${C}proxy-memory-limit`]: value });
      expect(out.values.proxy.resources.memory.limit).toBe('');
      expectOneWarningAbout(out, `${C}proxy-memory-limit`);
    }
  });
});

// ---------------------------------------------------------------------------------------------------------------
// Booleans (2.7: Go strconv.ParseBool)

describe('applyOverrides: booleans', () => {
  type BoolField =
    | 'enableExternalProfiles'
    | 'disableOutboundProtocolDetectTimeout'
    | 'disableInboundProtocolDetectTimeout';
  const TRUE = ['1', 't', 'T', 'TRUE', 'true', 'True'];
  const FALSE = ['0', 'f', 'F', 'FALSE', 'false', 'False'];
  const INVALID = ['yes', 'no', 'on', 'TrUe', 'tRUE', '9000', '', ' true', 'enabled'];

  it.each(TRUE)('proxy-metrics-hostname-labels "%s" -> true', (value) => {
    const out = run({ [`${C}proxy-metrics-hostname-labels`]: value });
    expect(out.values.proxy.metrics.hostnameLabels).toBe(true);
    expect(out.warnings).toEqual([]);
  });

  it.each(FALSE)('proxy-metrics-hostname-labels "%s" -> false (from true)', (value) => {
    const values = withValues((v) => (v.proxy.metrics.hostnameLabels = true));
    const out = run({ [`${C}proxy-metrics-hostname-labels`]: value }, { values });
    expect(out.values.proxy.metrics.hostnameLabels).toBe(false);
    expect(out.warnings).toEqual([]);
  });

  it.each(INVALID)('proxy-metrics-hostname-labels invalid "%s" is ignored with a warning', (value) => {
    const key = `${C}proxy-metrics-hostname-labels`;
    const values = withValues((v) => (v.proxy.metrics.hostnameLabels = true));
    const out = run({ [key]: value }, { values });
    expect(out.values.proxy.metrics.hostnameLabels).toBe(true);
    expectOneWarningAbout(out, key);
  });

  const keys: Array<{ key: string; field: BoolField }> = [
    { key: `${C}enable-external-profiles`, field: 'enableExternalProfiles' },
    { key: `${C}proxy-disable-outbound-protocol-detect-timeout`, field: 'disableOutboundProtocolDetectTimeout' },
    { key: `${C}proxy-disable-inbound-protocol-detect-timeout`, field: 'disableInboundProtocolDetectTimeout' },
  ];
  const rows = keys.flatMap(({ key, field }) => [
    { key, field, value: 'true', expected: true as boolean | 'default' },
    { key, field, value: 'T', expected: true as boolean | 'default' },
    { key, field, value: '1', expected: true as boolean | 'default' },
    { key, field, value: 'False', expected: false as boolean | 'default' },
    { key, field, value: '9000', expected: 'default' as boolean | 'default' },
  ]);

  it.each(rows)('$key "$value" -> $expected', ({ key, field, value, expected }) => {
    const out = run({ [key]: value });
    if (expected === 'default') {
      expect(out.values.proxy[field]).toBe(defaultValues().proxy[field]);
      expectOneWarningAbout(out, key);
    } else {
      expect(out.values.proxy[field]).toBe(expected);
      expect(out.warnings).toEqual([]);
    }
  });

  const debug: Array<{ value: string | undefined; on: boolean }> = [
    { value: undefined, on: false },
    { value: 'true', on: true },
    { value: 'True', on: true },
    { value: '1', on: true },
    { value: 'false', on: false },
    { value: 'invalid', on: false },
    { value: 'yes', on: false },
    { value: 'enabled', on: false },
  ];

  it.each(debug)('enable-debug-sidecar $value -> $on', ({ value, on }) => {
    const out = run(value === undefined ? {} : { [`${C}enable-debug-sidecar`]: value });
    expect(out.debugSidecar).toBe(on);
  });

  it('enable-debug-sidecar invalid warns', () => {
    expectOneWarningAbout(run({ [`${C}enable-debug-sidecar`]: 'invalid' }), `${C}enable-debug-sidecar`);
  });

  const gateway: Array<{ value: string | undefined; on: boolean }> = [
    { value: undefined, on: false },
    { value: 'true', on: true },
    { value: 't', on: true },
    { value: 'false', on: false },
    { value: 'nope', on: false },
  ];

  it.each(gateway)('enable-gateway $value -> isGateway $on', ({ value, on }) => {
    expect(run(value === undefined ? {} : { [`${C}enable-gateway`]: value }).isGateway).toBe(on);
  });
});

// ---------------------------------------------------------------------------------------------------------------
// Ports, uid, gid (2.8; absurd values ignored by the project)

describe('applyOverrides: ports and ids', () => {
  type PortField = 'admin' | 'control' | 'inbound' | 'outbound';
  const keys: Array<{ key: string; field: PortField }> = [
    { key: `${C}admin-port`, field: 'admin' },
    { key: `${C}control-port`, field: 'control' },
    { key: `${C}inbound-port`, field: 'inbound' },
    { key: `${C}outbound-port`, field: 'outbound' },
  ];

  it('defaults are 4191/4190/4143/4140', () => {
    expect(defaultValues().proxy.ports).toEqual({ admin: 4191, control: 4190, inbound: 4143, outbound: 4140 });
  });

  const good = keys.flatMap(({ key, field }) =>
    [
      { value: '5000', expected: 5000 },
      { value: '1', expected: 1 },
      { value: '65535', expected: 65535 },
    ].map((r) => ({ key, field, ...r })),
  );

  it.each(good)('$key "$value" -> $expected', ({ key, field, value, expected }) => {
    const out = run({ [key]: value });
    expect(out.values.proxy.ports[field]).toBe(expected);
    expect(out.warnings).toEqual([]);
  });

  it('only the annotated port changes', () => {
    const out = run({ [`${C}admin-port`]: '9995' });
    expect(out.values.proxy.ports).toEqual({ admin: 9995, control: 4190, inbound: 4143, outbound: 4140 });
  });

  const bad = keys.flatMap(({ key, field }) =>
    ['70000', '65536', '0', '-1', 'abc', '', '80.5', '0x50'].map((value) => ({ key, field, value })),
  );

  it.each(bad)('$key "$value" is ignored with a warning', ({ key, field, value }) => {
    const out = run({ [key]: value });
    expect(out.values.proxy.ports[field]).toBe(defaultValues().proxy.ports[field]);
    expectOneWarningAbout(out, key);
  });

  const ids: Array<{ key: string; field: 'uid' | 'gid'; value: string; expected: number | 'default' }> = [
    { key: `${C}proxy-uid`, field: 'uid', value: '0', expected: 0 },
    { key: `${C}proxy-uid`, field: 'uid', value: '1000700000', expected: 1000700000 },
    { key: `${C}proxy-uid`, field: 'uid', value: '2147483647', expected: 2147483647 },
    { key: `${C}proxy-uid`, field: 'uid', value: '2147483648', expected: 'default' },
    { key: `${C}proxy-uid`, field: 'uid', value: '-1', expected: 'default' },
    { key: `${C}proxy-uid`, field: 'uid', value: 'root', expected: 'default' },
    { key: `${C}proxy-gid`, field: 'gid', value: '-1', expected: -1 },
    { key: `${C}proxy-gid`, field: 'gid', value: '0', expected: 0 },
    { key: `${C}proxy-gid`, field: 'gid', value: '2102', expected: 2102 },
    { key: `${C}proxy-gid`, field: 'gid', value: '2147483647', expected: 2147483647 },
    { key: `${C}proxy-gid`, field: 'gid', value: '2147483648', expected: 'default' },
    { key: `${C}proxy-gid`, field: 'gid', value: '-2', expected: 'default' },
  ];

  it.each(ids)('$key "$value" -> $expected', ({ key, field, value, expected }) => {
    const values = withValues((v) => (v.proxy.gid = field === 'gid' ? 1234 : v.proxy.gid));
    const out = run({ [key]: value }, { values });
    if (expected === 'default') {
      expect(out.values.proxy[field]).toBe(values.proxy[field]);
      expectOneWarningAbout(out, key);
    } else {
      expect(out.values.proxy[field]).toBe(expected);
      expect(out.warnings).toEqual([]);
    }
  });
});

// ---------------------------------------------------------------------------------------------------------------
// Opaque ports, skip ports, skip subnets (2.8, 2.9)

describe('applyOverrides: port lists', () => {
  const OPAQUE = `${C}opaque-ports`;
  const named = new Map<string, number>([
    ['mysql', 3306],
    ['memcached', 11211],
  ]);

  const opaque: Array<{ value: string; expected: string; warnings: number }> = [
    { value: 'mysql', expected: '3306', warnings: 0 },
    { value: '8080', expected: '8080', warnings: 0 },
    { value: '4000-5000', expected: '4000-5000', warnings: 0 },
    { value: 'mysql,memcached,4000-5000,25', expected: '3306,11211,4000-5000,25', warnings: 0 },
    { value: ' 25 , mysql ,', expected: '25,3306', warnings: 0 },
    { value: '25,abc,587', expected: '25,587', warnings: 1 },
    { value: 'http,5000-4000,99999', expected: '', warnings: 3 },
    // an empty value is present: it replaces the default list (trap 6)
    { value: '', expected: '', warnings: 0 },
  ];

  it.each(opaque)('opaque-ports "$value" -> "$expected"', ({ value, expected, warnings }) => {
    const out = run({ [OPAQUE]: value }, { namedPorts: named });
    expect(out.values.proxy.opaquePorts).toBe(expected);
    expect(out.warnings).toHaveLength(warnings);
    for (const w of out.warnings) expect(w).toContain(OPAQUE);
  });

  it('without the annotation the configured default list stays', () => {
    expect(run({}, { namedPorts: named }).values.proxy.opaquePorts).toBe('25,587,3306,4444,5432,6379,9300,11211');
  });

  const raw: Array<{ key: string; field: 'ignoreInboundPorts' | 'ignoreOutboundPorts' | 'skipSubnets'; value: string }> = [
    { key: `${C}skip-inbound-ports`, field: 'ignoreInboundPorts', value: '1234' },
    { key: `${C}skip-inbound-ports`, field: 'ignoreInboundPorts', value: '1234,5000-6000' },
    { key: `${C}skip-inbound-ports`, field: 'ignoreInboundPorts', value: '1234, 5678' },
    { key: `${C}skip-outbound-ports`, field: 'ignoreOutboundPorts', value: '443' },
    { key: `${C}skip-outbound-ports`, field: 'ignoreOutboundPorts', value: '34567' },
    { key: `${C}skip-outbound-ports`, field: 'ignoreOutboundPorts', value: '25,587,6000-7000' },
    { key: `${C}skip-subnets`, field: 'skipSubnets', value: '10.0.0.0/8' },
    { key: `${C}skip-subnets`, field: 'skipSubnets', value: '10.0.0.0/8,192.168.0.0/16' },
    { key: `${C}skip-subnets`, field: 'skipSubnets', value: '10.0.0.0/8,fd00::/8' },
  ];

  it.each(raw)('$key "$value" is kept as written', ({ key, field, value }) => {
    const out = run({ [key]: value });
    expect(out.values.proxyInit[field]).toBe(value);
    expect(out.warnings).toEqual([]);
  });

  // Read as proxy-init reads --subnets-to-ignore (items trimmed, then Go's net.ParseCIDR), which Linkerd renders as is.
  it.each([
    ' 10.0.0.0/8 ,\t192.0.2.0/24',
    '10.0.0.0/08',
    '192.0.2.0/24\n',
    '::ffff:192.0.2.0/120',
    'fd00::/8',
  ])('skip-subnets %j is kept as written', (value) => {
    const out = run({ [`${C}skip-subnets`]: value });
    expect(out.values.proxyInit.skipSubnets).toBe(value);
    expect(out.warnings).toEqual([]);
  });

  it.each(['fe80::1%eth0/64', '10.0.0.0/8,', '10.0.0.0/8,,192.0.2.0/24', ' ', '\n', '010.0.0.0/8', '10.0.0.0/+8', '"10.0.0.0/8"'])(
    'skip-subnets %j, which linkerd-init refuses to read, is ignored with a warning',
    (value) => {
      const out = run({ [`${C}skip-subnets`]: value });
      expect(out.values.proxyInit.skipSubnets).toBe('');
      expect(out.warnings).toEqual([`ignored annotation ${C}skip-subnets=${JSON.stringify(value)}: not a comma-separated list of CIDRs`]);
    },
  );

  it('skip-port defaults are 4567,4568 and skip-subnets is empty', () => {
    const v = defaultValues().proxyInit;
    expect([v.ignoreInboundPorts, v.ignoreOutboundPorts, v.skipSubnets]).toEqual(['4567,4568', '4567,4568', '']);
  });
});

// ---------------------------------------------------------------------------------------------------------------
// Strings and enumerations

describe('applyOverrides: strings and enumerations', () => {
  const strings: Array<{ key: string; get: (v: LinkerdValues) => unknown; value: string }> = [
    { key: `${C}proxy-image`, get: (v) => v.proxy.image.name, value: 'ghcr.io/example/proxy' },
    { key: `${C}proxy-version`, get: (v) => v.proxy.image.version, value: 'v9.9.9' },
    { key: `${C}image-pull-policy`, get: (v) => v.proxy.image.pullPolicy, value: 'Always' },
    { key: `${C}proxy-log-level`, get: (v) => v.proxy.logLevel, value: 'debug,linkerd=trace' },
    { key: `${C}proxy-log-format`, get: (v) => v.proxy.logFormat, value: 'json' },
    { key: `${C}proxy-require-identity-inbound-ports`, get: (v) => v.proxy.requireIdentityOnInboundPorts, value: '8080,9090' },
    { key: `${C}access-log`, get: (v) => v.proxy.accessLog, value: 'apache' },
    { key: `${C}debug-image`, get: (v) => v.debugContainer.image.name, value: 'example/debug' },
    { key: `${C}debug-image-version`, get: (v) => v.debugContainer.image.version, value: 'v1' },
    { key: `${C}debug-image-pull-policy`, get: (v) => v.debugContainer.image.pullPolicy, value: 'Never' },
  ];

  it.each(strings)('$key "$value" is set verbatim', ({ key, get, value }) => {
    const out = run({ [key]: value });
    expect(get(out.values)).toBe(value);
    expect(out.warnings).toEqual([]);
  });

  // Kubernetes refuses any other pull policy, so such a value would fail pod creation.
  it.each([
    [`${C}image-pull-policy`, (v: LinkerdValues) => v.proxy.image.pullPolicy],
    [`${C}debug-image-pull-policy`, (v: LinkerdValues) => v.debugContainer.image.pullPolicy],
  ])('%s that Kubernetes does not know is ignored with a warning', (key, get) => {
    for (const value of ['always', 'Sometimes', ' Always']) {
      const out = run({ [key]: value });
      expect(get(out.values)).toBe('');
      expectOneWarningAbout(out, key);
    }
  });

  const headers: Array<{ value: string; expected: string; warn: boolean }> = [
    { value: 'insecure', expected: 'insecure', warn: false },
    { value: 'off', expected: 'off', warn: false },
    { value: '', expected: '', warn: false },
    { value: 'on', expected: 'off', warn: true },
    { value: 'Insecure', expected: 'off', warn: true },
  ];

  it.each(headers)('proxy-log-http-headers "$value" -> "$expected"', ({ value, expected, warn }) => {
    const key = `${C}proxy-log-http-headers`;
    const out = run({ [key]: value });
    expect(out.values.proxy.logHTTPHeaders).toBe(expected);
    if (warn) expectOneWarningAbout(out, key);
    else expect(out.warnings).toEqual([]);
  });

  const policies = [
    'all-unauthenticated',
    'all-authenticated',
    'cluster-unauthenticated',
    'cluster-authenticated',
    'deny',
    'audit',
  ];

  it.each(policies)('default-inbound-policy "%s" is accepted', (value) => {
    const out = run({ [`${C}default-inbound-policy`]: value });
    expect(out.values.proxy.defaultInboundPolicy).toBe(value);
    expect(out.warnings).toEqual([]);
  });

  it.each(['allow', 'Deny', ''])('default-inbound-policy invalid "%s" keeps all-unauthenticated', (value) => {
    const key = `${C}default-inbound-policy`;
    const out = run({ [key]: value });
    expect(out.values.proxy.defaultInboundPolicy).toBe('all-unauthenticated');
    expectOneWarningAbout(out, key);
  });

  const enabledDisabled: Array<{ key: string; get: (v: LinkerdValues) => boolean; start: boolean; value: string; expected: boolean; warn: boolean }> = [
    { key: `${C}proxy-await`, get: (v) => v.proxy.await, start: true, value: 'disabled', expected: false, warn: false },
    { key: `${C}proxy-await`, get: (v) => v.proxy.await, start: false, value: 'enabled', expected: true, warn: false },
    { key: `${C}proxy-await`, get: (v) => v.proxy.await, start: true, value: 'enabled', expected: true, warn: false },
    { key: `${C}proxy-await`, get: (v) => v.proxy.await, start: true, value: 'false', expected: true, warn: true },
    { key: `${C}proxy-await`, get: (v) => v.proxy.await, start: false, value: 'true', expected: false, warn: true },
    { key: `${C}proxy-admin-shutdown`, get: (v) => v.proxy.enableShutdownEndpoint, start: false, value: 'enabled', expected: true, warn: false },
    { key: `${C}proxy-admin-shutdown`, get: (v) => v.proxy.enableShutdownEndpoint, start: true, value: 'disabled', expected: false, warn: false },
    { key: `${C}proxy-admin-shutdown`, get: (v) => v.proxy.enableShutdownEndpoint, start: false, value: 'yes', expected: false, warn: true },
  ];

  it.each(enabledDisabled)('$key "$value" (from $start) -> $expected', ({ key, get, start, value, expected, warn }) => {
    const values = withValues((v) => {
      v.proxy.await = start;
      v.proxy.enableShutdownEndpoint = start;
    });
    const out = run({ [key]: value }, { values });
    expect(get(out.values)).toBe(expected);
    if (warn) expectOneWarningAbout(out, key);
    else expect(out.warnings).toEqual([]);
  });

  it('proxy-await defaults to enabled', () => {
    expect(defaultValues().proxy.await).toBe(true);
  });

  const waits: Array<{ value: string; expected: number | 'default' }> = [
    { value: '300', expected: 300 },
    { value: '0', expected: 0 },
    { value: '-1', expected: 'default' },
    { value: '5s', expected: 'default' },
  ];

  it.each(waits)('alpha proxy-wait-before-exit-seconds "$value" -> $expected', ({ value, expected }) => {
    const key = `${ALPHA}proxy-wait-before-exit-seconds`;
    const values = withValues((v) => (v.proxy.waitBeforeExitSeconds = 7));
    const out = run({ [key]: value }, { values });
    if (expected === 'default') {
      expect(out.values.proxy.waitBeforeExitSeconds).toBe(7);
      expectOneWarningAbout(out, key);
    } else {
      expect(out.values.proxy.waitBeforeExitSeconds).toBe(expected);
      expect(out.warnings).toEqual([]);
    }
  });

  const closeWait: Array<{ runAsRoot: boolean; value: string; expected: number; warn: boolean }> = [
    { runAsRoot: true, value: '90s', expected: 90, warn: false },
    { runAsRoot: true, value: '1m30s', expected: 90, warn: false },
    { runAsRoot: true, value: '1500ms', expected: 1, warn: false },
    { runAsRoot: true, value: 'abc', expected: 0, warn: true },
    // Linkerd would fail rendering without runAsRoot; the project ignores it with a warning
    { runAsRoot: false, value: '90s', expected: 0, warn: true },
  ];

  it.each(closeWait)('close-wait-timeout "$value" with runAsRoot=$runAsRoot -> $expected', ({ runAsRoot, value, expected, warn }) => {
    const key = `${C}close-wait-timeout`;
    const values = withValues((v) => (v.proxyInit.runAsRoot = runAsRoot));
    const out = run({ [key]: value }, { values });
    expect(out.values.proxyInit.closeWaitTimeoutSecs).toBe(expected);
    if (warn) expectOneWarningAbout(out, key);
    else expect(out.warnings).toEqual([]);
  });
});

// ---------------------------------------------------------------------------------------------------------------
// Native sidecar precedence, inject/ingress, cpu ratio

describe('applyOverrides: native sidecar precedence', () => {
  const GA = `${C}proxy-enable-native-sidecar`;
  const B = `${BETA}proxy-enable-native-sidecar`;
  const AL = `${ALPHA}proxy-enable-native-sidecar`;

  const rows: Array<{ name: string; ann: Record<string, string>; start?: boolean; expected: boolean }> = [
    { name: 'none (project default)', ann: {}, expected: false },
    { name: 'none, values say native', ann: {}, start: true, expected: true },
    { name: 'GA true', ann: { [GA]: 'true' }, expected: true },
    { name: 'beta true', ann: { [B]: 'true' }, expected: true },
    { name: 'alpha true', ann: { [AL]: 'true' }, expected: true },
    { name: 'GA false over values true', ann: { [GA]: 'false' }, start: true, expected: false },
    { name: 'alpha false over values true', ann: { [AL]: 'false' }, start: true, expected: false },
    { name: 'GA false beats beta and alpha true', ann: { [GA]: 'false', [B]: 'true', [AL]: 'true' }, expected: false },
    { name: 'GA true beats beta and alpha false', ann: { [GA]: 'true', [B]: 'false', [AL]: 'false' }, expected: true },
    { name: 'beta false beats alpha true', ann: { [B]: 'false', [AL]: 'true' }, expected: false },
    { name: 'beta true beats alpha false', ann: { [B]: 'true', [AL]: 'false' }, expected: true },
    { name: 'GA true beats alpha false', ann: { [GA]: 'true', [AL]: 'false' }, expected: true },
    // the beta key is used only when the GA key is absent (2.8), so an unusable GA value does not fall through
    { name: 'invalid GA value does not fall through to beta', ann: { [GA]: 'yes', [B]: 'true' }, expected: false },
  ];

  it.each(rows)('$name -> $expected', ({ ann, start, expected }) => {
    const values = withValues((v) => (v.proxy.nativeSidecar = start ?? false));
    expect(run(ann, { values }).values.proxy.nativeSidecar).toBe(expected);
  });
});

describe('applyOverrides: linkerd.io/inject', () => {
  it.each([
    { value: undefined, ingress: false },
    { value: 'enabled', ingress: false },
    { value: 'ingress', ingress: true },
    { value: 'disabled', ingress: false },
    { value: 'Ingress', ingress: false },
  ])('linkerd.io/inject=$value -> isIngress $ingress', ({ value, ingress }) => {
    const out = run(value === undefined ? {} : { 'linkerd.io/inject': value });
    expect(out.isIngress).toBe(ingress);
    expect(out.isGateway).toBe(false);
  });

  it('6.3: ingress inherited from the namespace', () => {
    const workload = { [`${C}proxy-cpu-request`]: '1' };
    const ns = { 'linkerd.io/inject': 'ingress', [`${C}proxy-log-level`]: 'debug' };
    const out = run({ ...workload, ...inheritedNamespaceAnnotations(workload, ns) });
    expect(out.isIngress).toBe(true);
    expect(out.values.proxy.logLevel).toBe('debug');
    expect(out.values.proxy.resources.cpu.request).toBe('1');
  });
});

describe('applyOverrides: proxy-cpu-ratio-limit', () => {
  const KEY = `${C}proxy-cpu-ratio-limit`;
  const rows: Array<{ value: string; expected: number | null }> = [
    { value: '0.10', expected: 0.1 },
    { value: '0.1', expected: 0.1 },
    { value: '0.5', expected: 0.5 },
    { value: '0.999', expected: 0.999 },
    { value: '0', expected: null },
    { value: '1', expected: null },
    { value: '1.5', expected: null },
    { value: '-0.1', expected: null },
    { value: 'abc', expected: null },
    { value: '', expected: null },
    { value: '.5', expected: 0.5 },
    { value: '5e-1', expected: 0.5 },
    { value: 'NaN', expected: null },
    { value: '0x1p-2', expected: null },
  ];

  it.each(rows)('"$value" -> $expected', ({ value, expected }) => {
    const out = run({ [KEY]: value });
    expect(out.values.proxy.runtime.workers.maximumCPURatio).toBe(expected);
    if (expected === null) expectOneWarningAbout(out, KEY);
    else expect(out.warnings).toEqual([]);
  });

  it('long runs of digits that end in something else are refused in one pass (the pattern used to backtrack for seconds)', () => {
    for (const value of [`${'1'.repeat(100_000)}x`, `0.${'1'.repeat(100_000)}x`, `0.${'1'.repeat(70)}`]) {
      const out = run({ [KEY]: value });
      expect(out.values.proxy.runtime.workers.maximumCPURatio).toBeNull();
      expectOneWarningAbout(out, KEY);
    }
  });
});

// ---------------------------------------------------------------------------------------------------------------
// Additional env (2.8, 6.3 TestMergeAdditionalEnv)

describe('additional env', () => {
  const KEY = `${C}proxy-additional-env`;
  const e = (name: string, value: string): EnvVar => ({ name, value });

  const mergeRows: Array<{ name: string; layers: EnvVar[][]; expected: EnvVar[] }> = [
    { name: 'no layers', layers: [], expected: [] },
    { name: 'empty layers', layers: [[], [], []], expected: [] },
    { name: 'base only', layers: [[e('A', '1')], []], expected: [e('A', '1')] },
    { name: 'override only', layers: [[], [e('A', '2')]], expected: [e('A', '2')] },
    { name: 'same name replaced', layers: [[e('A', '1')], [e('A', '2')]], expected: [e('A', '2')] },
    { name: 'different names appended', layers: [[e('A', '1')], [e('B', '2')]], expected: [e('A', '1'), e('B', '2')] },
    {
      name: 'replacement keeps the original position',
      layers: [[e('A', '1'), e('B', '1'), e('C', '1')], [e('B', '2'), e('D', '2')]],
      expected: [e('A', '1'), e('B', '2'), e('C', '1'), e('D', '2')],
    },
    {
      name: 'three layers, last wins',
      layers: [[e('A', 'helm'), e('B', 'helm')], [e('B', 'ns'), e('C', 'ns')], [e('C', 'pod'), e('A', 'pod')]],
      expected: [e('A', 'pod'), e('B', 'ns'), e('C', 'pod')],
    },
    {
      name: 'valueFrom replaces value',
      layers: [[e('A', '1')], [{ name: 'A', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } }]],
      expected: [{ name: 'A', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } }],
    },
  ];

  it.each(mergeRows)('mergeAdditionalEnv: $name', ({ layers, expected }) => {
    expect(mergeAdditionalEnv(layers)).toEqual(expected);
  });

  it('mergeAdditionalEnv does not mutate its layers', () => {
    const base = [e('A', '1')];
    const over = [e('A', '2')];
    mergeAdditionalEnv([base, over]);
    expect(base).toEqual([e('A', '1')]);
    expect(over).toEqual([e('A', '2')]);
  });

  const parseOk: Array<{ text: string; expected: EnvVar[] }> = [
    { text: '[]', expected: [] },
    { text: '[{"name":"A","value":"1"}]', expected: [e('A', '1')] },
    // Go writes an empty value back as no value at all, so Linkerd's pods carry none.
    { text: ' [ {"name": "A", "value": "1"}, {"name": "B", "value": ""} ] ', expected: [e('A', '1'), { name: 'B' }] },
    // Linkerd treats an empty annotation and a JSON null as no entries.
    { text: '', expected: [] },
    { text: 'null', expected: [] },
    // A null value decodes as no value; unknown keys are dropped and keys match fields ignoring case, as in Go.
    { text: '[{"name":"A","value":null}]', expected: [{ name: 'A' }] },
    { text: '[{"name":"A","value":"1","extra":{"x":1}}]', expected: [e('A', '1')] },
    { text: '[{"NAME":"A","Value":"1"}]', expected: [e('A', '1')] },
    {
      text: '[{"name":"R","valueFrom":{"resourceFieldRef":{"resource":"limits.cpu","divisor":1}}}]',
      expected: [{ name: 'R', valueFrom: { resourceFieldRef: { resource: 'limits.cpu', divisor: 1 } } }],
    },
    {
      text: '[{"name":"S","valueFrom":{"secretKeyRef":{"name":"s","key":"k","optional":true}}}]',
      expected: [{ name: 'S', valueFrom: { secretKeyRef: { name: 's', key: 'k', optional: true } } }],
    },
    {
      text: '[{"name":"F","valueFrom":{"fileKeyRef":{"volumeName":"v","path":"p.env","key":"K"}}}]',
      expected: [{ name: 'F', valueFrom: { fileKeyRef: { volumeName: 'v', path: 'p.env', key: 'K' } } }],
    },
    {
      text: '[{"name":"POD","valueFrom":{"fieldRef":{"fieldPath":"metadata.name"}}}]',
      expected: [{ name: 'POD', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } }],
    },
  ];

  it.each(parseOk)('parseAdditionalEnv $text', ({ text, expected }) => {
    expect(parseAdditionalEnv(text)).toEqual({ value: expected });
  });

  it.each(['not json', '[{"name":"A"', '{"name":"A","value":"1"}', '"A=1"', '42'])(
    'parseAdditionalEnv rejects %j with a message',
    (text) => {
      expect(parseAdditionalEnv(text)).toEqual({ reason: expect.any(String) });
    },
  );

  // Values the API server cannot decode as an EnvVar, or would refuse: the whole annotation is ignored.
  const undecodable: Array<[string, string, RegExp]> = [
    ['a number value', '[{"name":"OK","value":"1"},{"name":"A","value":1}]', /entry\[1\]\.value must be a string, got 1/],
    ['a boolean value', '[{"name":"A","value":true}]', /entry\[0\]\.value must be a string, got true/],
    ['an object value', '[{"name":"A","value":{"x":"y"}}]', /entry\[0\]\.value must be a string, got an object/],
    ['a list value', '[{"name":"A","value":["x"]}]', /entry\[0\]\.value must be a string, got a list/],
    ['a number name', '[{"name":1,"value":"x"}]', /entry\[0\]\.name must be a string, got 1/],
    ['a null name', '[{"name":null,"value":"x"}]', /entry\[0\]\.name must be a non-empty string/],
    ['a null entry', '[null]', /entry\[0\] must be an env var, got null/],
    ['a string entry', '["A=1"]', /entry\[0\] must be an object/],
    ['a string valueFrom', '[{"name":"A","valueFrom":"x"}]', /entry\[0\]\.valueFrom must be an object/],
    ['an empty valueFrom', '[{"name":"A","valueFrom":{}}]', /valueFrom must name exactly one of/],
    [
      'two sources',
      '[{"name":"A","valueFrom":{"fieldRef":{"fieldPath":"metadata.name"},"secretKeyRef":{"name":"s","key":"k"}}}]',
      /valueFrom must name exactly one of/,
    ],
    ['value and valueFrom', '[{"name":"A","value":"x","valueFrom":{"fieldRef":{"fieldPath":"metadata.name"}}}]', /both value and valueFrom/],
    ['a number fieldPath', '[{"name":"A","valueFrom":{"fieldRef":{"fieldPath":1}}}]', /fieldRef\.fieldPath must be a string, got 1/],
    ['no fieldPath', '[{"name":"A","valueFrom":{"fieldRef":{}}}]', /fieldRef\.fieldPath must be a non-empty string/],
    ['a string optional', '[{"name":"A","valueFrom":{"configMapKeyRef":{"name":"c","key":"k","optional":"yes"}}}]', /optional must be a boolean/],
    ['no key', '[{"name":"A","valueFrom":{"secretKeyRef":{"name":"s"}}}]', /secretKeyRef\.key must be a non-empty string/],
    ['a bad divisor', '[{"name":"A","valueFrom":{"resourceFieldRef":{"resource":"limits.cpu","divisor":"lots"}}}]', /divisor must be a quantity/],
    ['an incomplete fileKeyRef', '[{"name":"A","valueFrom":{"fileKeyRef":{"volumeName":"v","key":"K"}}}]', /fileKeyRef\.path must be a non-empty string/],
  ];

  it.each(undecodable)('parseAdditionalEnv refuses %s, saying which entry and why', (_what, text, reason) => {
    expect(parseAdditionalEnv(text)).toEqual({ reason: expect.stringMatching(reason) });
  });

  it.each(undecodable)('applyOverrides ignores the whole annotation with %s and warns', (_what, text, reason) => {
    const values = withValues((v) => (v.proxy.additionalEnv = [e('HELM', 'h')]));
    const out = run({ [KEY]: text }, { values });
    expect(out.values.proxy.additionalEnv).toEqual([e('HELM', 'h')]);
    expect(out.warnings).toHaveLength(1);
    expect(out.warnings[0]).toContain(KEY);
    expect(out.warnings[0]).toMatch(reason);
  });

  const helm = [e('HELM', 'h'), e('SHARED', 'helm')];
  const nsJson = JSON.stringify([e('SHARED', 'ns'), e('NS', 'n')]);
  const podJson = JSON.stringify([e('NS', 'pod'), e('POD', 'p')]);

  const layerRows: Array<{ name: string; ns?: string; pod?: string; expected: EnvVar[]; warnings: number }> = [
    { name: 'values only', expected: helm, warnings: 0 },
    { name: 'values < namespace', ns: nsJson, expected: [e('HELM', 'h'), e('SHARED', 'ns'), e('NS', 'n')], warnings: 0 },
    { name: 'values < workload', pod: podJson, expected: [...helm, e('NS', 'pod'), e('POD', 'p')], warnings: 0 },
    {
      name: 'values < namespace < workload',
      ns: nsJson,
      pod: podJson,
      expected: [e('HELM', 'h'), e('SHARED', 'ns'), e('NS', 'pod'), e('POD', 'p')],
      warnings: 0,
    },
    {
      name: 'invalid namespace layer skipped',
      ns: '[{"name":',
      pod: podJson,
      expected: [...helm, e('NS', 'pod'), e('POD', 'p')],
      warnings: 1,
    },
    {
      name: 'invalid workload layer skipped',
      ns: nsJson,
      pod: 'FOO=bar',
      expected: [e('HELM', 'h'), e('SHARED', 'ns'), e('NS', 'n')],
      warnings: 1,
    },
    { name: 'both layers invalid', ns: '{', pod: '}', expected: helm, warnings: 2 },
  ];

  it.each(layerRows)('applyOverrides: $name', ({ ns, pod, expected, warnings }) => {
    const values = withValues((v) => (v.proxy.additionalEnv = structuredClone(helm)));
    const out = run(pod === undefined ? {} : { [KEY]: pod }, {
      values,
      ...(ns !== undefined && { namespaceAdditionalEnv: ns }),
    });
    expect(out.values.proxy.additionalEnv).toEqual(expected);
    expect(out.warnings).toHaveLength(warnings);
    for (const w of out.warnings) expect(w).toContain(KEY);
  });
});

// ---------------------------------------------------------------------------------------------------------------
// Namespace inheritance (2.6, traps 6 and 7)

describe('inheritedNamespaceAnnotations', () => {
  // The 40 proxy annotations, typed out from spec 2.6 (not imported from the implementation).
  const PROXY_40 = [
    'admin-port',
    'control-port',
    'enable-debug-sidecar',
    'enable-external-profiles',
    'image-pull-policy',
    'inbound-port',
    'outbound-port',
    'pod-inbound-ports',
    'proxy-cpu-limit',
    'proxy-cpu-request',
    'proxy-image',
    'proxy-admin-shutdown',
    'proxy-log-format',
    'proxy-log-level',
    'proxy-log-http-headers',
    'proxy-memory-limit',
    'proxy-memory-request',
    'proxy-ephemeral-storage-limit',
    'proxy-ephemeral-storage-request',
    'proxy-uid',
    'proxy-gid',
    'proxy-version',
    'proxy-require-identity-inbound-ports',
    'skip-inbound-ports',
    'opaque-ports',
    'skip-outbound-ports',
    'proxy-metrics-hostname-labels',
    'proxy-outbound-connect-timeout',
    'proxy-inbound-connect-timeout',
    'proxy-await',
    'default-inbound-policy',
    'skip-subnets',
    'access-log',
    'shutdown-grace-period',
    'proxy-outbound-discovery-cache-unused-timeout',
    'proxy-inbound-discovery-cache-unused-timeout',
    'proxy-disable-outbound-protocol-detect-timeout',
    'proxy-disable-inbound-protocol-detect-timeout',
    'proxy-enable-native-sidecar',
    'proxy-additional-env',
  ].map((k) => `${C}${k}`);
  const ALPHA_2 = [`${ALPHA}proxy-wait-before-exit-seconds`, `${ALPHA}proxy-enable-native-sidecar`];
  const INHERITED = [...PROXY_40, ...ALPHA_2, 'linkerd.io/inject'];
  const NOT_INHERITED = [
    `${C}enable-gateway`,
    `${C}proxy-cpu-ratio-limit`,
    `${C}debug-image`,
    `${C}debug-image-version`,
    `${C}debug-image-pull-policy`,
    `${C}close-wait-timeout`,
    `${BETA}proxy-enable-native-sidecar`,
    `${C}invalid-key`,
    `${C}admission-webhooks`,
    'linkerd.io/created-by',
    'example.com/team',
  ];

  it('the spec lists 40 proxy annotations', () => {
    expect(new Set(PROXY_40).size).toBe(40);
  });

  it.each(INHERITED)('%s is inherited when the workload lacks it', (key) => {
    expect(inheritedNamespaceAnnotations({ other: 'x' }, { [key]: 'ns-value' })).toEqual({ [key]: 'ns-value' });
  });

  it.each(INHERITED)('%s is not inherited when the workload has it, even empty', (key) => {
    expect(inheritedNamespaceAnnotations({ [key]: '' }, { [key]: 'ns-value' })).toEqual({});
    expect(inheritedNamespaceAnnotations({ [key]: 'pod-value' }, { [key]: 'ns-value' })).toEqual({});
  });

  it.each(NOT_INHERITED)('%s is never inherited', (key) => {
    expect(inheritedNamespaceAnnotations({}, { [key]: 'ns-value' })).toEqual({});
  });

  it('copies exactly the 43 known keys from a namespace that has everything', () => {
    const ns: Record<string, string> = {};
    for (const key of [...INHERITED, ...NOT_INHERITED]) ns[key] = `v:${key}`;
    const out = inheritedNamespaceAnnotations({}, ns);
    expect(Object.keys(out).sort()).toEqual([...INHERITED].sort());
    for (const [key, value] of Object.entries(out)) expect(value).toBe(`v:${key}`);
  });

  it('an empty namespace value is inherited as empty (presence by key)', () => {
    expect(inheritedNamespaceAnnotations({}, { [`${C}opaque-ports`]: '' })).toEqual({ [`${C}opaque-ports`]: '' });
  });

  it('golden case 9: ns skip-outbound-ports and alpha wait-before-exit inherited, invalid key not', () => {
    const workload = { 'linkerd.io/inject': 'enabled' };
    const ns = {
      [`${C}skip-outbound-ports`]: '34567',
      [`${ALPHA}proxy-wait-before-exit-seconds`]: '300',
      [`${C}invalid-key`]: 'invalid-value',
    };
    expect(inheritedNamespaceAnnotations(workload, ns)).toEqual({
      [`${C}skip-outbound-ports`]: '34567',
      [`${ALPHA}proxy-wait-before-exit-seconds`]: '300',
    });
  });

  it('mixes: workload keys block, absent keys inherit, unknown keys dropped', () => {
    const workload = { [`${C}proxy-cpu-request`]: '', [`${C}proxy-log-level`]: 'info' };
    const ns = {
      'linkerd.io/inject': 'enabled',
      [`${C}proxy-cpu-request`]: '2',
      [`${C}proxy-log-level`]: 'debug',
      [`${C}proxy-memory-limit`]: '1Gi',
      [`${C}enable-gateway`]: 'true',
    };
    expect(inheritedNamespaceAnnotations(workload, ns)).toEqual({
      'linkerd.io/inject': 'enabled',
      [`${C}proxy-memory-limit`]: '1Gi',
    });
  });

  it('does not mutate its inputs', () => {
    const workload = { a: '1' };
    const ns = { 'linkerd.io/inject': 'enabled' };
    inheritedNamespaceAnnotations(workload, ns);
    expect(workload).toEqual({ a: '1' });
    expect(ns).toEqual({ 'linkerd.io/inject': 'enabled' });
  });
});

// ---------------------------------------------------------------------------------------------------------------
// Immutability of the input values

describe('applyOverrides: input values are not mutated', () => {
  it('a full override set leaves the input values untouched', () => {
    const values = withValues((v) => {
      v.proxy.additionalEnv = [{ name: 'A', value: '1' }];
      v.proxyInit.runAsRoot = true;
      v.proxy.tracing = { ...v.proxy.tracing!, enabled: true };
    });
    const snapshot = structuredClone(values);
    const out = applyOverrides({
      values,
      annotations: {
        'linkerd.io/inject': 'ingress',
        [`${C}proxy-image`]: 'x/proxy',
        [`${C}proxy-version`]: 'v1',
        [`${C}admin-port`]: '1234',
        [`${C}proxy-cpu-request`]: '2',
        [`${C}proxy-cpu-limit`]: '3',
        [`${C}proxy-memory-limit`]: '1Gi',
        [`${C}proxy-cpu-ratio-limit`]: '0.5',
        [`${C}opaque-ports`]: '1,2',
        [`${C}skip-inbound-ports`]: '5',
        [`${C}proxy-enable-native-sidecar`]: 'true',
        [`${C}proxy-additional-env`]: '[{"name":"A","value":"2"},{"name":"B","value":"3"}]',
        [`${C}close-wait-timeout`]: '10s',
        [`${C}debug-image`]: 'x/debug',
        'resource.opentelemetry.io/team': 'core',
      },
      labels: () => ({ 'app.kubernetes.io/name': 'web' }),
      namedPorts: new Map(),
      namespaceAdditionalEnv: '[{"name":"C","value":"4"}]',
    });
    expect(values).toEqual(snapshot);
    expect(out.values).not.toBe(values);
    expect(out.values.proxy).not.toBe(values.proxy);
    expect(out.values.proxy.additionalEnv).toEqual([
      { name: 'A', value: '2' },
      { name: 'C', value: '4' },
      { name: 'B', value: '3' },
    ]);
    expect(out.values.proxy.ports.admin).toBe(1234);
    expect(out.values.proxy.runtime.workers).toEqual({ minimum: 2, maximum: 3, maximumCPURatio: 0.5 });
    expect(out.values.proxyInit.closeWaitTimeoutSecs).toBe(10);
    expect(out.isIngress).toBe(true);
  });

  it('returned values can be edited without affecting a second run', () => {
    const values = defaultValues();
    const first = run({}, { values });
    first.values.proxy.ports.admin = 1;
    first.values.proxy.additionalEnv.push({ name: 'X', value: 'y' });
    const second = run({}, { values });
    expect(second.values.proxy.ports.admin).toBe(4191);
    expect(second.values.proxy.additionalEnv).toEqual([]);
  });
});

describe('a proxy request larger than its limit', () => {
  it.each([
    ['cpu', 'proxy-cpu-request', 'proxy-cpu-limit', '2', '1'],
    ['memory', 'proxy-memory-request', 'proxy-memory-limit', '1Gi', '512Mi'],
    ['ephemeral-storage', 'proxy-ephemeral-storage-request', 'proxy-ephemeral-storage-limit', '1001M', '1G'],
  ] as const)('%s: both annotations are ignored and the warning names the pair', (field, req, lim, request, limit) => {
    const out = run({ [C + req]: request, [C + lim]: limit });
    expect(out.values.proxy.resources[field]).toEqual(defaultValues().proxy.resources[field]);
    expect(out.warnings).toEqual([
      `ignored annotations ${C}${req}="${request}" and ${C}${lim}="${limit}": ` +
        `the request "${request}" is larger than the limit "${limit}", which the API server refuses`,
    ]);
  });

  it('a request annotation above the configured limit is ignored alone, and the worker threads stay as configured', () => {
    const values = withValues((v) => {
      v.proxy.resources.cpu = { request: '100m', limit: '1' };
      v.proxy.runtime.workers.minimum = 1;
    });
    const out = run({ [C + 'proxy-cpu-request']: '1500m' }, { values });
    expect(out.values.proxy.resources.cpu).toEqual({ request: '100m', limit: '1' });
    expect(out.values.proxy.runtime.workers.minimum).toBe(1);
    expect(out.warnings).toEqual([
      `ignored annotation ${C}proxy-cpu-request="1500m": the request "1500m" is larger than the limit "1", which the API server refuses`,
    ]);
  });

  it('a request equal to its limit, or in other units, is kept', () => {
    const out = run({ [C + 'proxy-memory-request']: '1Gi', [C + 'proxy-memory-limit']: '1024Mi', [C + 'proxy-cpu-request']: '1000m', [C + 'proxy-cpu-limit']: '1' });
    expect(out.warnings).toEqual([]);
    expect(out.values.proxy.resources.memory).toEqual({ request: '1Gi', limit: '1024Mi' });
    expect(out.values.proxy.resources.cpu).toEqual({ request: '1000m', limit: '1' });
  });
});

describe('the configuration the overrides start from', () => {
  /** A valid value for every annotation the overrides read: a new annotation without one here fails the first test. */
  const VALID: Record<string, string> = {
    [ANNOTATIONS.adminPort]: '5191',
    [ANNOTATIONS.controlPort]: '5190',
    [ANNOTATIONS.enableDebugSidecar]: 'true',
    [ANNOTATIONS.enableExternalProfiles]: 'true',
    [ANNOTATIONS.imagePullPolicy]: 'Always',
    [ANNOTATIONS.inboundPort]: '5143',
    [ANNOTATIONS.outboundPort]: '5140',
    [ANNOTATIONS.podInboundPorts]: '8080',
    [ANNOTATIONS.proxyCpuLimit]: '2',
    [ANNOTATIONS.proxyCpuRequest]: '500m',
    [ANNOTATIONS.proxyImage]: 'registry.example/proxy',
    [ANNOTATIONS.proxyAdminShutdown]: 'enabled',
    [ANNOTATIONS.proxyLogFormat]: 'json',
    [ANNOTATIONS.proxyLogLevel]: 'debug',
    [ANNOTATIONS.proxyLogHttpHeaders]: 'insecure',
    [ANNOTATIONS.proxyMemoryLimit]: '512Mi',
    [ANNOTATIONS.proxyMemoryRequest]: '64Mi',
    [ANNOTATIONS.proxyEphemeralStorageLimit]: '2Gi',
    [ANNOTATIONS.proxyEphemeralStorageRequest]: '1Gi',
    [ANNOTATIONS.proxyUid]: '3000',
    [ANNOTATIONS.proxyGid]: '3000',
    [ANNOTATIONS.proxyVersion]: 'v9.9.9',
    [ANNOTATIONS.proxyRequireIdentityInboundPorts]: '8443',
    [ANNOTATIONS.skipInboundPorts]: '9000-9010',
    [ANNOTATIONS.opaquePorts]: '5432',
    [ANNOTATIONS.skipOutboundPorts]: '3306',
    [ANNOTATIONS.proxyMetricsHostnameLabels]: 'true',
    [ANNOTATIONS.proxyOutboundConnectTimeout]: '2s',
    [ANNOTATIONS.proxyInboundConnectTimeout]: '3s',
    [ANNOTATIONS.proxyAwait]: 'disabled',
    [ANNOTATIONS.defaultInboundPolicy]: 'deny',
    [ANNOTATIONS.skipSubnets]: '10.9.0.0/16',
    [ANNOTATIONS.accessLog]: 'json',
    [ANNOTATIONS.shutdownGracePeriod]: '30s',
    [ANNOTATIONS.proxyOutboundDiscoveryCacheUnusedTimeout]: '60s',
    [ANNOTATIONS.proxyInboundDiscoveryCacheUnusedTimeout]: '90s',
    [ANNOTATIONS.proxyDisableOutboundProtocolDetectTimeout]: 'true',
    [ANNOTATIONS.proxyDisableInboundProtocolDetectTimeout]: 'true',
    [ANNOTATIONS.proxyEnableNativeSidecar]: 'true',
    [ANNOTATIONS.proxyAdditionalEnv]: '[{"name":"EXTRA","value":"1"}]',
    [ANNOTATIONS.proxyCpuRatioLimit]: '0.5',
    [ANNOTATIONS.enableGateway]: 'true',
    [ANNOTATIONS.debugImage]: 'registry.example/debug',
    [ANNOTATIONS.debugImageVersion]: 'v1',
    [ANNOTATIONS.debugImagePullPolicy]: 'Never',
    [ANNOTATIONS.closeWaitTimeout]: '10s',
    [ANNOTATIONS.betaProxyEnableNativeSidecar]: 'true',
    [ANNOTATIONS.alphaProxyWaitBeforeExitSeconds]: '5',
    [ANNOTATIONS.alphaProxyEnableNativeSidecar]: 'true',
    'resource.opentelemetry.io/team': 'shop',
  };

  /** Values in which every override has something to write: tracing on, and linkerd-init as root for close-wait. */
  const configured = (): LinkerdValues =>
    withValues((v) => {
      v.proxyInit.runAsRoot = true;
      const tracing = v.proxy.tracing as NonNullable<LinkerdValues['proxy']['tracing']>;
      v.proxy.tracing = { ...tracing, enabled: true, collector: { endpoint: 'collector.tracing:4317', meshIdentity: { serviceAccountName: 'collector', namespace: 'tracing' } } };
      v.proxy.additionalEnv = [{ name: 'BASE', value: 'x' }];
    });

  function deepFreeze<T>(value: T): T {
    if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
      Object.freeze(value);
      for (const child of Object.values(value)) deepFreeze(child);
    }
    return value;
  }

  it('has a value in this test for every annotation the overrides read', () => {
    expect(Object.values(ANNOTATIONS).filter((key) => !(key in VALID))).toEqual([]);
  });

  it('is never written: every override applied to frozen values gives what it gives on values of its own', () => {
    const input = (values: LinkerdValues): OverrideInput => ({
      values,
      annotations: VALID,
      labels: () => ({ 'app.kubernetes.io/name': 'web' }),
      namedPorts: new Map(),
      namespaceAdditionalEnv: '[{"name":"NS","value":"2"}]',
    });
    const frozen = deepFreeze(configured());
    const out = applyOverrides(input(frozen));
    expect(out).toEqual(applyOverrides(input(configured())));
    expect(frozen).toEqual(configured());
    // The overrides did take effect, so that a write into the frozen values would have thrown.
    expect(out.warnings).toEqual([]);
    expect(out.values.proxy.image.name).toBe('registry.example/proxy');
    expect(out.values.proxy.tracing?.labels['team']).toBe('shop');
    expect(out.values.proxyInit.closeWaitTimeoutSecs).toBe(10);
  });

  it('is never written by rendering either: a pod injected with a frozen configuration is the same pod', () => {
    const object = { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'web', annotations: { ...VALID, 'linkerd.io/inject': 'enabled' } }, spec: { containers: [{ name: 'app', image: 'app:1', ports: [{ containerPort: 8080, name: 'http' }] }] } };
    const request = (values: LinkerdValues) => ({ object: structuredClone(object), namespace: 'shop', config: { values: withTrustAnchors(values, TRUST_ANCHORS), controlPlaneNamespace: 'linkerd' } });
    const frozenConfig = request(configured());
    deepFreeze(frozenConfig.config);
    const result = inject(frozenConfig);
    expect(result.outcome).toBe('injected');
    expect(result).toEqual(inject(request(configured())));
  });
});
