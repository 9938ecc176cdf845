/** `proxy-injector inject` in-process: flags, configuration, kinds, errors and the report. */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { INJECT_HELP, PROXY_FLAGS } from '../../src/cli/inject-flags.js';
import { EMBEDDED_DEFAULTS_NOTE, runInject } from '../../src/cli/inject.js';
import { YAML_OPTIONS } from '../../src/manifests/documents.js';
import { OTHER_TRUST_ANCHOR, TRUST_ANCHORS } from '../support/engine.js';
import { INVALID_BUNDLES, privateKeys } from '../support/trust-anchors.js';

type Obj = Record<string, any>;

const ANCHORS = ['--trust-anchors', 'test/fixtures/cli/trust-anchors.pem'];

const objects = (yaml: string): Obj[] => parseAllDocuments(yaml, YAML_OPTIONS).map((d) => d.toJS() as Obj);
const names = (list: unknown): string[] => (Array.isArray(list) ? list.map((c: Obj) => String(c.name)) : []);

const DEPLOYMENT = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: shop
spec:
  selector:
    matchLabels:
      app: web
  template:
    metadata:
      labels:
        app: web
    spec:
      containers:
        - name: web
          image: web:1
          ports:
            - containerPort: 8080
`;

async function injectText(stdin: string, ...args: string[]) {
  return runInject([...args, '-'], { stdin });
}

/** Injects DEPLOYMENT with --manual and the given flags, and returns the pod template. */
async function manualTemplate(...flags: string[]): Promise<Obj> {
  const result = await injectText(DEPLOYMENT, '--manual', ...ANCHORS, ...flags);
  expect(result.code, result.stderr).toBe(0);
  return objects(result.stdout)[0]?.spec.template;
}

const proxyOf = (t: Obj): Obj =>
  [...(t.spec.initContainers ?? []), ...t.spec.containers].find((c: Obj) => c.name === 'linkerd-proxy');
const envOf = (c: Obj): Record<string, string> => Object.fromEntries(c.env.map((e: Obj) => [e.name, e.value]));

describe('flags become annotations, and take effect', () => {
  it('--proxy-cpu-request: the annotation, resources on the proxy and linkerd-init, and worker threads', async () => {
    const t = await manualTemplate('--proxy-cpu-request', '1500m');
    expect(t.metadata.annotations['config.linkerd.io/proxy-cpu-request']).toBe('1500m');
    expect(proxyOf(t).resources).toEqual({ requests: { cpu: '1500m' } });
    expect(t.spec.initContainers[0].resources).toEqual({ requests: { cpu: '1500m' } });
    expect(envOf(proxyOf(t))['LINKERD2_PROXY_CORES_MIN']).toBe('2');
  });

  it('follows the webhook where Linkerd\'s two paths differ: a CPU limit of 160m is one whole core', async () => {
    const t = await manualTemplate('--proxy-cpu-limit', '160m');
    expect(envOf(proxyOf(t))['LINKERD2_PROXY_CORES_MAX']).toBe('1');
  });

  it('an --opaque-ports name no container declares is dropped with a warning, as the webhook drops it', async () => {
    const result = await injectText(DEPLOYMENT, '--manual', ...ANCHORS, '--opaque-ports', '3306,mysql');
    expect(result.code, result.stderr).toBe(0);
    const t = objects(result.stdout)[0]?.spec.template;
    expect(t.metadata.annotations['config.linkerd.io/opaque-ports']).toBe('3306,mysql');
    expect(envOf(proxyOf(t))['LINKERD2_PROXY_INBOUND_PORTS_DISABLE_PROTOCOL_DETECTION']).toBe('3306');
    expect(result.stderr).toContain('ignored annotation config.linkerd.io/opaque-ports="mysql": not a port, a range or a container port name');
  });

  it('--native-sidecar moves the proxy into the init containers', async () => {
    const t = await manualTemplate('--native-sidecar');
    expect(names(t.spec.initContainers)).toEqual(['linkerd-init', 'linkerd-proxy']);
    expect(names(t.spec.containers)).toEqual(['web']);
    expect(t.metadata.annotations['config.linkerd.io/proxy-enable-native-sidecar']).toBe('true');
  });

  it.each([['--await=false'], ['--no-await']])('%s puts the proxy last, without the hook', async (flag) => {
    const t = await manualTemplate(flag);
    expect(names(t.spec.containers)).toEqual(['web', 'linkerd-proxy']);
    expect(proxyOf(t).lifecycle).toBeUndefined();
    expect(t.metadata.annotations['config.linkerd.io/proxy-await']).toBe('disabled');
  });

  it('--await (the default) writes nothing: only values that differ from the configuration are recorded', async () => {
    const t = await manualTemplate('--await', '--admin-port', '4191', '--proxy-log-level', 'warn,linkerd=info,hickory=error', '--native-sidecar=false');
    expect(Object.keys(t.metadata.annotations).filter((k) => k.startsWith('config.'))).toEqual([]);
    expect(names(t.spec.containers)).toEqual(['linkerd-proxy', 'web']);
  });

  it('a flag compares with --values, not with the embedded defaults', async () => {
    const values = 'proxy:\n  nativeSidecar: true\n';
    const { writeFileSync, mkdtempSync } = await import('node:fs');
    const { join } = await import('node:path');
    const { tmpdir } = await import('node:os');
    const dir = mkdtempSync(join(tmpdir(), 'inject-values-'));
    writeFileSync(join(dir, 'values.yaml'), values);
    const same = await manualTemplate('--values', join(dir, 'values.yaml'), '--native-sidecar');
    expect(same.metadata.annotations['config.linkerd.io/proxy-enable-native-sidecar']).toBeUndefined();
    expect(names(same.spec.initContainers)).toEqual(['linkerd-init', 'linkerd-proxy']);
    const differs = await manualTemplate('--values', join(dir, 'values.yaml'), '--native-sidecar=false');
    expect(differs.metadata.annotations['config.linkerd.io/proxy-enable-native-sidecar']).toBe('false');
    expect(names(differs.spec.containers)).toEqual(['linkerd-proxy', 'web']);
  });

  it('--ingress: linkerd.io/inject: ingress and the ingress-mode env', async () => {
    const t = await manualTemplate('--ingress');
    expect(t.metadata.annotations['linkerd.io/inject']).toBe('ingress');
    expect(envOf(proxyOf(t))['LINKERD2_PROXY_INGRESS_MODE']).toBe('true');
  });

  it('every other flag maps to its annotation', async () => {
    const t = await manualTemplate(
      '-v', 'v9', '--proxy-image', 'registry.example/proxy', '--image-pull-policy', 'Always',
      '--inbound-port', '5143', '--outbound-port', '5140', '--control-port', '5190', '--admin-port', '5191',
      '--skip-inbound-ports', '1-10', '--skip-outbound-ports', '443', '--skip-subnets', '10.0.0.0/8',
      '--opaque-ports', '8080', '--require-identity-on-inbound-ports', '8080', '--proxy-uid', '3000', '--proxy-gid', '3000',
      '--proxy-log-level', 'info', '--proxy-log-format', 'json', '--proxy-cpu-limit', '2', '--proxy-memory-request', '1Mi',
      '--proxy-memory-limit', '2Mi', '--proxy-ephemeral-storage-request', '3Mi', '--proxy-ephemeral-storage-limit', '4Mi',
      '--default-inbound-policy', 'cluster-authenticated', '--access-log', 'apache', '--wait-before-exit-seconds', '7',
      '--close-wait-timeout', '1m', '--enable-external-profiles', '--enable-debug-sidecar',
    );
    const a = t.metadata.annotations;
    for (const f of PROXY_FLAGS) {
      if (['native-sidecar', 'await', 'ingress', 'proxy-cpu-request', 'proxy-cpu'].includes(f.name)) continue;
      expect(a[f.annotation], f.name).toBeDefined();
    }
    const proxy = proxyOf(t);
    expect(proxy.image).toBe('registry.example/proxy:v9');
    expect(proxy.imagePullPolicy).toBe('Always');
    expect(proxy.securityContext).toMatchObject({ runAsUser: 3000, runAsGroup: 3000 });
    expect(proxy.lifecycle.preStop).toEqual({ exec: { command: ['/bin/sleep', '7'] } });
    expect(names(t.spec.containers)).toEqual(['linkerd-proxy', 'web', 'linkerd-debug']);
    expect(envOf(proxy)).toMatchObject({
      LINKERD2_PROXY_INBOUND_LISTEN_ADDR: '0.0.0.0:5143',
      LINKERD2_PROXY_LOG_FORMAT: 'json',
      LINKERD2_PROXY_INBOUND_DEFAULT_POLICY: 'cluster-authenticated',
      LINKERD2_PROXY_ACCESS_LOG: 'apache',
      LINKERD2_PROXY_INBOUND_PORTS_REQUIRE_IDENTITY: '8080',
      LINKERD2_PROXY_DESTINATION_PROFILE_SUFFIXES: '.',
    });
    expect(t.spec.initContainers[0].args).toEqual(expect.arrayContaining(['--inbound-ports-to-ignore', '5190,5191,1-10', '--subnets-to-ignore', '10.0.0.0/8']));
  });

  it('Namespaces get the annotations pods inherit (not close-wait-timeout); Services only --opaque-ports', async () => {
    const stdin = 'apiVersion: v1\nkind: Namespace\nmetadata:\n  name: shop\n---\napiVersion: v1\nkind: Service\nmetadata:\n  name: web\nspec:\n  ports:\n  - port: 80\n';
    const result = await injectText(stdin, '--proxy-cpu-request', '100m', '--close-wait-timeout', '1m', '--opaque-ports', '80', '--ingress');
    const [ns, svc] = objects(result.stdout);
    expect(ns?.metadata.annotations).toEqual({
      'config.linkerd.io/opaque-ports': '80',
      'config.linkerd.io/proxy-cpu-request': '100m',
      'linkerd.io/inject': 'ingress',
    });
    expect(svc?.metadata.annotations).toEqual({ 'config.linkerd.io/opaque-ports': '80' });
    expect(result.stderr).toBe(
      'namespace "shop" annotated: linkerd.io/inject: ingress, config.linkerd.io/opaque-ports: 80, config.linkerd.io/proxy-cpu-request: 100m\n' +
        'service "web" annotated: config.linkerd.io/opaque-ports: 80\n',
    );
  });

  it('flags given override the template\'s own configuration annotation, in place', async () => {
    const own = DEPLOYMENT.replace('      labels:\n        app: web\n', '      annotations:\n        config.linkerd.io/proxy-cpu-request: 50m\n        team: a\n      labels:\n        app: web\n');
    const result = await injectText(own, '--proxy-cpu-request', '200m');
    expect(result.stdout).toContain('      annotations:\n        config.linkerd.io/proxy-cpu-request: 200m\n        team: a\n        linkerd.io/inject: enabled\n');
  });
});

describe("the rest of linkerd inject's flags", () => {
  afterEach(() => {
    vi.unstubAllEnvs();
  });

  it('--registry moves the proxy and debug images, after --proxy-image, as Linkerd does', async () => {
    const t = await manualTemplate('--registry', 'registry.test/mirror', '--proxy-image', 'other.test/linkerd/proxy');
    expect(t.metadata.annotations['config.linkerd.io/proxy-image']).toBe('registry.test/mirror/proxy');
    expect(t.metadata.annotations['config.linkerd.io/debug-image']).toBe('registry.test/mirror/debug');
    expect(proxyOf(t).image).toMatch(/^registry\.test\/mirror\/proxy:/);
  });

  it('LINKERD_DOCKER_REGISTRY does what --registry does; the flag wins', async () => {
    vi.stubEnv('LINKERD_DOCKER_REGISTRY', 'env.test/l5d/');
    expect((await manualTemplate()).metadata.annotations['config.linkerd.io/proxy-image']).toBe('env.test/l5d/proxy');
    expect((await manualTemplate('--registry', 'flag.test')).metadata.annotations['config.linkerd.io/proxy-image']).toBe('flag.test/proxy');
  });

  it('--registry naming the configured registry writes nothing', async () => {
    const t = await manualTemplate('--registry', 'cr.l5d.io/linkerd');
    expect(Object.keys(t.metadata.annotations ?? {}).filter((k) => k.startsWith('config.'))).toEqual([]);
  });

  it('--proxy-cpu and --proxy-memory are the request flags under their old names, with a note; they win when both are given', async () => {
    const result = await injectText(DEPLOYMENT, '--manual', ...ANCHORS, '--proxy-cpu-request', '300m', '--proxy-cpu', '1500m', '--proxy-memory', '64Mi');
    expect(result.code, result.stderr).toBe(0);
    const t = objects(result.stdout)[0]?.spec.template;
    expect(t.metadata.annotations['config.linkerd.io/proxy-cpu-request']).toBe('1500m');
    expect(proxyOf(t).resources).toEqual({ requests: { cpu: '1500m', memory: '64Mi' } });
    expect(envOf(proxyOf(t))['LINKERD2_PROXY_CORES_MIN']).toBe('2');
    expect(result.stderr).toContain('proxy-injector inject: --proxy-cpu is deprecated: use --proxy-cpu-request\nproxy-injector inject: --proxy-memory is deprecated: use --proxy-memory-request\n');
  });

  it('--disable-identity is refused as Linkerd refuses it; =false is accepted with a note', async () => {
    const refused = await injectText(DEPLOYMENT, '--disable-identity');
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/^proxy-injector inject: --disable-identity is no longer supported; identity is always required\n/);
    const accepted = await injectText(DEPLOYMENT, '--disable-identity=false');
    expect(accepted.code).toBe(0);
    expect(accepted.stderr).toContain('proxy-injector inject: --disable-identity=false has no effect: identity is always on\n');
  });

  it("Linkerd's cluster flags are accepted, each with a note that it has no effect", async () => {
    const result = await injectText(DEPLOYMENT, '--kubeconfig', 'k', '--context', 'c', '--as', 'u', '--as-group', 'g', '--api-addr', 'a:1', '--cni-namespace', 'n');
    expect(result.code).toBe(0);
    for (const name of ['kubeconfig', 'context', 'as', 'as-group', 'api-addr', 'cni-namespace']) {
      expect(result.stderr).toContain(`proxy-injector inject: --${name} has no effect: this command reads no cluster\n`);
    }
  });

  it('a proxy request above its limit is reported as ignored, naming the pair, and the configured resources are used', async () => {
    const result = await injectText(DEPLOYMENT, '--manual', ...ANCHORS, '--proxy-memory-request', '1Gi', '--proxy-memory-limit', '256Mi');
    expect(result.code, result.stderr).toBe(0);
    expect(result.stderr).toContain(
      '  ‼ ignored annotations config.linkerd.io/proxy-memory-request="1Gi" and config.linkerd.io/proxy-memory-limit="256Mi": ' +
        'the request "1Gi" is larger than the limit "256Mi", which the API server refuses\n',
    );
    expect(proxyOf(objects(result.stdout)[0]?.spec.template).resources).toBeUndefined();
  });
});

describe('the report says what was done to every object', () => {
  const SERVICE = 'apiVersion: v1\nkind: Service\nmetadata:\n  name: db\nspec:\n  ports:\n    - port: 5432\n';
  const CONFIGMAP = 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n';
  const input = [DEPLOYMENT, SERVICE, CONFIGMAP].join('---\n');

  it('annotations added with --opaque-ports are listed for workloads and Services alike', async () => {
    const annotated = await injectText(input, '--opaque-ports', '5432');
    expect(annotated.code).toBe(0);
    expect(annotated.stderr).toBe(
      'deployment "web" annotated: linkerd.io/inject: enabled, config.linkerd.io/opaque-ports: 5432\n' +
        'service "db" annotated: config.linkerd.io/opaque-ports: 5432\n' +
        'configmap "settings" unchanged: not a workload\n',
    );
    const manual = await injectText(input, '--manual', ...ANCHORS, '--opaque-ports', '5432');
    expect(manual.stderr).toMatch(/\n\ndeployment "web" injected: annotated config.linkerd.io\/opaque-ports: 5432\nservice "db" annotated: /);
  });

  it('a Service with nothing to record is unchanged, not "unsupported"', async () => {
    const result = await injectText(SERVICE);
    expect(result.stderr).toBe('service "db" unchanged: no opaque ports to record\n');
  });
});

describe('what is injected and what is not', () => {
  it('re-injecting an injected manifest with other flags gives the new configuration only', async () => {
    const first = await injectText(DEPLOYMENT, '--manual', ...ANCHORS, '--native-sidecar');
    const again = await injectText(first.stdout, '--manual', ...ANCHORS, '--native-sidecar=false');
    const t = objects(again.stdout)[0]?.spec.template;
    expect(names(t.spec.initContainers)).toEqual(['linkerd-init']);
    expect(names(t.spec.containers)).toEqual(['linkerd-proxy', 'web']);
    expect(t.metadata.annotations['config.linkerd.io/proxy-enable-native-sidecar']).toBe('false');
  });

  it('re-injecting what kubectl get prints (keys sorted) puts Linkerd\'s keys back where they were', async () => {
    const { Document } = await import('yaml');
    const sorted = (v: unknown): unknown =>
      Array.isArray(v) ? v.map(sorted) : v && typeof v === 'object' ? Object.fromEntries(Object.keys(v).sort().map((k) => [k, sorted((v as Obj)[k])])) : v;
    const withUserKeys = DEPLOYMENT.replace('        app: web\n    spec', '        app: web\n        zone: b\n      annotations:\n        zz.example/last: "1"\n        aa.example/first: "1"\n    spec');
    const injected = await injectText(withUserKeys, '--manual', ...ANCHORS);
    const asKubectlPrintsIt = new Document(sorted(objects(injected.stdout)[0]), YAML_OPTIONS).toString({ indentSeq: false, lineWidth: 0 });
    const meta = (text: string): Obj => objects(text)[0]?.spec.template.metadata;
    expect(Object.keys(meta(asKubectlPrintsIt).annotations)).toEqual([
      'aa.example/first', 'linkerd.io/created-by', 'linkerd.io/proxy-version', 'linkerd.io/trust-root-sha256', 'zz.example/last',
    ]);
    const again = await injectText(asKubectlPrintsIt, '--manual', ...ANCHORS);
    expect(Object.keys(meta(again.stdout).annotations)).toEqual(Object.keys(meta(asKubectlPrintsIt).annotations));
    expect(Object.keys(meta(again.stdout).labels)).toEqual(Object.keys(meta(asKubectlPrintsIt).labels));
    expect(objects(again.stdout)).toEqual(objects(asKubectlPrintsIt));
  });

  it('an annotation-only run on a manually injected manifest takes the proxy out and leaves the annotation', async () => {
    const manual = await injectText(DEPLOYMENT, '--manual', ...ANCHORS);
    const annotated = await injectText(manual.stdout);
    expect(annotated.stdout).toBe((await injectText(DEPLOYMENT)).stdout);
  });

  it('a Namespace annotated disabled is left as it is (Linkerd would overwrite the opt-out)', async () => {
    const ns = 'kind: Namespace\nmetadata:\n  name: n1\n  annotations:\n    linkerd.io/inject: disabled\n';
    const result = await injectText(ns, '--manual');
    expect(result.stdout).toBe(ns);
    expect(result.stderr).toBe('namespace "n1" skipped: annotated linkerd.io/inject: disabled\n');
  });

  it('a pod template annotated disabled is skipped, even with hostNetwork: not an error', async () => {
    const text = DEPLOYMENT.replace('      labels:\n        app: web\n', '      annotations:\n        linkerd.io/inject: disabled\n').replace('      containers:', '      hostNetwork: true\n      containers:');
    const result = await injectText(text, '--manual', ...ANCHORS);
    expect(result).toMatchObject({ code: 0, stdout: text });
  });

  it('UDP ports only warn', async () => {
    const result = await injectText(DEPLOYMENT.replace('containerPort: 8080', 'containerPort: 53\n              protocol: UDP'), '--manual', ...ANCHORS);
    expect(result.code).toBe(0);
    expect(result.stderr).toContain('‼ UDP port(s) configured on pod spec');
  });

  it('automountServiceAccountToken: false with token projection off is a hard error', async () => {
    const { writeFileSync, mkdtempSync } = await import('node:fs');
    const { join } = await import('node:path');
    const { tmpdir } = await import('node:os');
    const dir = mkdtempSync(join(tmpdir(), 'inject-values-'));
    writeFileSync(join(dir, 'values.yaml'), 'identity:\n  serviceAccountTokenProjection: false\n');
    const text = DEPLOYMENT.replace('      containers:', '      automountServiceAccountToken: false\n      containers:');
    const result = await injectText(text, '--manual', ...ANCHORS, '--values', join(dir, 'values.yaml'));
    expect(result).toMatchObject({ code: 1, stdout: '' });
    expect(result.stderr).toContain(
      'deployment "web" not injected: automountServiceAccountToken set to "false", with Values.identity.serviceAccountTokenProjection set to "false"',
    );
  });

  it('a static pod`s mirror (a pod read back from the API) is a hard error: the API server would refuse it injected', async () => {
    const mirror = JSON.stringify({
      kind: 'Pod',
      metadata: { name: 'etcd-node-1', annotations: { 'kubernetes.io/config.mirror': '5a1e2f3c' } },
      spec: { nodeName: 'node-1', containers: [{ name: 'etcd', image: 'etcd' }] },
    });
    for (const mode of [['--manual'], []]) {
      const result = await injectText(mirror, ...mode, ...ANCHORS);
      expect(result).toMatchObject({ code: 1, stdout: '' });
      expect(result.stderr).toContain('pod "etcd-node-1" not injected: pod is the mirror of a static pod, which the kubelet runs from its manifest file');
    }
  });

  it('a Deployment whose pods select Windows nodes is a hard error', async () => {
    const text = DEPLOYMENT.replace('      containers:', '      nodeSelector:\n        kubernetes.io/os: windows\n      containers:');
    const result = await injectText(text, '--manual', ...ANCHORS);
    expect(result).toMatchObject({ code: 1, stdout: '' });
    expect(result.stderr).toContain('deployment "web" not injected: pod runs on Windows, where the Linux proxy cannot run');
  });

  it('a failing item of a List fails the whole output, and the report says where the item is', async () => {
    const list = JSON.stringify({ kind: 'List', items: [{ kind: 'Pod', metadata: { name: 'a' }, spec: { hostNetwork: true, containers: [] } }, { kind: 'Namespace', metadata: { name: 'b' } }] });
    const result = await injectText(list, '--manual', ...ANCHORS);
    expect(result).toMatchObject({ code: 1, stdout: '' });
    expect(result.stderr).toBe(
      'proxy-injector inject: -:1: document 1, items[0]: pod "a" not injected: hostNetwork is enabled\n' +
        'namespace "b" annotated: linkerd.io/inject: enabled\n\n' +
        'proxy-injector inject: 1 object could not be injected; nothing was written to stdout\n',
    );
  });

  it('control-plane components need --manual', async () => {
    const text = DEPLOYMENT.replace('        app: web\n    spec', '        app: web\n        linkerd.io/control-plane-component: destination\n    spec');
    expect(await injectText(text)).toMatchObject({ code: 1, stdout: '' });
    expect((await injectText(text, '--manual', ...ANCHORS)).code).toBe(0);
  });

  it('a workload without a pod template is invalid input', async () => {
    const result = await injectText('kind: Deployment\nmetadata:\n  name: d\nspec: {}\n');
    expect(result).toMatchObject({ code: 1, stdout: '' });
    expect(result.stderr).toContain('deployment "d" not injected: Deployment d has no pod template at spec.template');
  });

  it('a Pod without a spec, or a template without containers, is refused by --manual and warned of otherwise: it would run the proxy alone', async () => {
    const bare = 'apiVersion: v1\nkind: Pod\nmetadata:\n  name: bare\n';
    const manual = await injectText(bare, '--manual', ...ANCHORS);
    expect(manual).toMatchObject({ code: 1, stdout: '' });
    expect(manual.stderr).toContain('pod "bare" not injected: the pod has no spec: injected, it would run the proxy alone; give it its containers\n');
    const annotated = await injectText(bare);
    expect(annotated.code).toBe(0);
    expect(annotated.stderr).toBe('pod "bare" annotated: linkerd.io/inject: enabled\n  ‼ the pod has no spec: injected, it would run the proxy alone; give it its containers\n');
    const empty = DEPLOYMENT.replace(/ {6}containers:[\s\S]*$/, '      containers: []\n');
    expect((await injectText(empty, '--manual', ...ANCHORS)).stderr).toContain('deployment "web" not injected: the pod template has no containers: ');
    expect((await injectText(empty)).stderr).toContain('  ‼ the pod template has no containers: ');
  });

  it('documents without a kind pass through; empty documents are kept as written; non-objects are invalid', async () => {
    const ok = await injectText('---\nfoo: bar\n---\n---\n# only a comment\n');
    expect(ok).toEqual({ code: 0, stdout: '---\nfoo: bar\n---\n---\n# only a comment\n', stderr: 'document without a kind unchanged\n' });
    expect(await injectText('- a\n- b\n')).toMatchObject({ code: 1, stdout: '' });
  });

  it('comments after a document stay where they were, with or without a blank line before them', async () => {
    const text = 'kind: ConfigMap\nmetadata:\n  name: a\n# right after\n---\nkind: ConfigMap\nmetadata:\n  name: b\n\n# after a blank line\n';
    expect((await injectText(text)).stdout).toBe(text);
  });

  it('YAML 1.1 scalars and dates are kept as written', async () => {
    const text = 'kind: ConfigMap\nmetadata:\n  name: c\n  annotations:\n    when: 2024-01-01\ndata:\n  enabled: yes\n  octal: 0755\n';
    expect((await injectText(text)).stdout).toBe(text);
    const json = await injectText(text, '-o', 'json');
    expect(JSON.parse(json.stdout)).toEqual({ kind: 'ConfigMap', metadata: { name: 'c', annotations: { when: '2024-01-01' } }, data: { enabled: true, octal: 493 } });
  });

  it('anchors and merge keys in a template still inject correctly', async () => {
    const text = DEPLOYMENT.replace('      labels:\n        app: web\n', '      labels:\n        <<: &common\n          app: web\n').replace(
      'kind: Deployment\nmetadata:\n  name: web\n',
      'kind: Deployment\nmetadata:\n  name: web\n  labels: *common\n',
    );
    // The anchor is defined after its first use above; put the definition first instead.
    const fixed = text.replace('  labels: *common\n', '  labels: &common\n    app: web\n').replace('        <<: &common\n          app: web\n', '        <<: *common\n');
    const result = await injectText(fixed, '--manual', ...ANCHORS);
    expect(result.code, result.stderr).toBe(0);
    const [d] = objects(result.stdout);
    expect(d?.metadata.labels).toEqual({ app: 'web' });
    expect(d?.spec.template.metadata.labels).toEqual({
      app: 'web',
      'linkerd.io/control-plane-ns': 'linkerd',
      'linkerd.io/proxy-deployment': 'web',
      'linkerd.io/workload-ns': 'shop',
    });
  });
});

describe('configuration', () => {
  it('without trust anchors, --manual uses the demo root and says so; annotation-only mode does not need any', async () => {
    const manual = await injectText(DEPLOYMENT, '--manual');
    expect(manual.code).toBe(0);
    expect(manual.stderr).toMatch(/\nproxy-injector inject: no trust anchors given .* examples\/trust-anchors.pem; the injected proxies will not get a usable identity\n\n/);
    expect((await injectText(DEPLOYMENT)).stderr).not.toContain('trust anchors');
  });

  it('without --values, --manual says once that the embedded defaults are not what Linkerd installs; with --values it does not', async () => {
    const defaults = await injectText(DEPLOYMENT, '--manual');
    expect(defaults.stderr.startsWith(`proxy-injector inject: ${EMBEDDED_DEFAULTS_NOTE}\n`)).toBe(true);
    expect(defaults.stderr.split(EMBEDDED_DEFAULTS_NOTE)).toHaveLength(2);
    const dir = mkdtempSync(join(tmpdir(), 'pi-values-'));
    writeFileSync(join(dir, 'values.yaml'), 'proxy:\n  nativeSidecar: true\n');
    const given = await injectText(DEPLOYMENT, '--manual', '--values', join(dir, 'values.yaml'));
    rmSync(dir, { recursive: true, force: true });
    expect(given.stderr).not.toContain('embedded defaults');
    // Annotation-only injection renders no proxy: the defaults do not matter there.
    expect((await injectText(DEPLOYMENT)).stderr).not.toContain('embedded defaults');
  });

  it('--trust-anchors wins over the values', async () => {
    const t = objects((await injectText(DEPLOYMENT, '--manual', '--values', 'test/fixtures/cli/in/values.yaml')).stdout)[0]?.spec.template;
    const u = await manualTemplate('--values', 'test/fixtures/cli/in/values.yaml');
    expect(envOf(proxyOf(t))['LINKERD2_PROXY_IDENTITY_TRUST_ANCHORS']).toContain(OTHER_TRUST_ANCHOR.split('\n')[1]);
    expect(envOf(proxyOf(u))['LINKERD2_PROXY_IDENTITY_TRUST_ANCHORS']).toContain(TRUST_ANCHORS.split('\n')[1]);
  });

  it('reads stdin only when "-" is an input', async () => {
    let read = 0;
    const stdin = async () => {
      read++;
      return DEPLOYMENT;
    };
    await runInject(['test/fixtures/cli/in/dir/a.yaml'], { stdin });
    expect(read).toBe(0);
    await runInject(['-', '-'], { stdin });
    expect(read).toBe(1);
  });
});

describe('errors and usage', () => {
  it.each([
    [['--bogus', 'x.yaml'], /^proxy-injector inject: unknown flag --bogus\nUsage: proxy-injector inject /],
    [['--values'], /^proxy-injector inject: --values needs a value\n/],
    [[], /no input/],
    [['--admin-port', '70000', 'x.yaml'], /--admin-port "70000": not a port number \(1-65535\)/],
    [['--proxy-cpu-request', 'lots', 'x.yaml'], /--proxy-cpu-request "lots": not a non-negative Kubernetes quantity/],
    [['--skip-inbound-ports', '80,http', 'x.yaml'], /not a comma-separated list of ports and port ranges \(http\)/],
    [['--default-inbound-policy', 'open', 'x.yaml'], /must be one of all-unauthenticated/],
    [['--native-sidecar=maybe', 'x.yaml'], /--native-sidecar: expected true or false/],
    [['-o', 'xml', 'x.yaml'], /--output "xml": expected yaml or json/],
    [['--manual=yes', '--admin-port', 'x.yaml'], /no input/],
  ])('%j is a usage error (exit 2)', async (args, message) => {
    const result = await runInject(args as string[]);
    expect(result.code).toBe(2);
    expect(result.stdout).toBe('');
    expect(result.stderr).toMatch(message);
    expect(result.stderr).toMatch(/\nUsage: proxy-injector inject .*\nRun 'proxy-injector inject --help' for all options.\n$/);
  });

  it.each([
    [['missing.yaml'], 'proxy-injector inject: missing.yaml: no such file or directory\n'],
    [['--values', 'missing.yaml', '-'], 'proxy-injector inject: --values missing.yaml: no such file\n'],
    [['--values', 'test/fixtures/cli/in/all-kinds.yaml', '-'], /INVALID|Linkerd values/],
  ])('%j is an error (exit 1)', async (args, message) => {
    const result = await runInject(args, { stdin: '' });
    expect(result.code).toBe(1);
    expect(result.stdout).toBe('');
    if (typeof message === 'string') expect(result.stderr).toBe(message);
    else expect(result.stderr).toMatch(message);
  });

  it('invalid YAML on stdin names "-" and the line', async () => {
    const result = await injectText('kind: Pod\nmetadata:\n  name: [p\n');
    expect(result).toMatchObject({ code: 1, stdout: '' });
    expect(result.stderr).toMatch(/^proxy-injector inject: -:4: invalid YAML: /);
  });

  it('--help lists every flag', async () => {
    const result = await runInject(['--help']);
    expect(result).toEqual({ code: 0, stdout: INJECT_HELP, stderr: '' });
    for (const f of PROXY_FLAGS) expect(result.stdout, f.name).toContain(`--${f.name}`);
    for (const name of ['--manual', '--output', '--verbose', '--values', '--trust-anchors', '--linkerd-namespace', '--ignore-cluster', '--registry', '--disable-identity', '--kubeconfig']) {
      expect(result.stdout).toContain(name);
    }
  });

  it('--ignore-cluster is accepted, for scripts written for linkerd inject', async () => {
    expect((await injectText(DEPLOYMENT, '--ignore-cluster')).code).toBe(0);
  });
});

describe('--trust-anchors is checked', () => {
  const dir = mkdtempSync(join(tmpdir(), 'proxy-injector-anchors-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  let n = 0;
  const file = (content: string): string => {
    const path = join(dir, `anchors-${n++}.pem`);
    writeFileSync(path, content);
    return path;
  };

  it('a bundle of two certificates goes into the proxy as it is', async () => {
    const bundle = `${TRUST_ANCHORS}${OTHER_TRUST_ANCHOR}`;
    const result = await injectText(DEPLOYMENT, '--manual', '--trust-anchors', file(bundle));
    expect(result.code, result.stderr).toBe(0);
    expect(envOf(proxyOf(objects(result.stdout)[0]?.spec.template))['LINKERD2_PROXY_IDENTITY_TRUST_ANCHORS']).toBe(bundle);
  });

  it.each(INVALID_BUNDLES)('%s fails with one line naming the file, and nothing is written', async (_name, pem, says) => {
    const path = file(pem);
    for (const manual of [['--manual'], []]) {
      const result = await injectText(DEPLOYMENT, ...manual, '--trust-anchors', path);
      expect(result).toMatchObject({ code: 1, stdout: '' });
      expect(result.stderr).toMatch(new RegExp(`^proxy-injector inject: --trust-anchors ${path}: .*\n$`));
      expect(result.stderr).toMatch(says);
    }
  });

  it.each(Object.entries(privateKeys()))('a private key (%s) is refused as one and not repeated', async (label, key) => {
    const path = file(key);
    const result = await injectText(DEPLOYMENT, '--manual', '--trust-anchors', path);
    expect(result).toEqual({
      code: 1,
      stdout: '',
      stderr: `proxy-injector inject: --trust-anchors ${path}: a private key (${label}) was given where the trust anchors' certificates belong; give the root CA certificates only\n`,
    });
  });

  it("the values' identityTrustAnchorsPEM is checked when no --trust-anchors is given", async () => {
    const values = file('identityTrustAnchorsPEM: hello\n');
    const result = await injectText(DEPLOYMENT, '--manual', '--values', values);
    expect(result).toEqual({ code: 1, stdout: '', stderr: `proxy-injector inject: identityTrustAnchorsPEM in --values ${values}: no PEM CERTIFICATE block: trust anchors are one or more "-----BEGIN CERTIFICATE-----" blocks\n` });
  });
});
