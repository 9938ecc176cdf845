/** The engine's small helpers over Kubernetes objects. */
import { describe, expect, it } from 'vitest';
import { covers } from '../../src/engine/k8s.js';

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
