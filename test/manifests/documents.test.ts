/** Reading and writing manifests on odd but real inputs: what is left alone, what is dropped, what is said. */
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { runInject } from '../../src/cli/inject.js';
import { YAML_OPTIONS } from '../../src/manifests/documents.js';
import { runUninject } from '../../src/cli/uninject.js';

const ANCHORS = ['--trust-anchors', 'test/fixtures/cli/trust-anchors.pem'];

const DEPLOYMENT = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: web
        image: nginx
`;

/** Kinds inject leaves alone, written the way people write them: templates, flow maps, odd spacing, an end marker. */
const UNTOUCHED: [string, string, string] = [
  'apiVersion: v1\nkind: Secret\nmetadata:\n  name: templated\nstringData:\n  config: {{config_data}}\n',
  '# a comment before the marker\n---\n\napiVersion: v1\nkind: ConfigMap\nmetadata: { name: spaced,  labels: {a: "1"} }\ndata:\n    key:   value   # aligned\n\n\n',
  "---\napiVersion: v1\nkind: Service\nmetadata:\n  name: 'quoted'\nspec:\n  ports: [ {port: 80} ]\n...\n",
];

const objects = (yaml: string): unknown[] => parseAllDocuments(yaml, YAML_OPTIONS).map((d) => d.toJS() as unknown);

function tempDir(): string {
  return mkdtempSync(join(tmpdir(), 'manifests-'));
}

afterEach(() => {
  vi.restoreAllMocks();
});

describe('objects nothing changes', () => {
  it('come out byte for byte, next to an injected Deployment, and the yaml library prints no warning', async () => {
    const warn = vi.spyOn(process, 'emitWarning');
    const input = `${UNTOUCHED[0]}---\n${DEPLOYMENT}${UNTOUCHED[1]}${UNTOUCHED[2]}`;
    const result = await runInject(['--manual', ...ANCHORS, '-'], { stdin: input });
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout.startsWith(UNTOUCHED[0])).toBe(true);
    expect(result.stdout.endsWith(`${UNTOUCHED[1]}${UNTOUCHED[2]}`)).toBe(true);
    expect(result.stdout).toContain('name: linkerd-proxy');
    expect(result.stderr).not.toMatch(/stringified|warning/i);
    expect(warn).not.toHaveBeenCalled();
  });

  it('come out byte for byte from uninject too, with the marker added only where one is missing', async () => {
    const input = `${UNTOUCHED[0]}${UNTOUCHED[1]}`;
    const result = await runUninject(['-', '-'], { stdin: input });
    expect(result.code, result.stderr).toBe(0);
    // stdin given twice reads the same text twice: the second copy's first document gets a `---`.
    expect(result.stdout).toBe(`${input}---\n${input}`);
  });
});

describe('a List with null items', () => {
  const list = `apiVersion: v1
kind: List
items:
  - null
  - apiVersion: v1
    kind: Namespace
    metadata:
      name: shop
  - null
metadata: {}
`;

  it('drops the null items, changes the others, and says where each dropped item was', async () => {
    const result = await runInject(['-'], { stdin: list });
    expect(result.code, result.stderr).toBe(0);
    expect(objects(result.stdout)).toEqual([
      {
        apiVersion: 'v1',
        kind: 'List',
        items: [{ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'shop', annotations: { 'linkerd.io/inject': 'enabled' } } }],
        metadata: {},
      },
    ]);
    expect(result.stderr).toContain('proxy-injector inject: -:4: document 1, items[0]: the item is null; it was dropped\n');
    expect(result.stderr).toContain('proxy-injector inject: -:9: document 1, items[2]: the item is null; it was dropped\n');
    expect(result.stderr).toContain('namespace "shop" annotated');
  });

  it('names the file, document and item of an object that cannot be injected', async () => {
    const dir = tempDir();
    const bad = list.replace('kind: Namespace\n    metadata:\n      name: shop', 'kind: Pod\n    metadata:\n      name: host\n    spec:\n      hostNetwork: true\n      containers: []');
    writeFileSync(join(dir, 'list.yaml'), `${DEPLOYMENT}---\n${bad}`);
    const result = await runInject(['--manual', ...ANCHORS, join(dir, 'list.yaml')]);
    expect(result).toMatchObject({ code: 1, stdout: '' });
    expect(result.stderr).toContain(`${join(dir, 'list.yaml')}:20: document 2, items[1]: pod "host" not injected: hostNetwork is enabled\n`);
  });
});

describe('duplicate keys', () => {
  const twice = `apiVersion: v1
kind: Namespace
metadata:
  name: first
  name: shop
  labels: {team: a}
`;

  it('are accepted, the last value counting, with a warning that names the file and line', async () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'ns.yaml'), twice);
    const result = await runInject([join(dir, 'ns.yaml')]);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stderr).toContain(`proxy-injector inject: ${join(dir, 'ns.yaml')}:5: duplicate key "name" in document 1: the last value is used, as kubectl does\n`);
    expect(result.stderr).toContain('namespace "shop" annotated');
    // The edited object keeps only the value that counted, so the output says what it means.
    expect(result.stdout).toBe('apiVersion: v1\nkind: Namespace\nmetadata:\n  name: shop\n  labels: {team: a}\n  annotations:\n    linkerd.io/inject: enabled\n');
  });

  it('in an object nothing changes are written as they were', async () => {
    const secret = 'apiVersion: v1\nkind: Secret\nmetadata:\n  name: s\ndata:\n  a: eA==\n  a: eQ==\n';
    const result = await runInject(['-'], { stdin: secret });
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toBe(secret);
    expect(result.stderr).toContain('-:7: duplicate key "a" in document 1');
  });

  it('do not hide a real syntax error', async () => {
    const result = await runInject(['-'], { stdin: `${twice}  bad: [\n` });
    expect(result).toMatchObject({ code: 1, stdout: '' });
    expect(result.stderr).toMatch(/^proxy-injector inject: -:\d+: invalid YAML: /);
  });
});

describe('inputs that hold nothing', () => {
  it('say what was read and that it held no objects, and exit 0 with nothing on stdout', async () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'empty.yaml'), '');
    writeFileSync(join(dir, 'comments.yaml'), '# nothing here\n---\n');
    mkdirSync(join(dir, 'nothing'));
    mkdirSync(join(dir, 'notes'));
    writeFileSync(join(dir, 'notes', 'README.txt'), 'not a manifest');
    mkdirSync(join(dir, 'blank'));
    writeFileSync(join(dir, 'blank', 'a.yaml'), '\n');
    const args = ['empty.yaml', 'comments.yaml', 'nothing', 'notes', 'blank'].map((f) => join(dir, f));
    const result = await runInject(args);
    expect(result).toEqual({
      code: 0,
      stdout: '',
      stderr:
        `proxy-injector inject: ${args[0]}: read 0 bytes, no Kubernetes objects in them\n` +
        `proxy-injector inject: ${args[1]}: read 19 bytes, no Kubernetes objects in them\n` +
        `proxy-injector inject: ${args[2]}: a directory with no *.yaml, *.yml or *.json files; nothing was read\n` +
        `proxy-injector inject: ${args[3]}: a directory with no *.yaml, *.yml or *.json files; nothing was read\n` +
        `proxy-injector inject: ${args[4]}: read 1 file (${join(args[4] ?? '', 'a.yaml')}), no Kubernetes objects in them\n\n`,
    });
  });

  it('are named even when other inputs hold objects, and empty stdin is named as stdin', async () => {
    const result = await runUninject(['-', 'test/fixtures/cli/in/deployment.yaml'], { stdin: '' });
    expect(result.code).toBe(0);
    expect(result.stdout).not.toBe('');
    expect(result.stderr).toContain('proxy-injector uninject: stdin: read 0 bytes, no Kubernetes objects in them\n');
  });
});
