/** Validating an incoming AdmissionReview, and building the response and the review that answer it. */
import { clip, isObject } from '../engine/index.js';
import {
  SUPPORTED_API_VERSIONS,
  type AdmissionApiVersion,
  type AdmissionRequest,
  type AdmissionResponse,
} from './types.js';

/** A request the webhook cannot answer: the HTTP status and a one-line reason. */
export class ReviewError extends Error {
  override readonly name = 'ReviewError';
  constructor(
    readonly statusCode: 400 | 413 | 415,
    message: string,
  ) {
    super(message);
  }
}

export interface ParsedReview {
  apiVersion: AdmissionApiVersion;
  request: AdmissionRequest;
}

/**
 * Checks the envelope of a decoded AdmissionReview: a supported apiVersion, kind AdmissionReview, a request with a
 * uid, and an object to look at. Throws a ReviewError (HTTP 400) saying what is wrong.
 */
export function parseReview(body: unknown): ParsedReview {
  if (!isObject(body)) throw new ReviewError(400, 'the body is not a JSON object');
  const { apiVersion, kind, request } = body;
  if (!SUPPORTED_API_VERSIONS.includes(apiVersion as AdmissionApiVersion)) {
    throw new ReviewError(400, `unsupported apiVersion ${shown(apiVersion)}: expected one of ${SUPPORTED_API_VERSIONS.join(', ')}`);
  }
  if (kind !== 'AdmissionReview') {
    throw new ReviewError(400, `unsupported kind ${shown(kind)}: expected AdmissionReview`);
  }
  if (!isObject(request)) throw new ReviewError(400, 'the AdmissionReview has no request');
  if (typeof request['uid'] !== 'string' || request['uid'] === '') {
    throw new ReviewError(400, 'the AdmissionReview request has no uid');
  }
  if (!isObject(request['kind']) || typeof request['kind']['kind'] !== 'string') {
    throw new ReviewError(400, 'the AdmissionReview request has no kind');
  }
  if (request['object'] !== undefined && !isObject(request['object'])) {
    throw new ReviewError(400, 'the AdmissionReview request object cannot be decoded: it is not a JSON object');
  }
  // What is logged and counted of a request: kube-apiserver sends names it has validated, far shorter than these bounds.
  checkText(request['uid'], 'uid', MAX_UID_LENGTH);
  checkText(request['kind']['kind'], 'kind', MAX_NAME_LENGTH);
  checkText(request['operation'], 'operation', MAX_NAME_LENGTH);
  checkText(request['name'], 'name', MAX_NAME_LENGTH);
  const namespace = request['namespace'];
  checkText(namespace, 'namespace', MAX_NAMESPACE_LENGTH);
  if (typeof namespace === 'string' && namespace !== '' && !NAMESPACE_NAME.test(namespace)) {
    throw new ReviewError(400, `the AdmissionReview request namespace ${shown(namespace)} is not a namespace name`);
  }
  return { apiVersion: apiVersion as AdmissionApiVersion, request: request as unknown as AdmissionRequest };
}

/** A uid is a UUID; this leaves room for any other form a test or a proxy might use. */
const MAX_UID_LENGTH = 256;
/** An object name (a DNS subdomain), a kind, an operation. */
const MAX_NAME_LENGTH = 253;
/** A namespace name is a DNS label. */
const MAX_NAMESPACE_LENGTH = 63;
const NAMESPACE_NAME = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

/** A request field that, when present, must be a string of at most `max` characters. */
function checkText(value: unknown, field: string, max: number): void {
  if (value === undefined) return;
  if (typeof value !== 'string') throw new ReviewError(400, `the AdmissionReview request ${field} is not a string`);
  if (value.length > max) throw new ReviewError(400, `the AdmissionReview request ${field} is longer than ${max} characters`);
}

/** A value quoted in a refusal, at most 64 characters of it: what a client sent is named, not echoed back whole. */
function shown(value: unknown): string {
  if (typeof value !== 'string') return value === undefined ? 'none' : `of type ${value === null ? 'null' : typeof value}`;
  return value.length > 64 ? `${JSON.stringify(value.slice(0, 64))}...` : JSON.stringify(value);
}

/** Admits the object unchanged; the warnings, if any, are shown to whoever created it. */
export function allowed(uid: string, warnings?: string[]): AdmissionResponse {
  const response: AdmissionResponse = { uid, allowed: true };
  if (warnings && warnings.length > 0) response.warnings = warnings;
  return response;
}

/** Admits the object with a JSON patch (base64 of its bytes). */
export function patched(uid: string, patch: string, warnings?: string[]): AdmissionResponse {
  // Set on the allowed response rather than spread into a new one: this is on every injected admission's path.
  const response = allowed(uid, warnings);
  response.patchType = 'JSONPatch';
  response.patch = patch;
  return response;
}

/**
 * Refuses the object. The API server turns the status into the error its client sees; 500 says that the object is not
 * at fault but the injector could not answer for it.
 */
export function denied(uid: string, message: string, code = 500): AdmissionResponse {
  return { uid, allowed: false, status: { code, message } };
}

/** The JSON of a response's fields after its uid and before its patch (`,"allowed":...`). */
function fieldsBeforePatch(response: AdmissionResponse): string {
  let out = `,"allowed":${response.allowed}`;
  if (response.status !== undefined) out += `,"status":${JSON.stringify(response.status)}`;
  if (response.warnings !== undefined) out += `,"warnings":${JSON.stringify(response.warnings)}`;
  if (response.auditAnnotations !== undefined) out += `,"auditAnnotations":${JSON.stringify(response.auditAnnotations)}`;
  if (response.patchType !== undefined) out += `,"patchType":${JSON.stringify(response.patchType)}`;
  return out;
}

/**
 * The JSON of a response after its uid (`,"allowed":...}}`). Written directly: the patch is base64 (A-Z, a-z, 0-9, +,
 * /, =), which never needs escaping, so an answer of many kilobytes is not scanned character by character as
 * JSON.stringify of the whole review would do.
 */
function responseTail(response: AdmissionResponse): string {
  const fields = fieldsBeforePatch(response);
  return response.patch === undefined ? `${fields}}}` : `${fields},"patch":"${response.patch}"}}`;
}

/** The JSON of a review before its response's uid's closing: `{"apiVersion":...,"response":{"uid":"..."`. */
export const reviewHeadOf = (apiVersion: AdmissionApiVersion, uid: string): string =>
  `{"apiVersion":${JSON.stringify(apiVersion)},"kind":"AdmissionReview","response":{"uid":${JSON.stringify(uid)}`;

/** The JSON of the review that answers a request: the caller's apiVersion and kind, then the response. */
export function serializeReview(apiVersion: AdmissionApiVersion, response: AdmissionResponse): string {
  return reviewHeadOf(apiVersion, response.uid) + responseTail(response);
}

/**
 * The response's JSON after its uid, as bytes: what the cache keeps with an answer. The uid is all that differs between
 * the answers to the pods of one rollout, so each of them is then its head (`reviewHeadOf`) and these same bytes, not
 * a serialisation and an encoding of the whole patch again.
 */
export function encodeResponseTail(response: AdmissionResponse): Buffer {
  return Buffer.from(responseTail(response));
}

/** Kubernetes limits what it shows of warnings; keep each one short and their number small. */
export function boundedWarnings(warnings: readonly string[], max = 10, maxLength = 240): string[] | undefined {
  if (warnings.length === 0) return undefined;
  const clipped = warnings.slice(0, max).map((w) => clip(w, maxLength));
  if (warnings.length > max) clipped.push(`and ${warnings.length - max} more`);
  return clipped;
}
