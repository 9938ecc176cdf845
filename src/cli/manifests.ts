/**
 * Kubernetes manifests in and out: files, directories and stdin read as YAML 1.1 (or JSON) streams, and documents
 * written back with their comments and layout, or as JSON.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { isAbsolute, join, resolve } from 'node:path';
import {
  Document,
  isCollection,
  isMap,
  isNode,
  isScalar,
  isSeq,
  parseAllDocuments,
  visit,
  type DocumentOptions,
  type ParseOptions,
  type SchemaOptions,
  type ToStringOptions,
} from 'yaml';
import { applyToValue, documentPatcher, sameValue, type PatchOp } from './yaml-patch.js';

/** Extensions read from a directory; files named on the command line are read whatever their name. */
const MANIFEST_EXTENSIONS = ['.yaml', '.yml', '.json'];

/**
 * Kubernetes reads manifests as YAML 1.1 (`yes`, `on` are booleans), but keeps dates as strings: the timestamp type
 * is left out so that `2024-01-01` stays the string it is in the API.
 */
export const YAML_OPTIONS: ParseOptions & DocumentOptions & SchemaOptions = {
  version: '1.1',
  customTags: (tags) => tags.filter((t) => typeof t === 'string' || t.tag !== 'tag:yaml.org,2002:timestamp'),
};

export class InputError extends Error {
  override readonly name = 'InputError';
}

/** One document of the input, with where it came from. */
export interface Manifest {
  /** The file as named on the command line (or found in a directory), "-" for stdin. */
  source: string;
  /** 1-based position of the document in its source. */
  index: number;
  doc: Document;
  /** The source was JSON: its documents are re-rendered rather than edited in place. */
  json: boolean;
  /** The layout the source uses, for the nodes the injector adds. */
  style: ToStringOptions;
}

export interface ReadIo {
  cwd: string;
  readStdin: () => Promise<string>;
}

/** The files named by the arguments: directories walked depth-first, entries in lexical order (as Go's filepath.Walk). */
export function expandInputs(args: readonly string[], cwd: string): string[] {
  const files: string[] = [];
  const walk = (shown: string, real: string): void => {
    for (const name of readdirSync(real).sort(lexical)) {
      const childShown = join(shown, name);
      const childReal = join(real, name);
      const stat = statSync(childReal);
      if (stat.isDirectory()) walk(childShown, childReal);
      else if (MANIFEST_EXTENSIONS.some((ext) => name.endsWith(ext))) files.push(childShown);
    }
  };
  for (const arg of args) {
    if (arg === '-') {
      files.push('-');
      continue;
    }
    const real = isAbsolute(arg) ? arg : resolve(cwd, arg);
    let stat;
    try {
      stat = statSync(real);
    } catch {
      throw new InputError(`${arg}: no such file or directory`);
    }
    if (stat.isDirectory()) walk(arg, real);
    else files.push(arg);
  }
  return files;
}

const lexical = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

/** Reads and parses every input. A syntax error is reported as `FILE:LINE: message` and nothing is returned. */
export async function readManifests(args: readonly string[], io: ReadIo): Promise<Manifest[]> {
  const manifests: Manifest[] = [];
  let stdin: string | undefined;
  for (const file of expandInputs(args, io.cwd)) {
    let text: string;
    if (file === '-') {
      stdin ??= await io.readStdin();
      text = stdin;
    } else {
      try {
        text = readFileSync(isAbsolute(file) ? file : resolve(io.cwd, file), 'utf8');
      } catch (err) {
        throw new InputError(`${file}: ${(err as NodeJS.ErrnoException).code === 'EISDIR' ? 'is a directory' : (err as Error).message}`);
      }
    }
    manifests.push(...parseManifests(text, file));
  }
  return manifests;
}

/** Parses one YAML or JSON stream; documents that hold nothing (`---` alone, comments only) are dropped. */
export function parseManifests(text: string, source: string): Manifest[] {
  const docs = parseAllDocuments(text, YAML_OPTIONS);
  for (const doc of docs) {
    const problem = doc.errors[0];
    if (problem) {
      const line = problem.linePos?.[0]?.line;
      // The message repeats the position ("at line 6, column 1:") and adds a code frame; FILE:LINE says it already.
      const message = (problem.message.split('\n')[0] ?? '').replace(/ at line \d+, column \d+:?$/, '');
      throw new InputError(`${source}${line ? `:${line}` : ''}: invalid YAML: ${message || 'unknown error'}`);
    }
  }
  const json = /^\s*[[{]/.test(text);
  const out: Manifest[] = [];
  docs.forEach((doc, i) => {
    let value: unknown;
    try {
      value = doc.toJS();
    } catch (err) {
      // An alias to an unknown anchor, or an alias bomb (yaml stops at its maxAliasCount).
      throw new InputError(`${source}: document ${i + 1}: invalid YAML: ${(err as Error).message}`);
    }
    if (value === null || value === undefined) return;
    keepTrailingComment(doc, text);
    out.push({ source, index: i + 1, doc, json, style: json ? KUBECTL_STYLE : detectStyle(doc, text) });
  });
  return out;
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
 * Reads the source's own layout from its first nested block map and block list, so that what the injector adds is
 * indented like the rest (the yaml library would otherwise re-indent every list in the document).
 */
export function detectStyle(doc: Document, text: string): ToStringOptions {
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
  const padded = (text.match(/\{ /g) ?? []).length;
  const tight = (text.match(/\{[^\s}]/g) ?? []).length;
  return { indent: indent ?? 2, indentSeq: indentSeq ?? false, flowCollectionPadding: padded >= tight };
}

/** Output format of `inject` and `uninject`. */
export type OutputFormat = 'yaml' | 'json';

const STRING_OPTIONS: ToStringOptions = { lineWidth: 0, minContentWidth: 0 };

/**
 * Renders the documents as one YAML stream: every document after the first starts with `---` (a document that had
 * the marker keeps it, and is not given a second one); JSON sources become block YAML, as Linkerd prints YAML.
 */
export function renderYaml(manifests: readonly Manifest[]): string {
  return manifests
    .map((m, i) => {
      let doc = m.doc;
      if (m.json) doc = new Document(m.doc.toJS(), YAML_OPTIONS);
      if (i > 0 && doc.directives) doc.directives.docStart = true;
      const text = doc.toString({ ...STRING_OPTIONS, ...m.style });
      return text.endsWith('\n') ? text : `${text}\n`;
    })
    .join('');
}

/** Renders the documents as JSON: the object itself when there is one, else a v1 List of them. */
export function renderJson(manifests: readonly Manifest[]): string {
  const objects = manifests.map((m) => m.doc.toJS() as unknown);
  const value = objects.length === 1 ? objects[0] : { apiVersion: 'v1', kind: 'List', items: objects, metadata: {} };
  return `${JSON.stringify(value, null, 2)}\n`;
}

export function render(manifests: readonly Manifest[], format: OutputFormat): string {
  if (manifests.length === 0) return '';
  return format === 'json' ? renderJson(manifests) : renderYaml(manifests);
}

// ---------------------------------------------------------------------------------------------------------------
// Transforming documents

/** What a command does to one object: operations relative to the object, and how to report it. */
export interface ObjectChange<R> {
  ops: PatchOp[];
  report: R;
  /** The object cannot be written (it could not be injected, or is not a Kubernetes object). */
  failed: boolean;
}

/** `kind: List` (or a typed list such as `DeploymentList`, as the API returns it) with an `items` array. */
function listItems(value: unknown): unknown[] | undefined {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined;
  const { kind, items } = value as { kind?: unknown; items?: unknown };
  return typeof kind === 'string' && kind.endsWith('List') && Array.isArray(items) ? items : undefined;
}

export interface TransformOutcome<R> {
  reports: R[];
  failed: boolean;
  /** Documents whose layout could not be kept (the edit did not round-trip), which were re-rendered from their data. */
  rewritten: string[];
}

/**
 * Runs `change` on every object (each item of a List) and applies its operations to the document in place. The
 * same operations are applied to the plain data as a check: if the edited document does not read back as that data
 * (an alias or merge key in the way), the document is rebuilt from the data, losing its comments but never content.
 */
export function transformManifests<R>(manifests: readonly Manifest[], change: (object: unknown) => ObjectChange<R>): TransformOutcome<R> {
  const outcome: TransformOutcome<R> = { reports: [], failed: false, rewritten: [] };
  for (const m of manifests) {
    const value: unknown = m.doc.toJS();
    const items = listItems(value);
    const edits: Array<{ ops: PatchOp[]; base: string[] }> = [];
    const objects = items ? items.map((item, i) => ({ item, base: ['items', String(i)] })) : [{ item: value, base: [] }];
    for (const { item, base } of objects) {
      const c = change(item);
      outcome.reports.push(c.report);
      if (c.failed) outcome.failed = true;
      else if (c.ops.length > 0) edits.push({ ops: c.ops, base });
    }
    if (edits.length === 0) continue;
    const expected = structuredClone(value);
    const patcher = documentPatcher(m.doc);
    for (const e of edits) {
      applyToValue(expected, e.ops, e.base);
      patcher.apply(e.ops, e.base);
    }
    if (!sameValue(m.doc.toJS(), expected)) {
      m.doc = new Document(expected, YAML_OPTIONS);
      outcome.rewritten.push(`${m.source} (document ${m.index})`);
    }
  }
  return outcome;
}
