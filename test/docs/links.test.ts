/**
 * Every relative link in the documentation points at a file or directory that exists, and every `#anchor` at a
 * heading of the page it names, by GitHub's rules for heading anchors.
 */
import { existsSync, statSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT, anchors, documentationFiles, isExternal, links, read, slug } from './markdown.js';

/** What is wrong with each relative link of `file` (a path from the repository's root), as `file:line: reason`. */
function brokenLinks(file: string, text = read(file)): string[] {
  const problems: string[] = [];
  for (const { target, line } of links(text)) {
    if (isExternal(target)) continue;
    const [pathPart = '', anchor] = target.split('#', 2);
    const path = decodeURIComponent(pathPart);
    const resolved = path === '' ? file : normalize(join(dirname(file), path));
    const where = `${file}:${line}: ${target}`;
    if (relative(ROOT, join(ROOT, resolved)).startsWith('..')) {
      problems.push(`${where}: leaves the repository`);
      continue;
    }
    if (resolved !== file && !existsSync(join(ROOT, resolved))) {
      problems.push(`${where}: ${resolved} does not exist`);
      continue;
    }
    if (anchor === undefined) continue;
    if (!resolved.endsWith('.md') || (resolved !== file && statSync(join(ROOT, resolved)).isDirectory())) {
      problems.push(`${where}: an anchor into ${resolved}, which is not a Markdown file`);
      continue;
    }
    const offered = resolved === file ? anchors(text) : anchors(read(resolved));
    if (!offered.has(anchor)) problems.push(`${where}: ${resolved} has no heading with the anchor #${anchor}`);
  }
  return problems;
}

describe('documentation links', () => {
  const files = documentationFiles();

  it('reads every page of the documentation', () => {
    expect(files).toEqual(expect.arrayContaining(['README.md', 'docs/operations.md', 'docs/testing.md', 'charts/proxy-injector/README.md']));
    for (const f of files) expect(existsSync(join(ROOT, f)), f).toBe(true);
  });

  it.each(files)('every relative link and anchor in %s resolves', (file) => {
    const found = links(read(file));
    expect(brokenLinks(file)).toEqual([]);
    // A page whose links the reader could not find would pass above without checking anything.
    if (file !== 'docs/node-suite.md') expect(found.length, `${file} has no links at all`).toBeGreaterThan(0);
  });

  it('finds a link to a missing file, an anchor no heading gives, and a path that leaves the repository', () => {
    const text = [
      '# A page',
      '## Where `serve` listens',
      'See [the flags](#flags), [listening](#where-serve-listens) and [a file](no-such-file.md).',
      'And [outside](../../../etc/passwd), [the web](https://example.com/x#y) and [a chart](../charts/proxy-injector).',
      '```md',
      '[inside a fence](missing-too.md)',
      '```',
      'An inline `[code span](missing-three.md)` is not a link.',
    ].join('\n');
    expect(brokenLinks('docs/page.md', text)).toEqual([
      'docs/page.md:3: #flags: docs/page.md has no heading with the anchor #flags',
      'docs/page.md:3: no-such-file.md: docs/no-such-file.md does not exist',
      'docs/page.md:4: ../../../etc/passwd: leaves the repository',
    ]);
  });

  it("makes anchors as GitHub does: lower case, punctuation dropped, spaces hyphenated, repeats numbered", () => {
    expect(slug("Replacing Linkerd's injector")).toBe('replacing-linkerds-injector');
    expect(slug('Why `distinct` stays short of 0.5 of the floor')).toBe('why-distinct-stays-short-of-05-of-the-floor');
    expect(slug('kubectl\'s default container')).toBe('kubectls-default-container');
    expect(slug('[Links](x.md) and <b>tags</b>: a_b')).toBe('links-and-tags-a_b');
    expect([...anchors('# Limits\n## Limits\n```\n# not a heading\n```\n### Limits')]).toEqual(['limits', 'limits-1', 'limits-2']);
  });
});
