/**
 * `proxy-injector inject`: Linkerd's `inject` on manifests. The annotation that asks for injection by default, the
 * whole proxy with --manual; uninjected first either way, so running it again changes nothing.
 */
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import {
  SKIP_REASON_TEXT,
  checkTrustAnchors,
  defaultValues,
  inject,
  isEngineError,
  loadValues,
  locate,
  uninject,
  withTrustAnchors,
  type InjectionResult,
  type InjectorConfig,
  type LinkerdValues,
  type SkipReasonCode,
  DEFAULT_LINKERD_VERSION,
  addMapEntries,
  copyPlain,
  setOwn,
  isObject,
  isWorkloadKind,
  names,
  objectName,
  objectsIn,
  stringMap,
  type Json,
  type PodTemplate,
} from '../engine/index.js';
import {
  INJECT_HELP,
  annotationsFor,
  flagAnnotations,
  parseManifestArgs,
  type FlagAnnotations,
  type ParsedOptions,
} from './inject-flags.js';
import {
  failure,
  inputFailure,
  outputFormat,
  outputResult,
  runOnProcess,
  UsageError,
  usageFailure,
  type CliIo,
  type CliResult,
} from './command-io.js';
import { applyToValue, InputError, transformInputs, type ObjectChange, type OutputFormat, type PatchOp } from '../manifests/index.js';
import { packageRoot } from './package-info.js';
import { inputReader } from './remote-inputs.js';
import { CHECKS, FAIL, OK, WARN, renderReport, type Check, type ObjectReport } from './report.js';

const { ANNOTATIONS, CONTROL_PLANE_COMPONENT_LABEL, INJECT_ANNOTATION, INJECT_DISABLED, INJECT_ENABLED, INJECT_INGRESS } = names;

export type { CliIo, CliResult } from './command-io.js';

/** The demo root shipped with the package, used when no trust anchors are configured. */
export const DEMO_TRUST_ANCHORS = join('examples', 'trust-anchors.pem');

/**
 * Skip reasons that make manual injection fail: those `linkerd inject` fails on, and mirror and Windows pods, which it
 * injects into pods that the API server refuses or that cannot run. UDP only warns.
 */
const HARD_REASONS = new Set<SkipReasonCode>([
  'host_network_enabled',
  'sidecar_already_exists',
  'disabled_automount_service_account_token_account',
  'mirror_pod',
  'windows_pod',
]);

interface Settings {
  manual: boolean;
  flags: FlagAnnotations;
  config: InjectorConfig;
  /** linkerd-init's xtables lock volume, whatever the values call it. */
  xtablesVolume: string;
}

/** JSON values as Go prints a manifest: map entries that are null are left out (`resources: null` of the proxy). */
function withoutNulls(value: Json): Json {
  // Most values have no null entry: they are kept as they are instead of copied.
  if (!hasNullEntry(value)) return value;
  if (Array.isArray(value)) return value.map(withoutNulls);
  if (isObject(value)) {
    const out: { [key: string]: Json } = {};
    for (const [k, v] of Object.entries(value)) if (v !== null) setOwn(out, k, withoutNulls(v as Json));
    return out;
  }
  return value;
}

function hasNullEntry(value: Json): boolean {
  if (Array.isArray(value)) return value.some(hasNullEntry);
  if (!isObject(value)) return false;
  for (const v of Object.values(value)) if (v === null || hasNullEntry(v as Json)) return true;
  return false;
}

/** `add` operations for annotations under `<path>`, creating the metadata and the map when missing. */
export function annotationOps(owner: Record<string, unknown>, path: string, entries: Record<string, string>): PatchOp[] {
  if (Object.keys(entries).length === 0) return [];
  const metadata = owner['metadata'];
  const ops: PatchOp[] = [];
  if (!isObject(metadata)) ops.push({ op: 'add', path, value: {} });
  const annotations = isObject(metadata) ? metadata['annotations'] : undefined;
  ops.push(...addMapEntries(`${path}/annotations`, entries, isObject(annotations)));
  return ops;
}

/** The annotations written, as the report lists them: `key: value, ...`. */
function listed(entries: Record<string, string>): string {
  return Object.entries(entries)
    .map(([k, v]) => `${k}: ${v}`)
    .join(', ');
}

/** A document that is a list or a scalar: not something `kubectl apply` would take either. */
export function notAnObject(value: unknown): ObjectChange<ObjectReport> {
  return { ops: [], failed: true, report: { kind: 'document', name: '', status: 'failed', detail: notAnObjectText(value), checks: [] } };
}

/** Why a document that is not a map is no Kubernetes object, naming what it is. */
export function notAnObjectText(value: unknown): string {
  const what = Array.isArray(value) ? 'a list' : ['string', 'number', 'boolean'].includes(typeof value) ? `a ${typeof value}` : 'not a map';
  return `not a Kubernetes object (${what})`;
}

/**
 * Why a pod template without containers of its own is no pod to inject: injected, it would run the proxy alone, and
 * the API server would accept it, where it refuses the pod without containers as written (a `spec` mis-indented, or
 * left out by a template that was not rendered).
 */
export function noContainersText(kind: string, template: PodTemplate): string | undefined {
  const spec = isObject(template.spec) ? template.spec : undefined;
  if (objectsIn(spec?.containers).length > 0) return undefined;
  const what = kind === 'pod' ? 'the pod' : 'the pod template';
  return `${what} has no ${spec ? 'containers' : 'spec'}: injected, it would run the proxy alone; give it its containers`;
}

function checksOf(result: InjectionResult): Check[] {
  return CHECKS.map(({ code, pass }): Check => {
    if (code === 'udp') {
      if (!result.udp) return { mark: OK, text: pass };
      return { mark: WARN, text: `${SKIP_REASON_TEXT.udp_ports_enabled}: UDP traffic does not go through the proxy` };
    }
    const failed = result.reasons.find((r) => r.code === code);
    return failed ? { mark: HARD_REASONS.has(code) ? FAIL : WARN, text: failed.text } : { mark: OK, text: pass };
  });
}

/** What `inject` does to one object. */
export function injectObject(object: unknown, s: Settings): ObjectChange<ObjectReport> {
  if (!isObject(object)) return notAnObject(object);
  const kind = typeof object['kind'] === 'string' ? object['kind'].toLowerCase() : '';
  const name = objectName(object);
  const report: ObjectReport = { kind, name, status: 'unchanged', checks: [] };
  if (kind === '') return { ops: [], failed: false, report };

  const undone = uninject(object, { volumes: [s.xtablesVolume] });
  const base = applyToValue(copyPlain(object), undone.patch);
  const ops: PatchOp[] = [...undone.patch];
  const done = (status: ObjectReport['status'], detail?: string): ObjectChange<ObjectReport> => ({
    ops,
    failed: false,
    report: { ...report, status, ...(detail !== undefined && { detail }) },
  });
  const fail = (detail: string, checks: Check[] = []): ObjectChange<ObjectReport> => ({
    ops: [],
    failed: true,
    report: { ...report, status: 'failed', detail, checks },
  });
  const injectValue = s.flags.ingress ? INJECT_INGRESS : INJECT_ENABLED;

  if (kind === 'namespace') {
    const own = stringMap(isObject(base['metadata']) ? base['metadata']['annotations'] : undefined);
    // Linkerd would overwrite an explicit opt-out; a namespace that says disabled is left as it says.
    if (own[INJECT_ANNOTATION] === INJECT_DISABLED) return done('skipped', `annotated ${INJECT_ANNOTATION}: ${INJECT_DISABLED}`);
    const inherited = annotationsFor(s.flags, own, 'namespace');
    ops.push(...annotationOps(base, '/metadata', { ...inherited, [INJECT_ANNOTATION]: injectValue }));
    return done('annotated', listed({ [INJECT_ANNOTATION]: injectValue, ...inherited }));
  }
  if (kind === 'service') {
    // As Linkerd does, --opaque-ports is recorded on Services too: clients read it there.
    const own = stringMap(isObject(base['metadata']) ? base['metadata']['annotations'] : undefined);
    const ports = annotationsFor(s.flags, own, 'template')[ANNOTATIONS.opaquePorts];
    if (ports !== undefined) {
      ops.push(...annotationOps(base, '/metadata', { [ANNOTATIONS.opaquePorts]: ports }));
      return done('annotated', `${ANNOTATIONS.opaquePorts}: ${ports}`);
    }
    return done(ops.length > 0 ? 'uninjected' : 'unchanged', 'no opaque ports to record');
  }
  if (!isWorkloadKind(kind)) {
    return done(ops.length > 0 ? 'uninjected' : 'unchanged', 'not a workload');
  }

  let located;
  try {
    located = locate(base);
  } catch (err) {
    if (isEngineError(err)) return fail(err.message);
    throw err;
  }
  const template = located.template ?? {};
  const templateMeta = isObject(template.metadata) ? template.metadata : {};
  const own = stringMap(templateMeta.annotations);
  if (own[INJECT_ANNOTATION] === INJECT_DISABLED) {
    return done('skipped', SKIP_REASON_TEXT.injection_disable_annotation_present);
  }
  if (!s.manual && CONTROL_PLANE_COMPONENT_LABEL in stringMap(templateMeta.labels)) {
    return fail('--manual must be set when injecting control plane components');
  }
  const requested = annotationsFor(s.flags, own, 'template');
  if (s.flags.ingress || !s.manual) requested[INJECT_ANNOTATION] = injectValue;
  const templateOps = annotationOps(template as Record<string, unknown>, `${located.prefix}/metadata`, requested);
  const flagged = applyToValue(base, templateOps);

  let result: InjectionResult;
  try {
    result = inject({ object: flagged, origin: 'cli', config: s.config });
  } catch (err) {
    if (isEngineError(err)) return fail(err.message);
    throw err;
  }
  const checks = [
    ...checksOf(result),
    ...result.warnings.map((w): Check => ({ mark: WARN, text: w })),
    ...result.risks.map((r): Check => ({ mark: WARN, text: `${r.text}; fix: ${r.fix}` })),
  ];
  const hard = result.reasons.filter((r) => HARD_REASONS.has(r.code));
  if (hard.length > 0) return fail(hard.map((r) => r.text).join(', '), checks);
  // Refused with --manual, which would write the proxy-only pod out; only said when just the annotation is added.
  const empty = noContainersText(kind, template);
  if (empty !== undefined && s.manual) return fail(empty, checks);
  if (empty !== undefined) checks.push({ mark: WARN, text: empty });
  report.checks = checks;
  ops.push(...templateOps);
  if (!s.manual) return done('annotated', listed({ [INJECT_ANNOTATION]: injectValue, ...requested }));
  const patch = result.patch.map((o): PatchOp => ({ ...o, value: withoutNulls(o.value) }));
  ops.push(...patch);
  return done('injected', Object.keys(requested).length > 0 ? `annotated ${listed(requested)}` : undefined);
}

function readConfigFile(cwd: string, file: string, what: string): string {
  try {
    return readFileSync(resolve(cwd, file), 'utf8');
  } catch (err) {
    throw new InputError(`${what} ${file}: ${(err as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file' : (err as Error).message}`);
  }
}

/**
 * Said once when the proxy is rendered from the embedded defaults: they follow the seed documents (a classic sidecar
 * held by linkerd-await, iptables-legacy), where the Linkerd release they name installs a native sidecar and nft.
 */
export const EMBEDDED_DEFAULTS_NOTE =
  'no --values: using the embedded defaults (a classic sidecar held back by linkerd-await, iptables-legacy), while ' +
  `Linkerd ${DEFAULT_LINKERD_VERSION}'s chart defaults to a native sidecar and iptables-nft; for your cluster's configuration give ` +
  "--values <(kubectl get configmap -n linkerd linkerd-config -o jsonpath='{.data.values}')";

/** A --values file merged over the defaults; what is wrong with it is said after the file's name. */
export function valuesFile(cwd: string, file: string): LinkerdValues {
  const text = readConfigFile(cwd, file, '--values');
  try {
    return loadValues(text);
  } catch (err) {
    if (isEngineError(err)) throw new InputError(`--values ${file}: ${err.message}`);
    throw err;
  }
}

export interface Configured {
  values: LinkerdValues;
  warnings: string[];
}

/** Values (embedded or --values) with the trust anchors from --trust-anchors, the values, or the demo root. */
export function configure(opts: ParsedOptions, cwd: string, manual: boolean): Configured {
  let values = typeof opts['values'] === 'string' ? valuesFile(cwd, opts['values']) : defaultValues();
  const warnings: string[] = [];
  if (typeof opts['values'] !== 'string' && manual) warnings.push(EMBEDDED_DEFAULTS_NOTE);
  const anchorsFile = opts['trust-anchors'];
  if (typeof anchorsFile === 'string') {
    const pem = readConfigFile(cwd, anchorsFile, '--trust-anchors');
    if (pem.trim() === '') throw new InputError(`--trust-anchors ${anchorsFile}: the file is empty`);
    checkTrustAnchors(pem, `--trust-anchors ${anchorsFile}`);
    values = withTrustAnchors(values, pem);
  } else if (values.identityTrustAnchorsPEM.trim() !== '') {
    // Only --values can give anchors here: the embedded defaults have none.
    checkTrustAnchors(values.identityTrustAnchorsPEM, `identityTrustAnchorsPEM in --values ${String(opts['values'])}`);
  } else {
    let demo: string;
    try {
      demo = readFileSync(join(packageRoot, DEMO_TRUST_ANCHORS), 'utf8');
    } catch {
      // Without --manual the proxy is not rendered here, so no anchors are needed (the engine only decides).
      if (manual) throw new InputError('no trust anchors: give --trust-anchors FILE, or identityTrustAnchorsPEM in --values');
      demo = 'unused: annotation-only injection renders no proxy';
    }
    values = withTrustAnchors(values, demo);
    if (manual) {
      warnings.push(
        'no trust anchors given (--trust-anchors, or identityTrustAnchorsPEM in --values): ' +
          `using the demo root ${DEMO_TRUST_ANCHORS}; the injected proxies will not get a usable identity`,
      );
    }
  }
  return { values, warnings };
}

/** Runs `inject` with the given arguments; nothing is written anywhere, the caller prints the result. */
export async function runInject(argv: readonly string[], io: CliIo = {}): Promise<CliResult> {
  const cwd = io.cwd ?? process.cwd();
  let opts: ParsedOptions;
  let inputs: string[];
  let format: OutputFormat;
  try {
    ({ opts, inputs } = parseManifestArgs(argv));
    if (opts['help'] === true) return { stdout: INJECT_HELP, stderr: '', code: 0 };
    format = outputFormat(opts['output']);
    if (inputs.length === 0) throw new UsageError('no input: give files, directories, or - for stdin');
  } catch (err) {
    return usageFailure('inject', (err as Error).message, INJECT_HELP);
  }
  const manual = opts['manual'] === true;
  let configured: Configured;
  let flags: FlagAnnotations;
  try {
    configured = configure(opts, cwd, manual);
    flags = flagAnnotations(opts, configured.values, process.env);
  } catch (err) {
    if (err instanceof UsageError) return usageFailure('inject', err.message, INJECT_HELP);
    if (err instanceof InputError || isEngineError(err)) return failure('inject', err.message);
    throw err;
  }

  const settings: Settings = {
    manual,
    flags,
    config: { values: configured.values, controlPlaneNamespace: (opts['linkerd-namespace'] as string | undefined) || 'linkerd' },
    xtablesVolume: configured.values.proxyInit.xtMountPath.name,
  };
  let outcome;
  try {
    outcome = await transformInputs(inputs, inputReader(io, cwd), format, (object) => injectObject(object, settings));
  } catch (err) {
    if (err instanceof InputError) return inputFailure('inject', err);
    throw err;
  }
  const injected = outcome.reports.some((r) => r.status === 'injected');
  const warnings = [...flags.notes, ...(injected ? configured.warnings : []), ...outcome.warnings];
  const stderr = renderReport('inject', warnings, outcome.reports, opts['verbose'] === true);
  if (outcome.failed) return { stdout: '', stderr, code: 1 };
  return outputResult(outcome.output, stderr);
}

/** `proxy-injector inject` on the process's stdin, stdout and stderr. */
export async function runInjectCommand(args: string[]): Promise<number> {
  return runOnProcess(runInject, args);
}
