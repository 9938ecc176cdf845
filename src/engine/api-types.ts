/**
 * Checks JSON data from annotations and values against the Kubernetes API types the injector copies into pods
 * (EnvVar, SecurityContext), so that nothing it writes is refused by the API server's decoder.
 */
import { isObject, type EnvVar, type JsonObject } from './k8s.js';
import { parseQuantity } from './parsers.js';

/** The image pull policies a container accepts (an empty one means the API server's default). */
export const PULL_POLICIES: readonly string[] = ['Always', 'IfNotPresent', 'Never'];

type Scalar = 'string' | 'boolean' | 'int32' | 'int64' | 'quantity';
type Shape = Scalar | { list: Scalar } | { fields: Record<string, Shape> };

const INT_RANGE: Record<'int32' | 'int64', number> = { int32: 2 ** 31, int64: 2 ** 63 };

const keyRef = { fields: { name: 'string', key: 'string', optional: 'boolean' } } as const;

/** corev1.EnvVarSource, including fileKeyRef (Kubernetes 1.34 and later). */
const ENV_VAR_SOURCE = {
  fields: {
    fieldRef: { fields: { apiVersion: 'string', fieldPath: 'string' } },
    resourceFieldRef: { fields: { containerName: 'string', resource: 'string', divisor: 'quantity' } },
    configMapKeyRef: keyRef,
    secretKeyRef: keyRef,
    fileKeyRef: { fields: { volumeName: 'string', path: 'string', key: 'string', optional: 'boolean' } },
  },
} as const satisfies Shape;

/** The fields of each source that validation requires to be non-empty. */
const REQUIRED_SOURCE_FIELDS: Record<keyof typeof ENV_VAR_SOURCE.fields, readonly string[]> = {
  fieldRef: ['fieldPath'],
  resourceFieldRef: ['resource'],
  configMapKeyRef: ['name', 'key'],
  secretKeyRef: ['name', 'key'],
  fileKeyRef: ['volumeName', 'path', 'key'],
};

const ENV_VAR = { fields: { name: 'string', value: 'string', valueFrom: ENV_VAR_SOURCE } } as const satisfies Shape;

const stringPair = (a: string, b: string): Shape => ({ fields: { [a]: 'string', [b]: 'string' } });

/** corev1.SecurityContext. */
const SECURITY_CONTEXT: Shape = {
  fields: {
    capabilities: { fields: { add: { list: 'string' }, drop: { list: 'string' } } },
    privileged: 'boolean',
    seLinuxOptions: { fields: { user: 'string', role: 'string', type: 'string', level: 'string' } },
    windowsOptions: {
      fields: { gmsaCredentialSpecName: 'string', gmsaCredentialSpec: 'string', runAsUserName: 'string', hostProcess: 'boolean' },
    },
    runAsUser: 'int64',
    runAsGroup: 'int64',
    runAsNonRoot: 'boolean',
    readOnlyRootFilesystem: 'boolean',
    allowPrivilegeEscalation: 'boolean',
    procMount: 'string',
    seccompProfile: stringPair('type', 'localhostProfile'),
    appArmorProfile: stringPair('type', 'localhostProfile'),
  },
};

/** Thrown inside a decode and turned into a message by the exported functions. */
class DecodeError extends Error {}

function shown(value: unknown): string {
  if (Array.isArray(value)) return 'a list';
  if (isObject(value)) return 'an object';
  return JSON.stringify(value);
}

function expected(shape: Shape): string {
  if (typeof shape === 'string') {
    if (shape === 'quantity') return 'a quantity such as "1" or "500m"';
    if (shape === 'int32' || shape === 'int64') return `an integer (${shape})`;
    return `a ${shape}`;
  }
  return 'list' in shape ? `a list of ${shape.list}s` : 'an object';
}

function scalarFits(value: unknown, shape: Scalar): boolean {
  switch (shape) {
    case 'string':
    case 'boolean':
      return typeof value === shape;
    case 'int32':
    case 'int64': {
      const limit = INT_RANGE[shape];
      return typeof value === 'number' && Number.isInteger(value) && value >= -limit && value < limit;
    }
    case 'quantity':
      // resource.Quantity decodes a JSON string or a bare number.
      return (typeof value === 'string' || typeof value === 'number') && parseQuantity(String(value)) !== undefined;
  }
}

/**
 * Go's encoding/json matches object keys to fields ignoring case; besides ASCII letters, only ſ (U+017F) and the
 * Kelvin sign (U+212A) fold onto the ASCII letters field names are made of.
 */
function foldKey(key: string): string {
  return key.replace(/[A-Z\u017f\u212a]/g, (c) => (c === '\u017f' ? 's' : c === '\u212a' ? 'k' : c.toLowerCase()));
}

/**
 * How a decoder reads JSON into Go types. `foldCase`: keys match fields ignoring case (Go's encoding/json, which Linkerd
 * reads annotations and values with; the API server's decoder matches exact names only). `yamlStrings`: a number or
 * boolean where a string belongs is read as its text (sigs.k8s.io/yaml, which Linkerd reads its values file with).
 */
export interface Decoder {
  foldCase: boolean;
  yamlStrings: boolean;
}

/** Linkerd reading an annotation (encoding/json). */
export const ANNOTATION_DECODER: Decoder = { foldCase: true, yamlStrings: false };
/** Linkerd reading its values file (sigs.k8s.io/yaml over encoding/json). */
export const VALUES_DECODER: Decoder = { foldCase: true, yamlStrings: true };
/** The API server reading a pod. */
const API_SERVER_DECODER: Decoder = { foldCase: false, yamlStrings: false };

/**
 * Decodes `value` as a Go value of `shape` would be decoded: unknown keys are ignored and null leaves a field unset;
 * the result uses the fields' own names.
 */
function decode(value: unknown, shape: Shape, path: string, decoder: Decoder): unknown {
  const { foldCase } = decoder;
  if (typeof shape === 'string') {
    if (shape === 'string' && decoder.yamlStrings && (typeof value === 'number' || typeof value === 'boolean')) {
      return String(value);
    }
    if (!scalarFits(value, shape)) throw new DecodeError(`${path} must be ${expected(shape)}, got ${shown(value)}`);
    return value;
  }
  if ('list' in shape) {
    if (!Array.isArray(value)) throw new DecodeError(`${path} must be ${expected(shape)}, got ${shown(value)}`);
    // Go decodes a null item of a []string as "".
    return value.map((item, i) => (item === null ? '' : decode(item, shape.list, `${path}[${i}]`, decoder)));
  }
  if (!isObject(value)) throw new DecodeError(`${path} must be an object, got ${shown(value)}`);
  const byKey = new Map(Object.keys(shape.fields).map((f) => [foldCase ? foldKey(f) : f, f]));
  const out: Record<string, unknown> = {};
  for (const [key, item] of Object.entries(value)) {
    const field = byKey.get(foldCase ? foldKey(key) : key);
    if (field === undefined) continue;
    const fieldShape = shape.fields[field] as Shape;
    const at = path ? `${path}.${field}` : field;
    if (item === null) {
      // Null sets Go's pointers, slices and maps to nil, and leaves a plain string as it was.
      if (fieldShape !== 'string') delete out[field];
      continue;
    }
    out[field] = decode(item, fieldShape, at, decoder);
  }
  return out;
}

/** The EnvVarSource as Go marshals it back: empty optional strings are left out. */
function canonicalSource(source: Record<string, unknown>): JsonObject {
  const out: JsonObject = {};
  for (const [kind, ref] of Object.entries(source) as Array<[string, Record<string, unknown>]>) {
    const fields: JsonObject = {};
    for (const [field, v] of Object.entries(ref)) {
      const omitEmpty = field === 'apiVersion' || field === 'containerName' || (field === 'name' && kind.endsWith('KeyRef'));
      if (!(omitEmpty && v === '')) fields[field] = v as string | boolean | number;
    }
    out[kind] = fields;
  }
  return out;
}

/**
 * One entry of an additional-env list, decoded as Kubernetes' EnvVar and written back as Go writes it (so `value: ""`
 * and unknown keys disappear, as they do in Linkerd's pods). Refuses, besides what does not decode, what the API
 * server would refuse to create: an empty name, a value together with valueFrom, and a valueFrom that does not name
 * exactly one source with its required fields. Returns the reason as a string.
 */
export function decodeEnvVar(entry: unknown, path: string, decoder: Decoder): EnvVar | string {
  let decoded: { name?: string; value?: string; valueFrom?: Record<string, Record<string, unknown>> };
  try {
    decoded = decode(entry, ENV_VAR, path, decoder) as typeof decoded;
  } catch (err) {
    if (err instanceof DecodeError) return err.message;
    throw err;
  }
  if (!decoded.name) return `${path}.name must be a non-empty string`;
  const env: EnvVar = { name: decoded.name };
  if (decoded.value) env.value = decoded.value;
  const source = decoded.valueFrom;
  if (source !== undefined) {
    if (env.value !== undefined) return `${path} has both value and valueFrom`;
    const kinds = Object.keys(source) as Array<keyof typeof REQUIRED_SOURCE_FIELDS>;
    if (kinds.length !== 1) {
      return `${path}.valueFrom must name exactly one of ${Object.keys(REQUIRED_SOURCE_FIELDS).join(', ')}`;
    }
    const kind = kinds[0] as keyof typeof REQUIRED_SOURCE_FIELDS;
    for (const field of REQUIRED_SOURCE_FIELDS[kind]) {
      if (!source[kind]?.[field]) return `${path}.valueFrom.${kind}.${field} must be a non-empty string`;
    }
    env.valueFrom = canonicalSource(source);
  }
  return env;
}

/** A list of EnvVars (see `decodeEnvVar`), or the reason the first invalid entry is refused. */
export function decodeEnvList(list: unknown, path: string, decoder: Decoder): EnvVar[] | string {
  if (!Array.isArray(list)) return `${path} must be a list of env vars, got ${shown(list)}`;
  const out: EnvVar[] = [];
  for (const [i, entry] of list.entries()) {
    if (entry === null) return `${path}[${i}] must be an env var, got null`;
    const env = decodeEnvVar(entry, `${path}[${i}]`, decoder);
    if (typeof env === 'string') return env;
    out.push(env);
  }
  return out;
}

/** Why a securityContext copied verbatim into a container would not decode, or undefined when it would. */
export function securityContextProblem(value: unknown, path: string): string | undefined {
  try {
    decode(value, SECURITY_CONTEXT, path, API_SERVER_DECODER);
    return undefined;
  } catch (err) {
    if (err instanceof DecodeError) return err.message;
    throw err;
  }
}

/** A capabilities setting of the values decoded as Linkerd's `{add: [string], drop: [string]}`, or why it does not decode. */
export function decodeCapabilities(value: unknown, path: string): { add?: string[]; drop?: string[] } | string {
  try {
    return decode(value, { fields: { add: { list: 'string' }, drop: { list: 'string' } } }, path, VALUES_DECODER) as {
      add?: string[];
      drop?: string[];
    };
  } catch (err) {
    if (err instanceof DecodeError) return err.message;
    throw err;
  }
}
