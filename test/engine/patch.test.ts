import { describe, expect, it } from 'vitest';
import { addMapEntries, escapePointer, opaquePortsAnnotationPatch } from '../../src/engine/patch.js';

describe('escapePointer (RFC 6901)', () => {
  it.each([
    ['linkerd.io/inject', 'linkerd.io~1inject'],
    ['a~b', 'a~0b'],
    ['~/', '~0~1'],
    ['a~1b', 'a~01b'],
    ['plain', 'plain'],
    ['', ''],
  ])('%j → %j', (key, escaped) => {
    expect(escapePointer(key)).toBe(escaped);
  });
});

describe('addMapEntries', () => {
  it('adds the map first when it is missing, then one op per key in sorted order', () => {
    expect(addMapEntries('/metadata/labels', { 'z/b': '2', 'a/a': '1' }, false)).toEqual([
      { op: 'add', path: '/metadata/labels', value: {} },
      { op: 'add', path: '/metadata/labels/a~1a', value: '1' },
      { op: 'add', path: '/metadata/labels/z~1b', value: '2' },
    ]);
  });

  it('never replaces an existing map', () => {
    expect(addMapEntries('/metadata/labels', { a: '1' }, true)).toEqual([{ op: 'add', path: '/metadata/labels/a', value: '1' }]);
  });
});

describe('opaquePortsAnnotationPatch', () => {
  const entry = { op: 'add', path: '/metadata/annotations/config.linkerd.io~1opaque-ports', value: '3306' };
  it.each([
    [{ metadata: true, annotations: true }, [entry]],
    [{ metadata: true, annotations: false }, [{ op: 'add', path: '/metadata/annotations', value: {} }, entry]],
    [
      { metadata: false, annotations: false },
      [{ op: 'add', path: '/metadata', value: {} }, { op: 'add', path: '/metadata/annotations', value: {} }, entry],
    ],
  ])('with %j', (has, expected) => {
    expect(opaquePortsAnnotationPatch('3306', has)).toEqual(expected);
  });
});
