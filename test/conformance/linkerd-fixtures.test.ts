/**
 * Runs the engine on Linkerd's own webhook fixtures (read from ../shared/linkerd2, never copied here) and compares
 * the patches strictly: operation order, array order, and null versus missing keys.
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { mergeValues, opaquePortsPatch, podPatch, type LinkerdValues } from '../../src/engine/index.js';
import { inheritedNamespaceAnnotations } from '../../src/engine/overrides.js';
import { locate, stringMap } from '../../src/engine/workload.js';
import { firstDifference } from '../support/json-diff.js';

const here = dirname(fileURLToPath(import.meta.url));
const fixtures = resolve(process.env['LINKERD_FIXTURES'] ?? join(here, '..', '..', '..', 'shared', 'linkerd2'));
const present = existsSync(join(fixtures, 'cases.json'));
const required = process.env['REQUIRE_LINKERD_FIXTURES'] === '1';

interface Cases {
  values: { base: string[]; replace: Record<string, string>; set: Record<string, string>; controlPlaneNamespace: string };
  namespaceAnnotations: Record<string, Record<string, string>>;
  podPatchCases: {
    owner: { kind: string; name: string };
    cases: Array<{ input: string; ns: string; golden: string; inheritNamespaceAnnotations?: boolean }>;
  };
  annotationPatchCases: { cases: Array<{ input: string; ns: string; golden: string | null }> };
}

const read = (file: string): string => readFileSync(join(fixtures, file), 'utf8');

/** Fixture YAML as Kubernetes reads it: YAML 1.1 scalars, empty documents dropped. */
function loadObject(file: string): Record<string, unknown> {
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
function fixtureValues(cases: Cases): LinkerdValues {
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

const results: boolean[] = [];

describe.skipIf(!present)('Linkerd fixtures', () => {
  const cases = present ? (JSON.parse(read('cases.json')) as Cases) : undefined;
  const values = cases ? fixtureValues(cases) : undefined;

  afterAll(() => {
    const equal = results.filter(Boolean).length;
    console.log(`linkerd fixtures: ${equal}/${results.length} equal`);
  });

  const podCases = cases?.podPatchCases.cases ?? [];
  it.each(podCases.map((c, i) => [i + 1, c] as const))('pod patch %i: %o', (_n, c) => {
    if (!cases || !values) throw new Error('fixtures not loaded');
    const object = loadObject(c.input);
    const located = locate(object);
    const nsAnnotations = cases.namespaceAnnotations[c.ns] ?? {};
    const own = stringMap((object['metadata'] as Record<string, unknown> | undefined)?.['annotations']);
    const built = podPatch({
      template: located.template ?? {},
      prefix: located.prefix,
      values,
      controlPlaneNamespace: cases.values.controlPlaneNamespace,
      origin: 'webhook',
      owner: cases.podPatchCases.owner,
      workloadNamespace: located.namespace,
      pendingAnnotations: c.inheritNamespaceAnnotations ? inheritedNamespaceAnnotations(own, nsAnnotations) : {},
      namespaceAnnotations: nsAnnotations,
    });
    const actual = JSON.parse(JSON.stringify(built.patch)) as unknown;
    const expected = JSON.parse(read(c.golden)) as unknown;
    const diff = firstDifference(expected, actual);
    results.push(diff === undefined);
    expect(diff, `${c.input} vs ${c.golden}`).toBeUndefined();
  });

  const annotationCases = cases?.annotationPatchCases.cases ?? [];
  it.each(annotationCases.map((c, i) => [i + 1, c] as const))('annotation patch %i: %o', (_n, c) => {
    if (!cases || !values) throw new Error('fixtures not loaded');
    const object = loadObject(c.input);
    const kind = String(object['kind']);
    const patch = opaquePortsPatch(object, kind, cases.namespaceAnnotations[c.ns] ?? {}, values);
    const expected = c.golden === null ? [] : (JSON.parse(read(c.golden)) as unknown);
    const diff = firstDifference(expected, JSON.parse(JSON.stringify(patch)) as unknown);
    results.push(diff === undefined);
    expect(diff, `${c.input} (${c.ns})`).toBeUndefined();
  });

  it('matches every fixture (20 of 20)', () => {
    expect(results).toHaveLength(podCases.length + annotationCases.length);
    expect(podCases.length + annotationCases.length).toBe(20);
    expect(results.every(Boolean)).toBe(true);
  });
});

// Registered only when absent: a runIf block would show as "1 skipped" on every run that has the fixtures.
if (!present) describe('Linkerd fixtures (absent)', () => {
  it(`skipped: no fixtures at ${fixtures}`, () => {
    console.log(`linkerd fixtures: skipped, ${fixtures} is absent (set LINKERD_FIXTURES to point at them)`);
    expect(required, 'REQUIRE_LINKERD_FIXTURES=1 but the fixtures are absent').toBe(false);
  });
});
