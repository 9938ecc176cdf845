/** FastReader reads what it accepts exactly as the yaml library does, and declines the rest. */
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { Composer, Parser } from 'yaml';
import { FastReader, type FastDocument } from '../../src/manifests/fast-yaml.js';
import { YAML_OPTIONS, documentStarts } from '../../src/manifests/documents.js';

const here = dirname(fileURLToPath(import.meta.url));
const fixtures = resolve(process.env['LINKERD_FIXTURES'] ?? join(here, '..', '..', '..', 'shared', 'linkerd2'));

/** What the yaml library reads from one document's text. */
function library(text: string): unknown {
  const docs = [...new Composer(YAML_OPTIONS).compose(new Parser().parse(text))];
  expect(docs.length).toBeLessThanOrEqual(1);
  const doc = docs[0];
  if (!doc) return null;
  expect(doc.errors).toEqual([]);
  return doc.toJS() as unknown;
}

const read = (text: string): FastDocument | null | undefined => new FastReader(YAML_OPTIONS).read(text, 0, text.length);

function yamlFiles(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir).sort()) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) out.push(...yamlFiles(path));
    else if (/\.ya?ml$/.test(name)) out.push(path);
  }
  return out;
}

describe('FastReader', () => {
  it('reads a typical Deployment as the yaml library does, with where each entry is', () => {
    const text =
      '# app: a comment\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: app\n  labels: {app: web, "tier": \'front\'}\n' +
      'spec:\n  replicas: 2\n  template:\n    spec:\n      containers:\n      - name: app\n        args: ["--port=8080", -v]\n' +
      '        ports:\n        - containerPort: 8080   # the app\n      - name: side\n        env:\n        - name: A\n          value: "yes"\n';
    const fast = read(text);
    expect(fast?.value).toEqual(library(text));
    expect(fast?.marker).toBe(false);
    const root = fast?.root;
    expect(root?.entries.map((e) => e.key)).toEqual(['apiVersion', 'kind', 'metadata', 'spec']);
    expect(text.slice(root?.start, root?.end)).toBe(text.slice(text.indexOf('apiVersion')));
    const spec = root?.entries[3]?.node;
    expect(spec?.kind).toBe('map');
  });

  it('resolves plain scalars with the YAML 1.1 schema, in keys, values and flow collections, as the library does', () => {
    const scalars = [
      'y', 'Y', 'yes', 'No', 'on', 'OFF', 'true', 'False', '~', 'null', 'Null', 'NULL', '0', '-0', '+12', '012', '0o12', '0b101',
      '0x1F', '1_000', '1:20', '-1:20:30', '1.5', '.5', '5.', '-.inf', '.NaN', '1e3', 'e5', 'E5', '1.2e-3', '2024-01-01', 'n',
      'nope', 'one', 'text with spaces', 'a#b', 'http://x:80/y', '-v', '--port=1', '?x', ':x', 'ünïcode', '.', '+', '-',
    ];
    let accepted = 0;
    for (const s of scalars) {
      for (const text of [`k: ${s}\n`, `${s}: v\n`, `k: [${s}, x]\n`, `k: {a: ${s}}\n`, `k:\n- ${s}\n`]) {
        const fast = read(text);
        if (fast === undefined) continue;
        accepted += 1;
        expect(fast?.value, text).toEqual(library(text));
      }
    }
    expect(accepted).toBeGreaterThan(scalars.length * 2);
  });

  it('agrees with the library on random one-line values, or declines them', () => {
    const alphabet = ['a', 'Z', '0', '1', '9', '.', '-', '+', ':', ' ', '#', ',', '{', '}', '[', ']', '"', "'", '\\', '_', 'e', 'x', 'o', '~', '!', '&', '*', '|'];
    let seed = 7;
    const next = (n: number): number => {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      return seed % n;
    };
    let accepted = 0;
    for (let i = 0; i < 3000; i += 1) {
      let s = '';
      for (let k = 1 + next(8); k > 0; k -= 1) s += alphabet[next(alphabet.length)];
      const text = next(2) === 0 ? `key: ${s}\n` : `list:\n- ${s}\n- {k: ${s}}\n`;
      const fast = read(text);
      if (fast === undefined) continue;
      let expected: unknown;
      try {
        expected = library(text);
      } catch {
        throw new Error(`FastReader read ${JSON.stringify(text)}, which the library refuses`);
      }
      accepted += 1;
      expect(fast?.value, JSON.stringify(text)).toEqual(expected);
    }
    expect(accepted).toBeGreaterThan(500);
  });

  it('reads literal block scalars as the library does', () => {
    const texts = [
      'a: |\n  one\n  two\nb: 1\n',
      'a: |-\n  one\n\n  # not a comment\n    deeper\n\n\nb: 1\n',
      'list:\n- |\n  item\n- name: x\n  script: |  # a comment\n    #!/bin/sh\n    echo "a: b"\n',
      'a: |\n\n  after a blank line\n',
      'a:\n  b: |-\n    last line without newline',
    ];
    for (const text of texts) expect(read(text)?.value, text).toEqual(library(text));
    expect(read('a: |\n  x\n      \nb: 1\n')).toBeUndefined();
    expect(library('a: |\n  x\n      \nb: 1\n')).toEqual({ a: 'x\n    \n', b: 1 });
    expect(read('a: |2\n   x\n')).toBeUndefined();
    expect(read('a: |+\n  x\n\n')).toBeUndefined();
    expect(read('a: >\n  folded\n')).toBeUndefined();
  });

  it.each([
    ['an anchor and an alias', 'a: &x 1\nb: *x\n'],
    ['a tag', 'a: !!str 1\n'],
    ['a folded block scalar', 'a: >\n  text\n'],
    ['a plain scalar over lines', 'a: one\n  two\n'],
    ['a quoted scalar over lines', 'a: "one\n  two"\n'],
    ['an escape in double quotes', 'a: "\\t"\n'],
    ['a duplicate key', 'a: 1\na: 2\n'],
    ['a merge key', 'a: {x: 1}\n<<: {y: 2}\n'],
    ['a key that is not a string', '8080: http\n'],
    ['a tab in the indentation', 'a:\n\tb: 1\n'],
    ['a CR line end', 'a: 1\r\n'],
    ['a list at the top', '- a\n'],
    ['a flow collection over lines', 'a: {x: 1,\n  y: 2}\n'],
    ['a template placeholder', 'config: {{config_data}}\n'],
    ['content on the --- line', '--- a: 1\n'],
  ])('declines %s', (_, text) => {
    expect(read(text)).toBeUndefined();
  });

  it('reads a document of comments only as empty, and notes the --- marker', () => {
    expect(read('# nothing here\n\n')).toBeNull();
    expect(read('---\n# a comment\napiVersion: v1\n')?.marker).toBe(true);
  });

  it.runIf(existsDir(fixtures))("reads Linkerd's fixtures and this repository's manifests as the library does", () => {
    const files = [...yamlFiles(fixtures), ...yamlFiles(join(here, '..', 'fixtures')), ...yamlFiles(join(here, '..', '..', 'examples'))];
    let accepted = 0;
    for (const file of files) {
      const text = readFileSync(file, 'utf8');
      const starts = documentStarts(text);
      if (!starts) continue;
      const reader = new FastReader(YAML_OPTIONS);
      starts.forEach((from, k) => {
        const to = starts[k + 1] ?? text.length;
        const fast = reader.read(text, from, to);
        if (fast === undefined) return;
        accepted += 1;
        expect(fast?.value ?? null, `${file} document ${k + 1}`).toEqual(library(text.slice(from, to)));
      });
    }
    expect(accepted).toBeGreaterThan(50);
  });
});

describe('documentStarts', () => {
  it('cuts a stream at its --- lines, comments before the first marker going with the document it starts', () => {
    const text = '# header\n---\na: 1\n# trailing\n---\nb: 2\n--- # c\nc: 3\n';
    expect(documentStarts(text)).toEqual([0, text.indexOf('---\nb'), text.indexOf('--- # c')]);
    expect(documentStarts('a: 1\n---\nb: "--- not a marker"\n---x: 1\n')).toEqual([0, 5]);
  });

  it('leaves streams with directives, end markers or CR line ends to the library', () => {
    expect(documentStarts('%YAML 1.1\n---\na: 1\n')).toBeUndefined();
    expect(documentStarts('a: 1\n...\n---\nb: 2\n')).toBeUndefined();
    expect(documentStarts('a: 1\r\n---\r\nb: 2\r\n')).toBeUndefined();
  });
});

function existsDir(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}
