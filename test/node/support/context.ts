/**
 * What the global setup hands the test files: the one node, Linkerd and this injector on it, as plain data that each
 * file turns back into helpers. A reason instead when the suite cannot run here.
 */
import { inject } from 'vitest';
import { clusterHelpers, type Cluster, type ClusterInfo } from './cluster.js';
import type { InjectorImage } from './injector-image.js';
import { injectorHelpers, type Injector } from './injector.js';
import { linkerdHelpers, type Linkerd } from './linkerd.js';

export interface NodeInfo extends ClusterInfo {
  linkerdCharts: string;
  trustAnchorPem: string;
  injectorChart: string;
  injectorImage: InjectorImage;
  /** the tag of the suite's busybox image */
  appTag: string;
}

export type NodeContext = { skip: string } | { skip?: undefined; node: NodeInfo };

declare module 'vitest' {
  export interface ProvidedContext {
    node: NodeContext;
  }
}

export interface NodeHandles {
  cluster: Cluster;
  linkerd: Linkerd;
  injector: Injector;
  appTag: string;
}

/** The node for a test file, or the reason it cannot run (then the file's tests are skipped). */
export function useNode(): { skip: string } | ({ skip?: undefined } & NodeHandles) {
  const context = inject('node');
  if (context.skip !== undefined) return { skip: context.skip };
  const info = context.node;
  const cluster = clusterHelpers(info, () => Promise.reject(new Error('the global setup stops the node')));
  return {
    cluster,
    linkerd: linkerdHelpers(cluster, info.linkerdCharts, info.trustAnchorPem),
    injector: injectorHelpers(cluster, info.injectorChart, info.injectorImage),
    appTag: info.appTag,
  };
}

