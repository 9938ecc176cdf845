/**
 * helm for the node suite: the binary scripts/helm-binary.sh builds (or $HELM), run asynchronously, with values given
 * as one JSON document and helm's own directories in a temporary place. Nothing is added to the arguments: the
 * releases are Linkerd's and this injector's, installed as a user would.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { helmBinary } from '../../e2e/support/chart.js';
import { log, run } from './host.js';

export async function helm(args: string[], options: { kubeconfig: string; values?: unknown }): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), 'node-suite-helm-'));
  try {
    const all = [...args, '--kubeconfig', options.kubeconfig];
    if (options.values !== undefined) {
      writeFileSync(join(dir, 'values.json'), JSON.stringify(options.values));
      all.push('-f', join(dir, 'values.json'));
    }
    return await run(helmBinary(), all, {
      env: { ...process.env, HELM_CACHE_HOME: join(dir, 'cache'), HELM_CONFIG_HOME: join(dir, 'config'), HELM_DATA_HOME: join(dir, 'data') },
    });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** helm against a cluster, by its admin kubeconfig. */
export const helmOn = (cluster: { kubeconfigPath: string }, args: string[], values?: unknown): Promise<string> =>
  helm(args, { kubeconfig: cluster.kubeconfigPath, ...(values !== undefined && { values }) });

export interface Release {
  /** `helm upgrade --reuse-values`, each value set as JSON, waiting for the rollout. */
  upgrade(values: Record<string, unknown>): Promise<void>;
  /** The release's deployed revision. */
  revision(): Promise<number>;
  rollback(revision: number): Promise<void>;
}

/** A helm release on the cluster: upgrades (maps given here are merged into the previous values, lists replace), rollbacks. */
export function release(cluster: { kubeconfigPath: string }, name: string, namespace: string, chart: string): Release {
  const revision = async () => {
    const history = JSON.parse(await helmOn(cluster, ['history', name, '--namespace', namespace, '--output', 'json'])) as Array<{ revision: number; status: string }>;
    return Math.max(...history.filter((h) => h.status === 'deployed').map((h) => h.revision));
  };
  return {
    revision,
    upgrade: async (values) => {
      const args = ['upgrade', name, chart, '--namespace', namespace, '--reuse-values', '--wait', '--timeout', '5m'];
      for (const [key, value] of Object.entries(values)) args.push('--set-json', `${key}=${JSON.stringify(value)}`);
      const t = Date.now();
      await helmOn(cluster, args);
      log(`helm upgrade ${name} ${Object.keys(values).join(', ')}: ${((Date.now() - t) / 1000).toFixed(1)} s`);
    },
    rollback: async (to) => {
      await helmOn(cluster, ['rollback', name, String(to), '--namespace', namespace, '--wait', '--timeout', '5m']);
    },
  };
}
