/**
 * This injector as a user installs it: `helm install` of charts/proxy-injector (from the same commit as its image)
 * into a namespace of its own, image.repository and image.tag pointing at the image made from the Dockerfile and
 * imported into the node's containerd; everything else the chart's defaults (its securityContext included), Linkerd's
 * configuration read from the cluster's ConfigMaps as the chart sets it up.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { helmOn, release } from './helm.js';
import type { Cluster } from './cluster.js';
import { REPO_ROOT, run } from './host.js';
import type { InjectorImage } from './injector-image.js';
import { podsOf, promText, type Pod } from './workloads.js';

export const INJECTOR_NS = 'proxy-injector';
export const INJECTOR_RELEASE = 'proxy-injector';
export const INJECTOR_SELECTOR = 'app.kubernetes.io/name=proxy-injector';

export interface Injector {
  chart: string;
  image: InjectorImage;
  /** The running, ready injector pod (there is one replica). */
  pod(): Promise<Pod>;
  /** Its /metrics, read from the node at the pod's admin port. */
  metrics(): Promise<string>;
  /** `helm upgrade --reuse-values` of the release with these values (maps merge into the previous ones, lists replace). */
  upgrade(values: Record<string, unknown>): Promise<void>;
  revision(): Promise<number>;
  rollback(revision: number): Promise<void>;
  /** Runs the same commit's CLI on the node (the image's /app with the image's node). */
  cli(args: string[], options?: { input?: string }): Promise<{ code: number; stdout: string; stderr: string }>;
}

export async function installInjector(cluster: Cluster, image: InjectorImage): Promise<Injector> {
  const chartRoot = join(cluster.workDir, 'injector-chart');
  mkdirSync(chartRoot, { recursive: true });
  await run('sh', ['-c', 'git -C "$REPO" archive "$COMMIT" charts/proxy-injector | tar -x -C "$OUT"'], { env: { ...process.env, REPO: REPO_ROOT, COMMIT: image.commit, OUT: chartRoot } });
  const chart = join(chartRoot, 'charts', 'proxy-injector');
  await helmOn(cluster, ['install', INJECTOR_RELEASE, chart, '--namespace', INJECTOR_NS, '--create-namespace', '--wait', '--timeout', '3m'], {
    image: { repository: image.repository, tag: image.tag },
  });
  return injectorHelpers(cluster, chart, image);
}

/** Helpers on the installed release (its chart's copy and its image). */
export function injectorHelpers(cluster: Cluster, chart: string, image: InjectorImage): Injector {
  const pod = async (): Promise<Pod> => {
    const ready = (await podsOf(cluster, INJECTOR_NS, INJECTOR_SELECTOR)).filter(
      (p) => !p.metadata.deletionTimestamp && p.status.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'),
    );
    if (ready.length !== 1 || !ready[0]) throw new Error(`expected one ready injector pod, found ${ready.length}`);
    return ready[0];
  };
  return {
    chart,
    image,
    pod,
    metrics: async () => promText(`http://${(await pod()).status.podIP}:9995/metrics`),
    ...release(cluster, INJECTOR_RELEASE, INJECTOR_NS, chart),
    cli: async (args, options = {}) => {
      try {
        const stdout = await run(image.node, [join(image.app, 'dist', 'cli', 'main.js'), ...args], { cwd: image.app, ...(options.input !== undefined && { input: options.input }) });
        return { code: 0, stdout, stderr: '' };
      } catch (err) {
        const e = err as { code?: unknown; stdout?: string; stderr?: string };
        if (typeof e.code !== 'number') throw err;
        return { code: e.code, stdout: e.stdout ?? '', stderr: e.stderr ?? '' };
      }
    },
  };
}

