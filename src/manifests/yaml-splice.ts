/**
 * Edits a document read by FastReader and writes it by splicing: the text of every entry the edits do not reach is
 * copied from the source, and only what they add is printed (by the yaml library, in the document's layout), at the
 * column of the map or list it goes into. The result is what editing the parsed document and printing it whole gives,
 * without the cost of printing it whole.
 *
 * Where a comment or blank line next to a changed map or list could end up elsewhere than the yaml library's printer
 * puts it, the splicer declines (throws Declined) and the caller edits and prints the document with the library.
 */
import { Document, Pair, YAMLMap, YAMLSeq, type DocumentOptions, type ParseOptions, type SchemaOptions, type ToStringOptions } from 'yaml';
import { decline, FastReader, type FastBlock, type FastDocument, type FastEntry, type FastNode } from './fast-yaml.js';
import { PatchError, Positions, applyAt, arrayIndex, newNode, parsePointer, type PatchOp } from './yaml-patch.js';

export interface Edit {
  ops: PatchOp[];
  /** The path the operations are relative to (["items", "0"] for a List item). */
  base: string[];
}

/** Strings the yaml library prints without quotes, if the schema reads them as strings. */
const SIMPLE = /^[A-Za-z][A-Za-z0-9._/-]*$/;

/** Printed entries kept for reuse: the injector adds the same containers and volumes to every workload. */
const MEMO_SIZE = 256;

/** Prints the values the edits add: one document reused for all of them, and each distinct entry printed once. */
export class Splicer {
  private readonly printer: Document;
  private readonly memo = new Map<string, string>();
  private readonly simple = new Map<string, boolean>();
  private readonly reader: FastReader;

  constructor(
    options: ParseOptions & DocumentOptions & SchemaOptions,
    private readonly stringOptions: ToStringOptions,
  ) {
    this.printer = new Document(null, options);
    this.reader = new FastReader(options);
  }

  /**
   * The text of the document in text[from, to) with the edits applied; `fast` is that document as read, and is
   * changed. Throws Declined when the document must be edited with the yaml library instead.
   */
  splice(text: string, from: number, to: number, fast: FastDocument, edits: readonly Edit[], style: ToStringOptions): string {
    try {
      applyEdits(text, fast, edits);
    } catch (err) {
      // The yaml library's patcher says what is wrong with the operation, in its words.
      if (err instanceof PatchError) decline(err.message);
      throw err;
    }
    const writer = new Writer(text, to, this, { ...this.stringOptions, ...style });
    return text.slice(from, fast.root.start) + writer.block(fast.root) + text.slice(fast.root.end, to);
  }

  /**
   * `key: value` (a map entry) or `- value` (a list item) as the yaml library prints it, every line but empty ones
   * moved right by `pad`.
   */
  print(key: string | undefined, value: unknown, options: ToStringOptions, pad: string): string {
    if (key !== undefined && typeof value === 'string' && this.plain(key) && this.plain(value)) return `${pad}${key}: ${value}\n`;
    const id = memoKey(key, value, options, pad);
    const known = id === undefined ? undefined : this.memo.get(id);
    if (known !== undefined) return known;
    const printed = indent(this.printNow(key, value, options), pad);
    if (id !== undefined) {
      if (this.memo.size >= MEMO_SIZE) this.memo.clear();
      this.memo.set(id, printed);
    }
    return printed;
  }

  /**
   * Whether the yaml library prints the string as it is: letters, digits and `._/-` only, starting with a letter, and
   * read back as the same string (not `yes`, `null`, `e5`...). Most labels and annotations the injector adds are.
   */
  private plain(text: string): boolean {
    if (text.length > 200 || !SIMPLE.test(text)) return false;
    const printed = this.simple.get(text);
    if (printed !== undefined) return printed;
    const same = this.reader.readsAsString(text);
    if (this.simple.size >= MEMO_SIZE) this.simple.clear();
    this.simple.set(text, same);
    return same;
  }

  private printNow(key: string | undefined, value: unknown, options: ToStringOptions): string {
    const doc = this.printer;
    const node = newNode(doc, value);
    if (key === undefined) {
      const seq = new YAMLSeq(doc.schema);
      seq.items.push(node);
      doc.contents = seq;
    } else {
      const map = new YAMLMap(doc.schema);
      map.items.push(new Pair(newNode(doc, key), node));
      doc.contents = map;
    }
    const printed = doc.toString(options);
    doc.contents = null;
    return printed;
  }
}

/**
 * What an entry is printed from, as a string; undefined for a value JSON does not tell apart from another (NaN or an
 * infinity and null, -0 and 0), which is then printed each time.
 */
function memoKey(key: string | undefined, value: unknown, options: ToStringOptions, pad: string): string | undefined {
  let text: string;
  try {
    text = JSON.stringify([key ?? null, pad.length, options, value]);
  } catch {
    return undefined; // a BigInt
  }
  // Only a null or 0 token can stand for a value JSON does not keep: look at the values only when there is one.
  return /[,:[](?:null|0)[,\]}]/.test(text) && !plainJson(value) ? undefined : text;
}

function plainJson(value: unknown): boolean {
  if (typeof value === 'number') return Number.isFinite(value) && !Object.is(value, -0);
  if (typeof value !== 'object' || value === null) return value !== undefined;
  if (Array.isArray(value)) return value.every(plainJson);
  return Object.values(value).every((v) => v === undefined || plainJson(v));
}

const freshEntry = (key: string | undefined, value: unknown): FastEntry => {
  const entry: FastEntry = { gap: -1, start: -1, keyEnd: -1, end: -1, node: { kind: 'new', value }, fresh: true };
  if (key !== undefined) entry.key = key;
  return entry;
};

/** The edits applied to the document's entries, as documentPatcher applies them to a parsed document. */
function applyEdits(text: string, fast: FastDocument, edits: readonly Edit[]): void {
  const positions = new Positions<FastBlock>((b) => b.entries.map((e) => e.key ?? ''));
  for (const { ops, base } of edits) {
    for (const op of ops) {
      const tokens = [...base, ...parsePointer(op.path)];
      const last = tokens.pop();
      if (last === undefined) return decline('an edit of the whole document');
      let node: FastNode = fast.root;
      const chain: FastBlock[] = [];
      let inNew: string[] | undefined;
      for (let t = 0; t < tokens.length; t += 1) {
        if (node.kind === 'new') {
          inNew = tokens.slice(t);
          break;
        }
        if (node.kind === 'leaf') return decline('an edit inside a scalar or flow collection');
        chain.push(node);
        node = childOf(node, tokens[t]!);
      }
      for (const c of chain) c.touched = true;
      if (node.kind === 'new') {
        // The value is the operation's own until an edit reaches into it.
        if (!node.owned) Object.assign(node, { value: structuredClone(node.value), owned: true });
        applyAt(node.value, op, [...(inNew ?? []), last]);
        continue;
      }
      if (node.kind === 'leaf') return decline('an edit inside a scalar or flow collection');
      node.touched = true;
      if (node.kind === 'map') {
        positions.touch(node);
        const i = node.entries.findIndex((e) => e.key === last);
        if (op.op === 'add') {
          const entry = node.entries[i];
          if (entry) {
            entry.node = { kind: 'new', value: op.value };
            entry.replaced = true;
          } else {
            node.entries.splice(positions.insertionIndex(node, last), 0, freshEntry(last, op.value));
            node.dirty = true;
          }
        } else {
          if (i < 0) return decline(`no key ${last}`);
          removing(text, node, node.entries[i]!);
          node.entries.splice(i, 1);
          positions.markRemoved(node, last);
          node.dirty = true;
        }
      } else {
        const index = arrayIndex(last, node.entries.length, op.op === 'add');
        if (op.op === 'add') node.entries.splice(index, 0, freshEntry(undefined, op.value));
        else removing(text, node, node.entries[index]!);
        if (op.op === 'remove') node.entries.splice(index, 1);
        node.dirty = true;
      }
    }
  }
}

/**
 * A comment before a removed entry may belong to what the entry before it holds, and the library would keep it; one
 * right above a block's first entry goes with that entry in the library, but stays in the text before the block here.
 */
function removing(text: string, block: FastBlock, entry: FastEntry): void {
  if (entry.fresh) return;
  if (text.slice(entry.gap, entry.start).includes('#')) decline('a comment before a removed entry');
  if (entry.start === block.start && commentOrBlankBefore(text, block.start)) decline('a comment or blank line before a removed first entry');
}

function childOf(block: FastBlock, token: string): FastNode {
  if (block.kind === 'map') {
    const entry = block.entries.find((e) => e.key === token);
    return entry ? entry.node : decline(`no key ${token}`);
  }
  const entry = block.entries[arrayIndex(token, block.entries.length, false)];
  return entry ? entry.node : decline(`no item ${token}`);
}

/** Writes changed blocks: source text where nothing changed, printed text where something was added. */
class Writer {
  constructor(
    private readonly text: string,
    private readonly to: number,
    private readonly splicer: Splicer,
    private readonly options: ToStringOptions,
  ) {}

  /** The text that replaces text[block.start, block.end). */
  block(block: FastBlock): string {
    if (!block.dirty && !block.touched) return this.text.slice(block.start, block.end);
    const text = this.text;
    if (block.entries.length === 0) decline('a map or list left empty');
    if (block.dirty) {
      // Which entry a comment indented deeper than the block goes with, in the library, depends on what the entry before
      // it holds; one at the block's column or less goes with the entry after it, as here.
      for (const e of block.entries) {
        if (!e.fresh && e.start !== block.start && deeperComment(text, e.gap, e.start, block.col)) {
          decline('a comment between changed entries');
        }
      }
      // One indented less than the block belongs to a map around it, as the library reads it too, and stays put.
      if (this.commentAfter(block.end, block.col)) decline('a comment after a changed map or list');
    }
    const pad = ' '.repeat(block.col);
    let out = '';
    block.entries.forEach((e, n) => {
      let piece: string;
      if (e.fresh) {
        piece = this.splicer.print(e.key, (e.node as { value: unknown }).value, this.options, pad);
      } else {
        piece = (e.start === block.start ? pad : text.slice(e.gap, e.start)) + this.entry(block, e, pad);
      }
      if (n === 0) {
        // The block's text starts at its first key or dash: the indentation before it is the source's.
        if (!e.fresh && e.start !== block.start && e.gap !== e.start - block.col) {
          decline('a comment or blank line before a changed first entry');
        }
        if (e.fresh && commentOrBlankBefore(text, block.start)) decline('a comment or blank line before an added first entry');
        piece = piece.slice(pad.length);
      }
      if (n < block.entries.length - 1 && !piece.endsWith('\n')) piece += '\n';
      out += piece;
    });
    return out;
  }

  /** An entry from the source, from its key or dash to its end, with what changed below it. */
  private entry(block: FastBlock, e: FastEntry, pad: string): string {
    const text = this.text;
    const node = e.node;
    if (e.replaced) {
      if (block.kind !== 'map' || node.kind !== 'new') return decline('an odd replacement');
      // A comment on the entry, or right after what it held, may go with the value the library replaces.
      if (text.slice(e.start, e.end).includes('#') || this.commentAfter(e.end)) decline('a comment on a replaced entry');
      const printed = this.splicer.print('k', node.value, this.options, pad);
      if (!printed.startsWith(`${pad}k:`)) decline('an odd printed key');
      return text.slice(e.start, e.keyEnd) + printed.slice(pad.length + 1);
    }
    if (node.kind === 'map' || node.kind === 'seq') {
      if (node.dirty || node.touched) return text.slice(e.start, node.start) + this.block(node) + text.slice(node.end, e.end);
    }
    return text.slice(e.start, e.end);
  }

  /**
   * Whether a comment line comes before the next content line after `offset` (a line start); with `col`, only one
   * indented to that column or more counts.
   */
  private commentAfter(offset: number, col = 0): boolean {
    const text = this.text;
    let p = offset;
    while (p < this.to) {
      let e = text.indexOf('\n', p);
      if (e < 0 || e > this.to) e = this.to;
      const line = text.slice(p, e).trim();
      if (line.startsWith('#') && text.indexOf('#', p) - p >= col) return true;
      if (line !== '') return false;
      p = e + 1;
    }
    return false;
  }
}

/** Whether a comment line in text[from, to), lines of comments and blanks only, starts right of `col`. */
function deeperComment(text: string, from: number, to: number, col: number): boolean {
  for (let p = from; p < to; ) {
    let e = text.indexOf('\n', p);
    if (e < 0 || e > to) e = to;
    let q = p;
    while (q < e && (text[q] === ' ' || text[q] === '\t')) q += 1;
    if (text[q] === '#' && q - p > col) return true;
    p = e + 1;
  }
  return false;
}

/** Whether the line before the one holding `offset` is blank or a comment (and `offset` starts its line's content). */
function commentOrBlankBefore(text: string, offset: number): boolean {
  const lineStart = text.lastIndexOf('\n', offset - 1) + 1;
  if (text.slice(lineStart, offset).trim() !== '') return false; // a compact map after "- "
  if (lineStart === 0) return false;
  const previous = text.slice(text.lastIndexOf('\n', lineStart - 2) + 1, lineStart - 1).trim();
  return previous === '' || previous.startsWith('#');
}

/** Every line but the first of an entry goes `pad` further in; empty lines stay empty. */
function indent(printed: string, pad: string): string {
  if (pad === '') return printed;
  return printed
    .split('\n')
    .map((line) => (line === '' ? line : pad + line))
    .join('\n');
}
