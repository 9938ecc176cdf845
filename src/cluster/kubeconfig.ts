/** Finding the cluster: in-cluster service account, else KUBECONFIG or ~/.kube/config, else no cluster. */
import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { delimiter, join } from 'node:path';
import type { KubeConfig } from '@kubernetes/client-node';

const SERVICE_ACCOUNT_TOKEN = '/var/run/secrets/kubernetes.io/serviceaccount/token';

export interface ClusterConnection {
  kubeConfig: KubeConfig;
  /** Where the credentials came from, for the startup log. */
  source: string;
  server: string;
}

/**
 * The cluster to talk to, or undefined when there is none. Unlike `loadFromDefault`, it never falls back to
 * http://localhost:8080: a process without credentials runs without a cluster and says so. The Kubernetes client is
 * loaded only once credentials are found: loading it takes most of a second and about 60 MiB, which a process without
 * a cluster does not need.
 */
export async function connectToCluster(options: { kubeconfig?: string; env?: NodeJS.ProcessEnv } = {}): Promise<ClusterConnection | undefined> {
  const env = options.env ?? process.env;
  let source: string;
  let load: (kc: KubeConfig) => void;
  if (options.kubeconfig) {
    const path = options.kubeconfig;
    if (!existsSync(path)) throw new Error(`--kubeconfig ${path}: no such file`);
    load = (kc) => kc.loadFromFile(path);
    source = path;
  } else if (env['KUBERNETES_SERVICE_HOST'] && existsSync(SERVICE_ACCOUNT_TOKEN)) {
    load = (kc) => kc.loadFromCluster();
    source = 'in-cluster service account';
  } else {
    const files = (env['KUBECONFIG'] ?? '').split(delimiter).filter((f) => f !== '' && existsSync(f));
    const fallback = join(homedir(), '.kube', 'config');
    if (files.length === 0 && existsSync(fallback)) files.push(fallback);
    if (files.length === 0) return undefined;
    // loadFromDefault merges every file of KUBECONFIG, as kubectl does.
    load = (kc) => kc.loadFromDefault();
    source = files.join(delimiter);
  }
  const { KubeConfig } = await import('@kubernetes/client-node');
  const kc = new KubeConfig();
  load(kc);
  const cluster = kc.getCurrentCluster();
  if (!cluster) throw new Error(`the kubeconfig from ${source} has no current cluster`);
  return { kubeConfig: kc, source, server: cluster.server };
}
