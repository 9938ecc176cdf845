/** AdmissionReview types (admission.k8s.io v1 and v1beta1 share one JSON shape); no typings package provides them. */

export const SUPPORTED_API_VERSIONS = ['admission.k8s.io/v1', 'admission.k8s.io/v1beta1'] as const;
export type AdmissionApiVersion = (typeof SUPPORTED_API_VERSIONS)[number];

export interface GroupVersionKind {
  group: string;
  version: string;
  kind: string;
}

export interface GroupVersionResource {
  group: string;
  version: string;
  resource: string;
}

export interface UserInfo {
  username?: string;
  uid?: string;
  groups?: string[];
  extra?: Record<string, string[]>;
}

/** What the API server asks about: one operation on one object. */
export interface AdmissionRequest {
  /** Identifies this call; the response must carry it back. */
  uid: string;
  kind: GroupVersionKind;
  resource: GroupVersionResource;
  subResource?: string;
  requestKind?: GroupVersionKind;
  requestResource?: GroupVersionResource;
  requestSubResource?: string;
  /** Empty for objects whose name the API server generates later (generateName). */
  name?: string;
  namespace?: string;
  operation: 'CREATE' | 'UPDATE' | 'DELETE' | 'CONNECT';
  userInfo: UserInfo;
  object?: unknown;
  oldObject?: unknown;
  /** True when the request will not be persisted; a webhook must then have no side effects. */
  dryRun?: boolean;
  options?: unknown;
}

export interface StatusDetails {
  code?: number;
  message?: string;
  reason?: string;
}

/** The webhook's answer. */
export interface AdmissionResponse {
  uid: string;
  allowed: boolean;
  status?: StatusDetails;
  /** Base64 of the RFC 6902 patch bytes (written into the response JSON as it is: base64 needs no escaping). */
  patch?: string;
  patchType?: 'JSONPatch';
  auditAnnotations?: Record<string, string>;
  /** Shown to the client (kubectl prints them), at most a few short lines. */
  warnings?: string[];
}

export interface AdmissionReview {
  apiVersion: AdmissionApiVersion;
  kind: 'AdmissionReview';
  request?: AdmissionRequest;
  response?: AdmissionResponse;
}
