/** Admission: an AdmissionReview in, the engine's answer out, with what metrics, logs and events need to know. */
export { answerBody, handleAdmission, injectionDenial, type AdmissionSources, type HandledAdmission, type PodIdentity } from './handler.js';
export { MAX_SHADOW_BYTES, shadowVerdict, type ShadowInputs, type ShadowVerdict, type ShadowVerdictName } from './shadow.js';
export { ownerReferencesOf, type OwnerReference } from './owner-references.js';
export { TemplateAnswerLru, type CachedAnswer } from './template-answer-lru.js';
export {
  ADMISSION_FAILURE_CODES,
  SourceUnavailableError,
  failureOf,
  isSourceUnavailable,
  type AdmissionFailure,
  type AdmissionFailureCode,
  type SourceFailureCode,
} from './failures.js';
export { ReviewError, allowed, boundedWarnings, denied, parseReview, patched, encodeResponseTail, reviewHeadOf, serializeReview, type ParsedReview } from './review.js';
export type {
  AdmissionApiVersion,
  AdmissionRequest,
  AdmissionResponse,
  AdmissionReview,
  GroupVersionKind,
  GroupVersionResource,
  UserInfo,
} from './types.js';
export { SUPPORTED_API_VERSIONS } from './types.js';
