/**
 * A reader for the plain block YAML that most manifests are written in: block maps and lists, one-line scalars and
 * one-line flow collections, comments. It keeps where each map entry and list item is in the source, so that an
 * edited document can be written by splicing new text into the old (see yaml-splice.ts) instead of re-printing it.
 *
 * It declines (returns undefined) whatever it does not read exactly as the yaml library does: anchors, aliases, tags,
 * block and multi-line scalars, escapes in double quotes, duplicate or non-string keys, merge keys, tabs in
 * indentation, CR line ends. The caller then reads that document with the yaml library, so declining costs time only.
 * Scalars are resolved with the yaml library's own schema (YAML 1.1, as the rest of the CLI reads manifests).
 */
import { Document, isScalar, type DocumentOptions, type ParseOptions, type SchemaOptions } from 'yaml';

/** A scalar or a one-line flow collection: never edited in place. */
export interface FastLeaf {
  kind: 'leaf';
  start: number;
  end: number;
}

/** A value added by an edit, written by the yaml library's printer. */
export interface FastNew {
  kind: 'new';
  value: unknown;
  /** The value is a copy that edits may change (else it is the edit operation's own). */
  owned?: boolean;
}

/** A block map or list. `start` is where its first entry's key or dash is; `end` is after its last line. */
export interface FastBlock {
  kind: 'map' | 'seq';
  /** Column of the keys, or of the dashes. */
  col: number;
  start: number;
  end: number;
  entries: FastEntry[];
  /** Entries were added or removed (set by the splicer). */
  dirty?: boolean;
  /** An entry somewhere below was changed (set by the splicer). */
  touched?: boolean;
}

export type FastNode = FastLeaf | FastNew | FastBlock;

/** One map entry or list item. Offsets are into the whole input text. */
export interface FastEntry {
  /** The map key, as a JSON pointer token reads it. */
  key?: string;
  /** Where the comment and blank lines before the entry start (the end of the entry before it). */
  gap: number;
  /** The key's first character, or the dash. */
  start: number;
  /** The colon after the key. */
  keyEnd: number;
  /** After the newline of the entry's last line. */
  end: number;
  node: FastNode;
  /** Added by an edit: no source text. */
  fresh?: boolean;
  /** Its value was replaced by an edit. */
  replaced?: boolean;
}

export interface FastDocument {
  /** The document starts with a `---` line. */
  marker: boolean;
  root: FastBlock;
  value: Record<string, unknown>;
}

/** Thrown inside the reader and the splicer for what they leave to the yaml library. */
export class Declined extends Error {
  override readonly name = 'Declined';
}

/** Leaves the document to the yaml library, saying why. */
export const decline = (why: string): never => {
  throw new Declined(why);
};

interface Tag {
  default?: boolean | 'key';
  test?: RegExp;
  resolve: (value: string, onError: (message: string) => void, options: object) => unknown;
}

let scalarSchema: { tags: Tag[]; options: object } | undefined;

/** The schema's implicit scalar tags, in the order the yaml library tries them. */
function schemaFor(options: ParseOptions & DocumentOptions & SchemaOptions): { tags: Tag[]; options: object } {
  if (!scalarSchema) {
    const doc = new Document(null, options);
    const tags = (doc.schema.tags as unknown as Tag[]).filter((t) => t.default === true && t.test);
    scalarSchema = { tags, options: doc.options };
  }
  return scalarSchema;
}

/** First characters of the plain scalars the YAML 1.1 schema may read as something other than a string. */
const MAYBE_NOT_STRING = new Set([...'~nNyYtTfFoOeE+-.0123456789']);

const INDICATORS = new Set([...',[]{}#&*!|>\'"%@`']);

/** Flow collections nested deeper than this are declined (Kubernetes objects nest a few levels). */
const MAX_FLOW_DEPTH = 64;
/** Block collections too: the reader recurses once per level, and a file may nest thousands. */
const MAX_BLOCK_DEPTH = 64;

/** Reads the documents of a stream as the yaml library would, or declines. */
export class FastReader {
  private readonly schema: { tags: Tag[]; options: object };
  private text = '';
  /** Line starts, indents and whether each line has content, for the document being read. */
  private starts: number[] = [];
  private ends: number[] = [];
  private indents: number[] = [];
  private content: boolean[] = [];
  /** Why the last document read was declined. */
  declined: string | undefined;
  /** Block collections open around the one being read. */
  private depth = 0;

  constructor(options: ParseOptions & DocumentOptions & SchemaOptions) {
    this.schema = schemaFor(options);
  }

  /**
   * The document in text[from, to): undefined when declined, null when it holds no content (only comments). A
   * document starts at a `---` line, or at the start of the stream.
   */
  read(text: string, from: number, to: number): FastDocument | null | undefined {
    this.text = text;
    this.declined = undefined;
    this.depth = 0;
    try {
      return this.document(from, to);
    } catch (err) {
      if (err instanceof Declined) {
        this.declined = err.message;
        return undefined;
      }
      throw err;
    } finally {
      this.starts = [];
      this.ends = [];
      this.indents = [];
      this.content = [];
    }
  }

  private document(from: number, to: number): FastDocument | null {
    this.scanLines(from, to);
    let i = this.nextContent(0);
    let marker = false;
    if (i < this.starts.length && this.isMarker(i)) {
      marker = true;
      const rest = this.skipSpaces(this.starts[i]! + 3, this.ends[i]!);
      if (rest < this.ends[i]! && this.text[rest] !== '#') decline('content on the --- line');
      i = this.nextContent(i + 1);
    }
    if (i >= this.starts.length) return null;
    if (this.isDash(i, this.starts[i]! + this.indents[i]!)) decline('a list at the top');
    const value: Record<string, unknown> = {};
    const { block, next } = this.map(i, this.indents[i]!, this.starts[i]! + this.indents[i]!, value);
    if (next < this.starts.length) decline('content after the top-level map');
    return { marker, root: block, value };
  }

  private scanLines(from: number, to: number): void {
    const text = this.text;
    let p = from;
    while (p < to) {
      let e = text.indexOf('\n', p);
      if (e < 0 || e > to) e = to;
      let q = p;
      while (q < e && text.charCodeAt(q) === 32) q += 1;
      const c = text[q];
      let has = q < e && c !== '#';
      if (has && c === '\t') {
        if (!this.blankAfter(q, e)) decline('a tab in the indentation');
        has = false;
      }
      if (text.charCodeAt(e - 1) === 13) decline('a CR line end');
      this.starts.push(p);
      this.ends.push(e);
      this.indents.push(q - p);
      this.content.push(has);
      p = e + 1;
    }
  }

  private blankAfter(q: number, e: number): boolean {
    for (let k = q; k < e; k += 1) if (this.text[k] !== ' ' && this.text[k] !== '\t') return false;
    return true;
  }

  private nextContent(i: number): number {
    while (i < this.content.length && !this.content[i]) i += 1;
    return i;
  }

  private isMarker(i: number): boolean {
    const s = this.starts[i]!;
    return this.indents[i] === 0 && this.text.startsWith('---', s) && (s + 3 === this.ends[i] || this.text[s + 3] === ' ' || this.text[s + 3] === '\t');
  }

  private isDash(i: number, p: number): boolean {
    return this.text[p] === '-' && (p + 1 === this.ends[i] || this.text[p + 1] === ' ');
  }

  private skipSpaces(p: number, end: number): number {
    while (p < end && (this.text[p] === ' ' || this.text[p] === '\t')) p += 1;
    return p;
  }

  /** After the newline of line i (or the end of the text). */
  private lineEndOf(i: number): number {
    const e = this.ends[i]!;
    return e < this.text.length && this.text[e] === '\n' ? e + 1 : e;
  }

  /** The rest of the line from p holds nothing but a comment. */
  private expectLineEnd(p: number, end: number): void {
    const q = this.skipSpaces(p, end);
    if (q < end && !(this.text[q] === '#' && q > p)) decline('more on the line after a value');
  }

  /** A block map whose first key is at `first` on line i, its keys at column `col`. */
  private map(i: number, col: number, first: number, value: Record<string, unknown>): { block: FastBlock; next: number } {
    const entries: FastEntry[] = [];
    let p = first;
    let gap = first;
    for (;;) {
      const end = this.ends[i]!;
      const { token, colon } = this.key(p, end);
      if (Object.hasOwn(value, token)) decline('a duplicate key');
      const after = this.skipSpaces(colon + 1, end);
      const { node, next, entryEnd } =
        after >= end || this.text[after] === '#'
          ? this.below(i, col, true, colon + 1, value, token)
          : this.scalar(i, col, after, value, token);
      entries.push({ key: token, gap, start: p, keyEnd: colon, end: entryEnd, node });
      i = next;
      if (i >= this.starts.length || this.indents[i]! < col) break;
      if (this.indents[i]! > col) decline('an indentation that opens nothing');
      p = this.starts[i]! + col;
      if (this.isDash(i, p)) break;
      gap = entryEnd;
    }
    const last = entries[entries.length - 1]!;
    return { block: { kind: 'map', col, start: first, end: last.end, entries }, next: i };
  }

  /** A block list whose first dash is at column `col` of line i. */
  private seq(i: number, col: number, value: unknown[]): { block: FastBlock; next: number } {
    const entries: FastEntry[] = [];
    let gap = this.starts[i]! + col;
    for (;;) {
      const end = this.ends[i]!;
      const p = this.starts[i]! + col;
      const q = this.skipSpaces(p + 1, end);
      let node: FastNode;
      let next: number;
      let entryEnd: number;
      if (q >= end || this.text[q] === '#') {
        ({ node, next, entryEnd } = this.below(i, col, false, p + 1, value, value.length));
      } else if (this.isDash(i, q)) {
        return decline('a list item that is a list on the same line');
      } else if (this.keyAhead(q, end)) {
        const item: Record<string, unknown> = {};
        value.push(item);
        const nested = this.map(i, q - this.starts[i]!, q, item);
        node = nested.block;
        next = nested.next;
        entryEnd = node.end;
      } else {
        ({ node, next, entryEnd } = this.scalar(i, col, q, value, value.length));
      }
      entries.push({ gap, start: p, keyEnd: p, end: entryEnd, node });
      i = next;
      if (i >= this.starts.length || this.indents[i]! < col) break;
      if (this.indents[i]! > col) decline('an indentation that opens nothing');
      if (!this.isDash(i, this.starts[i]! + col)) break;
      gap = entryEnd;
    }
    const last = entries[entries.length - 1]!;
    return { block: { kind: 'seq', col, start: entries[0]!.start, end: last.end, entries }, next: i };
  }

  /** The block collection whose first line is line i, stored in parent[key]. */
  private block(i: number, parent: Record<string, unknown> | unknown[], key: string | number): { block: FastBlock; next: number } {
    if (this.depth >= MAX_BLOCK_DEPTH) decline(`block collections nested deeper than ${MAX_BLOCK_DEPTH}`);
    this.depth += 1;
    try {
      const col = this.indents[i]!;
      const p = this.starts[i]! + col;
      if (this.isDash(i, p)) {
        const items: unknown[] = [];
        setValue(parent, key, items);
        return this.seq(i, col, items);
      }
      const map: Record<string, unknown> = {};
      setValue(parent, key, map);
      return this.map(i, col, p, map);
    } finally {
      this.depth -= 1;
    }
  }

  /** Whether the text at p on this line is `key:` followed by a space or the line's end. */
  private keyAhead(p: number, end: number): boolean {
    const c = this.text[p];
    if (c === '"' || c === "'") {
      const close = this.text.indexOf(c, p + 1);
      return close > 0 && close < end && this.text[close + 1] === ':';
    }
    if (c === '{' || c === '[') return false;
    return this.plainKeyEnd(p, end) >= 0;
  }

  /** The colon ending a plain key that starts at p, or -1. */
  private plainKeyEnd(p: number, end: number): number {
    const text = this.text;
    for (let k = p; k < end; k += 1) {
      const c = text[k];
      if (c === ':' && (k + 1 === end || text[k + 1] === ' ')) return k;
      if (c === '#' && k > p && (text[k - 1] === ' ' || text[k - 1] === '\t')) return -1;
    }
    return -1;
  }

  private key(p: number, end: number): { token: string; colon: number } {
    const c = this.text[p]!;
    let raw: unknown;
    let colon: number;
    if (c === '"' || c === "'") {
      const q = this.quoted(p, end);
      if (this.text[q.end] !== ':' || !(q.end + 1 === end || this.text[q.end + 1] === ' ')) decline('a quoted key not followed by ": "');
      raw = q.value;
      colon = q.end;
    } else {
      this.plainStart(p, end);
      colon = this.plainKeyEnd(p, end);
      if (colon < 0) decline('a line that is not "key: value"');
      const source = this.text.slice(p, colon);
      if (source !== source.trimEnd()) decline('a space before the colon');
      if (source === '<<') decline('a merge key');
      raw = this.resolve(source);
    }
    if (typeof raw !== 'string') return decline('a key that is not a string');
    if (raw === '__proto__') decline('a key named __proto__');
    return { token: raw, colon };
  }

  private plainStart(p: number, end: number, flow = false): void {
    const c = this.text[p]!;
    if (INDICATORS.has(c)) decline(`a value starting with ${c}`);
    const after = this.text[p + 1]!;
    if ((c === '-' || c === '?' || c === ':') && (p + 1 >= end || after === ' ' || after === '\t' || (flow && ',[]{}'.includes(after)))) {
      decline(`a value starting with "${c} "`);
    }
  }

  /** A value on the rest of a block line, stored in parent[key]. */
  private inline(p: number, end: number, parent: Record<string, unknown> | unknown[], key: string | number): FastLeaf {
    const c = this.text[p]!;
    if (c === '{' || c === '[') {
      const flow = this.flow(p, end);
      setValue(parent, key, flow.value);
      return { kind: 'leaf', start: p, end: flow.end };
    }
    if (c === '"' || c === "'") {
      const q = this.quoted(p, end);
      setValue(parent, key, q.value);
      return { kind: 'leaf', start: p, end: q.end };
    }
    this.plainStart(p, end);
    const text = this.text;
    let k = p;
    for (; k < end; k += 1) {
      const ch = text[k];
      if (ch === '#' && (text[k - 1] === ' ' || text[k - 1] === '\t')) break;
      if (ch === ':' && (k + 1 === end || text[k + 1] === ' ' || text[k + 1] === '\t')) decline('": " in a plain value');
    }
    const source = text.slice(p, k).trimEnd();
    setValue(parent, key, this.resolve(source));
    return { kind: 'leaf', start: p, end: p + source.length };
  }

  /**
   * The value of an entry that ends its line i (`key:` or `-`): the block on the lines below, indented more than `col`
   * (or, under a map key, a list at `col`), else null, placed at `at`.
   */
  private below(i: number, col: number, indentless: boolean, at: number, parent: Record<string, unknown> | unknown[], key: string | number): { node: FastNode; next: number; entryEnd: number } {
    const next = this.nextContent(i + 1);
    if (next < this.starts.length) {
      const indent = this.indents[next]!;
      if (indent > col || (indentless && indent === col && this.isDash(next, this.starts[next]! + indent))) {
        const nested = this.block(next, parent, key);
        return { node: nested.block, next: nested.next, entryEnd: nested.block.end };
      }
    }
    setValue(parent, key, null);
    return { node: { kind: 'leaf', start: at, end: at }, next, entryEnd: this.lineEndOf(i) };
  }

  /** The scalar or flow collection at p on line i, under a map or list at column `col`, and the line after it. */
  private scalar(i: number, col: number, p: number, parent: Record<string, unknown> | unknown[], key: string | number): { node: FastLeaf; next: number; entryEnd: number } {
    if (this.text[p] === '|') {
      const literal = this.literal(i, col, p, parent, key);
      return { node: literal.leaf, next: this.nextContent(literal.last + 1), entryEnd: this.lineEndOf(literal.last) };
    }
    const end = this.ends[i]!;
    const leaf = this.inline(p, end, parent, key);
    this.expectLineEnd(leaf.end, end);
    const next = this.nextContent(i + 1);
    if (next < this.starts.length && this.indents[next]! > col) decline('a value that goes on over lines');
    return { node: leaf, next, entryEnd: this.lineEndOf(i) };
  }

  /**
   * A literal block scalar (`|` or `|-`) at p on line i, under a map or list at column `col`: its lines are those
   * indented more than `col`, up to the last that is not blank. Returns the scalar and its last line.
   */
  private literal(i: number, col: number, p: number, parent: Record<string, unknown> | unknown[], key: string | number): { leaf: FastLeaf; last: number } {
    const text = this.text;
    const strip = text[p + 1] === '-';
    this.expectLineEnd(p + (strip ? 2 : 1), this.ends[i]!);
    const lines: number[] = [];
    let indent = -1;
    let last = -1;
    for (let k = i + 1; k < this.starts.length; k += 1) {
      const blank = this.starts[k]! + this.indents[k]! === this.ends[k];
      if (blank) {
        lines.push(k);
        continue;
      }
      if (this.indents[k]! <= col) break;
      if (text[this.starts[k]! + this.indents[k]!] === '\t') decline('a tab at the start of a literal line');
      if (indent < 0) indent = this.indents[k]!;
      if (this.indents[k]! < indent) decline('a literal line less indented than the first');
      lines.push(k);
      last = k;
    }
    if (last < 0) return decline('an empty literal');
    // Spaces beyond the indentation on a blank line are content, even after the last line with text.
    for (let k = last + 1; k < this.starts.length && this.starts[k]! + this.indents[k]! === this.ends[k]; k += 1) {
      if (this.indents[k]! > indent) decline('spaces on a blank line after a literal');
    }
    const parts: string[] = [];
    for (const k of lines) {
      if (k > last) break;
      const length = this.ends[k]! - this.starts[k]!;
      if (this.starts[k]! + this.indents[k]! === this.ends[k]) {
        // Blank: spaces beyond the indentation would be content, and before the first line they are an error.
        if (length > indent) decline('spaces on a blank line of a literal');
        parts.push('');
      } else {
        parts.push(text.slice(this.starts[k]! + indent, this.ends[k]));
      }
    }
    // Blank lines before the first content line count as empty lines of the value, as YAML says.
    const value = parts.join('\n') + (strip ? '' : '\n');
    setValue(parent, key, value);
    return { leaf: { kind: 'leaf', start: p, end: this.ends[last]! }, last };
  }

  /** A quoted scalar that ends on its line, without escapes. */
  private quoted(p: number, end: number): { value: string; end: number } {
    const text = this.text;
    const q = text[p];
    if (q === '"') {
      const close = text.indexOf('"', p + 1);
      if (close < 0 || close >= end) decline('a double-quoted value over lines');
      const value = text.slice(p + 1, close);
      if (value.includes('\\')) decline('an escape in double quotes');
      return { value, end: close + 1 };
    }
    let value = '';
    let k = p + 1;
    for (;;) {
      const close = text.indexOf("'", k);
      if (close < 0 || close >= end) return decline('a single-quoted value over lines');
      value += text.slice(k, close);
      if (text[close + 1] === "'") {
        value += "'";
        k = close + 2;
      } else {
        return { value, end: close + 1 };
      }
    }
  }

  /** A flow collection that ends on its line; `depth` counts the collections it is in. */
  private flow(p: number, end: number, depth = 0): { value: unknown; end: number } {
    // Deeper collections are left to the yaml library, which reports them as errors instead of overflowing the stack.
    if (depth >= MAX_FLOW_DEPTH) decline('a flow collection nested too deeply');
    const text = this.text;
    const open = text[p];
    const close = open === '{' ? '}' : ']';
    let k = this.skipSpaces(p + 1, end);
    if (open === '{') {
      const map: Record<string, unknown> = {};
      if (text[k] === '}') return { value: map, end: k + 1 };
      for (;;) {
        let token: unknown;
        if (text[k] === '"' || text[k] === "'") {
          const q = this.quoted(k, end);
          token = q.value;
          k = q.end;
          if (text[k] !== ':') decline('a flow key without ":"');
        } else {
          const s = this.flowPlain(k, end);
          if (text[s.end] !== ':') decline('a flow key without ": "');
          token = s.value;
          k = s.end;
        }
        if (typeof token !== 'string' || token === '__proto__' || token === '<<' || Object.hasOwn(map, token)) decline('an odd flow key');
        k = this.skipSpaces(k + 1, end);
        if (text[k] === ',' || text[k] === '}') {
          map[token as string] = null;
        } else {
          const v = this.flowValue(k, end, depth);
          map[token as string] = v.value;
          k = this.skipSpaces(v.end, end);
        }
        if (text[k] === close) return { value: map, end: k + 1 };
        if (text[k] !== ',') return decline('an odd flow map');
        k = this.skipSpaces(k + 1, end);
        if (text[k] === close) decline('a trailing comma');
      }
    }
    const list: unknown[] = [];
    if (text[k] === ']') return { value: list, end: k + 1 };
    for (;;) {
      const v = this.flowValue(k, end, depth);
      list.push(v.value);
      k = this.skipSpaces(v.end, end);
      if (text[k] === close) return { value: list, end: k + 1 };
      if (text[k] !== ',') return decline('an odd flow list');
      k = this.skipSpaces(k + 1, end);
      if (text[k] === close) decline('a trailing comma');
    }
  }

  private flowValue(k: number, end: number, depth: number): { value: unknown; end: number } {
    const c = this.text[k];
    if (c === '{' || c === '[') return this.flow(k, end, depth + 1);
    if (c === '"' || c === "'") return this.quoted(k, end);
    const s = this.flowPlain(k, end);
    if (this.text[s.end] === ':') decline('a pair in a flow list');
    return s;
  }

  /** A plain scalar in a flow collection: it ends at , [ ] { } or ": ". */
  private flowPlain(k: number, end: number): { value: unknown; end: number } {
    if (k >= end) decline('a flow collection over lines');
    this.plainStart(k, end, true);
    const text = this.text;
    let e = k;
    for (; e < end; e += 1) {
      const ch = text[e]!;
      if (ch === ',' || ch === '[' || ch === ']' || ch === '{' || ch === '}') break;
      if (ch === ':' && (e + 1 === end || ' ,[]{}'.includes(text[e + 1]!))) break;
      if (ch === '#' && (text[e - 1] === ' ' || text[e - 1] === '\t')) decline('a comment in a flow collection');
    }
    if (e >= end) decline('a flow collection over lines');
    const source = text.slice(k, e).trimEnd();
    if (source === '') decline('an empty flow entry');
    return { value: this.resolve(source), end: k + source.length };
  }

  /** Whether a plain scalar of this text is read as that same string. */
  readsAsString(source: string): boolean {
    try {
      return this.resolve(source) === source;
    } catch (err) {
      if (err instanceof Declined) return false;
      throw err;
    }
  }

  /** A plain scalar's value: the first implicit tag of the schema whose pattern matches, as the yaml library does. */
  private resolve(source: string): unknown {
    // Every implicit tag but str matches only text starting with one of these (null, booleans, numbers).
    if (source !== '' && !MAYBE_NOT_STRING.has(source[0]!)) return source;
    for (const tag of this.schema.tags) {
      if (tag.test?.test(source)) {
        let failed = false;
        const resolved = tag.resolve(source, () => (failed = true), this.schema.options);
        // Some tags give a Scalar (to remember how the value was written): its value is the data.
        const value = isScalar(resolved) ? resolved.value : resolved;
        if (failed || (typeof value === 'object' && value !== null)) decline('a scalar the schema does not resolve plainly');
        return value;
      }
    }
    return source;
  }
}

function setValue(parent: Record<string, unknown> | unknown[], key: string | number, value: unknown): void {
  if (Array.isArray(parent)) parent.push(value);
  else parent[key as string] = value;
}
