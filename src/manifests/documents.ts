/**
 * Kubernetes manifests in and out: files, directories and stdin read as YAML 1.1 (or JSON) streams, and documents
 * written back with their comments and layout, or as JSON.
 */
import { lstatSync, readdirSync, readFileSync, statSync, type Stats } from 'node:fs';
import { isAbsolute, join, resolve } from 'node:path';
import {
  Composer,
  Document,
  Parser,
  type Pair,
  isCollection,
  isMap,
  isNode,
  isScalar,
  isSeq,
  visit,
  type DocumentOptions,
  type ParseOptions,
  type SchemaOptions,
  type ToStringOptions,
} from 'yaml';
import { compareCodeUnits } from '../engine/index.js';
import { pathProblemText } from './paths.js';
import { Declined, FastReader, type FastBlock, type FastDocument } from './fast-yaml.js';
import { applyToValue, documentPatcher, sameValue, type PatchOp } from './yaml-patch.js';
import { Splicer, type Edit } from './yaml-splice.js';
import { templateAt, templateRefused } from './templates.js';

/** Extensions read from a directory; files named on the command line are read whatever their name. */
const MANIFEST_EXTENSIONS = ['.yaml', '.yml', '.json'];

/**
 * Kubernetes reads manifests as YAML 1.1 (`yes`, `on` are booleans), but keeps dates as strings: the timestamp type
 * is left out so that `2024-01-01` stays the string it is in the API.
 */
export const YAML_OPTIONS: ParseOptions & DocumentOptions & SchemaOptions = {
  version: '1.1',
  customTags: (tags) => tags.filter((t) => typeof t === 'string' || t.tag !== 'tag:yaml.org,2002:timestamp'),
  // The data is what kubectl would read: a key given twice is reported by the CLI itself (the last value counts),
  // and the library's own console warnings (a collection used as a key) would only confuse.
  logLevel: 'error',
};

export class InputError extends Error {
  override readonly name = 'InputError';
}

/** A Go template (a Helm chart's file) where a manifest was expected: the command says what to run instead. */
export class TemplateError extends InputError {}

/** One document of the input, with where it came from. */
export interface Manifest {
  /** The file as named on the command line (or found in a directory), "-" for stdin. */
  source: string;
  /** 1-based position of the document in its source. */
  index: number;
  /** 1-based line where the document starts. */
  line: number;
  /** The line of an offset in the source. */
  lineOf: (offset: number) => number;
  /** The document as the yaml library reads it: read on first use when the fast reader read it (see documentOf). */
  doc?: Document;
  /** Offsets in `doc` are from here in the source. */
  docOffset: number;
  /** The document as FastReader read it, when it could: edits are then spliced into its text. */
  fast?: FastManifest | undefined;
  /** The document's data as read. */
  value: unknown;
  /** The document's own text in the source, written back as it is when nothing in it changes. */
  text: string;
  /** The source had a key twice in one map (the last value counts). */
  duplicates: boolean;
  /** The source was JSON: its documents are re-rendered rather than edited in place. */
  json: boolean;
  /** The layout the source uses, for the nodes the injector adds (read once, from the document as parsed). */
  style: () => ToStringOptions;
  /** How the source ended its lines and began, which its output keeps (see asRead); absent for LF and no BOM. */
  asRead?: SourceForm;
  /** The text of documents that hold nothing (a `---` and comments) right before this one, written back before it. */
  before?: string;
  /** The same after the source's last document that holds something, written back after it: a file's last `---`. */
  after?: string;
}

/** Line ends and a byte-order mark the source had: read without them, written back with them. */
export interface SourceForm {
  crlf: boolean;
  /** The source began with a UTF-8 byte-order mark, which its first document gets back. */
  bom: boolean;
}

/**
 * A source's text as the readers take it, without a byte-order mark and with LF line ends, and what they were: the
 * output of its documents gets them back, so that a CRLF file comes back CRLF, every line alike.
 */
export function normalizedSource(text: string): { text: string; form: SourceForm | undefined } {
  const bom = text.charCodeAt(0) === 0xfeff;
  const rest = bom ? text.slice(1) : text;
  const crlf = rest.includes('\r\n');
  if (!bom && !crlf) return { text, form: undefined };
  return { text: crlf ? rest.replace(/\r\n/g, '\n') : rest, form: { crlf, bom } };
}

/** A document's output text in the form its source had (see normalizedSource). */
export function asRead(text: string, m: Pick<Manifest, 'asRead' | 'index'>): string {
  const form = m.asRead;
  if (!form) return text;
  const ends = form.crlf ? text.replace(/\n/g, '\r\n') : text;
  return form.bom && m.index === 1 ? `\ufeff${ends}` : ends;
}

/** A document FastReader read: where it is in the whole source text. */
interface FastManifest {
  doc: FastDocument;
  source: string;
  from: number;
  to: number;
}

export interface ReadIo {
  cwd: string;
  readStdin: () => Promise<string>;
  /** Inputs that are not files (URLs): which arguments they are, and how to read one. */
  remote?: { matches: (arg: string) => boolean; read: (arg: string) => Promise<string> };
  /** Whether FastReader reads the documents it can (the default); false reads all with the yaml library. */
  fastReader?: boolean;
}

function pathProblem(shown: string, err: unknown): InputError {
  return new InputError(`${shown}: ${pathProblemText(err)}`);
}

function statInput(shown: string, real: string): Stats {
  try {
    return statSync(real);
  } catch (err) {
    throw pathProblem(shown, err);
  }
}

/** The files named by the arguments: directories walked depth-first, entries in lexical order (as Go's filepath.Walk). */
export function expandInputs(args: readonly string[], cwd: string): string[] {
  const files: string[] = [];
  const walk = (shown: string, real: string): void => {
    let entries: string[];
    try {
      entries = readdirSync(real);
    } catch (err) {
      throw pathProblem(shown, err);
    }
    for (const name of entries.sort(compareCodeUnits)) {
      const childShown = join(shown, name);
      const childReal = join(real, name);
      const manifest = MANIFEST_EXTENSIONS.some((ext) => name.endsWith(ext));
      // What is not named as a manifest is only looked at to find directories: one that cannot be (a dangling link,
      // a special file) is skipped, as kubectl skips it. A link is not followed into a directory, as Go's filepath.Walk
      // does not follow one: two links to "." would otherwise be a walk without end.
      let stat: Stats | undefined;
      let linked = false;
      try {
        const own = lstatSync(childReal);
        linked = own.isSymbolicLink();
        stat = linked ? statSync(childReal) : own;
      } catch (err) {
        if (manifest) throw pathProblem(childShown, err);
      }
      if (stat?.isDirectory()) {
        if (!linked) walk(childShown, childReal);
      } else if (manifest) {
        files.push(childShown);
      }
    }
  };
  for (const arg of args) {
    if (arg === '-') {
      files.push('-');
      continue;
    }
    const real = isAbsolute(arg) ? arg : resolve(cwd, arg);
    const stat = statInput(arg, real);
    if (stat.isDirectory()) walk(arg, real);
    else files.push(arg);
  }
  return files;
}

/** What one argument named: a file, stdin or a directory, and the manifest files found in it. */
interface InputGroup {
  arg: string;
  directory: boolean;
  files: string[];
}

/** The arguments grouped by what each named, so that an argument that held nothing can be reported as such. */
function expandInputGroups(args: readonly string[], io: ReadIo): InputGroup[] {
  const cwd = io.cwd;
  return args.map((arg) => {
    if (io.remote?.matches(arg)) return { arg, directory: false, files: [arg] };
    const real = isAbsolute(arg) ? arg : resolve(cwd, arg);
    let directory = false;
    try {
      directory = arg !== '-' && statSync(real, { throwIfNoEntry: false })?.isDirectory() === true;
    } catch {
      // expandInputs says what is wrong with it
    }
    return { arg, directory, files: expandInputs([arg], cwd) };
  });
}

async function readText(file: string, io: ReadIo, stdin: { text?: string }): Promise<string> {
  if (file === '-') return (stdin.text ??= await io.readStdin());
  if (io.remote?.matches(file)) return io.remote.read(file);
  try {
    return readFileSync(isAbsolute(file) ? file : resolve(io.cwd, file), 'utf8');
  } catch (err) {
    throw pathProblem(file, err);
  }
}

/** The yaml library composes nested collections recursively; one nested thousands deep overflows the stack. */
const NESTED_TOO_DEEPLY = 'collections nested too deeply to read';
const tooDeep = (message: string): boolean => message.includes('Maximum call stack size exceeded');

const LINE_OF_POSITION = / at line \d+, column \d+:?$/;

/** How documents are read: `fast` lets FastReader read (and the splicer write) the documents it can. */
export interface ReadOptions {
  fast: boolean;
}

const READ_DEFAULTS: ReadOptions = { fast: true };

/** 1-based lines of offsets in a text, from its newlines (found on first use). */
function lineIndex(text: string): (offset: number) => number {
  let breaks: number[] | undefined;
  return (offset) => {
    if (!breaks) {
      breaks = [];
      for (let p = text.indexOf('\n'); p >= 0; p = text.indexOf('\n', p + 1)) breaks.push(p);
    }
    let lo = 0;
    let hi = breaks.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (breaks[mid]! < offset) lo = mid + 1;
      else hi = mid;
    }
    return lo + 1;
  };
}

/**
 * Where each document of a stream starts: at 0 and at every `---` line. A `---` at the start of a line always starts
 * a document (it cannot be inside a scalar or a flow collection), so the stream can be cut there without parsing it.
 * Comments before the first `---` belong to the document it starts. Undefined when the stream has directives, `...`
 * end markers, CR or Unicode line breaks, or a byte order mark: the yaml library then reads it whole.
 */
export function documentStarts(text: string): number[] | undefined {
  if (/[\r\u2028\u2029\ufeff]/.test(text) || /^(?:%|\.\.\.(?:[ \t\n]|$))/m.test(text)) return undefined;
  const starts = [0];
  for (const m of text.matchAll(/^---(?=[ \t\n]|$)/gm)) if (m.index > 0) starts.push(m.index);
  if (starts.length > 1 && !/^[ \t]*[^\s#]/m.test(text.slice(0, starts[1]))) starts.splice(1, 1);
  return starts;
}

/**
 * The documents of one stream, one at a time: each is parsed, used and dropped before the next is parsed, so that
 * memory follows the largest document, not the file. Each document carries its own text: from the end of the
 * previous document (the comments and `---` before it belong to it, as the parser attaches them) to its own end.
 * Duplicate keys are accepted, the last value winning as in kubectl's decoder, with a warning in `warnings`.
 * Documents FastReader can read are read by it; the others, and JSON, by the yaml library.
 */
export function* manifestsOf(text: string, source: string, warnings: string[], options: ReadOptions = READ_DEFAULTS): Generator<Manifest> {
  const json = /^\s*[[{]/.test(text);
  const lineOf = lineIndex(text);
  let padding: boolean | undefined;
  const flowPaddingOf = (): boolean => (padding ??= flowPadding(text));
  const starts = json ? undefined : documentStarts(text);
  const reader = options.fast && starts ? new FastReader(YAML_OPTIONS) : undefined;
  const counter = { index: 0 };
  const bounds = starts ?? [0];
  // Documents of nothing but a marker and comments (a file ending in `---`) hold no object, but their text is written
  // back: before the next document, or after the last one that holds something.
  const holds = (k: number): boolean => !starts || hasContent(text.slice(bounds[k], bounds[k + 1] ?? text.length));
  let last = bounds.length - 1;
  while (last > 0 && !holds(last)) last -= 1;
  let before = '';
  for (let k = 0; k <= last; k += 1) {
    const from = bounds[k]!;
    const to = bounds[k + 1] ?? text.length;
    if (!holds(k)) {
      counter.index += 1;
      before += text.slice(from, to);
      continue;
    }
    const kept = { ...(before !== '' && { before }), ...(k === last && starts && to < text.length && { after: text.slice(to) }) };
    before = '';
    const fast = reader?.read(text, from, to);
    if (fast === null) {
      counter.index += 1;
      continue;
    }
    if (fast) {
      counter.index += 1;
      let layout: ToStringOptions | undefined;
      yield {
        ...kept,
        source,
        index: counter.index,
        line: lineOf(fast.root.start),
        lineOf,
        docOffset: from,
        fast: { doc: fast, source: text, from, to },
        value: fast.value,
        text: text.slice(from, to),
        duplicates: false,
        json: false,
        style: () => (layout ??= { ...fastIndentStyle(fast, text), flowCollectionPadding: flowPaddingOf() }),
      };
      continue;
    }
    for (const m of composed(text.slice(from, to), from, { source, json, lineOf, warnings, counter, padding: flowPaddingOf })) {
      yield Object.assign(m, kept);
    }
  }
}

/** Whether a document's text holds more than its `---` marker, comments and blank lines. */
function hasContent(segment: string): boolean {
  return /^[ \t]*[^\s#]/m.test(segment.startsWith('---') ? segment.slice(3) : segment);
}

interface Composing {
  source: string;
  json: boolean;
  lineOf: (offset: number) => number;
  warnings: string[];
  counter: { index: number };
  padding: () => boolean;
}

/** The documents of `text` (the part of the source from `offset` on) as the yaml library reads them. */
function* composed(text: string, offset: number, c: Composing): Generator<Manifest> {
  const { source, json, warnings, counter } = c;
  const lineOf = (at: number): number => c.lineOf(offset + at);
  let start = 0;
  const ready = function* (doc: Document.Parsed, end: number): Generator<Manifest> {
    counter.index += 1;
    const index = counter.index;
    const segment = text.slice(start, end);
    // Only here: the fast reader declines every document in which YAML reads `{{` as two flow maps.
    const template = templateAt(segment);
    const templateError = (): TemplateError => {
      const what = 'this is a Helm or Go template, not a manifest: YAML would read its {{ ... }} as nested maps';
      return new TemplateError(`${source}:${lineOf(start + template)}: ${what}`);
    };
    let duplicates = false;
    for (const problem of doc.errors) {
      const line = lineOf(problem.pos[0]);
      if (problem.code === 'DUPLICATE_KEY') {
        duplicates = true;
        const key = (/^[^:\n]*/.exec(text.slice(problem.pos[0], problem.pos[0] + 200))?.[0] ?? '').trim();
        warnings.push(`${source}:${line}: duplicate key ${JSON.stringify(key)} in document ${index}: the last value is used, as kubectl does`);
        continue;
      }
      if (template >= 0) throw templateError();
      // The message repeats the position ("at line 6, column 1:") and adds a code frame; FILE:LINE says it already.
      const message = (problem.message.split('\n')[0] ?? '').replace(LINE_OF_POSITION, '');
      throw new InputError(`${source}:${line}: invalid YAML: ${tooDeep(message) ? NESTED_TOO_DEEPLY : message || 'unknown error'}`);
    }
    // Only duplicate keys are left, reported above; the library will not print a document that still lists errors.
    doc.errors.length = 0;
    let value: unknown;
    try {
      value = doc.toJS();
    } catch (err) {
      // An alias to an unknown anchor, or an alias bomb (yaml stops at its maxAliasCount).
      const message = (err as Error).message;
      throw new InputError(`${source}: document ${index}: invalid YAML: ${tooDeep(message) ? NESTED_TOO_DEEPLY : message}`);
    }
    if (template >= 0 && templateRefused(value)) throw templateError();
    start = end;
    if (value === null || value === undefined) return;
    keepTrailingComment(doc, text);
    let layout: ToStringOptions | undefined;
    const line = lineOf(doc.contents?.range?.[0] ?? doc.range[0]);
    const style = (): ToStringOptions => (layout ??= json ? KUBECTL_STYLE : { ...indentStyle(doc, text), flowCollectionPadding: c.padding() });
    yield { source, index, doc, docOffset: offset, json, value, text: segment, duplicates, line, lineOf: c.lineOf, style };
  };
  let pending: Document.Parsed | undefined;
  for (const doc of new Composer(YAML_OPTIONS).compose(new Parser().parse(text))) {
    if (pending) yield* ready(pending, pending.range[2]);
    pending = doc;
  }
  if (pending) yield* ready(pending, text.length);
}

/** The document as the yaml library reads it, read now if the fast reader read it. */
function documentOf(m: Manifest): Document {
  if (m.doc) return m.doc;
  const doc = new Composer(YAML_OPTIONS).compose(new Parser().parse(m.text)).next().value;
  if (!doc || doc.errors.length > 0) throw new InputError(`${m.source}:${m.line}: document ${m.index}: the yaml library does not read it as the fast reader did`);
  keepTrailingComment(doc, m.text);
  m.doc = doc;
  return doc;
}

/**
 * A comment after a document's last line belongs to the document, which the yaml library prints after a blank line.
 * When the source had no blank line there, the comment is moved onto the document's contents, which prints it
 * right under the last line, as it was.
 */
function keepTrailingComment(doc: Document, text: string): void {
  const contents = doc.contents;
  if (!doc.comment || !isCollection(contents) || contents.comment || !contents.range || !doc.range) return;
  const between = text.slice(contents.range[1], doc.range[2]);
  if (/^[ \t]*\n/.test(between)) return; // the range ends at the start of the line after the contents
  contents.comment = doc.comment;
  doc.comment = null;
}

/** The layout `kubectl get -o yaml` prints: two-space indent, list items at the column of their key. */
const KUBECTL_STYLE: ToStringOptions = { indent: 2, indentSeq: false, flowCollectionPadding: true };

function column(text: string, offset: number): number {
  return offset - (text.lastIndexOf('\n', offset - 1) + 1);
}

/**
 * Reads the document's own layout from its first nested block map and block list, so that what the injector adds is
 * indented like the rest (the yaml library would otherwise re-indent every list in the document).
 */
function indentStyle(doc: Document, text: string): ToStringOptions {
  let indent: number | undefined;
  let indentSeq: boolean | undefined;
  visit(doc, {
    Pair(_, pair) {
      if (!isScalar(pair.key) || !pair.key.range) return undefined;
      const keyColumn = column(text, pair.key.range[0]);
      const value = pair.value;
      if (isMap(value) && !value.flow && value.range && indent === undefined) {
        const delta = column(text, value.range[0]) - keyColumn;
        if (delta > 0) indent = delta;
      } else if (isSeq(value) && !value.flow && indentSeq === undefined) {
        // The list's own range may start at an anchor or tag: the dash before its first item is what counts.
        const first: unknown = value.items[0];
        const start = isNode(first) ? first.range?.[0] : undefined;
        const dash = start === undefined ? -1 : text.lastIndexOf('-', start - 1);
        if (dash >= 0) indentSeq = column(text, dash) > keyColumn;
      }
      return indent !== undefined && indentSeq !== undefined ? visit.BREAK : undefined;
    },
  });
  return { indent: indent ?? 2, indentSeq: indentSeq ?? false };
}

/** indentStyle for a document FastReader read: the same first nested block map and block list, in the same order. */
function fastIndentStyle(fast: FastDocument, text: string): ToStringOptions {
  let indent: number | undefined;
  let indentSeq: boolean | undefined;
  const walk = (block: FastBlock): boolean => {
    for (const e of block.entries) {
      const node = e.node;
      if (node.kind !== 'map' && node.kind !== 'seq') continue;
      if (e.key !== undefined) {
        const keyColumn = column(text, e.start);
        if (node.kind === 'map' && indent === undefined) {
          const delta = node.col - keyColumn;
          if (delta > 0) indent = delta;
        } else if (node.kind === 'seq' && indentSeq === undefined) {
          indentSeq = node.col > keyColumn;
        }
        if (indent !== undefined && indentSeq !== undefined) return true;
      }
      if (walk(node)) return true;
    }
    return false;
  };
  walk(fast.root);
  return { indent: indent ?? 2, indentSeq: indentSeq ?? false };
}

/** Whether the file pads flow maps (`{ a: 1 }`) at least as often as not: counted once per file, over all of it. */
function flowPadding(text: string): boolean {
  const padded = (text.match(/\{ /g) ?? []).length;
  const tight = (text.match(/\{[^\s}]/g) ?? []).length;
  return padded >= tight;
}

/** Output format of `inject` and `uninject`. */
export type OutputFormat = 'yaml' | 'json';

const STRING_OPTIONS: ToStringOptions = { lineWidth: 0, minContentWidth: 0 };

/**
 * One document of the output YAML stream. A document nothing changed is written as it was read, byte for byte; an
 * edited one is printed in the source's layout; JSON sources become block YAML, as Linkerd prints YAML. Every
 * document after the first starts with `---` (one that had the marker is not given a second one).
 */
function renderDocument(m: Manifest, edited: boolean, first: boolean): string {
  let text: string;
  if (!edited && !m.json) {
    text = first || (m.fast ? m.fast.doc.marker : m.doc?.directives?.docStart) ? m.text : `---\n${m.text}`;
  } else {
    const parsed = documentOf(m);
    const doc = m.json ? new Document(parsed.toJS(), YAML_OPTIONS) : parsed;
    if (!first && doc.directives) doc.directives.docStart = true;
    text = doc.toString({ ...STRING_OPTIONS, ...m.style() });
  }
  return text.endsWith('\n') ? text : `${text}\n`;
}

/** The documents as JSON: the object itself when there is one, else a v1 List of them. */
function renderJson(objects: readonly unknown[]): string {
  if (objects.length === 0) return '';
  const value = objects.length === 1 ? objects[0] : { apiVersion: 'v1', kind: 'List', items: objects, metadata: {} };
  return `${JSON.stringify(value, null, 2)}\n`;
}

// ---------------------------------------------------------------------------------------------------------------
// Transforming documents

/** A report that can say where its object is: `FILE:LINE: document N, items[K]`, and which file it is in. */
export interface Located {
  where?: string;
  /** Set only when the input is a directory or several arguments, where the lines would not say it otherwise. */
  file?: string;
}

/** What a command does to one object: operations relative to the object, and how to report it. */
export interface ObjectChange<R> {
  ops: PatchOp[];
  report: R;
  /** The object cannot be written (it could not be injected, or is not a Kubernetes object). */
  failed: boolean;
}

/** `kind: List` (or a typed list such as `DeploymentList`, as the API returns it) with an `items` array. */
export function listItems(value: unknown): unknown[] | undefined {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined;
  const { kind, items } = value as { kind?: unknown; items?: unknown };
  return typeof kind === 'string' && kind.endsWith('List') && Array.isArray(items) ? items : undefined;
}

export interface TransformOutcome<R> {
  reports: R[];
  failed: boolean;
  /**
   * What the user should know about the input: duplicate keys, null List items dropped, documents whose layout could
   * not be kept, arguments that held no objects.
   */
  warnings: string[];
  /** The output in the requested format, in pieces to be written one after the other; none when an object failed. */
  output: string[];
}

/** Removes all but the last of each key of every map, as the data reads it, so that edits reach the pair that counts. */
function keepLastOfDuplicates(doc: Document): void {
  visit(doc, {
    Map(_, map) {
      const seen = new Set<string>();
      for (let i = map.items.length - 1; i >= 0; i -= 1) {
        const key = (map.items[i] as Pair).key;
        const token = isScalar(key) ? String(key.value) : undefined;
        if (token === undefined || token === '<<') continue;
        if (seen.has(token)) map.items.splice(i, 1);
        else seen.add(token);
      }
    },
  });
}

/**
 * Runs `change` on the document's object (each item of a List) and returns the edits to make; null items of a List
 * are dropped, as they hold no object.
 */
function editsOf<R extends Located>(m: Manifest, change: (object: unknown) => ObjectChange<R>, outcome: TransformOutcome<R>, named: boolean): Edit[] {
  const where = (item?: number): string => {
    if (item === undefined) return `${m.source}:${m.line}: document ${m.index}`;
    const at = itemOffset(m, item);
    const line = at === undefined ? m.line : m.lineOf(at);
    return `${m.source}:${line}: document ${m.index}, items[${item}]`;
  };
  const edits: Edit[] = [];
  const run = (object: unknown, base: string[], at: string): void => {
    const c = change(object);
    c.report.where = at;
    if (named) c.report.file = m.source;
    outcome.reports.push(c.report);
    if (c.failed) outcome.failed = true;
    else if (c.ops.length > 0) edits.push({ ops: c.ops, base });
  };
  const items = listItems(m.value);
  if (items) {
    const nulls: number[] = [];
    items.forEach((item, i) => {
      if (item !== null) return run(item, ['items', String(i)], where(i));
      nulls.push(i);
      outcome.warnings.push(`${where(i)}: the item is null; it was dropped`);
    });
    // After the items' own edits, whose paths count the null items, and from the last so that indexes hold.
    for (const i of nulls.reverse()) edits.push({ ops: [{ op: 'remove', path: `/items/${i}` }], base: [] });
  } else {
    run(m.value, [], where());
  }
  return edits;
}

/** Where items[i] of a List document starts in the source. */
function itemOffset(m: Manifest, item: number): number | undefined {
  if (m.fast) {
    const entry = m.fast.doc.root.entries.find((e) => e.key === 'items');
    const node = entry?.node.kind === 'seq' ? entry.node.entries[item]?.node : undefined;
    return node?.kind === 'map' || node?.kind === 'seq' || node?.kind === 'leaf' ? node.start : undefined;
  }
  const doc = documentOf(m);
  const seq = isMap(doc.contents) ? doc.contents.get('items', true) : undefined;
  const node: unknown = isSeq(seq) ? seq.items[item] : undefined;
  return isNode(node) && node.range ? m.docOffset + node.range[0] : undefined;
}

/**
 * Applies the edits to the document with the yaml library, in place. The same operations are applied to the plain
 * data as a check: if the edited document does not read back as that data (an alias or merge key in the way), the
 * document is rebuilt from the data, losing its comments but never content.
 */
function editDocument<R>(m: Manifest, edits: readonly Edit[], outcome: TransformOutcome<R>): void {
  const doc = documentOf(m);
  m.style(); // the layout of the document as read, before the edits move anything
  if (m.duplicates) keepLastOfDuplicates(doc);
  const expected = structuredClone(m.value);
  const patcher = documentPatcher(doc);
  for (const e of edits) {
    applyToValue(expected, e.ops, e.base);
    patcher.apply(e.ops, e.base);
  }
  if (!sameValue(doc.toJS(), expected)) {
    m.doc = new Document(expected, YAML_OPTIONS);
    outcome.warnings.push(`${m.source} (document ${m.index}): its layout could not be kept; it was rewritten from its data`);
  }
}

/**
 * The edited document as a piece of the output stream: spliced into its source text when FastReader read it and the
 * splicer can place every change, else edited and printed with the yaml library.
 */
function editedText<R>(m: Manifest, edits: readonly Edit[], outcome: TransformOutcome<R>, first: boolean, splicer: Splicer): string {
  if (m.fast) {
    const { doc, source, from, to } = m.fast;
    const style = m.style();
    m.fast = undefined; // the splicer changes the entries it reads: whatever it does, they are not the source's any more
    try {
      const text = splicer.splice(source, from, to, doc, edits, style);
      const marked = first || doc.marker ? text : `---\n${text}`;
      return marked.endsWith('\n') ? marked : `${marked}\n`;
    } catch (err) {
      if (!(err instanceof Declined)) throw err;
    }
  }
  editDocument(m, edits, outcome);
  return renderDocument(m, true, first);
}

/** The edited document's data: for a document FastReader read, the edits applied to the data are exact. */
function editedValue<R>(m: Manifest, edits: readonly Edit[], outcome: TransformOutcome<R>): unknown {
  if (m.fast) {
    const value = structuredClone(m.value);
    for (const e of edits) applyToValue(value, e.ops, e.base);
    return value;
  }
  editDocument(m, edits, outcome);
  return documentOf(m).toJS();
}

/** Says what an argument that held no object was. */
function nothingIn(group: InputGroup, bytes: number): string {
  const name = group.arg === '-' ? 'stdin' : group.arg;
  if (!group.directory) return `${name}: read ${bytes} bytes, no Kubernetes objects in them`;
  if (group.files.length === 0) return `${name}: a directory with no *.yaml, *.yml or *.json files; nothing was read`;
  const shown = group.files.slice(0, 3).join(', ') + (group.files.length > 3 ? ', ...' : '');
  const files = `${group.files.length} file${group.files.length === 1 ? '' : 's'}`;
  return `${name}: read ${files} (${shown}), no Kubernetes objects in them`;
}

/**
 * What a text is when it is plainly no manifest: a binary file (a NUL, or UTF-8 it is not) or an HTML or XML page,
 * which the YAML reader would otherwise report as a syntax error at some line.
 */
export function notManifestText(text: string): string | undefined {
  const head = text.slice(0, 8192);
  if (head.includes('\u0000') || head.includes('\ufffd')) return 'it looks like a binary file';
  if (/^\ufeff?\s*<(!doctype\s+html|html[\s>]|\?xml|head[\s>]|body[\s>])/i.test(head)) return 'it looks like an HTML or XML page';
  return undefined;
}

/**
 * Every document of every input, one at a time, in order: each is parsed only when the previous one has been used.
 * What the user should know about the input (duplicate keys, arguments that held no objects) goes to `warnings`.
 */
export async function* readDocuments(args: readonly string[], io: ReadIo, warnings: string[]): AsyncGenerator<Manifest> {
  const options: ReadOptions = { fast: io.fastReader ?? true };
  const stdin: { text?: string } = {};
  for (const group of expandInputGroups(args, io)) {
    let count = 0;
    let bytes = 0;
    for (const file of group.files) {
      const raw = await readText(file, io, stdin);
      const foreign = notManifestText(raw);
      if (foreign) throw new InputError(`${file}: not YAML or JSON: ${foreign}`);
      bytes += Buffer.byteLength(raw);
      const { text, form } = normalizedSource(raw);
      for (const m of manifestsOf(text, file, warnings, options)) {
        count += 1;
        if (form) m.asRead = form;
        yield m;
      }
    }
    if (count === 0) warnings.push(nothingIn(group, bytes));
  }
}

/**
 * Runs `work` on a document, turning a stack overflow into an error that names it: a document the yaml library reads
 * may still nest deeper than its printer, or the engine, can recurse.
 */
export function notTooDeep<T>(m: Pick<Manifest, 'source' | 'line' | 'index'>, work: () => T): T {
  try {
    return work();
  } catch (err) {
    if (err instanceof RangeError && tooDeep(err.message)) throw new InputError(`${m.source}:${m.line}: document ${m.index}: collections nested too deeply to process`);
    throw err;
  }
}

/**
 * Reads every input and runs `change` on every object, one document at a time: each is parsed, changed, rendered
 * and let go before the next is read, so time and memory grow with the input, not with its square. Throws
 * InputError for unreadable or invalid input; an object that fails is in the reports and leaves the output empty.
 */
export async function transformInputs<R extends Located>(
  args: readonly string[],
  io: ReadIo,
  format: OutputFormat,
  change: (object: unknown) => ObjectChange<R>,
): Promise<TransformOutcome<R>> {
  const outcome: TransformOutcome<R> = { reports: [], failed: false, warnings: [], output: [] };
  const pieces: string[] = [];
  const objects: unknown[] = [];
  const splicer = new Splicer(YAML_OPTIONS, STRING_OPTIONS);
  // A file that ends in `---` opened a document the next one's text goes into, without a marker of its own.
  let opened = false;
  for await (const m of readDocuments(args, io, outcome.warnings)) {
    notTooDeep(m, () => {
      // A file is named when it is not the one argument given: found in a directory, or one of several.
      const edits = editsOf(m, change, outcome, args.length > 1 || m.source !== args[0]);
      if (outcome.failed) return; // the rest is still checked and reported, but nothing will be written
      const first = pieces.length === 0 || opened;
      if (format === 'json') {
        objects.push(edits.length > 0 ? editedValue(m, edits, outcome) : m.value);
        return;
      }
      const text = edits.length > 0 ? editedText(m, edits, outcome, first, splicer) : renderDocument(m, false, first);
      pieces.push(asRead(`${m.before ?? ''}${text}${m.after ?? ''}`, m));
      opened = /^---/m.test(m.after ?? '');
    });
  }
  if (!outcome.failed) outcome.output = format === 'json' ? [renderJson(objects)] : pieces;
  return outcome;
}
