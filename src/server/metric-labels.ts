/**
 * Bounds on the values of the admission metrics' labels. The labels carry annotation values that anyone who can create
 * a pod chooses, and every distinct label set is a series the process keeps until it exits: unbounded values would
 * grow memory and /metrics without limit (one loop of pods with random `proxy-log-level` values is enough).
 */
import { names, OVERRIDE_RULES } from '../engine/index.js';

/** What a value outside the known set is reported as. */
export const OTHER = 'other';

/** Distinct free-form values each configuration label reports as themselves; later ones are folded into `other`. */
export const FREE_FORM_VALUES_PER_LABEL = 8;

/** Most label sets each admission counter keeps; beyond it, new sets are reported with their open labels as `other`. */
export const MAX_LABEL_SETS = 500;

/**
 * Most bytes the label sets of each admission counter may hold, counted as each set's key at two bytes a character,
 * four times over (the cap's key, the pending count's key and labels, the registry's hash and labels) and 256 bytes of
 * objects around them; beyond it, new sets are folded as they are beyond MAX_LABEL_SETS.
 */
export const MAX_LABEL_SET_BYTES = 2 * 1024 * 1024;

/** The owner kind as a label: a kind is a lowercase DNS-1035 label, and anything else a review made up is `other`. */
export function ownerKindLabel(kind: string | undefined): string {
  if (kind === undefined) return '';
  return /^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$/.test(kind) ? kind : OTHER;
}

/** Longest value reported as itself: longer ones are never a setting worth a series. */
const MAX_VALUE_LENGTH = 63;

const ANNOTATIONS = names.ANNOTATIONS;

/**
 * Annotations whose valid values form a short list (the override rules know them): those values pass, anything else (a
 * typo, garbage) is `other`. Every other configuration annotation (ports, ids, quantities, durations, port lists,
 * subnets, images, versions, environment) is free-form and gets the per-label budget.
 */
const ENUMERATIONS: ReadonlyMap<string, ReadonlySet<string>> = new Map(
  OVERRIDE_RULES.flatMap((rule) => (rule.known ? [[rule.annotation, new Set(rule.known)] as const] : [])),
);

/** Enumerations that also take free-form values: a log filter such as "warn,linkerd=debug" gets the budget. */
const OPEN_ENUMERATIONS: ReadonlySet<string> = new Set([ANNOTATIONS.proxyLogLevel]);

/** Annotations whose free-form values are not worth a series at all: only whether they are set is reported. */
const SET_OR_NOT: ReadonlySet<string> = new Set([ANNOTATIONS.proxyAdditionalEnv]);

/**
 * Maps each configuration annotation's value to the value its label reports: '' (not set) and known values as they
 * are, the first FREE_FORM_VALUES_PER_LABEL short free-form values as they are, everything else as `other`. One
 * instance per process: the budget is spent once and the mapping never changes afterwards, so a series never splits.
 */
export class ConfigLabelValues {
  private readonly seen = new Map<string, Set<string>>();

  constructor(private readonly budget = FREE_FORM_VALUES_PER_LABEL) {}

  value(annotation: string, raw: string | undefined): string {
    if (raw === undefined || raw === '') return '';
    const known = ENUMERATIONS.get(annotation);
    if (known?.has(raw)) return raw;
    if (known && !OPEN_ENUMERATIONS.has(annotation)) return OTHER;
    if (SET_OR_NOT.has(annotation)) return OTHER;
    let values = this.seen.get(annotation);
    if (!values) this.seen.set(annotation, (values = new Set()));
    if (values.has(raw)) return raw;
    if (values.size >= this.budget || raw.length > MAX_VALUE_LENGTH) return OTHER;
    values.add(raw);
    return raw;
  }
}

/**
 * Counts the distinct label sets of one counter, and what they hold, and says when a cap is reached. The caller then
 * reports a new set with its open labels (namespace, owner kind, configuration) as `other`, so the sets that remain
 * possible are the product of the closed labels only (annotation_at, skip, skip_reason). A set rather than an
 * lru-cache: prom-client keeps every series until exit, so a set forgotten would be counted a second time.
 */
export class LabelSetCap {
  private readonly keys = new Set<string>();
  private held = 0;

  constructor(
    readonly max = MAX_LABEL_SETS,
    readonly maxBytes = MAX_LABEL_SET_BYTES,
  ) {}

  /** True when `key` is already counted or there is room for it (and counts it). */
  admit(key: string): boolean {
    if (this.keys.has(key)) return true;
    const bytes = 8 * key.length + 256;
    if (this.keys.size >= this.max || this.held + bytes > this.maxBytes) return false;
    this.keys.add(key);
    this.held += bytes;
    return true;
  }

  get size(): number {
    return this.keys.size;
  }

  /** What the counted sets hold, as counted against maxBytes. */
  get bytes(): number {
    return this.held;
  }
}
