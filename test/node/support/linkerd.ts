/**
 * Linkerd edge-26.8.3 as a user installs it with helm: its CRDs and control plane from its own charts (read from
 * ../shared, copied into the work directory because `helm dependency build` writes next to them), with a trust anchor
 * and issuer made here; its CNI plugin's chart, whose installer's work on the node the suite does itself; and the
 * swap of its injector for this one, as the README describes it.
 */
import { cpSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { NO_NAMESPACE_SELECTOR } from '../../e2e/support/chart.js';
import { helmOn, release } from './helm.js';
import type { Cluster } from './cluster.js';
import { API_PORT, API_SERVICE_IP, LINKERD_BIN, LINKERD_CHARTS, LINKERD_VERSION, VALIDATOR_CONNECT_ADDR, log, run } from './host.js';
import { linkerdIdentity } from './pki.js';

export const LINKERD_NS = 'linkerd';
export const CNI_NS = 'linkerd-cni';
const RELEASE = 'linkerd-control-plane';
export const TRUST_DOMAIN = 'cluster.local';

export interface Linkerd {
  charts: string;
  trustAnchorPem: string;
  /** `helm upgrade --reuse-values` of the control plane with these values (JSON-typed), waiting for its rollout. */
  upgrade(values: Record<string, unknown>): Promise<number>;
  /** The control plane release's current revision. */
  revision(): Promise<number>;
  rollback(revision: number): Promise<void>;
  /** The values Linkerd keeps in its `linkerd-config` ConfigMap (what its injector and this one read). */
  configValues(): Promise<string>;
}

/** The identity every meshed pod gets from Linkerd's identity service. */
export const identityOf = (serviceAccount: string, namespace: string): string => `${serviceAccount}.${namespace}.serviceaccount.identity.${LINKERD_NS}.${TRUST_DOMAIN}`;


export async function installLinkerd(cluster: Cluster): Promise<Linkerd> {
  const charts = join(cluster.workDir, 'linkerd-charts');
  mkdirSync(charts, { recursive: true });
  for (const chart of ['linkerd-crds', 'linkerd-control-plane', 'partials', 'linkerd2-cni']) cpSync(join(LINKERD_CHARTS, chart), join(charts, chart), { recursive: true });
  for (const chart of ['linkerd-crds', 'linkerd-control-plane', 'linkerd2-cni']) await helmOn(cluster, ['dependency', 'build', join(charts, chart)]);
  const identity = await linkerdIdentity(join(cluster.workDir, 'linkerd-identity'), TRUST_DOMAIN);

  const started = Date.now();
  await helmOn(cluster, ['install', 'linkerd-crds', join(charts, 'linkerd-crds'), '--namespace', LINKERD_NS, '--create-namespace', '--wait']);
  await helmOn(
    cluster,
    ['install', RELEASE, join(charts, 'linkerd-control-plane'), '--namespace', LINKERD_NS, '--wait', '--timeout', '5m'],
    {
      // The charts in Linkerd's repository carry a placeholder for the version their release stamps in.
      linkerdVersion: LINKERD_VERSION,
      // No version check call leaves the machine.
      disableHeartBeat: true,
      identityTrustAnchorsPEM: identity.trustAnchorPem,
      identity: { issuer: { tls: { crtPEM: identity.issuerCertPem, keyPEM: identity.issuerKeyPem } } },
      // Where the network validator connects to prove the pod's traffic is redirected: a range that goes nowhere.
      networkValidator: { connectAddr: VALIDATOR_CONNECT_ADDR },
    },
  );
  log(`Linkerd ${LINKERD_VERSION} control plane ready ${((Date.now() - started) / 1000).toFixed(1)} s after helm install`);
  return linkerdHelpers(cluster, charts, identity.trustAnchorPem);
}

/** Helpers on an installed control plane (its charts' copy and trust anchor). */
export function linkerdHelpers(cluster: Cluster, charts: string, trustAnchorPem: string): Linkerd {
  const controlPlane = release(cluster, RELEASE, LINKERD_NS, join(charts, 'linkerd-control-plane'));
  return {
    charts,
    trustAnchorPem,
    revision: controlPlane.revision,
    upgrade: async (values) => {
      await controlPlane.upgrade(values);
      return controlPlane.revision();
    },
    rollback: controlPlane.rollback,
    configValues: async () => cluster.kubectl(['-n', LINKERD_NS, 'get', 'configmap', 'linkerd-config', '-o', 'jsonpath={.data.values}']),
  };
}

/** Step 2 of the README's swap, and its undoing: Linkerd's webhook selects no namespace, or its default again. */
export const LINKERD_INJECTOR_AWAY = { 'proxyInjector.namespaceSelector': NO_NAMESPACE_SELECTOR };

/** The namespaceSelector Linkerd's own webhook has now. */
export async function linkerdWebhookSelector(cluster: Cluster): Promise<unknown> {
  const out = await cluster.kubectl(['get', 'mutatingwebhookconfiguration', 'linkerd-proxy-injector-webhook-config', '-o', 'jsonpath={.webhooks[0].namespaceSelector}']);
  return JSON.parse(out) as unknown;
}

// ---------------------------------------------------------------------------------------------------------------
// linkerd-cni

const KUBECONFIG_NAME = 'ZZZ-linkerd-cni-kubeconfig';

export interface LinkerdCni {
  kubeconfigPath: string;
  /** Writes the plugin's binary, kubeconfig and conflist entry, as Linkerd's installer does when its pod starts. */
  install(): Promise<void>;
  /** Takes linkerd-cni out of the conflist (as the installer does when it stops), leaving the rest. */
  removeFromConflist(): Promise<void>;
}

/**
 * Installs the linkerd2-cni chart (its ServiceAccount, RBAC and the ConfigMap holding the plugin's configuration)
 * with the node's CNI directories, and does on the node what its DaemonSet's installer would. The chart's DaemonSet is
 * given a node affinity no node meets: its installer image is not among Linkerd's published binaries, and a pod whose
 * image is missing would make containerd try a registry.
 */
export async function installLinkerdCni(cluster: Cluster, linkerd: Linkerd): Promise<LinkerdCni> {
  await helmOn(cluster, ['install', 'linkerd-cni', join(linkerd.charts, 'linkerd2-cni'), '--namespace', CNI_NS, '--create-namespace', '--wait'], {
    destCNINetDir: cluster.cniConfDir,
    destCNIBinDir: cluster.cniBinDir,
    nodeAffinity: {
      requiredDuringSchedulingIgnoredDuringExecution: {
        nodeSelectorTerms: [{ matchExpressions: [{ key: 'proxy-injector.io/linkerd-cni-installer', operator: 'In', values: ['runs-here'] }] }],
      },
    },
  });
  await cluster.kubectl(['label', 'namespace', CNI_NS, 'config.linkerd.io/admission-webhooks=disabled', 'linkerd.io/cni-resource=true', '--overwrite']);
  const kubeconfigPath = join(cluster.cniConfDir, KUBECONFIG_NAME);
  return {
    kubeconfigPath,
    install: async () => {
      // 1. the plugin binary into the node's CNI bin directory
      await run('install', ['-m', '0755', join(LINKERD_BIN, 'linkerd-cni'), join(cluster.cniBinDir, 'linkerd-cni')]);
      // 2. a kubeconfig for the plugin: the API server at the kubernetes Service (the pod's KUBERNETES_SERVICE_HOST and
      //    _PORT) and the linkerd-cni ServiceAccount's token, as the installer writes it from its pod's mounted token
      const token = (await cluster.kubectl(['-n', CNI_NS, 'create', 'token', 'linkerd-cni', '--duration=2h'])).trim();
      const ca = Buffer.from(cluster.ca.certPem.trim()).toString('base64');
      writeFileSync(
        kubeconfigPath,
        [
          '# kubeconfig file for linkerd.io/cni-plugin',
          'apiVersion: v1',
          'kind: Config',
          'clusters:',
          '- name: local',
          '  cluster:',
          `    server: https://${API_SERVICE_IP}:${API_PORT}`,
          `    certificate-authority-data: ${ca}`,
          'users:',
          '- name: linkerd-cni',
          '  user:',
          `    token: ${token}`,
          'contexts:',
          '- name: linkerd-cni-context',
          '  context:',
          '    cluster: local',
          '    user: linkerd-cni',
          'current-context: linkerd-cni-context',
        ].join('\n'),
        { mode: 0o644 },
      );
      // 3. the chart's plugin configuration, its kubeconfig path filled in, appended to the conflist's plugins (any
      //    earlier linkerd-cni entry replaced), written as Go's JSON encoder indents and orders it
      const template = await cluster.kubectl(['-n', CNI_NS, 'get', 'configmap', 'linkerd-cni-config', '-o', 'jsonpath={.data.cni_network_config}']);
      const entry = JSON.parse(template.replaceAll('__KUBECONFIG_FILEPATH__', kubeconfigPath)) as Record<string, unknown>;
      const conflist = JSON.parse(readFileSync(cluster.conflistPath, 'utf8')) as { plugins: Array<Record<string, unknown>> };
      conflist.plugins = [...conflist.plugins.filter((p) => p['type'] !== 'linkerd-cni'), entry];
      writeFileSync(cluster.conflistPath, goJson(conflist));
      log(`linkerd-cni chained in ${cluster.conflistPath} with ${kubeconfigPath}`);
    },
    removeFromConflist: async () => {
      const conflist = JSON.parse(readFileSync(cluster.conflistPath, 'utf8')) as { plugins: Array<Record<string, unknown>> };
      conflist.plugins = conflist.plugins.filter((p) => p['type'] !== 'linkerd-cni');
      writeFileSync(cluster.conflistPath, goJson(conflist));
    },
  };
}

/** JSON as Go's json.MarshalIndent(v, "", "  ") writes a map: keys sorted. */
function goJson(value: unknown): string {
  const sort = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.map(sort);
    if (v && typeof v === 'object') return Object.fromEntries(Object.keys(v).sort().map((k) => [k, sort((v as Record<string, unknown>)[k])]));
    return v;
  };
  return JSON.stringify(sort(value), null, 2);
}

/** Linkerd's own injector's /metrics, read from the node at its pod's admin port (through that pod's proxy). */
export async function linkerdInjectorMetrics(cluster: Cluster): Promise<string> {
  const ip = (await cluster.kubectl(['-n', LINKERD_NS, 'get', 'pods', '-l', 'linkerd.io/control-plane-component=proxy-injector', '--field-selector=status.phase=Running', '-o', 'jsonpath={.items[0].status.podIP}'])).trim();
  if (!ip) throw new Error("Linkerd's injector has no running pod");
  const res = await fetch(`http://${ip}:9995/metrics`, { signal: AbortSignal.timeout(5_000) });
  return res.text();
}

/** Points Linkerd's webhook at no namespace (the README's step 2), unless it already is; this injector alone injects. */
export async function onlyThisInjector(cluster: Cluster, linkerd: Linkerd): Promise<void> {
  if (JSON.stringify(await linkerdWebhookSelector(cluster)) !== JSON.stringify(NO_NAMESPACE_SELECTOR)) await linkerd.upgrade(LINKERD_INJECTOR_AWAY);
}
