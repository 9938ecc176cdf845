/**
 * The source folders are layers, and imports only point one way: the front ends (cli, server, cluster) use admission,
 * admission uses the engine, the CLI reads and writes manifests through the manifests layer (which uses only the
 * engine's patch types), tls uses only the engine's text helpers, and the engine uses nothing of the project. An import into another folder goes
 * through that folder's index.ts, so what a folder offers the others is written down in one place.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const SRC = resolve(import.meta.dirname, '../src');

/** What each folder may import from the others (its own files are always allowed). */
const ALLOWED: Record<string, readonly string[]> = {
  engine: [],
  tls: ['engine'],
  admission: ['engine'],
  server: ['admission', 'engine', 'tls'],
  cluster: ['admission', 'engine'],
  manifests: ['engine'],
  cli: ['server', 'cluster', 'manifests', 'admission', 'engine', 'tls'],
};

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

/** Relative specifiers of static, type-only, side-effect and dynamic imports and of re-exports. */
export function importsOf(source: string): string[] {
  const found: string[] = [];
  const quoted = `['"](\\.[^'"]+)['"]`;
  const forms = new RegExp(`(?:^|\\n)\\s*(?:import|export)\\b[^'";]*?\\bfrom\\s*${quoted}|\\bimport\\s*\\(\\s*${quoted}\\s*\\)|(?:^|\\n)\\s*import\\s*${quoted}`, 'g');
  for (const m of source.matchAll(forms)) {
    found.push((m[1] ?? m[2] ?? m[3]) as string);
  }
  return found;
}

const folderOf = (path: string): string => relative(SRC, path).split('/')[0] ?? '';

/** Every import that crosses layers the wrong way or reaches past another folder's index.ts. */
function violations(): string[] {
  const out: string[] = [];
  for (const file of sourceFiles(SRC)) {
    const from = folderOf(file);
    for (const specifier of importsOf(readFileSync(file, 'utf8'))) {
      const target = resolve(dirname(file), specifier).replace(/\.js$/, '.ts');
      const to = folderOf(target);
      if (to === from) continue;
      const where = `${relative(SRC, file)} imports ${specifier}`;
      if (!(ALLOWED[from] ?? []).includes(to)) out.push(`${where}: ${from} may not import ${to}`);
      else if (relative(SRC, target) !== `${to}/index.ts`) out.push(`${where}: go through ${to}/index.ts`);
    }
  }
  return out;
}

/** The import cycles among src's files, each as the files around it (type-only imports count: they tie files too). */
function cycles(): string[] {
  const edges = new Map<string, string[]>();
  for (const file of sourceFiles(SRC)) {
    const targets = importsOf(readFileSync(file, 'utf8')).map((specifier) => resolve(dirname(file), specifier).replace(/\.js$/, '.ts'));
    edges.set(file, targets);
  }
  const found = new Set<string>();
  const state = new Map<string, 'open' | 'done'>();
  const path: string[] = [];
  const visit = (file: string): void => {
    state.set(file, 'open');
    path.push(file);
    for (const next of edges.get(file) ?? []) {
      if (state.get(next) === 'open') found.add([...path.slice(path.indexOf(next)), next].map((f) => relative(SRC, f)).join(' -> '));
      else if (!state.has(next) && edges.has(next)) visit(next);
    }
    path.pop();
    state.set(file, 'done');
  };
  for (const file of edges.keys()) if (!state.has(file)) visit(file);
  return [...found];
}

describe('layers', () => {
  it('every folder under src is a known layer', () => {
    const folders = readdirSync(SRC, { withFileTypes: true }).filter((e) => e.isDirectory()).map((e) => e.name);
    expect(folders.sort()).toEqual(Object.keys(ALLOWED).sort());
  });

  it('imports point from the front ends to admission to the engine, through index files, never back', () => {
    expect(violations()).toEqual([]);
  });

  it('no file imports another that imports it back, directly or in a circle', () => {
    expect(cycles()).toEqual([]);
  });

  it('the import reader finds every form of import', () => {
    const source = [
      "import { a } from './a.js';",
      "import type { B } from '../engine/b.js';",
      'import {\n  c,\n  d,\n} from "./double-quotes.js";',
      "import {\n  e,\n} from '../cluster/e.js';",
      "export { f } from './f.js';",
      "export * as g from '../server/g.js';",
      "const h = await import('./h.js');",
      "import './side-effect.js';",
      "import Fastify from 'fastify';",
    ].join('\n');
    expect(importsOf(source)).toEqual([
      './a.js',
      '../engine/b.js',
      './double-quotes.js',
      '../cluster/e.js',
      './f.js',
      '../server/g.js',
      './h.js',
      './side-effect.js',
    ]);
  });
});
