import { parseDocument } from 'yaml';
import { describe, expect, it } from 'vitest';
import { YAML_OPTIONS } from '../../src/manifests/documents.js';
import { applyToValue, documentPatcher, parsePointer, sameValue, type PatchOp } from '../../src/manifests/yaml-patch.js';

const doc = (text: string) => parseDocument(text, YAML_OPTIONS);
const print = (d: ReturnType<typeof doc>): string => d.toString({ lineWidth: 0, indentSeq: false });

/** Applies the operations to a document and to its data, checks both agree, and returns the printed document. */
function patched(text: string, ops: PatchOp[]): string {
  const d = doc(text);
  const expected = applyToValue(structuredClone(d.toJS()), ops);
  documentPatcher(d).apply(ops);
  expect(d.toJS()).toEqual(expected);
  return print(d);
}

describe('JSON pointers', () => {
  it.each([
    ['', []],
    ['/a', ['a']],
    ['/metadata/annotations/linkerd.io~1inject', ['metadata', 'annotations', 'linkerd.io/inject']],
    ['/a~0b/~01', ['a~b', '~1']],
    ['/x/', ['x', '']],
  ])('%j', (path, tokens) => {
    expect(parsePointer(path)).toEqual(tokens);
  });

  it('refuses a pointer without a leading slash', () => {
    expect(() => parsePointer('a/b')).toThrowError(/invalid JSON pointer/);
  });
});

describe('add and remove on a YAML document', () => {
  it('add at an array index inserts; "-" appends', () => {
    const out = patched('list:\n- b\n- d\n', [
      { op: 'add', path: '/list/0', value: 'a' },
      { op: 'add', path: '/list/2', value: 'c' },
      { op: 'add', path: '/list/-', value: 'e' },
    ]);
    expect(out).toBe('list:\n- a\n- b\n- c\n- d\n- e\n');
  });

  it('add on an existing key replaces its value where it is', () => {
    expect(patched('a: 1\nb: 2\nc: 3\n', [{ op: 'add', path: '/b', value: 'two' }])).toBe('a: 1\nb: two\nc: 3\n');
  });

  it('adds maps and lists built from values in block style, and never folds long strings', () => {
    const long = 'x'.repeat(150);
    const out = patched('spec: {}\n', [
      { op: 'add', path: '/spec/containers', value: [{ name: 'p', args: ['--a', long], env: [{ name: 'E', value: 'line\n' }] }] },
    ]);
    expect(out).toBe(`spec:\n  containers:\n  - name: p\n    args:\n    - --a\n    - ${long}\n    env:\n    - name: E\n      value: |\n        line\n`);
  });

  it('an empty flow map that gets entries becomes a block map; a non-empty flow map stays flow', () => {
    const out = patched('a: {}\nb: {x: 1}\n', [
      { op: 'add', path: '/a/k', value: 'v' },
      { op: 'add', path: '/b/w', value: 2 },
    ]);
    expect(out).toBe('a:\n  k: v\nb: { x: 1, w: 2 }\n');
  });

  it('writes YAML 1.1 booleans-in-disguise as quoted strings, as Kubernetes reads YAML 1.1', () => {
    expect(patched('a: 1\n', [{ op: 'add', path: '/y', value: 'n' }])).toBe('a: 1\n"y": "n"\n');
  });

  it('a map or list added into a flow collection turns it, and flow collections around it, into block style', () => {
    const out = patched('spec: {containers: [{name: app}], dns: {a: 1}}\n', [
      { op: 'add', path: '/spec/containers/0', value: { name: 'proxy', ports: [{ containerPort: 1 }] } },
    ]);
    // (This printer pads flow collections; the CLI keeps the source's own padding, see manifests.detectStyle.)
    expect(out).toBe('spec:\n  containers:\n  - name: proxy\n    ports:\n    - containerPort: 1\n  - { name: app }\n  dns: { a: 1 }\n');
  });

  it('keeps comments and quoting of everything it does not touch', () => {
    const text = '# head\na: "1" # one\nb:\n  # before c\n  c: yes\n';
    expect(patched(text, [{ op: 'add', path: '/b/d', value: 'on' }])).toBe('# head\na: "1" # one\nb:\n  # before c\n  c: yes\n  d: "on"\n');
  });

  it('removes keys and list items', () => {
    const out = patched('a: 1\nb: 2\nl:\n- x\n- y\n- z\n', [
      { op: 'remove', path: '/b' },
      { op: 'remove', path: '/l/1' },
    ]);
    expect(out).toBe('a: 1\nl:\n- x\n- z\n');
  });

  it('a key removed and added again by the same patch goes back to its place', () => {
    const text = 'm:\n  a: 1\n  l1: x\n  l2: w\n  b: 2\n  l3: z\n';
    const out = patched(text, [
      { op: 'remove', path: '/m/l1' },
      { op: 'remove', path: '/m/l2' },
      { op: 'remove', path: '/m/l3' },
      { op: 'add', path: '/m/new', value: 'v' },
      { op: 'add', path: '/m/l3', value: 'z' },
      { op: 'add', path: '/m/l2', value: 'w' },
      { op: 'add', path: '/m/l1', value: 'x' },
    ]);
    expect(out).toBe('m:\n  a: 1\n  l1: x\n  l2: w\n  b: 2\n  l3: z\n  new: v\n');
  });

  it('keys never removed are appended', () => {
    expect(patched('a: 1\n', [{ op: 'add', path: '/z', value: 0 }])).toBe('a: 1\nz: 0\n');
  });

  it('paths are relative to a base, e.g. an item of a List', () => {
    const d = doc('items:\n- kind: A\n- kind: B\n');
    documentPatcher(d).apply([{ op: 'add', path: '/metadata', value: { name: 'b' } }], ['items', '1']);
    expect(print(d)).toBe('items:\n- kind: A\n- kind: B\n  metadata:\n    name: b\n');
  });

  it('an alias on the path is replaced by a copy, leaving the anchor and its other aliases alone', () => {
    const d = doc('base: &l\n  app: web\np: *l\nq: *l\n');
    documentPatcher(d).apply([{ op: 'add', path: '/p/tier', value: 'front' }]);
    expect(d.toJS()).toEqual({ base: { app: 'web' }, p: { app: 'web', tier: 'front' }, q: { app: 'web' } });
  });

  it.each<[string, PatchOp]>([
    ['a missing parent', { op: 'add', path: '/nope/x', value: 1 }],
    ['an index past the end', { op: 'add', path: '/l/5', value: 1 }],
    ['a missing key', { op: 'remove', path: '/zzz' }],
    ['a non-numeric index', { op: 'remove', path: '/l/x' }],
    ['a scalar parent', { op: 'add', path: '/a/b', value: 1 }],
    ['the whole document', { op: 'add', path: '', value: 1 }],
  ])('refuses %s, like JSON Patch', (_, op) => {
    expect(() => documentPatcher(doc('a: 1\nl: [1]\n')).apply([op])).toThrowError();
    expect(() => applyToValue({ a: 1, l: [1] }, [op])).toThrowError();
  });
});

describe('sameValue', () => {
  it('ignores key order but not array order', () => {
    expect(sameValue({ a: 1, b: [1, 2] }, { b: [1, 2], a: 1 })).toBe(true);
    expect(sameValue({ b: [2, 1] }, { b: [1, 2] })).toBe(false);
    expect(sameValue({ a: null }, {})).toBe(false);
  });
});
