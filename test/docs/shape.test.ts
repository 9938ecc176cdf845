/**
 * The documentation keeps its shape: a front page a newcomer reads in minutes, with install near the top and no history
 * on it; reference pages that each open by saying what they are for; every page reachable from the README; the license
 * package.json names; and the layers as test/layers.test.ts enforces them.
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, normalize } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT, documentationFiles, headings, isExternal, links, read, withoutFences } from './markdown.js';

const MONTHS = 'January|February|March|April|May|June|July|August|September|October|November|December';

/** Commit hashes and dates in a text: what the front page must not carry. */
export function historyIn(text: string): string[] {
  const found: string[] = [];
  // A hexadecimal word of 7 to 40 characters with both a digit and a letter: an abbreviated or full commit hash.
  for (const m of text.matchAll(/\b(?=[0-9a-f]*[0-9])(?=[0-9a-f]*[a-f])[0-9a-f]{7,40}\b/g)) found.push(m[0]);
  for (const m of text.matchAll(new RegExp(`\\b\\d{1,2} (?:${MONTHS})\\b|\\b(?:${MONTHS}) \\d{1,2}\\b|\\b\\d{4}-\\d{2}-\\d{2}\\b`, 'g'))) found.push(m[0]);
  return found;
}

/** The first block of text after a page's title, or why there is none. */
export function opening(text: string): { paragraph?: string; problem?: string } {
  const lines = withoutFences(text);
  const first = lines.findIndex((l) => l.trim() !== '');
  if (!/^# \S/.test(lines[first] ?? '')) return { problem: `does not start with a "# " title: ${JSON.stringify(lines[first])}` };
  // withoutFences blanks code blocks, so the raw text says whether one comes first.
  const raw = text.split('\n');
  if (/^ *(```|~~~)/.test(raw.find((l, i) => i > first && l.trim() !== '') ?? '')) return { problem: 'opens with a code block' };
  const start = lines.findIndex((l, i) => i > first && l.trim() !== '');
  if (start < 0) return { problem: 'has nothing after its title' };
  const head = lines[start] ?? '';
  if (/^(#|\s*[-*+] |\s*\d+\. |\||>|<)/.test(head)) return { problem: `opens with a heading, list, table or quote: ${JSON.stringify(head)}` };
  const end = lines.findIndex((l, i) => i > start && l.trim() === '');
  return { paragraph: lines.slice(start, end < 0 ? undefined : end).join(' ') };
}

describe('the front page', () => {
  const readme = read('README.md');
  const lines = readme.split('\n');

  it('is at most 250 lines', () => {
    expect(lines.length).toBeLessThanOrEqual(250);
  });

  it('says how to install in a cluster at or before line 100, after what it is and the quickstart', () => {
    const install = headings(readme).find((h) => h.level === 2 && /^Install/.test(h.text));
    expect(install, 'an "## Install..." section').toBeDefined();
    expect(install?.line).toBeLessThanOrEqual(100);
    const quickstart = headings(readme).find((h) => h.text === 'Quickstart');
    expect(quickstart?.line).toBeLessThan(install?.line ?? 0);
  });

  it('carries no commit hash and no dated run', () => {
    expect(historyIn(readme)).toEqual([]);
  });

  it('keeps the sections a newcomer looks for', () => {
    const sections = headings(readme).filter((h) => h.level === 2).map((h) => h.text);
    for (const s of ['Quickstart', 'Install in a cluster', "Replacing Linkerd's injector", 'The command line', 'How it works', 'Documentation', 'Performance', 'Development', 'License']) {
      expect(sections).toContain(s);
    }
  });

  it('finds hashes and dates when there are some', () => {
    expect(historyIn('the build before 8056ca5, run on 27 November; also 2026-11-27 and November 26')).toEqual(['8056ca5', '27 November', '2026-11-27', 'November 26']);
    expect(historyIn('added, defaced, 0.1.0, Node 24, 4194304 bytes, edge-26.8.3')).toEqual([]);
  });
});

describe('every page of the documentation', () => {
  it.each(documentationFiles().filter((f) => f !== 'README.md'))('%s opens with a paragraph saying what it is for', (file) => {
    const { paragraph, problem } = opening(read(file));
    expect(problem).toBeUndefined();
    expect((paragraph ?? '').split(/\s+/).length, `${file}'s opening: ${paragraph}`).toBeGreaterThanOrEqual(12);
  });

  it('finds a page that opens with a heading, a list or code instead', () => {
    expect(opening('# T\n\n## Section\n').problem).toMatch(/heading/);
    expect(opening('# T\n\n- a list\n').problem).toMatch(/list/);
    expect(opening('# T\n\n```sh\nnpm test\n```\n').problem).toMatch(/code block/);
    expect(opening('Text before a title\n').problem).toMatch(/title/);
    expect(opening('# T\n\nThis page says what it is for.\nOn two lines.\n\nMore.').paragraph).toBe('This page says what it is for. On two lines.');
  });

  it('is reachable from the README by links', () => {
    const seen = new Set<string>();
    const queue = ['README.md'];
    while (queue.length > 0) {
      const file = queue.shift() as string;
      if (seen.has(file)) continue;
      seen.add(file);
      for (const { target } of links(read(file))) {
        const path = target.split('#')[0] ?? '';
        if (isExternal(target) || !path.endsWith('.md')) continue;
        const next = normalize(join(dirname(file), decodeURIComponent(path)));
        if (existsSync(join(ROOT, next))) queue.push(next);
      }
    }
    expect(documentationFiles().filter((f) => !seen.has(f))).toEqual([]);
  });
});

describe('the license', () => {
  it('is the Apache License 2.0 that package.json names', () => {
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { license?: string };
    expect(pkg.license).toBe('Apache-2.0');
    const license = read('LICENSE');
    expect(license).toMatch(/^\s*Apache License\s+Version 2\.0, January 2004/);
    expect(license).toContain('TERMS AND CONDITIONS FOR USE, REPRODUCTION, AND DISTRIBUTION');
    expect(license).toContain('END OF TERMS AND CONDITIONS');
  });
});

/** The layers test's table of what each folder may import, read from its source. */
function enforcedLayers(): Map<string, string[]> {
  const source = read('test/layers.test.ts');
  const table = /const ALLOWED[^=]*=\s*\{([\s\S]*?)\n\};/.exec(source)?.[1] ?? '';
  const out = new Map<string, string[]>();
  for (const m of table.matchAll(/^\s*(\w+):\s*\[([^\]]*)\]/gm)) {
    out.set(m[1] ?? '', [...(m[2] ?? '').matchAll(/'(\w+)'/g)].map((x) => x[1] ?? '').sort());
  }
  return out;
}

/** A layers table of a page: folder and what it may import, from rows `| \`src/x\` | ... | imports |`. */
function documentedLayers(file: string): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const line of read(file).split('\n')) {
    const m = /^\| `src\/(\w+)` \|(.*)\|\s*$/.exec(line);
    if (!m) continue;
    const imports = (m[2] ?? '').split('|').at(-1)?.trim() ?? '';
    const names = /nothing of the project/.test(imports) ? [] : /every folder below/.test(imports) ? ['*'] : [...imports.matchAll(/`?(\w+)`?/g)].map((x) => x[1] ?? '');
    out.set(m[1] ?? '', names.sort());
  }
  return out;
}

describe('the layers as documented', () => {
  const enforced = enforcedLayers();

  it('reads the layers test', () => {
    expect([...enforced.keys()]).toEqual(expect.arrayContaining(['engine', 'admission', 'cli']));
    expect(enforced.get('admission')).toEqual(['engine']);
  });

  it.each(['docs/architecture.md', 'CONTRIBUTING.md'])('%s lists every layer with what it may import', (file) => {
    const documented = documentedLayers(file);
    expect([...documented.keys()].sort()).toEqual([...enforced.keys()].sort());
    for (const [folder, imports] of enforced) {
      const said = documented.get(folder) ?? [];
      // "every folder below": every other folder but the ones that import it.
      if (said[0] === '*') expect(imports, folder).toEqual([...enforced.keys()].filter((f) => f !== folder).sort());
      else expect(said, folder).toEqual(imports);
    }
  });
});
