/**
 * Runs the engine on Linkerd's own webhook fixtures (read from ../shared/linkerd2, never copied here) and compares
 * the patches strictly: operation order, array order, and null versus missing keys.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { opaquePortsPatch, podPatch } from '../../src/engine/index.js';
import { inheritedNamespaceAnnotations } from '../../src/engine/overrides.js';
import { locate, stringMap } from '../../src/engine/workload.js';
import { firstDifference } from '../support/json-diff.js';
import { fixtures, fixtureValues, loadObject, present, read, required, type Cases } from '../support/linkerd-fixtures.js';

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
