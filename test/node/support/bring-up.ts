/**
 * Everything from a bare machine to a node running Linkerd's control plane and this injector: the Debian packages,
 * the binaries, the images, the cluster, Linkerd, the injector. The suite's global setup and the figures' benchmark
 * both start here; the caller stops the cluster.
 */
import { helmBinary } from '../../e2e/support/chart.js';
import { binaries, startCluster, type Cluster } from './cluster.js';
import type { NodeInfo } from './context.js';
import { REPO_ROOT, ensurePackages, log, waitForBenchLock } from './host.js';
import { appImage, importImages, linkerdControllerImage, linkerdProxyImage, pauseImage } from './images.js';
import { injectorImage } from './injector-image.js';
import { installInjector, type Injector } from './injector.js';
import { installLinkerd, type Linkerd } from './linkerd.js';

export interface Node {
  cluster: Cluster;
  linkerd: Linkerd;
  injector: Injector;
  info: NodeInfo;
  /** how long each phase took, for the log */
  phases: string[];
}

export async function bringUp(): Promise<Node> {
  const phases: string[] = [];
  let mark = Date.now();
  const phase = (name: string) => {
    const now = Date.now();
    phases.push(`${name} ${((now - mark) / 1000).toFixed(1)} s`);
    log(`${name}: ${((now - mark) / 1000).toFixed(1)} s`);
    mark = now;
  };

  await waitForBenchLock('building the node suite');
  phase('waiting for the benchmark lock');
  await ensurePackages();
  phase('Debian packages');
  const bins = await binaries(REPO_ROOT);
  helmBinary();
  phase('binaries (Kubernetes, CoreDNS, helm)');
  const app = await appImage();
  const images = [await pauseImage(), app, await linkerdControllerImage(), await linkerdProxyImage()];
  const injectorBuild = await injectorImage();
  phase('images');

  await waitForBenchLock('starting the cluster');
  phase('waiting for the benchmark lock');
  const cluster = await startCluster(bins);
  try {
    phase('node ready');
    await importImages(cluster.ctr, [...images, injectorBuild]);
    phase('images imported');
    const linkerd = await installLinkerd(cluster);
    phase('Linkerd installed');
    const injector = await installInjector(cluster, injectorBuild);
    phase('proxy-injector installed');
    const info: NodeInfo = {
      ...cluster.info,
      linkerdCharts: linkerd.charts,
      trustAnchorPem: linkerd.trustAnchorPem,
      injectorChart: injector.chart,
      injectorImage: injectorBuild,
      appTag: app.tag,
    };
    return { cluster, linkerd, injector, info, phases };
  } catch (err) {
    log(`set-up failed: ${(err as Error).message}`);
    if (process.env['KEEP_NODE'] !== '1') await cluster.stop().catch((stopErr: Error) => log(`stopping after the failed set-up: ${stopErr.message}`));
    throw err;
  }
}
