/** The engine's `uninject` (pure: remove operations) and the `uninject` command around it. */
import { describe, expect, it } from 'vitest';
import { inject, uninject } from '../../src/engine/index.js';
import { runUninject } from '../../src/cli/uninject.js';
import { applyToValue } from '../../src/manifests/yaml-patch.js';
import { applied, testConfig } from '../support/engine.js';

type Obj = Record<string, any>;

const undo = (object: Obj, volumes?: string[]): Obj =>
  applyToValue(structuredClone(object), uninject(object, volumes ? { volumes } : {}).patch);

function deployment(template: Obj): Obj {
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: 'web', namespace: 'shop', labels: { app: 'web', 'linkerd.io/control-plane-ns': 'linkerd' } },
    spec: { selector: { matchLabels: { app: 'web' } }, template },
  };
}

describe('uninject (engine)', () => {
  it('removes the containers, init containers and volumes of every placement', () => {
    const object = deployment({
      metadata: { labels: { app: 'web' } },
      spec: {
        initContainers: [{ name: 'linkerd-network-validator' }, { name: 'linkerd-proxy' }, { name: 'migrate' }],
        containers: [{ name: 'app' }, { name: 'linkerd-debug' }],
        volumes: [{ name: 'data' }, { name: 'linkerd-identity-end-entity' }, { name: 'linkerd-identity-token' }, { name: 'linkerd-podinfo' }],
      },
    });
    const { patch, removed } = uninject(object);
    expect(removed).toEqual({
      annotations: [],
      labels: ['linkerd.io/control-plane-ns'],
      initContainers: ['linkerd-network-validator', 'linkerd-proxy'],
      containers: ['linkerd-debug'],
      volumes: ['linkerd-identity-end-entity', 'linkerd-identity-token', 'linkerd-podinfo'],
    });
    // Highest index first, so each operation applies to what the previous one left.
    expect(patch.filter((o) => o.path.includes('initContainers')).map((o) => o.path)).toEqual([
      '/spec/template/spec/initContainers/1',
      '/spec/template/spec/initContainers/0',
    ]);
    const after = undo(object);
    expect(after.spec.template.spec).toEqual({ initContainers: [{ name: 'migrate' }], containers: [{ name: 'app' }], volumes: [{ name: 'data' }] });
    expect(after.metadata.labels).toEqual({ app: 'web' });
  });

  it('keeps linkerd.io/inject: disabled and config.linkerd.io/* annotations; removes other linkerd.io keys', () => {
    const pod = {
      kind: 'Pod',
      metadata: {
        name: 'p',
        annotations: {
          'linkerd.io/inject': 'disabled',
          'linkerd.io/created-by': 'linkerd/cli x',
          'config.linkerd.io/proxy-cpu-request': '100m',
          'config.alpha.linkerd.io/proxy-wait-before-exit-seconds': '3',
          'example.com/x': 'y',
        },
        labels: { 'linkerd.io/workload-ns': 'shop', 'linkerd.io.example/keep': 'no: prefix match', app: 'p' },
      },
      spec: { containers: [{ name: 'app' }] },
    };
    const after = undo(pod);
    expect(after.metadata.annotations).toEqual({
      'linkerd.io/inject': 'disabled',
      'config.linkerd.io/proxy-cpu-request': '100m',
      'config.alpha.linkerd.io/proxy-wait-before-exit-seconds': '3',
      'example.com/x': 'y',
    });
    // Linkerd's test is a prefix test on "linkerd.io", so linkerd.io.example/... goes too.
    expect(after.metadata.labels).toEqual({ app: 'p' });
  });

  it('removes linkerd.io/inject: enabled and ingress', () => {
    for (const value of ['enabled', 'ingress']) {
      const after = undo({ kind: 'Namespace', metadata: { name: 'n', annotations: { 'linkerd.io/inject': value, a: 'b' } } });
      expect(after.metadata.annotations).toEqual({ a: 'b' });
    }
  });

  it('drops annotation and label maps, init-container and volume lists, and template metadata left empty', () => {
    const object = {
      apiVersion: 'batch/v1',
      kind: 'CronJob',
      metadata: { name: 'c' },
      spec: {
        jobTemplate: {
          spec: {
            template: {
              spec: {
                containers: [{ name: 'linkerd-proxy' }, { name: 'app' }],
                initContainers: [{ name: 'linkerd-init' }],
                volumes: [{ name: 'linkerd-proxy-init-xtables-lock' }],
              },
              metadata: { annotations: { 'linkerd.io/created-by': 'x' }, labels: { 'linkerd.io/proxy-cronjob': 'c' } },
            },
          },
        },
      },
    };
    const { patch } = uninject(object);
    expect(patch.map((o) => o.path)).toEqual([
      '/spec/jobTemplate/spec/template/metadata',
      '/spec/jobTemplate/spec/template/spec/initContainers',
      '/spec/jobTemplate/spec/template/spec/containers/0',
      '/spec/jobTemplate/spec/template/spec/volumes',
    ]);
    expect(undo(object).spec.jobTemplate.spec.template).toEqual({ spec: { containers: [{ name: 'app' }] } });
  });

  it('keeps the containers list even when nothing is left in it, and empty maps it did not empty', () => {
    const pod = { kind: 'Pod', metadata: { name: 'p', annotations: {} }, spec: { containers: [{ name: 'linkerd-proxy' }] } };
    expect(undo(pod)).toEqual({ kind: 'Pod', metadata: { name: 'p', annotations: {} }, spec: { containers: [] } });
  });

  it('leaves the metadata of control-plane components alone, but still removes the proxy', () => {
    const object = deployment({
      metadata: { labels: { 'linkerd.io/control-plane-component': 'destination', 'linkerd.io/control-plane-ns': 'linkerd' } },
      spec: { containers: [{ name: 'linkerd-proxy' }, { name: 'destination' }] },
    });
    const after = undo(object);
    expect(after.spec.template.metadata.labels).toEqual({
      'linkerd.io/control-plane-component': 'destination',
      'linkerd.io/control-plane-ns': 'linkerd',
    });
    expect(after.spec.template.spec.containers).toEqual([{ name: 'destination' }]);
  });

  it('removes a renamed xtables volume when told its name', () => {
    const pod = { kind: 'Pod', metadata: { name: 'p' }, spec: { containers: [], volumes: [{ name: 'xt' }, { name: 'd' }] } };
    expect(undo(pod, ['xt']).spec.volumes).toEqual([{ name: 'd' }]);
    expect(undo(pod).spec.volumes).toEqual([{ name: 'xt' }, { name: 'd' }]);
  });

  it('gives no operations for other kinds, non-objects and broken workloads', () => {
    expect(uninject({ kind: 'ConfigMap', metadata: { labels: { 'linkerd.io/x': 'y' } } }).patch).toEqual([]);
    expect(uninject('text').patch).toEqual([]);
    expect(uninject(null).patch).toEqual([]);
    expect(uninject({ kind: 'Deployment', metadata: { name: 'd' }, spec: {} }).patch).toEqual([]);
    expect(uninject({ kind: 'Pod', metadata: { name: 'p' }, spec: { containers: ['not an object', { name: 'linkerd-proxy' }] } }).patch).toEqual([
      { op: 'remove', path: '/spec/containers/1' },
    ]);
  });

  it('undoes the engine: uninject(applied(x, inject(x).patch)) is x, in every placement', () => {
    const base = {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'web', namespace: 'shop' },
      spec: {
        template: {
          metadata: { labels: { app: 'web' } },
          spec: { initContainers: [{ name: 'm', image: 'm' }], containers: [{ name: 'app', image: 'a' }] },
        },
      },
    };
    for (const annotations of [{}, { 'config.linkerd.io/proxy-await': 'disabled' }, { 'config.linkerd.io/proxy-enable-native-sidecar': 'true' }, { 'config.linkerd.io/enable-debug-sidecar': 'true' }]) {
      const x = structuredClone(base) as Obj;
      if (Object.keys(annotations).length > 0) x.spec.template.metadata.annotations = annotations;
      for (const cni of [false, true]) {
        const result = inject({ object: x, origin: 'cli', config: testConfig((v) => (v.cniEnabled = cni)) });
        expect(result.outcome).toBe('injected');
        expect(undo(applied(x, result.patch))).toEqual(x);
      }
    }
  });
});

describe('proxy-injector uninject', () => {
  it('reads stdin, keeps comments, and reports what it removed with --verbose', async () => {
    const stdin = [
      '# keep me',
      'kind: Pod',
      'metadata:',
      '  name: p',
      '  annotations:',
      '    linkerd.io/inject: enabled # the webhook injects it',
      '    keep: "yes"',
      'spec:',
      '  containers:',
      '  - name: linkerd-proxy',
      '  - name: app # the app',
      '',
    ].join('\n');
    const result = await runUninject(['--verbose', '-'], { stdin });
    expect(result).toEqual({
      code: 0,
      stdout: '# keep me\nkind: Pod\nmetadata:\n  name: p\n  annotations:\n    keep: "yes"\nspec:\n  containers:\n  - name: app # the app\n',
      stderr: 'pod "p" uninjected\n  √ removed containers: linkerd-proxy\n  √ removed annotations: linkerd.io/inject\n',
    });
  });

  it('prints JSON with -o json', async () => {
    const result = await runUninject(['-o', 'json', '-'], { stdin: 'kind: Namespace\nmetadata:\n  name: ns1\n' });
    expect(JSON.parse(result.stdout)).toEqual({ kind: 'Namespace', metadata: { name: 'ns1' } });
  });

  it('exits 2 on usage errors and 1 on bad input', async () => {
    expect((await runUninject([])).code).toBe(2);
    expect(await runUninject(['--manual', 'x.yaml'])).toEqual({
      code: 2,
      stdout: '',
      stderr:
        'proxy-injector uninject: unknown flag --manual\nUsage: proxy-injector uninject [flags] FILE|DIR|URL|- ...\n' +
        "Run 'proxy-injector uninject --help' for all options.\n",
    });
    expect((await runUninject(['-o', 'xml', '-'])).code).toBe(2);
    expect(await runUninject(['missing.yaml'])).toMatchObject({ code: 1, stdout: '', stderr: 'proxy-injector uninject: missing.yaml: no such file or directory\n' });
    expect(await runUninject(['-'], { stdin: 'a: [' })).toMatchObject({ code: 1, stdout: '' });
    expect((await runUninject(['--help'])).stdout).toMatch(/^Usage: proxy-injector uninject/);
  });
});
