/** The cluster behind the admission sources: the Linkerd configuration, namespace annotations, owners and events. */
export {
  createContext,
  eventFor,
  misplacedEventFor,
  riskEventFor,
  LINKERD_TRUST_ROOTS_PATH,
  LINKERD_VALUES_PATH,
  type ClusterMetrics,
  type ContextOptions,
  type EventPolicy,
  type InjectorContext,
} from './context.js';
export { connectToCluster, type ClusterConnection } from './kubeconfig.js';
export { listAll, listPages } from './list.js';
export { apiErrorMessage } from './api.js';
export { FileConfigSource, type FileConfigOptions } from './config-files.js';
export { readLinkerdConfig } from './linkerd-config.js';
export type { ConfigSource } from './config-source.js';
