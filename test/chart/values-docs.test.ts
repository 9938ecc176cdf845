/** The chart's values table stays true: every value in values.yaml is documented there and in the schema. */
import { readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parse } from 'yaml';
import { describe, expect, it } from 'vitest';

const CHART = resolve(dirname(fileURLToPath(import.meta.url)), '../../charts/proxy-injector');
const valuesText = readFileSync(join(CHART, 'values.yaml'), 'utf8');
const readme = readFileSync(join(CHART, 'README.md'), 'utf8');
const schema = JSON.parse(readFileSync(join(CHART, 'values.schema.json'), 'utf8')) as SchemaNode;

interface SchemaNode {
  properties?: Record<string, SchemaNode>;
}

/** Key paths of values.yaml in order, each with whether a `# --` comment documents it. */
function keyPaths(text: string): Array<{ path: string; documented: boolean }> {
  const out: Array<{ path: string; documented: boolean }> = [];
  const stack: string[] = [];
  let documented = false;
  for (const line of text.split('\n')) {
    if (/^\s*# -- /.test(line)) {
      documented = true;
      continue;
    }
    if (/^\s*#/.test(line)) continue;
    const key = /^( *)([A-Za-z]\w*):/.exec(line);
    if (key) {
      const depth = (key[1] ?? '').length / 2;
      stack.length = depth;
      stack.push(key[2] ?? '');
      out.push({ path: stack.join('.'), documented });
    }
    documented = false;
  }
  return out;
}

describe('chart values documentation', () => {
  const paths = keyPaths(valuesText);

  it('reads the keys of values.yaml (the parser sees the nested ones too)', () => {
    expect(paths.map((p) => p.path)).toContain('certificates.generate.renewBeforeDays');
    expect(Object.keys(parse(valuesText) as object).every((k) => paths.some((p) => p.path === k))).toBe(true);
  });

  it('every value is documented by a `# --` comment, itself or through the key that holds it', () => {
    const documented = new Set(paths.filter((p) => p.documented).map((p) => p.path));
    const covered = (path: string) => path.split('.').some((_, i, parts) => documented.has(parts.slice(0, i + 1).join('.')));
    const uncovered = paths.filter((p) => !covered(p.path) && !paths.some((q) => q.path.startsWith(`${p.path}.`) && documented.has(q.path)));
    expect(uncovered.map((p) => p.path)).toEqual([]);
  });

  it('every documented value has a row in the README table', () => {
    const missing = paths.filter((p) => p.documented && !readme.includes(`| \`${p.path}\` |`)).map((p) => p.path);
    expect(missing).toEqual([]);
  });

  it('every top-level and nested object value is described by the schema', () => {
    const missing: string[] = [];
    for (const { path } of paths) {
      let node: SchemaNode | undefined = schema;
      for (const part of path.split('.')) {
        const next: SchemaNode | undefined = node?.properties?.[part];
        if (!next && node?.properties === undefined) break; // a free-form object (resources, selectors): not walked
        node = next;
        if (!node) {
          missing.push(path);
          break;
        }
      }
    }
    expect(missing).toEqual([]);
  });
});

describe('chart defaults that the image depends on', () => {
  it('nodeOptions is the NODE_OPTIONS of the Dockerfile, with which the image builds its code cache', async () => {
    // Read as the benchmarks read it, so that there is one reading of the Dockerfile's line.
    const helper = pathToFileURL(join(CHART, '../../bench/serve-process.mjs')).href;
    const { imageNodeOptions } = (await import(helper)) as { imageNodeOptions: (root: string) => string };
    const image = imageNodeOptions(join(CHART, '../..'));
    expect(image).toMatch(/--max-semi-space-size=\d+/);
    expect((parse(valuesText) as { nodeOptions?: unknown }).nodeOptions).toBe(image);
  });
});
