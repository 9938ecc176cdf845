/**
 * A YAML `__proto__` key is an ordinary key: read as an own entry, copied as one, written back as it was, and never an
 * object's prototype. `inject --manual`, `explain` and the webhook must all see it as an unknown annotation.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { afterAll, describe, expect, it } from 'vitest';
import { runExplain, type Explanation } from '../../src/cli/explain.js';
import { runInject } from '../../src/cli/inject.js';
import { YAML_OPTIONS } from '../../src/manifests/documents.js';
import { copyPlain, inject } from '../../src/engine/index.js';
import { applied, testConfig } from '../support/engine.js';

type Obj = Record<string, any>;

const ANCHORS = ['--trust-anchors', 'test/fixtures/cli/trust-anchors.pem'];

const pod = (annotations: string): string => `apiVersion: v1
kind: Pod
metadata:
  name: web
  namespace: shop
${annotations}spec:
  containers:
    - name: web
      image: web:1
`;

const FLOW = pod('  annotations: {linkerd.io/inject: enabled, __proto__: {config.linkerd.io/proxy-uid: "4321"}}\n');
const BLOCK = pod('  annotations:\n    linkerd.io/inject: enabled\n    __proto__:\n      config.linkerd.io/proxy-uid: "4321"\n');

const objects = (yaml: string): Obj[] => parseAllDocuments(yaml, YAML_OPTIONS).map((d) => d.toJS() as Obj);
const proxyUid = (p: Obj): unknown =>
  [...(p.spec.initContainers ?? []), ...p.spec.containers].find((c: Obj) => c.name === 'linkerd-proxy')?.securityContext?.runAsUser;

const dir = mkdtempSync(join(tmpdir(), 'proxy-injector-proto-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('a __proto__ key in YAML', () => {
  it.each([['flow', FLOW], ['block', BLOCK]])('%s: inject --manual ignores it as an unknown annotation and keeps it', async (_, text) => {
    const result = await runInject([...ANCHORS, '--manual', '-'], { stdin: text });
    expect(result.code, result.stderr).toBe(0);
    const [out] = objects(result.stdout);
    expect(proxyUid(out!)).toBe(2102);
    const annotations = out!.metadata.annotations as Obj;
    expect(Object.getPrototypeOf(annotations)).toBe(Object.prototype);
    expect(Object.hasOwn(annotations, '__proto__')).toBe(true);
    expect(annotations['__proto__']).toEqual({ 'config.linkerd.io/proxy-uid': '4321' });
  });

  it.each([['flow', FLOW], ['block', BLOCK]])('%s: inject writes an unchanged document back byte for byte', async (_, text) => {
    const result = await runInject([...ANCHORS, '-'], { stdin: text });
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toBe(text);
  });

  it('inject keeps the key where it adds the annotation', async () => {
    const text = pod('  annotations:\n    __proto__:\n      config.linkerd.io/proxy-uid: "4321"\n');
    const result = await runInject([...ANCHORS, '-'], { stdin: text });
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toContain('    __proto__:\n      config.linkerd.io/proxy-uid: "4321"\n');
    expect(result.stdout).toContain('linkerd.io/inject: enabled');
  });

  it('explain, inject --manual and the webhook agree on the proxy uid', async () => {
    const explained = await runExplain([...ANCHORS, '-o', 'json', '-'], { stdin: FLOW });
    expect(explained.code, explained.stderr).toBe(0);
    const [e] = JSON.parse(explained.stdout) as Explanation[];
    expect(e?.iptables?.ipv4.join('\n')).toContain('--uid-owner 2102');

    const object = JSON.parse(JSON.stringify(objects(FLOW)[0])) as Obj; // as the API server sends it
    expect(Object.hasOwn(object.metadata.annotations, '__proto__')).toBe(true);
    const result = inject({ object, namespace: 'shop', namespaceAnnotations: {}, origin: 'webhook', config: testConfig() });
    expect(result.outcome).toBe('injected');
    expect(proxyUid(applied(object, result.patch) as Obj)).toBe(2102);
  });

  it('copies keep it as an own entry, never a prototype', () => {
    const source = JSON.parse('{"a":{"__proto__":{"x":1}}}') as Obj;
    const copy = copyPlain(source);
    expect(Object.getPrototypeOf(copy.a)).toBe(Object.prototype);
    expect(copy.a.x).toBeUndefined();
    expect(Object.keys(copy.a)).toEqual(['__proto__']);
  });

  it('in --values, it is an unknown key: nothing is merged into Object.prototype or the proxy values', async () => {
    const values = join(dir, 'values.yaml');
    writeFileSync(values, '__proto__:\n  polluted: yes\nproxy:\n  __proto__:\n    uid: 4321\n');
    const result = await runInject([...ANCHORS, '--manual', '--values', values, '-'], { stdin: FLOW });
    expect(result.code, result.stderr).toBe(0);
    expect(({} as Obj)['polluted']).toBeUndefined();
    expect(proxyUid(objects(result.stdout)[0]!)).toBe(2102);
  });
});
