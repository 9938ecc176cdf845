/** The stderr report of `inject` and `uninject`: which lines carry the command's name, and which name their file. */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runInject } from '../../src/cli/inject.js';
import { runUninject } from '../../src/cli/uninject.js';

const dir = mkdtempSync(join(tmpdir(), 'pi-report-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const pod = (name: string, extra = ''): string =>
  `apiVersion: v1\nkind: Pod\nmetadata:\n  name: ${name}\nspec:${extra}\n  containers:\n  - name: app\n    image: app:1\n`;

/** Two files holding a workload of the same name, in a directory and a directory below it. */
function sameNames(): string {
  const root = join(dir, 'apps');
  mkdirSync(join(root, 'staging'), { recursive: true });
  writeFileSync(join(root, 'web.yaml'), pod('web'));
  writeFileSync(join(root, 'staging', 'web.yaml'), pod('web'));
  return root;
}

describe('the report names the file of each object', () => {
  it('when the input is a directory: two workloads of the same name are told apart', async () => {
    const root = sameNames();
    const injected = await runInject([root]);
    expect(injected.code, injected.stderr).toBe(0);
    expect(injected.stderr).toBe(
      `${join(root, 'staging', 'web.yaml')}: pod "web" annotated: linkerd.io/inject: enabled\n` +
        `${join(root, 'web.yaml')}: pod "web" annotated: linkerd.io/inject: enabled\n`,
    );
    const uninjected = await runUninject([root]);
    expect(uninjected.stderr).toBe(`${join(root, 'staging', 'web.yaml')}: pod "web" unchanged\n${join(root, 'web.yaml')}: pod "web" unchanged\n`);
  });

  it('when several files are given, stdin among them as "-"; not when one file is', async () => {
    const file = join(dir, 'one.yaml');
    writeFileSync(file, pod('one'));
    const several = await runInject([file, '-'], { stdin: pod('two') });
    expect(several.stderr).toBe(`${file}: pod "one" annotated: linkerd.io/inject: enabled\n-: pod "two" annotated: linkerd.io/inject: enabled\n`);
    expect((await runInject([file])).stderr).toBe('pod "one" annotated: linkerd.io/inject: enabled\n');
  });
});

describe('every warning and error line carries the command that wrote it', () => {
  it('inject: notes, warnings, a failed object and the count of failures', async () => {
    const hostNetwork = pod('host', '\n  hostNetwork: true');
    const result = await runInject(['--manual', '--proxy-cpu', '1', '-'], { stdin: `${hostNetwork}---\n${pod('ok')}` });
    expect(result.code).toBe(1);
    const lines = result.stderr.split('\n');
    for (const line of lines.filter((l) => /deprecated|no --values|no trust anchors|not injected|could not be/.test(l))) {
      expect(line).toMatch(/^proxy-injector inject: /);
    }
    expect(lines).toContain('proxy-injector inject: -:1: document 1: pod "host" not injected: hostNetwork is enabled');
    expect(lines).toContain('proxy-injector inject: 1 object could not be injected; nothing was written to stdout');
  });

  it('uninject: warnings, a document that is no object, and the count of failures', async () => {
    const result = await runUninject(['-', join(dir, 'none')], { stdin: 'just a string\n' });
    expect(result.code).toBe(1);
    expect(result.stderr).toBe(`proxy-injector uninject: ${join(dir, 'none')}: no such file or directory\n`);
    const failed = await runUninject(['-'], { stdin: `a: 1\na: 2\n---\njust a string\n` });
    expect(failed.stderr).toBe(
      'proxy-injector uninject: -:2: duplicate key "a" in document 1: the last value is used, as kubectl does\n\n' +
        'document without a kind unchanged\n' +
        'proxy-injector uninject: -:4: document 2: document "(unnamed)" could not be uninjected: not a Kubernetes object (a string)\n\n' +
        'proxy-injector uninject: 1 object could not be uninjected; nothing was written to stdout\n',
    );
  });
});
