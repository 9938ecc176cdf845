/** Finding the cluster: in-cluster service account, else KUBECONFIG or ~/.kube/config, else no cluster. */
import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { delimiter, join } from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';

const SERVICE_ACCOUNT_TOKEN = '/var/run/secrets/kubernetes.io/serviceaccount/token';

export interface ClusterConnection {
  kubeConfig: KubeConfig;
  /** Where the credentials came from, for the startup log. */
  source: string;
  server: string;
}

/**
 * The cluster to talk to, or undefined when there is none. Unlike `loadFromDefault`, it never falls back to
 * http://localhost:8080: a process without credentials runs without a cluster and says so.
 */
export function connectToCluster(options: { kubeconfig?: string; env?: NodeJS.ProcessEnv } = {}): ClusterConnection | undefined {
  const env = options.env ?? process.env;
  const kc = new KubeConfig();
  let source: string;
  if (options.kubeconfig) {
    if (!existsSync(options.kubeconfig)) throw new Error(`--kubeconfig ${options.kubeconfig}: no such file`);
    kc.loadFromFile(options.kubeconfig);
    source = options.kubeconfig;
  } else if (env['KUBERNETES_SERVICE_HOST'] && existsSync(SERVICE_ACCOUNT_TOKEN)) {
    kc.loadFromCluster();
    source = 'in-cluster service account';
  } else {
    const files = (env['KUBECONFIG'] ?? '').split(delimiter).filter((f) => f !== '' && existsSync(f));
    const fallback = join(homedir(), '.kube', 'config');
    if (files.length === 0 && existsSync(fallback)) files.push(fallback);
    if (files.length === 0) return undefined;
    // loadFromDefault merges every file of KUBECONFIG, as kubectl does.
    kc.loadFromDefault();
    source = files.join(delimiter);
  }
  const cluster = kc.getCurrentCluster();
  if (!cluster) throw new Error(`the kubeconfig from ${source} has no current cluster`);
  return { kubeConfig: kc, source, server: cluster.server };
}
