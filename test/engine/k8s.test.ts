/** The engine's small helpers over Kubernetes objects. */
import { describe, expect, it } from 'vitest';
import { covers, selects } from '../../src/engine/k8s.js';

describe('covers', () => {
  it('holds for the same value, and for one with more keys (the API server fills in defaults)', () => {
    const written = { name: 'token', projected: { sources: [{ serviceAccountToken: { audience: 'identity.l5d.io', expirationSeconds: 86400, path: 'token' } }] } };
    expect(covers(written, written)).toBe(true);
    const stored = { name: 'token', projected: { defaultMode: 420, sources: [{ serviceAccountToken: { audience: 'identity.l5d.io', expirationSeconds: 86400, path: 'token' } }] } };
    expect(covers(stored, written)).toBe(true);
    expect(covers(written, stored)).toBe(false);
  });

  it('fails on any value that differs, a missing key, a list of another length or order, or another type', () => {
    expect(covers({ emptyDir: {} }, { emptyDir: { medium: 'Memory' } })).toBe(false);
    expect(covers({ emptyDir: { medium: '' } }, { emptyDir: { medium: 'Memory' } })).toBe(false);
    expect(covers({ a: [1, 2, 3] }, { a: [1, 2] })).toBe(false);
    expect(covers({ a: [2, 1] }, { a: [1, 2] })).toBe(false);
    expect(covers({ a: [{ x: 1, y: 2 }] }, { a: [{ x: 1 }] })).toBe(true);
    expect(covers({ a: '1' }, { a: 1 })).toBe(false);
    expect(covers({ a: [] }, { a: {} })).toBe(false);
    expect(covers({ a: {} }, { a: [] })).toBe(false);
    expect(covers(null, {})).toBe(false);
    expect(covers({ a: null }, { a: null })).toBe(true);
  });

  it('reads only own keys', () => {
    expect(covers(Object.create({ a: 1 }), { a: 1 })).toBe(false);
  });
});

describe('selects', () => {
  it('matches label selectors as the API server does', () => {
    const labels = { app: 'web', tier: 'front' };
    expect(selects(undefined, labels)).toBe(true);
    expect(selects({}, labels)).toBe(true);
    expect(selects({ matchLabels: { app: 'web' } }, labels)).toBe(true);
    expect(selects({ matchLabels: { app: 'db' } }, labels)).toBe(false);
    expect(selects({ matchExpressions: [{ key: 'tier', operator: 'In', values: ['front', 'back'] }] }, labels)).toBe(true);
    expect(selects({ matchExpressions: [{ key: 'zone', operator: 'In', values: ['a'] }] }, labels)).toBe(false);
    expect(selects({ matchExpressions: [{ key: 'tier', operator: 'NotIn', values: ['front'] }] }, labels)).toBe(false);
    expect(selects({ matchExpressions: [{ key: 'zone', operator: 'NotIn', values: ['a'] }] }, labels)).toBe(true);
    expect(selects({ matchExpressions: [{ key: 'app', operator: 'Exists' }] }, labels)).toBe(true);
    expect(selects({ matchExpressions: [{ key: 'app', operator: 'DoesNotExist' }] }, labels)).toBe(false);
    expect(selects({ matchExpressions: [{ key: 'app', operator: 'Gt', values: ['1'] }] }, labels)).toBe(false);
    expect(selects({ matchLabels: { app: 'web' }, matchExpressions: [{ key: 'zone', operator: 'Exists' }] }, labels)).toBe(false);
  });
});
