/** Owner references that could name no object are ignored, with a bounded warning, before any source sees them. */
import { describe, expect, it } from 'vitest';
import { handleAdmission, type AdmissionSources, type PodIdentity } from '../../src/admission/handler.js';
import { ownerReferencesOf } from '../../src/admission/owner-references.js';
import { TemplateAnswerLru } from '../../src/admission/template-answer-lru.js';
import { pod, testConfig } from '../support/engine.js';

const good = { apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'web-7d4b', uid: '6c1f0b6e-0d1c-4b43-9a34-1f1e1c7d2b11', controller: true };
const withRefs = (refs: unknown) => {
  const p = pod({ annotations: { 'linkerd.io/inject': 'enabled' } });
  (p['metadata'] as Record<string, unknown>)['ownerReferences'] = refs;
  return p;
};

describe('ownerReferencesOf', () => {
  it('keeps a reference the API server could hold, with its controller flag', () => {
    expect(ownerReferencesOf(withRefs([good, { ...good, controller: undefined, name: 'other' }]))).toEqual({
      references: [good, { ...good, name: 'other', controller: false }],
      warnings: [],
    });
  });

  it.each([
    ['a uid longer than 128 characters', { uid: 'u'.repeat(1_000_000) }, /\[0\] is ignored: its uid is not a uid of at most 128 characters$/],
    ['a kind that is no kind', { kind: 'Replica Set' }, /its kind is not a kind/],
    ['a kind longer than 63 characters', { kind: 'K'.repeat(64) }, /its kind is not a kind/],
    ['a name longer than 253 characters', { name: 'n'.repeat(254) }, /its name is not a name of at most 253/],
    ['an empty name', { name: '' }, /its name is not a name/],
    ['a number for a uid', { uid: 7 }, /its uid is not a uid/],
    ['an apiVersion of a megabyte', { apiVersion: 'a'.repeat(1_000_000) }, /its apiVersion is not a group and version/],
    ['a controller flag that is no boolean', { controller: 'yes' }, /its controller field is not a boolean/],
  ])('ignores %s, and says so in a line that quotes nothing of it', (_what, change, warning) => {
    const { references, warnings } = ownerReferencesOf(withRefs([{ ...good, ...change }]));
    expect(references).toEqual([]);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(warning);
    expect(warnings[0]!.length).toBeLessThan(120);
  });

  it('names three ignored references and counts the rest; a list that is not a list is ignored whole', () => {
    const { references, warnings } = ownerReferencesOf(withRefs([...Array.from({ length: 10_000 }, () => ({ ...good, uid: '' })), good]));
    expect(references).toEqual([good]);
    expect(warnings).toEqual([
      'metadata.ownerReferences[0] is ignored: its uid is not a uid of at most 128 characters',
      'metadata.ownerReferences[1] is ignored: its uid is not a uid of at most 128 characters',
      'metadata.ownerReferences[2] is ignored: its uid is not a uid of at most 128 characters',
      'and 9997 more owner references ignored',
    ]);
    expect(ownerReferencesOf(withRefs({ 0: good }))).toEqual({ references: [], warnings: ['metadata.ownerReferences is not a list: ignored'] });
  });
});

describe('the handler', () => {
  it('gives the owner source only the references that could name an object, and answers with the warning', async () => {
    const asked: PodIdentity[] = [];
    const config = testConfig();
    const sources: AdmissionSources = {
      config: () => config,
      namespaceAnnotations: () => ({}),
      owner: (_request, identity) => {
        asked.push(identity);
        return undefined;
      },
      answers: new TemplateAnswerLru(),
    };
    const huge = { ...good, uid: 'u'.repeat(1_000_000) };
    const object = withRefs([huge, { ...good, controller: false }]);
    const handled = await handleAdmission({ uid: 'r1', kind: { group: '', version: 'v1', kind: 'Pod' }, operation: 'CREATE', namespace: 'shop', object } as never, sources, { client: '10.0.0.1' });
    expect(handled.response.patchType).toBe('JSONPatch');
    expect(handled.response.warnings).toContain('metadata.ownerReferences[0] is ignored: its uid is not a uid of at most 128 characters');
    expect(asked).toEqual([{ metadata: { name: 'web', ownerReferences: [{ ...good, controller: false }] } }]);
    // No controller left among the references: the answer is not worth an entry.
    expect(sources.answers?.stats).toEqual({ hits: 0, misses: 0 });
  });
});
