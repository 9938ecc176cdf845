/** The injection engine: pure functions from an object and the Linkerd configuration to a decision and a patch. */
export { inject, podPatch, opaquePortsPatch, prepareConfig, trustRootSha256 } from './inject.js';
export type {
  Added,
  InjectionRequest,
  InjectionResult,
  InjectorConfig,
  Outcome,
  Owner,
  PodPatch,
  PodPatchInput,
  PreparedConfig,
  ProxyMode,
} from './inject.js';
export { SKIP_REASON_TEXT, injectAnnotationDecision, hasExistingSidecar, isMirrorPod, runsOnWindows } from './decision.js';
export type { AnnotationAt, Origin, SkipReason, SkipReasonCode } from './decision.js';
export { EngineError, isEngineError } from './errors.js';
export type { EngineErrorCode } from './errors.js';
export { DEFAULT_LINKERD_VERSION, defaultValues, linkerdVersionMismatch, loadValues, mergeValues, withTrustAnchors } from './values.js';
export { checkTrustAnchors, withCheckedTrustAnchors } from './trust-anchors.js';
export type { LinkerdValues } from './values.js';
export { iptablesPlan } from './iptables.js';
export type { IptablesPlan } from './iptables.js';
export { escapePointer } from './patch.js';
export type { AddOperation } from './patch.js';
export { WORKLOAD_KINDS, locate, templatePrefix } from './workload.js';
export { podDrift, type DocumentedDifference, type Drift, type DriftKind, type DriftRequest, type DriftVerdict } from './drift.js';
export { ignoredAnnotation } from './overrides.js';
export { uninject, type RemoveOperation, type Removed, type Uninjected, type UninjectOptions } from './uninject.js';
export type { WorkloadKind } from './workload.js';
export * as names from './names.js';
export { copyPlain, isObject, objectsIn, selects, setOwn } from './k8s.js';
export type { Container, Json, LabelSelector, PodSpec, PodTemplate } from './k8s.js';
export { isWorkloadKind, mapValue, misplacedText, objectName, stringMap, templateAnnotationsPath } from './workload.js';
export { addMapEntries } from './patch.js';
export { clip, compareCodeUnits, lineAt, oneLine } from './text.js';
export { parseGoDuration } from './parsers.js';
export { INBOUND_POLICIES, OVERRIDE_RULES, overrideRule, refusal } from './override-rules.js';
export type { OverrideRule, ParseContext, Parsed } from './override-rules.js';
export { startupRisks, riskWarning, runAsUser } from './risks.js';
export { parseKubernetesVersion, serverVersionOf, versionText, type KubernetesVersion } from './kubernetes-version.js';
export { quotaRisks } from './quota.js';
export { POD_SECURITY_LEVELS, podSecurityLabels, type PodSecurityDefaults } from './pod-security.js';
export type { ResourceConstraints } from './quota.js';
export type { StartupRisk, StartupRiskCode, StartupRiskInput } from './risks.js';
