/** Answers one AdmissionRequest with the engine: the decision, the patch, and what to report about it. */
import {
  inject,
  injectAnnotationDecision,
  isMirrorPod,
  isObject,
  locate,
  mapValue,
  names,
  riskWarning,
  runsOnWindows,
  type InjectorConfig,
  type KubernetesVersion,
  type Owner,
  type ResourceConstraints,
} from '../engine/index.js';
import { recordOf, type AdmissionRecord, type TemplateAnswerLru } from './template-answer-lru.js';
import type { ShadowInputs } from './shadow.js';
import { failureOf, type AdmissionFailure } from './failures.js';
import { ownerReferencesOf, type OwnerReference } from './owner-references.js';
import { allowed, boundedWarnings, denied, encodeResponseTail, patched, reviewHeadOf, serializeReview } from './review.js';
import type { AdmissionApiVersion, AdmissionRequest, AdmissionResponse } from './types.js';

type MaybePromise<T> = T | Promise<T>;

/** Where the handler gets what the engine needs; the server wires files or the cluster behind it. */
export interface AdmissionSources {
  /** The configuration in force. Throws an Error saying why when none can be had. */
  config(): InjectorConfig;
  /**
   * The namespace's annotations; undefined when they cannot be known (no cluster). `client` is the address the review
   * came from: reads that a review causes are budgeted per client.
   */
  namespaceAnnotations(namespace: string, client: string): MaybePromise<Record<string, string> | undefined>;
  /**
   * The namespace's labels that start-up risks read (its Pod Security level), when known; asked once its annotations
   * have been given. Undefined without a cluster.
   */
  namespaceLabels?(namespace: string): Record<string, string> | undefined;
  /**
   * The namespace's ResourceQuotas and LimitRanges, when it has any, with a version that changes when they do (answers
   * are cached under it). Undefined without a cluster.
   */
  namespaceConstraints?(namespace: string): (ResourceConstraints & { version: string }) | undefined;
  /** The API server's release, when known (read from its /version); undefined without a cluster. */
  kubernetesVersion?(): KubernetesVersion | undefined;
  /**
   * The workload that owns a pod, if it can be resolved; `client` as for namespaceAnnotations. The pod is given as its
   * name, generateName and the owner references that could name an object (see ownerReferencesOf), nothing else.
   */
  owner?(request: AdmissionRequest, pod: PodIdentity, client: string): MaybePromise<Owner | undefined>;
  /** Answers already computed for objects that differ only in identity (the pods of a rollout). */
  answers?: TemplateAnswerLru;
  /** Keep the app kubectl's default container when the proxy goes first (InjectionRequest.kubectlDefaultContainer). */
  kubectlDefaultContainer?: boolean;
}

/** What the owner source is given of a pod. */
export interface PodIdentity {
  metadata: { name?: string; generateName?: string; ownerReferences: OwnerReference[] };
}

/** What became of one request: the response, and what metrics, logs and events need to know about it. */
export type HandledAdmission =
  /** Not a CREATE, or nothing to look at: admitted unchanged without asking the engine. */
  | { kind: 'ignored'; response: AdmissionResponse }
  /**
   * The engine's record (without the patch when the answer came from the cache), the owner resolved for a pod, and,
   * for a pod that asked for injection, the response's JSON after its uid, encoded once and shared with the cache.
   * `shadow`, for a pod that already has a proxy, is what the answer was made of, for its shadow verdict.
   */
  | {
      kind: 'evaluated';
      response: AdmissionResponse;
      result: AdmissionRecord;
      owner?: Owner;
      responseTail?: Buffer;
      shadow?: ShadowInputs;
    }
  /** The object could not be evaluated: admitted unchanged when that is safe, denied with the reason otherwise. */
  | { kind: 'failed'; response: AdmissionResponse; failure: AdmissionFailure; owner?: Owner };

/**
 * The JSON of the review that answers a handled request: a cached answer is its head for this uid and the tail bytes it
 * shares with the cache, any other is serialised.
 */
export function answerBody(apiVersion: AdmissionApiVersion, uid: string, handled: HandledAdmission): string | Buffer {
  const tail = handled.kind === 'evaluated' ? handled.responseTail : undefined;
  return tail ? Buffer.concat([Buffer.from(reviewHeadOf(apiVersion, uid)), tail]) : serializeReview(apiVersion, handled.response);
}

/** The object's own inject annotation, alone: all that is read of its annotations before the engine reads them. */
const ownInjectAnnotation = (object: Record<string, unknown>): Record<string, string> => {
  const metadata = object['metadata'];
  const value = mapValue(isObject(metadata) ? metadata['annotations'] : undefined, names.INJECT_ANNOTATION);
  return value === undefined ? {} : { [names.INJECT_ANNOTATION]: value };
};

/**
 * Whether an object can be admitted unchanged although it could not be evaluated. Without the configuration, only
 * objects that ask for injection need it. Without the namespace's annotations, any pod might be enabled (or
 * configured) by them, so only a pod that opts out itself is safe to admit; a Service only loses its opaque-ports
 * annotation. A static pod's mirror and a Windows pod are never injected, so they are always safe.
 */
function safeToAdmitUnevaluated(kind: string, object: Record<string, unknown>, nsAnnotations: Record<string, string>, failure: AdmissionFailure): boolean {
  if (kind.toLowerCase() !== 'pod') return true;
  const metadata = object['metadata'];
  if (isMirrorPod(isObject(metadata) ? metadata['annotations'] : undefined)) return true;
  const spec = object['spec'];
  if (isObject(spec) && runsOnWindows(spec)) return true;
  const own = ownInjectAnnotation(object);
  if (failure.code === 'NAMESPACE_UNKNOWN') return own[names.INJECT_ANNOTATION] === names.INJECT_DISABLED;
  return injectAnnotationDecision('webhook', own, nsAnnotations).disabled;
}

/** The record of an evaluated admission; built field by field, since spreading an optional owner in cost more. */
function evaluated(response: AdmissionResponse, result: AdmissionRecord, owner: Owner | undefined, responseTail?: Buffer): Extract<HandledAdmission, { kind: 'evaluated' }> {
  const out: HandledAdmission = { kind: 'evaluated', response, result };
  if (owner) out.owner = owner;
  if (responseTail) out.responseTail = responseTail;
  return out;
}

/**
 * An evaluated admission of a pod that already has a proxy carries what its answer was made of, so that the server can
 * give the shadow verdict after answering; any other goes as it is. The owner is `null` when the admission had none, so
 * that the pod's label cannot stand in for it.
 */
function withShadow(
  handled: Extract<HandledAdmission, { kind: 'evaluated' }>,
  sources: AdmissionSources,
  config: InjectorConfig,
  namespace: string,
  namespaceAnnotations: Record<string, string>,
): HandledAdmission {
  const result = handled.result;
  if (result.kind !== 'pod' || !result.reasons.some((r) => r.code === 'sidecar_already_exists')) return handled;
  const owner = handled.owner ?? null;
  handled.shadow = { config, namespace, namespaceAnnotations, origin: 'webhook', owner };
  if (sources.kubectlDefaultContainer) handled.shadow.kubectlDefaultContainer = true;
  return handled;
}

/**
 * The controller of an object whose answer is worth a cache entry: a pod that a controller made (a pod created on its
 * own is never followed by its twin) and that asks to be injected (deciding to skip a pod costs less than writing its
 * key). Undefined for any other object.
 */
function cacheableController(kind: string, object: Record<string, unknown>, references: readonly OwnerReference[], nsAnnotations: Record<string, string>): string | undefined {
  if (kind.toLowerCase() !== 'pod') return undefined;
  const controller = references.find((ref) => ref.controller);
  if (!controller || injectAnnotationDecision('webhook', ownInjectAnnotation(object), nsAnnotations).disabled) return undefined;
  return controller.uid;
}

/** Where a review came from, and how large it was. */
export interface ReviewContext {
  /** The address it came from (reads it causes are budgeted by it); empty when unknown. */
  client?: string;
  /** The bytes of its body: a review whose key could never be kept is not keyed (serialising it would be wasted). */
  bodyBytes?: number;
}

/**
 * Handles a CREATE of a Pod or Service as Linkerd's webhook does. A failure (configuration unreadable, no trust
 * anchors) denies only objects that ask for injection, with the reason; others are admitted unchanged, since they
 * need nothing from the configuration.
 */
export async function handleAdmission(request: AdmissionRequest, sources: AdmissionSources, context: ReviewContext = {}): Promise<HandledAdmission> {
  const object = request.object;
  if (request.operation !== 'CREATE' || !isObject(object)) return { kind: 'ignored', response: allowed(request.uid) };
  const client = context.client ?? '';
  const owners = ownerReferencesOf(object);
  let nsAnnotations: Record<string, string> = {};
  let owner: Owner | undefined;
  try {
    const namespace = request.namespace;
    nsAnnotations = (namespace ? await sources.namespaceAnnotations(namespace, client) : undefined) ?? {};
    owner = await ownerOf(request, object, owners.references, sources, client);
    return evaluate(request, object, owners, sources, nsAnnotations, owner, context);
  } catch (err) {
    return failed(request, object, nsAnnotations, owner, err);
  }
}

/** The owner references of an object, and what to say of those ignored. */
type VettedOwners = ReturnType<typeof ownerReferencesOf>;

/** The workload that owns a pod, from the sources; none for other kinds or without an owner source. */
function ownerOf(
  request: AdmissionRequest,
  object: Record<string, unknown>,
  references: OwnerReference[],
  sources: AdmissionSources,
  client: string,
): MaybePromise<Owner | undefined> {
  if (request.kind.kind.toLowerCase() !== 'pod' || !sources.owner) return undefined;
  const metadata = isObject(object['metadata']) ? object['metadata'] : {};
  const { name, generateName } = metadata;
  const pod: PodIdentity = {
    metadata: { ...(typeof name === 'string' && { name }), ...(typeof generateName === 'string' && { generateName }), ownerReferences: references },
  };
  return sources.owner(request, pod, client);
}

/** The engine's answer for an object whose namespace annotations and owner are known, from the cache when it has it. */
function evaluate(
  request: AdmissionRequest,
  object: Record<string, unknown>,
  owners: VettedOwners,
  sources: AdmissionSources,
  nsAnnotations: Record<string, string>,
  owner: Owner | undefined,
  context: ReviewContext,
): HandledAdmission {
  const uid = request.uid;
  const namespace = request.namespace ?? '';
  const kind = request.kind.kind;
  const config = sources.config();
  const nsLabels = namespace && sources.namespaceLabels ? sources.namespaceLabels(namespace) : undefined;
  const constraints = namespace && sources.namespaceConstraints ? sources.namespaceConstraints(namespace) : undefined;
  const kubernetesVersion = sources.kubernetesVersion?.();
  const answers = sources.answers;
  const keyable = answers !== undefined && (context.bodyBytes === undefined || answers.mayKeep(context.bodyBytes));
  const controller = keyable ? cacheableController(kind, object, owners.references, nsAnnotations) : undefined;
  const key =
    answers && controller !== undefined && answers.seenBefore(controller)
      ? answers.key(config, { kind, namespace, object, namespaceAnnotations: nsAnnotations, namespaceLabels: nsLabels, constraintsVersion: constraints?.version, kubernetesVersion, owner })
      : undefined;
  const cached = key !== undefined ? answers?.find(key) : undefined;
  const answer = (handled: Extract<HandledAdmission, { kind: 'evaluated' }>): HandledAdmission => withShadow(handled, sources, config, namespace, nsAnnotations);
  if (cached) {
    const result = { ...cached.result, name: locate(object, kind).name };
    const response = cached.patch !== undefined ? patched(uid, cached.patch, cached.warnings) : allowed(uid, cached.warnings);
    return answer(evaluated(response, result, owner, cached.responseTail));
  }
  const result = inject({
    object,
    kind,
    namespace,
    namespaceAnnotations: nsAnnotations,
    origin: 'webhook',
    config,
    ...(owner && { owner }),
    ...(nsLabels && { namespaceLabels: nsLabels }),
    ...(constraints && { resourceConstraints: constraints }),
    ...(kubernetesVersion && { kubernetesVersion }),
    ...(sources.kubectlDefaultContainer && { kubectlDefaultContainer: true }),
  });
  // kubectl prints warnings to whoever created the pod: the ignored owner references and start-up risks belong there too.
  const warnings = boundedWarnings([...owners.warnings, ...result.warnings, ...result.risks.map(riskWarning)]);
  const patch = result.patch.length > 0 ? Buffer.from(JSON.stringify(result.patch)).toString('base64') : undefined;
  const response = patch !== undefined ? patched(uid, patch, warnings) : allowed(uid, warnings);
  if (!answers || key === undefined) return answer(evaluated(response, result, owner));
  const responseTail = encodeResponseTail(response);
  answers.keep(key, { result: recordOf(result), patch, warnings, responseTail });
  return answer(evaluated(response, result, owner, responseTail));
}

/** An object that could not be evaluated: admitted unchanged when that is safe, denied with the reason otherwise. */
function failed(request: AdmissionRequest, object: Record<string, unknown>, nsAnnotations: Record<string, string>, owner: Owner | undefined, err: unknown): HandledAdmission {
  const failure = failureOf(err);
  if (safeToAdmitUnevaluated(request.kind.kind, object, nsAnnotations, failure)) {
    const warning = `proxy-injector could not evaluate this object (${failure.message}); it does not ask for injection`;
    return { kind: 'failed', response: allowed(request.uid, [warning]), failure };
  }
  return { kind: 'failed', response: denied(request.uid, `proxy-injector: ${failure.message}`), failure, ...(owner && { owner }) };
}

/** The smallest pod that asks for injection: it needs the configuration and nothing of its own, namespace or owner. */
const CANARY_POD = {
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name: 'canary', namespace: 'default', annotations: { [names.INJECT_ANNOTATION]: names.INJECT_ENABLED } },
  spec: { containers: [{ name: 'app', image: 'app' }] },
};
const CANARY: AdmissionRequest = {
  uid: 'canary',
  kind: { group: '', version: 'v1', kind: 'Pod' },
  resource: { group: '', version: 'v1', resource: 'pods' },
  namespace: 'default',
  operation: 'CREATE',
  userInfo: {},
  object: CANARY_POD,
};

/** The canary's denial under each configuration object (`null`: injected); a new configuration is a new object. */
const canaryDenials = new WeakMap<InjectorConfig, AdmissionFailure | null>();

/**
 * Why the handler denies every pod that asks for injection now (no configuration loaded, no trust anchors...), or
 * undefined when it injects them. It is the handler's own answer for the smallest such pod, from the same source of
 * configuration, so that what /ready, the metrics and the log say cannot drift from what admissions get.
 */
export function injectionDenial(sources: Pick<AdmissionSources, 'config'>): AdmissionFailure | undefined {
  let config: InjectorConfig;
  try {
    config = sources.config();
  } catch (err) {
    return deniedCanary(err);
  }
  let denial = canaryDenials.get(config);
  if (denial === undefined) {
    const pinned = { config: () => config, namespaceAnnotations: () => undefined };
    try {
      evaluate(CANARY, CANARY_POD, ownerReferencesOf(CANARY_POD), pinned, {}, undefined, {});
      denial = null;
    } catch (err) {
      denial = deniedCanary(err) ?? null;
    }
    canaryDenials.set(config, denial);
  }
  return denial ?? undefined;
}

/** The failure the canary is denied with for `err`, as `failed` decides it; undefined when `failed` admits it. */
function deniedCanary(err: unknown): AdmissionFailure | undefined {
  const handled = failed(CANARY, CANARY_POD, {}, undefined, err);
  return handled.kind === 'failed' && !handled.response.allowed ? handled.failure : undefined;
}
