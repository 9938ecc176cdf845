/** Linkerd's webhook fixtures, read from ../shared/linkerd2 (never copied here), and the values they render with. */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments } from 'yaml';
import { mergeValues, type LinkerdValues } from '../../src/engine/index.js';

const here = dirname(fileURLToPath(import.meta.url));
export const fixtures = resolve(process.env['LINKERD_FIXTURES'] ?? join(here, '..', '..', '..', 'shared', 'linkerd2'));
export const present = existsSync(join(fixtures, 'cases.json'));
export const required = process.env['REQUIRE_LINKERD_FIXTURES'] === '1';

export interface Cases {
  values: { base: string[]; replace: Record<string, string>; set: Record<string, string>; controlPlaneNamespace: string };
  namespaceAnnotations: Record<string, Record<string, string>>;
  podPatchCases: {
    owner: { kind: string; name: string };
    cases: Array<{ input: string; ns: string; golden: string; inheritNamespaceAnnotations?: boolean }>;
  };
  annotationPatchCases: { cases: Array<{ input: string; ns: string; golden: string | null }> };
}

export const read = (file: string): string => readFileSync(join(fixtures, file), 'utf8');

/** Fixture YAML as Kubernetes reads it: YAML 1.1 scalars, empty documents dropped. */
export function loadObject(file: string): Record<string, unknown> {
  const docs = parseAllDocuments(read(file), { version: '1.1' })
    .map((d) => d.toJS() as unknown)
    .filter((d) => d !== null && d !== undefined);
  if (docs.length !== 1) throw new Error(`${file}: expected one document, found ${docs.length}`);
  return docs[0] as Record<string, unknown>;
}

function deepMerge(base: Record<string, unknown>, over: Record<string, unknown>): Record<string, unknown> {
  for (const [k, v] of Object.entries(over)) {
    const b = base[k];
    if (v && typeof v === 'object' && !Array.isArray(v) && b && typeof b === 'object' && !Array.isArray(b)) {
      deepMerge(b as Record<string, unknown>, v as Record<string, unknown>);
    } else base[k] = v;
  }
  return base;
}

function replaceStrings(value: unknown, from: string, to: string): unknown {
  if (typeof value === 'string') return value === from ? to : value;
  if (Array.isArray(value)) return value.map((v) => replaceStrings(v, from, to));
  if (value && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, replaceStrings(v, from, to)]));
  }
  return value;
}

function setPath(doc: Record<string, unknown>, path: string, value: unknown): void {
  const keys = path.split('.');
  let at = doc;
  for (const key of keys.slice(0, -1)) at = (at[key] ??= {}) as Record<string, unknown>;
  at[keys[keys.length - 1] as string] = value;
}

/** The values Linkerd's tests render with: both charts' values, the version placeholder filled, then the `set` keys. */
export function fixtureValues(cases: Cases): LinkerdValues {
  let doc: Record<string, unknown> = {};
  for (const file of cases.values.base) {
    const parsed = parseAllDocuments(read(file), { version: '1.1' })[0]?.toJS() as Record<string, unknown>;
    doc = deepMerge(doc, parsed);
  }
  for (const [from, to] of Object.entries(cases.values.replace)) {
    doc = replaceStrings(doc, from, to) as Record<string, unknown>;
  }
  for (const [path, value] of Object.entries(cases.values.set)) setPath(doc, path, value);
  return mergeValues(doc);
}
