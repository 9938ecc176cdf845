/**
 * Input that is not a manifest, or not one the CLI can take, gets an error that names the file and says what is wrong
 * in the user's terms, never a JavaScript one, and the commands agree on it.
 */
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runExplain } from '../../src/cli/explain.js';
import { runInject } from '../../src/cli/inject.js';
import { runUninject } from '../../src/cli/uninject.js';
import { TRUST_ANCHORS } from '../support/engine.js';

const dir = mkdtempSync(join(tmpdir(), 'pi-bad-input-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const file = (name: string, content: string | Buffer): string => {
  const path = join(dir, name);
  writeFileSync(path, content);
  return path;
};
const anchors = file('anchors.pem', TRUST_ANCHORS);
const POD = 'apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\nspec:\n  containers:\n  - name: app\n    image: app\n';

/** Block YAML `depth` levels deep under a Deployment's container: what no reader of the CLI's can recurse through. */
function nested(depth: number): string {
  const lines = ['apiVersion: apps/v1', 'kind: Deployment', 'metadata:', '  name: web', 'spec:', '  selector: {matchLabels: {app: web}}', '  template:', '    metadata: {labels: {app: web}}', '    spec:', '      containers:', '      - name: app', '        image: app', '        extra:'];
  for (let i = 0; i < depth; i++) lines.push(`${'  '.repeat(5 + i)}a:`);
  lines.push(`${'  '.repeat(5 + depth)}x`);
  return `${lines.join('\n')}\n`;
}

const commands = {
  inject: (args: string[]) => runInject(['--manual', '--trust-anchors', anchors, ...args]),
  uninject: (args: string[]) => runUninject(args),
  explain: (args: string[]) => runExplain(['--trust-anchors', anchors, ...args]),
};

describe('bad input', () => {
  it.each(Object.keys(commands) as Array<keyof typeof commands>)('%s: YAML nested 2,000 or 900 levels deep is refused, naming the file, never overflowing the stack', async (command) => {
    // 2,000 levels are more than the yaml library reads.
    const deepest = await commands[command]([file('deep-2000.yaml', nested(2000))]);
    expect(deepest.code).toBe(1);
    expect(deepest.stderr).toMatch(/deep-2000\.yaml:\d+: invalid YAML: collections nested too deeply to read\n/);
    // 900 it usually reads but cannot print; whether the reader or the printer runs out first depends on the stack the
    // JIT leaves, so either clear message will do. A command that copies the document is fine.
    const deep = await commands[command]([file('deep-900.yaml', nested(900))]);
    expect(deep.stderr).not.toMatch(/Maximum call stack/);
    if (deep.code !== 0) expect(deep.stderr).toMatch(/deep-900\.yaml:(1: document 1: collections nested too deeply to process|\d+: invalid YAML: collections nested too deeply to read)\n$/);
  });

  it('a directory walk skips what is not named as a manifest, a dangling link among it, and names a dangling manifest', async () => {
    const walked = join(dir, 'walked');
    mkdirSync(walked);
    writeFileSync(join(walked, 'app.yaml'), POD);
    symlinkSync(join(dir, 'nowhere', 'README.md'), join(walked, 'README.md'));
    const ok = await runInject([walked]);
    expect(ok.code).toBe(0);
    expect(ok.stderr).toBe(`${join(walked, 'app.yaml')}: pod "web" annotated: linkerd.io/inject: enabled\n`);
    symlinkSync(join(dir, 'nowhere', 'db.yaml'), join(walked, 'db.yaml'));
    const dangling = await runInject([walked]);
    expect(dangling.code).toBe(1);
    expect(dangling.stderr).toMatch(/walked\/db\.yaml: no such file/);
  });

  it('a directory walk does not follow links into directories, as Go\'s filepath.Walk does not: two links to "." end', async () => {
    const looped = join(dir, 'looped');
    mkdirSync(join(looped, 'real'), { recursive: true });
    writeFileSync(join(looped, 'real', 'app.yaml'), POD);
    symlinkSync('.', join(looped, 'here'));
    symlinkSync('..', join(looped, 'real', 'up'));
    // A link to a manifest file is still read.
    symlinkSync(join(looped, 'real', 'app.yaml'), join(looped, 'linked.yaml'));
    const result = await runInject([looped]);
    expect(result.code).toBe(0);
    expect(result.stderr).toBe(
      `${join(looped, 'linked.yaml')}: pod "web" annotated: linkerd.io/inject: enabled\n` +
        `${join(looped, 'real', 'app.yaml')}: pod "web" annotated: linkerd.io/inject: enabled\n`,
    );
    // Named on the command line, a link to a directory is walked: it is what the user asked for.
    const named = await runInject([join(looped, 'here')]);
    expect(named.code).toBe(0);
    expect(named.stderr.split('\n').filter(Boolean)).toHaveLength(2);
  });

  it('uninject says a document that is not an object could not be uninjected, and what it is', async () => {
    const result = await runUninject([file('scalar.yaml', 'just a string\n')]);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/document "\(unnamed\)" could not be uninjected: not a Kubernetes object \(a string\)\n/);
  });

  it('a --values file of several documents says so, without the YAML library advice to its own callers', async () => {
    const values = file('multi-values.yaml', 'proxy:\n  logLevel: debug\n---\ncniEnabled: true\n');
    const result = await runInject(['--manual', '--values', values, '--trust-anchors', anchors, file('pod.yaml', POD)]);
    expect(result.code).toBe(1);
    expect(result.stderr).toBe(`proxy-injector inject: --values ${values}: Linkerd values must be one YAML document; this holds several (separated by ---)\n`);
  });

  it.each([
    ['a binary', () => copyFileSync(process.execPath, join(dir, 'node.bin')), 'node.bin', 'it looks like a binary file'],
    ['random bytes', () => writeFileSync(join(dir, 'random.bin'), Buffer.from(Array.from({ length: 4096 }, (_, i) => (i * 7919 + 13) % 256))), 'random.bin', 'it looks like a binary file'],
    ['an HTML page', () => writeFileSync(join(dir, 'page.yaml'), '<!DOCTYPE html>\n<html><body>Not found</body></html>\n'), 'page.yaml', 'it looks like an HTML or XML page'],
  ])('%s is not YAML or JSON, and inject, uninject and explain all say so and exit 1', async (_what, make, name, why) => {
    make();
    for (const run of Object.values(commands)) {
      const result = await run([join(dir, name)]);
      expect(result.code).toBe(1);
      expect(result.stderr).toMatch(new RegExp(`: ${join(dir, name).replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}: not YAML or JSON: ${why}\\n$`));
    }
  });

  it('explain refuses a document that is no Kubernetes object, as inject does', async () => {
    const scalar = file('words.yaml', 'hello world\n');
    const explained = await runExplain(['--trust-anchors', anchors, scalar]);
    const injected = await runInject([scalar]);
    expect([explained.code, injected.code]).toEqual([1, 1]);
    expect(explained.stderr).toContain(`${scalar}: not a Kubernetes object (a string)`);
  });
});
