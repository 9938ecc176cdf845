/** Answers one AdmissionRequest with the engine: the decision, the patch, and what to report about it. */
import {
  inject,
  injectAnnotationDecision,
  isEngineError,
  locate,
  type InjectorConfig,
  riskWarning,
  type Owner,
} from '../engine/index.js';
import { INJECT_ANNOTATION } from '../engine/names.js';
import { stringMap } from '../engine/workload.js';
import { answerKey, recordOf, type AdmissionRecord, type AnswerCache } from './answer-cache.js';
import { boundedWarnings } from './review.js';
import type { AdmissionRequest, AdmissionResponse } from './types.js';

type MaybePromise<T> = T | Promise<T>;

/** Where the handler gets what the engine needs; the server wires files or the cluster behind it. */
export interface AdmissionSources {
  /** The configuration in force. Throws an Error saying why when none can be had. */
  config(): InjectorConfig;
  /** The namespace's annotations; undefined when they cannot be known (no cluster). */
  namespaceAnnotations(namespace: string): MaybePromise<Record<string, string> | undefined>;
  /** The workload that owns a pod, if it can be resolved. */
  owner?(request: AdmissionRequest, pod: Record<string, unknown>): MaybePromise<Owner | undefined>;
  /** Answers already computed for objects that differ only in identity (the pods of a rollout). */
  answers?: AnswerCache;
}

export interface HandledAdmission {
  response: AdmissionResponse;
  /** The engine's record (without the patch when it was answered from the cache); absent when the request was refused before or by a failure. */
  result?: AdmissionRecord;
  /** The owner resolved for a pod, for metrics and events. */
  owner?: Owner;
  /** Set when handling failed: a stable code and the reason given to the API server. */
  failure?: { code: string; message: string };
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

function allow(uid: string, warnings?: string[]): AdmissionResponse {
  const response: AdmissionResponse = { uid, allowed: true };
  if (warnings && warnings.length > 0) response.warnings = warnings;
  return response;
}

const ownAnnotations = (object: Record<string, unknown>): Record<string, string> => {
  const metadata = object['metadata'];
  return stringMap(isObject(metadata) ? metadata['annotations'] : undefined);
};

/**
 * Whether an object can be admitted unchanged although it could not be evaluated. Without the configuration, only
 * objects that ask for injection need it. Without the namespace's annotations, any pod might be enabled (or
 * configured) by them, so only a pod that opts out itself is safe to admit; a Service only loses its opaque-ports
 * annotation.
 */
function safeToAdmitUnevaluated(kind: string, object: Record<string, unknown>, nsAnnotations: Record<string, string>, code: string): boolean {
  if (kind.toLowerCase() !== 'pod') return true;
  const own = ownAnnotations(object);
  if (code === 'NAMESPACE_UNKNOWN') return own[INJECT_ANNOTATION] === 'disabled';
  return injectAnnotationDecision('webhook', own, nsAnnotations).disabled;
}

/** The record of an evaluated admission; built field by field, since spreading an optional owner in cost more. */
function handled(response: AdmissionResponse, result: AdmissionRecord, owner: Owner | undefined): HandledAdmission {
  const out: HandledAdmission = { response, result };
  if (owner) out.owner = owner;
  return out;
}

/** Whether the annotations ask for the pod to be injected; other answers are cheaper to compute than to look up. */
function worthCaching(kind: string, object: Record<string, unknown>, nsAnnotations: Record<string, string>): boolean {
  return kind.toLowerCase() === 'pod' && !injectAnnotationDecision('webhook', ownAnnotations(object), nsAnnotations).disabled;
}

/**
 * Handles a CREATE of a Pod or Service as Linkerd's webhook does. A failure (configuration unreadable, no trust
 * anchors) denies only objects that ask for injection, with the reason; others are admitted unchanged, since they
 * need nothing from the configuration.
 */
export async function handleAdmission(request: AdmissionRequest, sources: AdmissionSources): Promise<HandledAdmission> {
  const uid = request.uid;
  const object = request.object;
  if (request.operation !== 'CREATE' || !isObject(object)) return { response: allow(uid) };
  const namespace = request.namespace ?? '';
  const kind = request.kind.kind;
  let nsAnnotations: Record<string, string> = {};
  let owner: Owner | undefined;
  try {
    // Awaited only when they are promises: a cached answer needs no turn of the event loop.
    const found = namespace ? sources.namespaceAnnotations(namespace) : undefined;
    nsAnnotations = (found instanceof Promise ? await found : found) ?? {};
    if (kind.toLowerCase() === 'pod' && sources.owner) {
      const resolved = sources.owner(request, object);
      owner = resolved instanceof Promise ? await resolved : resolved;
    }
    const config = sources.config();
    // Only pods that will be injected are worth a key: deciding to skip a pod costs less than writing its key.
    const key = sources.answers && worthCaching(kind, object, nsAnnotations) ? answerKey(kind, namespace, object, nsAnnotations, owner) : undefined;
    const cached = key !== undefined ? sources.answers?.get(config, key) : undefined;
    if (cached) {
      const result = { ...cached.result, name: locate(object, kind).name };
      const response = allow(uid, cached.warnings);
      if (cached.patch !== undefined) {
        response.patchType = 'JSONPatch';
        response.patch = cached.patch;
      }
      return handled(response, result, owner);
    }
    const result = inject({
      object,
      kind,
      namespace,
      namespaceAnnotations: nsAnnotations,
      origin: 'webhook',
      config,
      ...(owner && { owner }),
    });
    // kubectl prints warnings to whoever created the pod: the start-up risks belong there too.
    const warnings = boundedWarnings([...result.warnings, ...result.risks.map(riskWarning)]);
    const response = allow(uid, warnings);
    if (result.patch.length > 0) {
      response.patchType = 'JSONPatch';
      response.patch = Buffer.from(JSON.stringify(result.patch)).toString('base64');
    }
    if (key !== undefined) sources.answers?.set(config, key, { result: recordOf(result), patch: response.patch, warnings });
    return handled(response, result, owner);
  } catch (err) {
    const own = (err as { code?: unknown })?.code;
    const code = isEngineError(err) ? err.code : typeof own === 'string' ? own : 'HANDLER_ERROR';
    const message = err instanceof Error ? err.message : String(err);
    if (safeToAdmitUnevaluated(kind, object, nsAnnotations, code)) {
      return {
        response: allow(uid, [`proxy-injector could not evaluate this object (${message}); it does not ask for injection`]),
        failure: { code, message },
      };
    }
    return {
      response: { uid, allowed: false, status: { code: 500, message: `proxy-injector: ${message}` } },
      failure: { code, message },
      ...(owner && { owner }),
    };
  }
}
