/** Builders for AdmissionReviews as kube-apiserver sends them, and decoding what the webhook returns. */
import { randomUUID } from 'node:crypto';
import type { AdmissionApiVersion, AdmissionResponse, AdmissionReview } from '../../src/admission/types.js';
import type { AddOperation } from '../../src/engine/patch.js';

export interface ReviewOptions {
  apiVersion?: string;
  namespace?: string;
  kind?: string;
  dryRun?: boolean;
  operation?: string;
  uid?: string;
}

export function admissionReview(object: unknown, opts: ReviewOptions = {}): Record<string, any> {
  const kind = opts.kind ?? 'Pod';
  return {
    apiVersion: opts.apiVersion ?? 'admission.k8s.io/v1',
    kind: 'AdmissionReview',
    request: {
      uid: opts.uid ?? randomUUID(),
      kind: { group: '', version: 'v1', kind },
      resource: { group: '', version: 'v1', resource: `${kind.toLowerCase()}s` },
      requestKind: { group: '', version: 'v1', kind },
      namespace: opts.namespace ?? 'shop',
      operation: opts.operation ?? 'CREATE',
      userInfo: { username: 'system:serviceaccount:kube-system:replicaset-controller' },
      object,
      oldObject: null,
      dryRun: opts.dryRun ?? false,
      options: { apiVersion: 'meta.k8s.io/v1', kind: 'CreateOptions' },
    },
  };
}

/** The review that answers a request, as an object: the caller's apiVersion and kind, and the response. */
export function reviewResponse(apiVersion: AdmissionApiVersion, response: AdmissionResponse): AdmissionReview {
  return { apiVersion, kind: 'AdmissionReview', response };
}

/** The JSON patch inside an AdmissionReview response, decoded from base64. */
export function decodedPatch(review: Record<string, any>): AddOperation[] {
  const patch = review['response']?.['patch'];
  return typeof patch === 'string' ? (JSON.parse(Buffer.from(patch, 'base64').toString('utf8')) as AddOperation[]) : [];
}
