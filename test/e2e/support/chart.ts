/** The Helm chart in tests: helm built from the Go module proxy, rendering, installing, and the objects Linkerd installs. */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadAllYaml, type KubernetesObject } from '@kubernetes/client-node';

const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
export const CHART_DIR = join(REPO_ROOT, 'charts', 'proxy-injector');

let helmPath: string | undefined;

/** helm, from $HELM or built once into the tools cache by scripts/helm-binary.sh. */
export function helmBinary(): string {
  helmPath ??= execFileSync('bash', [join(REPO_ROOT, 'scripts', 'helm-binary.sh')], { stdio: ['ignore', 'pipe', 'inherit'] })
    .toString()
    .trim();
  return helmPath;
}

export class HelmError extends Error {
  constructor(
    readonly args: string[],
    readonly stderr: string,
  ) {
    super(`helm ${args.join(' ')} failed:\n${stderr}`);
  }
}

/** Runs helm with the values given as one JSON document (JSON is YAML), and returns its stdout. */
/** The image the suites install the chart with. */
export const E2E_IMAGE_REPOSITORY = 'registry.example.com/proxy-injector';

export function helm(args: string[], options: { kubeconfig?: string; values?: unknown } = {}): string {
  const dir = mkdtempSync(join(tmpdir(), 'helm-values-'));
  try {
    // No image is published, and the chart refuses to render without one: the suites' pods never start anyway.
    const renders = ['install', 'upgrade', 'template'].includes(args[0] ?? '');
    const all = renders ? [...args, '--set', `image.repository=${E2E_IMAGE_REPOSITORY}`] : [...args];
    if (options.values !== undefined) {
      writeFileSync(join(dir, 'values.json'), JSON.stringify(options.values));
      all.push('-f', join(dir, 'values.json'));
    }
    if (options.kubeconfig) all.push('--kubeconfig', options.kubeconfig);
    try {
      return execFileSync(helmBinary(), all, {
        stdio: ['ignore', 'pipe', 'pipe'],
        env: { ...process.env, HELM_CACHE_HOME: join(dir, 'cache'), HELM_CONFIG_HOME: join(dir, 'config'), HELM_DATA_HOME: join(dir, 'data') },
      }).toString();
    } catch (err) {
      throw new HelmError(all, String((err as { stderr?: Buffer }).stderr ?? err));
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** `helm template` of the chart: the objects it would install. */
export function renderChart(release: string, namespace: string, values: unknown = {}, extraArgs: string[] = []): KubernetesObject[] {
  const text = helm(['template', release, CHART_DIR, '--namespace', namespace, ...extraArgs], { values });
  return (loadAllYaml(text) as Array<KubernetesObject | null>).filter((o): o is KubernetesObject => o !== null && typeof o === 'object');
}

/** Where the Go module cache holds `module` at the version test/helm/go pins, downloaded from the module proxy if needed. */
function pinnedModuleDir(module: string): string {
  const out = execFileSync('go', ['mod', 'download', '-json', module], {
    cwd: join(REPO_ROOT, 'test', 'helm', 'go'),
    stdio: ['ignore', 'pipe', 'inherit'],
    env: { ...process.env, GOFLAGS: '-mod=readonly', GOWORK: 'off' },
  }).toString();
  const dir = (JSON.parse(out) as { Dir?: string }).Dir;
  if (!dir) throw new Error(`go mod download gave no directory for ${module}:\n${out}`);
  return dir;
}

/** cert-manager's CRDs, from the module pinned in test/helm/go (the Go module cache holds its deploy/crds). */
export function certManagerCrdDir(): string {
  return join(pinnedModuleDir('github.com/cert-manager/cert-manager'), 'deploy', 'crds');
}

/** Prometheus Operator's CRDs (PodMonitor among them), from its main module as test/helm/go pins it. */
export function prometheusOperatorCrdDir(): string {
  return join(pinnedModuleDir('github.com/prometheus-operator/prometheus-operator'), 'example', 'prometheus-operator-crd');
}

export interface ObjectName {
  apiVersion: string;
  kind: string;
  namespace?: string;
  name: string;
}

export const nameOf = (o: KubernetesObject): ObjectName => ({
  apiVersion: o.apiVersion ?? '',
  kind: o.kind ?? '',
  ...(o.metadata?.namespace && { namespace: o.metadata.namespace }),
  name: o.metadata?.name ?? '',
});

export const sameObject = (a: ObjectName, b: ObjectName): boolean =>
  a.kind === b.kind && a.name === b.name && (a.namespace ?? '') === (b.namespace ?? '');

/**
 * The objects Linkerd's control-plane chart installs for its own injector, named and shaped as at edge-26.8.3
 * (templates/proxy-injector-rbac.yaml and proxy-injector.yaml): the chart must share no name with them.
 */
export function linkerdInjectorObjects(ns: string, caBundle: string, url: string): KubernetesObject[] {
  const labels = { 'linkerd.io/control-plane-component': 'proxy-injector', 'linkerd.io/control-plane-ns': ns };
  const webhook = {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'MutatingWebhookConfiguration',
    metadata: { name: 'linkerd-proxy-injector-webhook-config', labels },
    webhooks: [
      {
        name: 'linkerd-proxy-injector.linkerd.io',
        namespaceSelector: LINKERD_NAMESPACE_SELECTOR,
        objectSelector: {
          matchExpressions: [
            { key: 'linkerd.io/control-plane-component', operator: 'DoesNotExist' },
            { key: 'linkerd.io/cni-resource', operator: 'DoesNotExist' },
          ],
        },
        clientConfig: { url, caBundle: Buffer.from(caBundle).toString('base64') },
        failurePolicy: 'Ignore',
        admissionReviewVersions: ['v1', 'v1beta1'],
        rules: [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['pods', 'services'], scope: 'Namespaced' }],
        sideEffects: 'None',
        timeoutSeconds: 10,
      },
    ],
  };
  return [
    { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'linkerd-proxy-injector', namespace: ns, labels } },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRole',
      metadata: { name: `linkerd-${ns}-proxy-injector`, labels },
      rules: [
        { apiGroups: [''], resources: ['events'], verbs: ['create', 'patch'] },
        { apiGroups: [''], resources: ['namespaces', 'replicationcontrollers'], verbs: ['list', 'get', 'watch'] },
        { apiGroups: [''], resources: ['pods'], verbs: ['list', 'watch'] },
        { apiGroups: ['extensions', 'apps'], resources: ['deployments', 'replicasets', 'daemonsets', 'statefulsets'], verbs: ['list', 'get', 'watch'] },
        { apiGroups: ['extensions', 'batch'], resources: ['cronjobs', 'jobs'], verbs: ['list', 'get', 'watch'] },
      ],
    } as KubernetesObject,
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      metadata: { name: `linkerd-${ns}-proxy-injector`, labels },
      subjects: [{ kind: 'ServiceAccount', name: 'linkerd-proxy-injector', namespace: ns }],
      roleRef: { kind: 'ClusterRole', name: `linkerd-${ns}-proxy-injector`, apiGroup: 'rbac.authorization.k8s.io' },
    } as KubernetesObject,
    {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'linkerd-proxy-injector', namespace: ns, labels },
      spec: { selector: { 'linkerd.io/control-plane-component': 'proxy-injector' }, ports: [{ name: 'proxy-injector', port: 443, targetPort: 'proxy-injector' }] },
    } as KubernetesObject,
    {
      apiVersion: 'v1',
      kind: 'Secret',
      type: 'Opaque',
      metadata: { name: 'linkerd-proxy-injector-k8s-tls', namespace: ns, labels },
      data: { placeholder: Buffer.from('not a real key').toString('base64') },
    } as KubernetesObject,
    webhook as KubernetesObject,
  ];
}

/** Linkerd's default namespaceSelector for its injector (values proxyInjector.namespaceSelector). */
export const LINKERD_NAMESPACE_SELECTOR = {
  matchExpressions: [
    { key: 'config.linkerd.io/admission-webhooks', operator: 'NotIn', values: ['disabled'] },
    { key: 'kubernetes.io/metadata.name', operator: 'NotIn', values: ['kube-system', 'cert-manager'] },
  ],
};

/**
 * What the README tells users to set as Linkerd's proxyInjector.namespaceSelector to turn its injector away from every
 * object: kube-apiserver labels every namespace with kubernetes.io/metadata.name, so DoesNotExist matches none.
 */
export const NO_NAMESPACE_SELECTOR = { matchExpressions: [{ key: 'kubernetes.io/metadata.name', operator: 'DoesNotExist' }] };
