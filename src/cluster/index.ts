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
export {
  auditPods,
  POD_STATES,
  TO_ACT_ON,
  type AuditOptions,
  type PodAudit,
  type PodState,
  type PodsReport,
  type WorkloadAudit,
  type WorkloadDifference,
} from './pod-audit.js';
export { PodScan, countsOf, type PodScanCounts } from './pod-scan.js';
export { HEAL_ANNOTATION, HEALED_FOR_ANNOTATION, planHeal, runHeal, type HealOptions, type HealPlan, type HealResult, type HealStep } from './heal.js';
export { HealLoop, inWindow, parseHealWindow, type HealWindow } from './heal-loop.js';
export type { ConfigSource } from './config-source.js';
