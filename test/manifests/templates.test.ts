/** Helm templates given where manifests are expected are refused, and `{{` that YAML reads as text is not. */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runExplain } from '../../src/cli/explain.js';
import { runInject } from '../../src/cli/inject.js';
import { runUninject } from '../../src/cli/uninject.js';
import { templateAt } from '../../src/manifests/templates.js';

const ANCHORS = ['--trust-anchors', 'test/fixtures/cli/trust-anchors.pem'];

/** What `helm create` writes, cut short: valid YAML once rendered, nested flow maps before. */
const CHART_DEPLOYMENT = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ include "mychart.fullname" . }}
spec:
  template:
    spec:
      containers:
      - name: app
        image: {{ .Values.image }}
`;

/** A pod whose only template is in the image's name: it parses, and YAML reads the whole name as one string. */
const IMAGE_ONLY = `apiVersion: v1
kind: Pod
metadata:
  name: web
spec:
  containers:
  - name: app
    image: {{ .Values.image }}
`;

/** Lines of their own that YAML cannot read at all: the error names the template, not a syntax error. */
const CHART_LABELS = `apiVersion: v1
kind: Service
metadata:
  name: web
  labels:
    {{- include "mychart.labels" . | nindent 4 }}
`;

/** A real manifest with `{{` in a block scalar, quoted strings, a comment and inside a plain scalar. */
const CONFIG_MAP = `apiVersion: v1
kind: ConfigMap
metadata:
  name: alerts
  annotations:
    note: "rendered by {{ .Release.Name }}"
    other: '{{ x }}'
data:
  # {{ a comment }}
  slack.tmpl: |
    {{ define "slack.title" }}[{{ .Status }}]{{ end }}
  inline: prefix-{{ kept }}
---
apiVersion: v1
kind: Pod
metadata:
  name: web
  annotations:
    description: "{{ .Values.x }}"
spec:
  containers:
  - name: app
    image: app:1
`;

const dir = mkdtempSync(join(tmpdir(), 'pi-templates-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('templateAt', () => {
  it.each([
    ['a value', 'name: {{ include "x" . }}\n', 6],
    ['a line of its own', 'a: b\n{{- if .Values.enabled }}\nc: d\n', 5],
    ['a list item', 'list:\n- {{ .Values.x }}\n', 8],
    ['a flow list', 'args: [{{ .Values.x }}]\n', 7],
  ])('finds {{ as %s', (_, text, at) => {
    expect(templateAt(text)).toBe(at);
  });

  it.each([
    ['quoted', 'a: "{{ x }}"\nb: \'{{ y }}\'\n'],
    ['in a block scalar', 'a: |\n  {{ x }}\nb: >\n  {{ y }}\n'],
    ['in a comment', 'a: b # {{ x }}\n# {{ y }}\n'],
    ['inside a plain scalar', 'a: x-{{ y }}\nb: folded\n  {{ z }}\n'],
    ['a flow map as the key of a flow map, spaced', 'a: { {b: c}: d }\n'],
    ['nowhere', 'a: {b: {c: d}}\n'],
  ])('finds none %s', (_, text) => {
    expect(templateAt(text)).toBe(-1);
  });

  it('takes time in proportion to the text, however it nests', () => {
    const started = performance.now();
    expect(templateAt(`${'['.repeat(200_000)}{{`)).toBe(200_000);
    expect(templateAt(`a: ${'{ '.repeat(200_000)}`)).toBe(-1);
    expect(performance.now() - started).toBeLessThan(5_000);
  });
});

describe('a Helm template as input', () => {
  const refusal = (file: string, line: number, command: string): string =>
    `proxy-injector ${command}: ${file}:${line}: this is a Helm or Go template, not a manifest: YAML would read its {{ ... }} ` +
    `as nested maps; render it first, as in: helm template <chart> | proxy-injector ${command} -\n`;

  it.each([
    ['inject', ['-']],
    ['inject --manual', ['--manual', ...ANCHORS, '-']],
  ])('is refused by %s, with nothing on stdout', async (_, argv) => {
    for (const [text, line] of [[CHART_DEPLOYMENT, 4], [IMAGE_ONLY, 8], [CHART_LABELS, 6]] as const) {
      const result = await runInject(argv, { stdin: text });
      expect(result).toEqual({ code: 1, stdout: '', stderr: refusal('-', line, 'inject') });
    }
  });

  it('is refused by uninject and explain, which read manifests the same way', async () => {
    expect(await runUninject(['-'], { stdin: CHART_DEPLOYMENT })).toEqual({ code: 1, stdout: '', stderr: refusal('-', 4, 'uninject') });
    expect(await runExplain([...ANCHORS, '-'], { stdin: IMAGE_ONLY })).toEqual({ code: 1, stdout: '', stderr: refusal('-', 8, 'explain') });
  });

  it('in a directory, names the first template file, after manifests that are fine', async () => {
    const chart = join(dir, 'chart');
    mkdirSync(join(chart, 'templates'), { recursive: true });
    writeFileSync(join(chart, 'a-config.yaml'), CONFIG_MAP);
    writeFileSync(join(chart, 'templates', 'deployment.yaml'), CHART_DEPLOYMENT);
    writeFileSync(join(chart, 'templates', 'pod.yaml'), IMAGE_ONLY);
    const result = await runInject([chart]);
    expect(result).toEqual({ code: 1, stdout: '', stderr: refusal(join(chart, 'templates', 'deployment.yaml'), 4, 'inject') });
  });

  it('of a kind no command reads is written back as it is, as the commands leave such objects alone', async () => {
    const secret = 'apiVersion: v1\nkind: Secret\nmetadata:\n  name: s\nstringData:\n  config: {{config_data}}\n';
    expect(await runInject(['-'], { stdin: secret })).toMatchObject({ code: 0, stdout: secret });
    const kindless = await runInject(['-'], { stdin: 'kind: {{ .Values.kind }}\nmetadata:\n  name: x\n' });
    expect(kindless).toMatchObject({ code: 1, stdout: '' });
    expect(kindless.stderr).toContain('-:1: this is a Helm or Go template');
  });

  it('is not confused with a manifest that holds {{ in its strings, block scalars and comments', async () => {
    for (const argv of [['-'], ['--manual', ...ANCHORS, '-']]) {
      const result = await runInject(argv, { stdin: CONFIG_MAP });
      expect(result.code, result.stderr).toBe(0);
      expect(result.stdout).toContain('    {{ define "slack.title" }}[{{ .Status }}]{{ end }}\n');
      expect(result.stdout).toContain('    description: "{{ .Values.x }}"\n');
    }
  });
});
