/**
 * A document spliced (FastReader, then the splicer) comes out exactly as the yaml library's edit-and-print of the same
 * document: the commands are run both ways on the same inputs and must print the same bytes and the same report.
 */
import { readdirSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { parseDocument } from 'yaml';
import { Declined, FastReader } from '../../src/manifests/fast-yaml.js';
import { runInject, type CliResult } from '../../src/cli/inject.js';
import { YAML_OPTIONS } from '../../src/manifests/documents.js';
import { runUninject } from '../../src/cli/uninject.js';
import { applyToValue, documentPatcher, type PatchOp } from '../../src/manifests/yaml-patch.js';
import { Splicer } from '../../src/manifests/yaml-splice.js';

const here = dirname(fileURLToPath(import.meta.url));
const fixtures = resolve(process.env['LINKERD_FIXTURES'] ?? join(here, '..', '..', '..', 'shared', 'linkerd2'));
const cliInputs = join(here, '..', 'fixtures', 'cli', 'in');
const ANCHORS = ['--trust-anchors', 'test/fixtures/cli/trust-anchors.pem'];

function yamlIn(dir: string): string[] {
  try {
    return readdirSync(dir)
      .filter((f) => /\.ya?ml$/.test(f))
      .sort()
      .map((f) => join(dir, f));
  } catch {
    return [];
  }
}

type Run = (argv: readonly string[], io: { stdin?: string; fastReader?: boolean }) => Promise<CliResult>;

/** Runs the command with the fast reader and with the yaml library only; both must say and print the same. */
async function same(run: Run, argv: readonly string[], stdin?: string): Promise<CliResult> {
  const io = stdin === undefined ? {} : { stdin };
  const fast = await run(argv, io);
  const library = await run(argv, { ...io, fastReader: false });
  expect(fast, argv.join(' ')).toEqual(library);
  return fast;
}

afterEach(() => {
  vi.restoreAllMocks();
});

/** A Deployment as the CLI benchmark writes them. */
function deployment(i: number, wide: boolean): string {
  const env = (c: string): string =>
    Array.from({ length: 3 }, (_, e) => `        - name: ${c.toUpperCase()}_${e}\n          value: "v-${i}-${e}"\n`).join('');
  const container = (c: string, port: number): string =>
    `      - name: ${c}\n        image: registry.example.com/${c}-${i}:1.4\n        args: ["--port=${port}", "--log-format=json"]\n` +
    `        ports:\n        - name: http\n          containerPort: ${port}\n        resources:\n          requests: {cpu: 100m, memory: 128Mi}\n` +
    (wide ? `        env:\n${env(c)}` : '');
  return (
    `# app-${i}: generated\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: app-${i}\n  namespace: team\n` +
    `spec:\n  selector:\n    matchLabels:\n      app: app-${i}\n  template:\n    metadata:\n      labels:\n        app: app-${i}\n` +
    `    spec:\n      containers:\n${container('app', 8080)}${wide ? container('worker', 9090) : ''}` +
    `      volumes:\n      - name: config\n        configMap:\n          name: app-${i}\n`
  );
}

describe('the spliced output', () => {
  it('is the library-printed output for generated Deployments, and splicing did the work', async () => {
    const splice = vi.spyOn(Splicer.prototype, 'splice');
    const stdin = [deployment(0, false), deployment(1, true), deployment(2, false)].join('---\n');
    const injected = await same(runInject, ['--manual', ...ANCHORS, '-'], stdin);
    expect(injected.code).toBe(0);
    await same(runInject, ['-'], stdin);
    await same(runUninject, ['-'], injected.stdout);
    // Every document of every fast run was spliced: none was left to the library.
    expect(splice.mock.results.filter((r) => r.type === 'return')).toHaveLength(9);
  });

  it.each([
    ...yamlIn(join(fixtures, 'fake-data')).map((f) => [f.slice(fixtures.length + 1), f] as const),
    ...yamlIn(cliInputs).map((f) => [`cli/in/${f.slice(cliInputs.length + 1)}`, f] as const),
  ])('is the library-printed output for %s (inject --manual, inject, uninject of both)', async (_, file) => {
    const manual = await same(runInject, ['--manual', ...ANCHORS, file]);
    const annotated = await same(runInject, [file]);
    if (manual.code === 0) await same(runUninject, ['-'], manual.stdout);
    if (annotated.code === 0) await same(runUninject, ['-'], annotated.stdout);
  });

  it('splices most of those fixtures rather than leaving them to the library', async () => {
    const splice = vi.spyOn(Splicer.prototype, 'splice');
    for (const file of [...yamlIn(join(fixtures, 'fake-data')), ...yamlIn(cliInputs)]) await runInject(['--manual', ...ANCHORS, file]);
    const spliced = splice.mock.results.filter((r) => r.type === 'return').length;
    expect(spliced).toBeGreaterThan(splice.mock.results.length / 2);
  });

  it.each([
    ['a comment between two containers', (d: string) => d.replace('      - name: worker', '      # the worker\n      - name: worker')],
    ['a comment after the containers', (d: string) => d.replace('      volumes:', '      # volumes next\n      volumes:')],
    ['a comment before the first container', (d: string) => d.replace('      containers:\n', '      containers:\n      # the app\n')],
    ['a blank line before the first container', (d: string) => d.replace('      containers:\n', '      containers:\n\n')],
    ['a comment on the template labels', (d: string) => d.replace('        app: app-1\n', '        app: app-1 # the label\n')],
    ['a comment deeper in the last container', (d: string) => d.replace('      volumes:', '          # deeper\n      volumes:')],
    ['a comment after the volumes, indented as the spec', (d: string) => `${d}  # the spec\n`],
    ['no newline at the end', (d: string) => d.trimEnd()],
    ['an empty volumes list', (d: string) => d.replace(/ {6}volumes:\n[\s\S]*$/, '      volumes: []\n')],
  ])('is the library-printed output next to %s', async (_, edit) => {
    const stdin = edit(deployment(1, true));
    const injected = await same(runInject, ['--manual', ...ANCHORS, '-'], stdin);
    await same(runInject, ['-'], stdin);
    await same(runUninject, ['-'], injected.stdout);
  });

  it.each([
    ['a comment after the containers, indented as the template', '    # the pod\n'],
    ['comments after the containers, at the top and then indented', '# top\n    # template\n'],
  ])('keeps %s as written, where the library indents it as the key after it', async (_, comments) => {
    const stdin = deployment(1, true).replace('      volumes:', `${comments}      volumes:`);
    const flush = (text: string): string => text.replace(/^ *#/gm, '#');
    for (const argv of [['--manual', ...ANCHORS, '-'], ['-']]) {
      const fast = await runInject(argv, { stdin });
      const library = await runInject(argv, { stdin, fastReader: false });
      expect(fast.stdout).toContain(`${comments}      volumes:`);
      expect(flush(fast.stdout)).toBe(flush(library.stdout));
      expect((await runUninject(['-'], { stdin: fast.stdout })).stdout).toBe(stdin);
    }
  });

  it('reports the same documents, items and lines when the reader takes some documents of a file and not others', async () => {
    const anchored = 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: anchored\ndata:\n  a: &x one\n  b: *x\n';
    const list =
      '# a list\napiVersion: v1\nkind: List\nitems:\n- null\n- apiVersion: apps/v1\n  kind: Deployment\n  metadata:\n    name: listed\n' +
      '  spec:\n    template:\n      spec:\n        containers:\n        - name: c\n          image: i\n';
    const host = deployment(7, false).replace('    spec:\n      containers:', '    spec:\n      hostNetwork: true\n      containers:');
    const stdin = [deployment(0, false), anchored, list, deployment(1, true)].join('---\n');
    for (const argv of [['--manual', ...ANCHORS, '-'], ['-'], ['-o', 'json', '--manual', ...ANCHORS, '-']]) {
      const result = await same(runInject, argv, stdin);
      expect(result.code).toBe(0);
      const line = stdin.slice(0, stdin.indexOf('- null')).split('\n').length;
      expect(result.stderr).toContain(`-:${line}: document 3, items[0]: the item is null; it was dropped`);
    }
    const failing = await same(runInject, ['--manual', ...ANCHORS, '-'], [stdin, host].join('---\n'));
    expect(failing.code).toBe(1);
    expect(failing.stderr).toMatch(/-:\d+: document 5/);
    const invalid = await same(runInject, ['-'], [deployment(0, false), 'a: [1, 2\n', anchored].join('---\n'));
    expect(invalid.code).toBe(1);
    expect(invalid.stderr).toMatch(/^proxy-injector inject: -:\d+: invalid YAML/);
  });

  it('keeps what the edits do not reach as written, where the library would re-space it', async () => {
    const stdin = deployment(1, false).replace('        app: app-1\n', '        app: app-1    # aligned\n');
    const argv = ['--manual', ...ANCHORS, '-'];
    const fast = await runInject(argv, { stdin });
    const library = await runInject(argv, { stdin, fastReader: false });
    expect(fast.stdout).toContain('        app: app-1    # aligned\n        linkerd.io/control-plane-ns: linkerd\n');
    expect(fast.stdout).toBe(library.stdout.replace('app: app-1 # aligned', 'app: app-1    # aligned'));
  });
});

describe('Splicer', () => {
  const text =
    'kind: Thing\nmetadata:\n  name: a\n  labels:\n    x: "1"\n    why: two\nlist:\n- name: first\n  value: 1\n- plain\n' +
    'nested:\n  deeper:\n    keep: [1, 2]\n';

  /** The document edited by the splicer, and by the yaml library's patcher and printer. */
  function bothWays(ops: PatchOp[]): [string, string] {
    const fast = new FastReader(YAML_OPTIONS).read(text, 0, text.length);
    if (!fast) throw new Error('the fast reader declined the test document');
    const style = { indent: 2, indentSeq: false, flowCollectionPadding: false };
    const spliced = new Splicer(YAML_OPTIONS, { lineWidth: 0, minContentWidth: 0 }).splice(text, 0, text.length, fast, [{ ops, base: [] }], style);
    const doc = parseDocument(text, YAML_OPTIONS);
    documentPatcher(doc).apply(ops);
    return [spliced, doc.toString({ lineWidth: 0, minContentWidth: 0, ...style })];
  }

  it.each<[string, PatchOp[]]>([
    ['adds a key at the end of a nested map', [{ op: 'add', path: '/metadata/labels/z', value: 'three' }]],
    ['puts a removed and re-added key back in its place', [
      { op: 'remove', path: '/metadata/labels/x' },
      { op: 'add', path: '/metadata/labels/x', value: 'again' },
    ]],
    ['replaces a value, keeping the key as written', [{ op: 'add', path: '/metadata/name', value: { long: ['v'] } }]],
    ['inserts list items first, in the middle and last', [
      { op: 'add', path: '/list/0', value: { name: 'zero', env: [{ name: 'A', value: 'b' }] } },
      { op: 'add', path: '/list/2', value: 'middle' },
      { op: 'add', path: '/list/-', value: [1, 2] },
    ]],
    ['removes list items and map keys', [
      { op: 'remove', path: '/list/0' },
      { op: 'remove', path: '/metadata/labels/why' },
    ]],
    ['adds to a compact map inside a list item', [{ op: 'add', path: '/list/0/extra', value: { a: 1 } }]],
    ['edits inside a value an earlier operation added', [
      { op: 'add', path: '/nested/deeper/new', value: { items: [] } },
      { op: 'add', path: '/nested/deeper/new/items/-', value: 'x' },
    ]],
    ['adds a top-level key', [{ op: 'add', path: '/status', value: { phase: 'Ready' } }]],
  ])('%s as the library prints it', (_, ops) => {
    const [spliced, printed] = bothWays(ops);
    expect(spliced).toBe(printed);
  });
});

describe('Splicer on random documents and edits', () => {
  /** A small deterministic generator, so that a failure can be replayed. */
  function random(seed: number): (n: number) => number {
    let s = seed;
    return (n) => {
      s = (s * 1103515245 + 12345) % 2147483648;
      return s % n;
    };
  }

  /** A random block document: maps and lists nested three deep, compact maps in lists, comments, blank lines. */
  function document(next: (n: number) => number, indentSeq: boolean): string {
    const lines: string[] = [];
    const scalar = (): string => ['a', 'b-1', '"q"', "'s'", '8080', 'true', 'x y', '{k: v}', '[1, 2]'][next(9)]!;
    const map = (indent: string, depth: number, first?: string): void => {
      const n = 1 + next(4);
      for (let i = 0; i < n; i += 1) {
        const lead = i === 0 && first !== undefined ? first : indent;
        if (next(20) === 0) lines.push(`${indent}# note ${i}`);
        if (next(40) === 0) lines.push(`${indent}    # deeper ${i}`);
        if (next(10) === 0) lines.push('');
        const kind = depth >= 3 ? 0 : next(3);
        if (kind === 0) lines.push(`${lead}k${i}: ${scalar()}`);
        else if (kind === 1) {
          lines.push(`${lead}k${i}:`);
          map(`${indent}  `, depth + 1);
        } else {
          lines.push(`${lead}k${i}:`);
          list(indentSeq ? `${indent}  ` : indent, depth + 1);
        }
      }
    };
    const list = (indent: string, depth: number): void => {
      const n = 1 + next(3);
      for (let i = 0; i < n; i += 1) {
        if (next(20) === 0) lines.push(`${indent}# item ${i}`);
        if (depth < 3 && next(2) === 0) map(`${indent}  `, depth + 1, `${indent}- `);
        else lines.push(`${indent}- ${scalar()}`);
      }
    };
    map('', 0);
    return `${lines.join('\n')}\n`;
  }

  /** Paths to every map and list in a value, with the value there. */
  function containers(value: unknown, path: string[] = []): Array<[string[], unknown]> {
    if (typeof value !== 'object' || value === null) return [];
    const here: Array<[string[], unknown]> = [[path, value]];
    const children = Array.isArray(value) ? value.map((v, i) => [String(i), v] as const) : Object.entries(value);
    return here.concat(...children.map(([k, v]) => containers(v, [...path, k])));
  }

  const pointer = (tokens: string[]): string => tokens.map((t) => `/${t.replace(/~/g, '~0').replace(/\//g, '~1')}`).join('');

  it('writes documents that read back as the edited data, and as the library prints them when it prints the same', () => {
    let spliced = 0;
    let compared = 0;
    let declined = 0;
    for (let seed = 1; seed <= 1000; seed += 1) {
      const next = random(seed);
      const indentSeq = seed % 2 === 0;
      const text = document(next, indentSeq);
      const fast = new FastReader(YAML_OPTIONS).read(text, 0, text.length);
      if (!fast) continue;
      expect(fast.value, `seed ${seed}`).toEqual(parseDocument(text, YAML_OPTIONS).toJS());
      const expected = structuredClone(fast.value) as Record<string, unknown>;
      const ops: PatchOp[] = [];
      for (let k = 1 + next(3); k > 0; k -= 1) {
        const all = containers(expected);
        const [path, at] = all[next(all.length)]!;
        let op: PatchOp;
        if (Array.isArray(at)) {
          const remove = at.length > 1 && next(3) === 0;
          op = remove ? { op: 'remove', path: pointer([...path, String(next(at.length))]) } : { op: 'add', path: pointer([...path, String(next(at.length + 1))]), value: next(2) === 0 ? 'new' : { name: 'n', list: ['x'] } };
        } else {
          const keys = Object.keys(at as object);
          const remove = keys.length > 1 && next(3) === 0;
          op = remove ? { op: 'remove', path: pointer([...path, keys[next(keys.length)]!]) } : { op: 'add', path: pointer([...path, next(2) === 0 ? 'added' : (keys[0] ?? 'k')]), value: next(2) === 0 ? 'v' : { a: [1, { b: 'c' }] } };
        }
        applyToValue(expected, [op]);
        ops.push(op);
      }
      const style = { indent: 2, indentSeq, flowCollectionPadding: false };
      let out: string;
      try {
        out = new Splicer(YAML_OPTIONS, { lineWidth: 0, minContentWidth: 0 }).splice(text, 0, text.length, fast, [{ ops, base: [] }], style);
      } catch (err) {
        if (!(err instanceof Declined)) throw err;
        declined += 1;
        continue;
      }
      spliced += 1;
      const back = parseDocument(out, YAML_OPTIONS);
      expect(back.errors, `seed ${seed}:\n${out}`).toEqual([]);
      expect(back.toJS(), `seed ${seed}:\n${text}\n${JSON.stringify(ops)}\n${out}`).toEqual(expected);
      const doc = parseDocument(text, YAML_OPTIONS);
      documentPatcher(doc).apply(ops);
      const printed = doc.toString({ lineWidth: 0, minContentWidth: 0, ...style });
      // The library re-spaces flow collections and quotes as it likes; where it prints the input as it was, the two agree.
      if (parseDocument(text, YAML_OPTIONS).toString({ lineWidth: 0, minContentWidth: 0, ...style }) === text) {
        expect(out, `seed ${seed}:\n${text}\n${JSON.stringify(ops)}`).toBe(printed);
        compared += 1;
      }
    }
    expect(spliced).toBeGreaterThan(350);
    expect(compared).toBeGreaterThan(120);
    expect(declined).toBeGreaterThan(0);
  });
});
