/**
 * Table-driven tests for port lists, written from the spec (linkerd-injector-spec.md 2.7, 2.9, 2.10, 6.2, trap 4/5).
 */
import { describe, expect, it } from 'vitest';
import type { Container, PodSpec, ServicePort } from '../../src/engine/k8s.js';
import {
  defaultOpaquePortsForPod,
  defaultOpaquePortsForService,
  inboundPorts,
  namedPorts,
  parsePortList,
} from '../../src/engine/ports.js';
import { defaultValues } from '../../src/engine/values.js';

const DEFAULT_OPAQUE = '25,587,3306,4444,5432,6379,9300,11211';

const c = (name: string, ports: number[], extra: Partial<Container> = {}): Container => ({
  name,
  image: `${name}:1`,
  ports: ports.map((containerPort) => ({ containerPort })),
  ...extra,
});

// ---------------------------------------------------------------------------------------------------------------
// 2.10 inbound ports

describe('inboundPorts', () => {
  const cases: Array<{ name: string; spec: PodSpec; expected: string }> = [
    { name: 'empty spec', spec: {}, expected: '' },
    { name: 'containers without ports', spec: { containers: [{ name: 'app' }] }, expected: '' },
    { name: 'one port', spec: { containers: [c('app', [8080])] }, expected: '8080' },
    {
      name: 'init + app ports sorted as strings (the native-sidecar golden)',
      spec: {
        initContainers: [
          { name: 'memcached', restartPolicy: 'Always', ports: [{ containerPort: 11211, name: 'memcached' }] },
        ],
        containers: [c('app', [80, 9090])],
      },
      expected: '11211,80,9090',
    },
    {
      name: 'sorted as strings, not numbers',
      spec: { containers: [c('a', [5000]), c('b', [443, 10000])] },
      expected: '10000,443,5000',
    },
    {
      name: 'init container ports count',
      spec: { initContainers: [c('init', [7000])], containers: [c('app', [80])] },
      expected: '7000,80',
    },
    {
      name: 'duplicates across containers collapse',
      spec: { initContainers: [c('i', [8080])], containers: [c('a', [8080]), c('b', [8080, 8081])] },
      expected: '8080,8081',
    },
    {
      name: 'UDP ports are container ports too',
      spec: { containers: [{ name: 'dns', ports: [{ containerPort: 53, protocol: 'UDP' }, { containerPort: 8053 }] }] },
      expected: '53,8053',
    },
    {
      name: 'numeric httpGet readiness and liveness ports',
      spec: {
        containers: [
          c('app', [80], {
            readinessProbe: { httpGet: { path: '/ready', port: 8081 } },
            livenessProbe: { httpGet: { path: '/live', port: 8082 } },
          }),
        ],
      },
      expected: '80,8081,8082',
    },
    {
      name: 'probe ports alone (no containerPorts)',
      spec: { containers: [{ name: 'app', livenessProbe: { httpGet: { port: 9000 } } }] },
      expected: '9000',
    },
    {
      name: 'probe port equal to a container port is not repeated',
      spec: { containers: [c('app', [8080], { readinessProbe: { httpGet: { port: 8080 } } })] },
      expected: '8080',
    },
    {
      name: 'named probe ports are ignored',
      spec: {
        containers: [
          {
            name: 'app',
            ports: [{ containerPort: 8080, name: 'http' }],
            readinessProbe: { httpGet: { port: 'http' } },
            livenessProbe: { httpGet: { port: 'admin' } },
          },
        ],
      },
      expected: '8080',
    },
    {
      name: 'tcpSocket, grpc and exec probes are ignored',
      spec: {
        containers: [
          c('app', [80], {
            readinessProbe: { tcpSocket: { port: 7001 } },
            livenessProbe: { grpc: { port: 7002 } },
          }),
          c('other', [], { livenessProbe: { exec: { command: ['true'] } } }),
        ],
      },
      expected: '80',
    },
    {
      name: 'startupProbe is ignored, even httpGet',
      spec: { containers: [c('app', [80], { startupProbe: { httpGet: { port: 7003 } } })] },
      expected: '80',
    },
  ];

  it.each(cases)('$name -> "$expected"', ({ spec, expected }) => {
    expect(inboundPorts(spec)).toBe(expected);
  });
});

// ---------------------------------------------------------------------------------------------------------------
// 2.7 named ports

describe('namedPorts', () => {
  const cases: Array<{ name: string; spec: PodSpec; expected: Record<string, number> }> = [
    { name: 'empty spec', spec: {}, expected: {} },
    {
      name: 'unnamed ports are skipped',
      spec: { containers: [{ name: 'app', ports: [{ containerPort: 80 }, { containerPort: 3306, name: 'mysql' }] }] },
      expected: { mysql: 3306 },
    },
    {
      name: 'init and app container ports',
      spec: {
        initContainers: [{ name: 'cache', ports: [{ containerPort: 11211, name: 'memcached' }] }],
        containers: [
          { name: 'db', ports: [{ containerPort: 3306, name: 'mysql' }] },
          { name: 'web', ports: [{ containerPort: 8080, name: 'http' }, { containerPort: 9090, name: 'metrics' }] },
        ],
      },
      expected: { memcached: 11211, mysql: 3306, http: 8080, metrics: 9090 },
    },
    {
      name: 'a later container wins a duplicate name (app after init)',
      spec: {
        initContainers: [{ name: 'i', ports: [{ containerPort: 1000, name: 'http' }] }],
        containers: [{ name: 'a', ports: [{ containerPort: 2000, name: 'http' }] }],
      },
      expected: { http: 2000 },
    },
    {
      name: 'a later app container wins a duplicate name',
      spec: {
        containers: [
          { name: 'a', ports: [{ containerPort: 2000, name: 'http' }] },
          { name: 'b', ports: [{ containerPort: 3000, name: 'http' }] },
        ],
      },
      expected: { http: 3000 },
    },
  ];

  it.each(cases)('$name', ({ spec, expected }) => {
    expect(Object.fromEntries(namedPorts(spec))).toEqual(expected);
  });
});

// ---------------------------------------------------------------------------------------------------------------
// 2.9 default opaque ports for a pod (trap 5)

describe('defaultOpaquePortsForPod', () => {
  it('the embedded default list is the chart default', () => {
    expect(defaultValues().proxy.opaquePorts).toBe(DEFAULT_OPAQUE);
  });

  const cases: Array<{ name: string; spec: PodSpec; configured?: string; expected: string }> = [
    { name: 'empty spec', spec: {}, expected: '' },
    { name: 'no port in the list', spec: { containers: [c('web', [80, 8080])] }, expected: '' },
    {
      name: 'filter-pod golden: init memcached, container mysql',
      spec: {
        initContainers: [{ name: 'memcached', ports: [{ containerPort: 11211, name: 'memcached' }] }],
        containers: [{ name: 'mysql', ports: [{ containerPort: 3306, name: 'mysql' }] }],
      },
      expected: '11211,3306',
    },
    {
      name: 'init containers first even when the app is listed first in the object',
      spec: { containers: [c('db', [3306])], initContainers: [c('cache', [11211])] },
      expected: '11211,3306',
    },
    { name: 'container order, not sorted', spec: { containers: [c('a', [6379, 25]), c('b', [3306])] }, expected: '6379,25,3306' },
    { name: 'duplicates kept', spec: { containers: [c('a', [3306]), c('b', [3306])] }, expected: '3306,3306' },
    { name: 'mixed ports keep only listed ones', spec: { containers: [c('a', [80, 5432, 8080, 9300])] }, expected: '5432,9300' },
    { name: 'custom list', spec: { containers: [c('a', [25, 8080, 3306])] }, configured: '8080,25', expected: '25,8080' },
    { name: 'a range in the list never matches', spec: { containers: [c('a', [3306])] }, configured: '3000-4000', expected: '' },
    {
      name: 'a range matching its own bound still does not match',
      spec: { containers: [c('a', [3000])] },
      configured: '3000-4000',
      expected: '',
    },
    { name: 'exact string match: a padded item does not match', spec: { containers: [c('a', [3306])] }, configured: ' 3306', expected: '' },
    { name: 'empty list', spec: { containers: [c('a', [3306])] }, configured: '', expected: '' },
  ];

  it.each(cases)('$name -> "$expected"', ({ spec, configured, expected }) => {
    expect(defaultOpaquePortsForPod(spec, configured ?? DEFAULT_OPAQUE)).toBe(expected);
  });
});

// ---------------------------------------------------------------------------------------------------------------
// 2.9 default opaque ports for a Service

describe('defaultOpaquePortsForService', () => {
  const cases: Array<{ name: string; ports: ServicePort[]; configured?: string; expected: string }> = [
    {
      name: 'filter-service golden',
      ports: [
        { port: 9090, targetPort: 3306 },
        { port: 5432, targetPort: 9091 },
        { port: 3306 },
        { port: 9093, targetPort: 'mysql' },
      ],
      expected: '9090,3306',
    },
    { name: 'no ports', ports: [], expected: '' },
    { name: 'service-without-opaque-ports (8080 -> 8080)', ports: [{ port: 8080, targetPort: 8080 }], expected: '' },
    {
      name: 'service-without-opaque-ports with 8080 configured as opaque',
      ports: [{ port: 8080, targetPort: 8080 }],
      configured: '3306,8080',
      expected: '8080',
    },
    { name: 'no targetPort: the port itself is checked', ports: [{ port: 5432 }], expected: '5432' },
    { name: 'targetPort 0 counts as unset', ports: [{ port: 3306, targetPort: 0 }], expected: '3306' },
    { name: 'targetPort decides when set (port listed, target not)', ports: [{ port: 3306, targetPort: 8080 }], expected: '' },
    { name: 'listed targetPort contributes the service port', ports: [{ port: 80, targetPort: 6379 }], expected: '80' },
    { name: 'named targetPort is ignored even when the port is listed', ports: [{ port: 3306, targetPort: 'db' }], expected: '' },
    {
      name: 'order follows the ports, duplicates kept',
      ports: [{ port: 6379 }, { port: 25 }, { port: 26, targetPort: 25 }],
      expected: '6379,25,26',
    },
  ];

  it.each(cases)('$name -> "$expected"', ({ ports, configured, expected }) => {
    expect(defaultOpaquePortsForService(ports, configured ?? DEFAULT_OPAQUE)).toBe(expected);
  });
});

// ---------------------------------------------------------------------------------------------------------------
// 2.9 opaque-ports annotation parsing

describe('parsePortList', () => {
  const names = new Map<string, number>([
    ['mysql', 3306],
    ['memcached', 11211],
    ['http', 8080],
  ]);

  const cases: Array<{ list: string; named?: boolean; ports: string[]; invalid: string[] }> = [
    { list: '', ports: [], invalid: [] },
    { list: '3306', ports: ['3306'], invalid: [] },
    { list: '25,587,3306', ports: ['25', '587', '3306'], invalid: [] },
    { list: 'mysql', named: true, ports: ['3306'], invalid: [] },
    { list: 'mysql,memcached,80', named: true, ports: ['3306', '11211', '80'], invalid: [] },
    { list: 'mysql', named: false, ports: [], invalid: ['mysql'] },
    { list: '4000-5000', ports: ['4000-5000'], invalid: [] },
    { list: '80,4000-5000,mysql', named: true, ports: ['80', '4000-5000', '3306'], invalid: [] },
    { list: ' 25 , 587 ,3306 ', ports: ['25', '587', '3306'], invalid: [] },
    { list: ' mysql ', named: true, ports: ['3306'], invalid: [] },
    { list: '25,', ports: ['25'], invalid: [] },
    { list: '25,,587', ports: ['25', '587'], invalid: [] },
    { list: ' , ', ports: [], invalid: [] },
    { list: 'abc', ports: [], invalid: ['abc'] },
    { list: '80,abc,443', ports: ['80', '443'], invalid: ['abc'] },
    { list: '5000-4000', ports: [], invalid: ['5000-4000'] },
    { list: '65536', ports: [], invalid: ['65536'] },
    { list: '65535', ports: ['65535'], invalid: [] },
    { list: '1-65536', ports: [], invalid: ['1-65536'] },
    { list: '-1', ports: [], invalid: ['-1'] },
    { list: '1-2-3', ports: [], invalid: ['1-2-3'] },
    { list: '80-', ports: [], invalid: ['80-'] },
    { list: '8.5', ports: [], invalid: ['8.5'] },
    { list: 'http,https', named: true, ports: ['8080'], invalid: ['https'] },
  ];

  it.each(cases)('"$list" (names: $named) -> $ports, invalid $invalid', ({ list, named, ports, invalid }) => {
    const result = named ? parsePortList(list, names) : parsePortList(list);
    expect(result).toEqual({ ports, invalid });
  });
});
