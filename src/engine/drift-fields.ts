/**
 * Field by field, what the injector renders against what the API server stores: the defaults it fills in, the empty
 * values it drops and the quantities it rewrites are the same field, and the lists Kubernetes merges by key are
 * compared by key, so that only a difference the injector made counts.
 */
import { isObject, type Json } from './k8s.js';
import { SERVICE_ACCOUNT_MOUNT_PATH } from './names.js';
import { parseQuantity } from './parsers.js';

/** One field that differs, with both sides as the pod would carry them (absent when one side has no such field). */
export interface FieldDifference {
  path: string;
  expected?: unknown;
  actual?: unknown;
  /** The two sides differ only as Linkerd and this injector write numbers (docs/differences-from-linkerd.md). */
  numberFormat?: boolean;
}

/** The lists Kubernetes merges by a key (its strategic-merge keys), compared entry by entry whatever their order. */
const LIST_KEYS: Readonly<Record<string, string>> = { env: 'name', ports: 'containerPort', volumeMounts: 'mountPath' };

/**
 * The service-account token's mount: the API server's to give, and the injector only copies the app's onto its own
 * containers, so whether one of them has it is never a difference of the injector's making.
 */
const IGNORED_ENTRIES: Readonly<Record<string, string>> = { volumeMounts: SERVICE_ACCOUNT_MOUNT_PATH };

/**
 * What the API server writes into a field the injector leaves out, by the field's name: kube-apiserver's defaults for
 * containers, probes, ports, env sources and volumes.
 */
const API_SERVER_DEFAULTS: ReadonlyMap<string, Json> = new Map<string, Json>([
  ['terminationMessagePath', '/dev/termination-log'],
  ['terminationMessagePolicy', 'File'],
  ['periodSeconds', 10],
  ['successThreshold', 1],
  ['failureThreshold', 3],
  ['timeoutSeconds', 1],
  ['scheme', 'HTTP'],
  ['protocol', 'TCP'],
  ['apiVersion', 'v1'],
  ['divisor', '0'],
  ['defaultMode', 420],
]);

/** Fields whose zero the API server drops (they are not pointers in the Go types): zero and absent are one. */
const DROPPED_WHEN_ZERO = new Set(['initialDelaySeconds', 'readOnly']);

/** The pull policies the API server chooses from when the injector writes none (an empty `imagePullPolicy`). */
const PULL_POLICIES = new Set(['Always', 'IfNotPresent', 'Never']);

/** Whether a value is what the API server drops from an optional field: null, an empty text, list or map. */
function isEmpty(value: unknown): boolean {
  if (value === null || value === undefined || value === '') return true;
  if (Array.isArray(value)) return value.length === 0;
  return isObject(value) && Object.keys(value).length === 0;
}

/** Whether a field the injector leaves out (or empties) holds only what the API server puts there by itself. */
function storedAsAbsent(key: string, expected: unknown, actual: unknown): boolean {
  const zero = (value: unknown): boolean => DROPPED_WHEN_ZERO.has(key) && (value === 0 || value === false);
  if (expected !== undefined && !isEmpty(expected) && !zero(expected)) return false;
  if (actual === undefined || isEmpty(actual)) return true;
  if (zero(actual)) return true;
  if (key === 'imagePullPolicy') return typeof actual === 'string' && PULL_POLICIES.has(actual);
  return API_SERVER_DEFAULTS.get(key) === actual;
}

/**
 * A number in exponent form, as Go's `%v` prints `1.0007e+09` or `1e-05` where this injector writes plain decimals.
 * The look-behind starts a match only at the start of a run of digits: a long run is scanned once, not once a digit.
 */
const GO_EXPONENT = /(?<![0-9.])[0-9]+(?:\.[0-9]+)?e[-+][0-9]+/g;

/** Whether two texts differ only as Linkerd (Go) and this injector (JavaScript) print numbers. */
function sameBarNumberFormat(expected: string, actual: string): boolean {
  const rewritten = actual.replace(GO_EXPONENT, (number) => String(Number(number)));
  return rewritten !== actual && rewritten === expected;
}

/** Whether two resource quantities are the same amount however written ("0.1" and "100m", "1024Mi" and "1Gi"). */
function sameQuantity(expected: unknown, actual: unknown): boolean {
  if (typeof expected !== 'string' || typeof actual !== 'string') return false;
  const a = parseQuantity(expected);
  const b = parseQuantity(actual);
  return a !== undefined && b !== undefined && a.num * b.den === b.num * a.den;
}

/**
 * Appends to `out` every field where `actual` (the stored pod) differs from `expected` (the injector's rendering).
 * Descends only where both sides are maps or lists, so the work is bounded by the rendering's shape and the stored
 * pod's size, however deep the stored pod nests.
 */
export function compareFields(
  expected: unknown,
  actual: unknown,
  path: string,
  out: FieldDifference[],
  key = '',
): void {
  if (isObject(expected) && isObject(actual)) {
    const quantities = key === 'limits' || key === 'requests';
    for (const name of Object.keys(expected)) {
      const child = `${path}.${name}`;
      if (!Object.hasOwn(actual, name)) {
        // A keyed list on one side only is compared with an empty one, so that its entries count one by one.
        if (LIST_KEYS[name] && Array.isArray(expected[name])) compareFields(expected[name], [], child, out, name);
        else if (!storedAsAbsent(name, expected[name], undefined)) out.push({ path: child, expected: expected[name] });
      } else if (!(quantities && sameQuantity(expected[name], actual[name]))) {
        compareFields(expected[name], actual[name], child, out, name);
      }
    }
    for (const name of Object.keys(actual)) {
      if (Object.hasOwn(expected, name)) continue;
      if (LIST_KEYS[name] && Array.isArray(actual[name])) compareFields([], actual[name], `${path}.${name}`, out, name);
      else if (!storedAsAbsent(name, undefined, actual[name])) {
        out.push({ path: `${path}.${name}`, actual: actual[name] });
      }
    }
    return;
  }
  if (Array.isArray(expected) && Array.isArray(actual)) {
    const listKey = LIST_KEYS[key];
    if (listKey) compareKeyedLists(expected, actual, path, listKey, IGNORED_ENTRIES[key], out);
    else compareOrderedLists(expected, actual, path, out);
    return;
  }
  if (expected === actual || storedAsAbsent(key, expected, actual)) return;
  if (typeof expected === 'string' && typeof actual === 'string' && sameBarNumberFormat(expected, actual)) {
    out.push({ path, expected, actual, numberFormat: true });
    return;
  }
  out.push({ path, expected, actual });
}

/**
 * Lists whose order counts (arguments, commands, capabilities, volume sources) item by item; a list of texts or numbers
 * that differs is one difference, since its items mean something only together (`args`, not `args[10]`).
 */
function compareOrderedLists(
  expected: readonly unknown[],
  actual: readonly unknown[],
  path: string,
  out: FieldDifference[],
): void {
  const scalars = expected.every((item) => !isObject(item) && !Array.isArray(item));
  if (expected.length !== actual.length) {
    out.push({ path, expected, actual });
    return;
  }
  const inside: FieldDifference[] = [];
  expected.forEach((item, i) => compareFields(item, actual[i], `${path}[${i}]`, inside));
  if (inside.length === 0) return;
  if (!scalars) {
    for (const d of inside) out.push(d);
    return;
  }
  const difference: FieldDifference = { path, expected, actual };
  if (inside.every((d) => d.numberFormat)) difference.numberFormat = true;
  out.push(difference);
}

/**
 * Each entry by its key, the second of two entries with one key as `key#2`: the API server refuses most such lists,
 * but a stored pod is read as it is.
 */
export function byKey(list: readonly unknown[], key: string): Map<string, unknown> {
  const entries = new Map<string, unknown>();
  const seen = new Map<string, number>();
  for (const item of list) {
    const value = isObject(item) ? item[key] : undefined;
    const name = typeof value === 'string' || typeof value === 'number' ? String(value) : '';
    const count = (seen.get(name) ?? 0) + 1;
    seen.set(name, count);
    entries.set(count === 1 ? name : `${name}#${count}`, item);
  }
  return entries;
}

function compareKeyedLists(
  expected: readonly unknown[],
  actual: readonly unknown[],
  path: string,
  key: string,
  ignored: string | undefined,
  out: FieldDifference[],
): void {
  const have = byKey(actual, key);
  const want = byKey(expected, key);
  if (ignored !== undefined) {
    have.delete(ignored);
    want.delete(ignored);
  }
  for (const [name, item] of want) {
    const child = `${path}[${name}]`;
    if (!have.has(name)) {
      out.push({ path: child, expected: entryValue(item) });
      continue;
    }
    // An entry that differs is one difference, named by its key: `env[LINKERD2_PROXY_LOG]`, not its `.value`.
    const inside: FieldDifference[] = [];
    compareFields(item, have.get(name), child, inside);
    if (inside.length === 0) continue;
    const difference: FieldDifference = { path: child, expected: entryValue(item), actual: entryValue(have.get(name)) };
    if (inside.every((d) => d.numberFormat)) difference.numberFormat = true;
    out.push(difference);
  }
  for (const [name, item] of have) {
    if (!want.has(name)) out.push({ path: `${path}[${name}]`, actual: entryValue(item) });
  }
}

/** An env entry's value when it has a plain one (what a reader compares), else the whole entry. */
function entryValue(entry: unknown): unknown {
  const plain = isObject(entry) && typeof entry['value'] === 'string' && typeof entry['name'] === 'string';
  return plain ? entry['value'] : entry;
}
