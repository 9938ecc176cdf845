/** What the documentation tests read of a Markdown file: its fenced blocks, headings, anchors and relative links. */
import { readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

export const ROOT = resolve(import.meta.dirname, '../..');

/** The project's documentation, relative to the repository's root. */
export function documentationFiles(): string[] {
  const docs = readdirSync(join(ROOT, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .sort()
    .map((name) => `docs/${name}`);
  return ['README.md', 'CONTRIBUTING.md', 'SECURITY.md', 'CHANGELOG.md', 'charts/proxy-injector/README.md', ...docs];
}

export function read(path: string): string {
  return readFileSync(join(ROOT, path), 'utf8');
}

export interface Fence {
  /** The info string after the opening fence, e.g. `sh`. */
  lang: string;
  /** The lines between the fences. */
  body: string;
  /** 1-based line of the opening fence. */
  line: number;
}

/** The fenced code blocks (``` or ~~~), in order. */
export function fences(text: string): Fence[] {
  const out: Fence[] = [];
  let open: { marker: string; lang: string; line: number; lines: string[] } | undefined;
  text.split('\n').forEach((raw, i) => {
    const m = /^ *(`{3,}|~{3,})\s*([^`\s]*)/.exec(raw);
    if (!open) {
      if (m) open = { marker: m[1] ?? '', lang: m[2] ?? '', line: i + 1, lines: [] };
      return;
    }
    if (m && (m[1] ?? '').startsWith(open.marker) && raw.trim() === m[1]) {
      out.push({ lang: open.lang, body: open.lines.join('\n'), line: open.line });
      open = undefined;
      return;
    }
    open.lines.push(raw);
  });
  return out;
}

/** The commands of a ```sh block: continuation lines joined, blank and comment-only lines dropped. */
export function commandsOf(block: string): string[] {
  return block
    .replace(/\\\n/g, ' ')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith('#'));
}

/** The text's lines with every fenced block's lines (fences included) blanked, so that line numbers stay. */
export function withoutFences(text: string): string[] {
  const lines = text.split('\n');
  for (const f of fences(text)) {
    const bodyLines = f.body === '' ? 0 : f.body.split('\n').length;
    for (let i = f.line - 1; i <= f.line + bodyLines && i < lines.length; i++) lines[i] = '';
  }
  return lines;
}

export interface Heading {
  level: number;
  text: string;
  line: number;
}

/** ATX headings outside fenced blocks. */
export function headings(text: string): Heading[] {
  const out: Heading[] = [];
  withoutFences(text).forEach((line, i) => {
    const m = /^(#{1,6})\s+(.*?)\s*#*\s*$/.exec(line);
    if (m) out.push({ level: (m[1] ?? '').length, text: m[2] ?? '', line: i + 1 });
  });
  return out;
}

/**
 * The anchor GitHub gives a heading: its rendered text (links and code spans as their text, tags dropped), lower case,
 * with everything but letters, marks, numbers, `_`, `-` and spaces removed, and spaces made hyphens.
 */
export function slug(headingText: string): string {
  const rendered = headingText
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/`([^`]*)`/g, '$1')
    .replace(/<[^>]+>/g, '');
  return rendered
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '')
    .replace(/ /g, '-');
}

/** Every anchor a file offers: its headings' slugs, repeats numbered as GitHub numbers them. */
export function anchors(text: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  for (const h of headings(text)) {
    const base = slug(h.text);
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n === 0 ? base : `${base}-${n}`);
  }
  return out;
}

export interface Link {
  target: string;
  line: number;
}

/** Inline links and images, and reference definitions, outside fenced blocks and code spans. */
export function links(text: string): Link[] {
  const out: Link[] = [];
  withoutFences(text).forEach((raw, i) => {
    const line = raw.replace(/`[^`]*`/g, '');
    for (const m of line.matchAll(/!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) out.push({ target: m[1] ?? '', line: i + 1 });
    const def = /^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)/.exec(line);
    if (def) out.push({ target: def[1] ?? '', line: i + 1 });
  });
  return out;
}

/** A link that leaves the repository: a URL with a scheme, or a protocol-relative one. */
export function isExternal(target: string): boolean {
  return /^[a-z][a-z0-9+.-]*:/i.test(target) || target.startsWith('//');
}
