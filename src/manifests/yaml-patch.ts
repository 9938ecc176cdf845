/**
 * RFC 6902 `add` and `remove` operations applied to a parsed YAML document in place, so that everything the patch does
 * not touch keeps its comments, key order and formatting; and the same operations applied to plain JSON values.
 */
import jsonPatch, { type Operation } from 'fast-json-patch';
import { isAlias, isMap, isScalar, isSeq, Pair, type Document, type Node, type YAMLMap, type YAMLSeq } from 'yaml';
import type { AddOperation, RemoveOperation } from '../engine/index.js';

export type PatchOp = AddOperation | RemoveOperation;

/** The reference tokens of a JSON pointer (RFC 6901), unescaped: "~1" is "/", then "~0" is "~". */
export function parsePointer(path: string): string[] {
  if (path === '') return [];
  if (!path.startsWith('/')) throw new PatchError(`invalid JSON pointer ${JSON.stringify(path)}`);
  return path
    .slice(1)
    .split('/')
    .map((t) => t.replace(/~1/g, '/').replace(/~0/g, '~'));
}

export class PatchError extends Error {
  override readonly name = 'PatchError';
}

export function arrayIndex(token: string, length: number, forAdd: boolean): number {
  if (forAdd && token === '-') return length;
  if (!/^(0|[1-9]\d*)$/.test(token)) throw new PatchError(`${JSON.stringify(token)} is not an array index`);
  const index = Number(token);
  if (index > (forAdd ? length : length - 1)) throw new PatchError(`array index ${index} is out of bounds`);
  return index;
}

const where = (op: PatchOp): string => `${op.op} ${op.path}`;

// ---------------------------------------------------------------------------------------------------------------
// Plain values

/** A JSON pointer (RFC 6901) from its reference tokens. */
function pointerOf(tokens: readonly string[]): string {
  return tokens.map((t) => `/${t.replace(/~/g, '~0').replace(/\//g, '~1')}`).join('');
}

/**
 * Applies the operations to a plain JSON value in place (the root must be an object or array) and returns it, with
 * fast-json-patch. Each operation is cloned first: the library inserts a patch's values by reference, and the engine's
 * are frozen and shared between pods.
 */
export function applyToValue<T>(root: T, ops: readonly PatchOp[], base: readonly string[] = []): T {
  const prefix = pointerOf(base);
  const cloned = ops.map((op): Operation => {
    if (prefix + op.path === '') throw new PatchError(`${where(op)}: cannot replace the whole document`);
    return op.op === 'add' ? { op: 'add', path: prefix + op.path, value: structuredClone(op.value) } : { op: 'remove', path: prefix + op.path };
  });
  try {
    jsonPatch.applyPatch(root, cloned, true, true, true);
  } catch (err) {
    const failed = err instanceof jsonPatch.JsonPatchError ? err.operation : undefined;
    throw new PatchError(`${failed ? `${failed.op} ${failed.path}: ` : ''}${(err as Error).message.split('\n')[0]}`);
  }
  return root;
}

/** Applies one operation to a plain JSON value, at the path given as reference tokens. */
export function applyAt(root: unknown, op: PatchOp, tokens: string[]): void {
  applyToValue(root, [{ ...op, path: pointerOf(tokens) }]);
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

// ---------------------------------------------------------------------------------------------------------------
// YAML documents

/** A map key as a JSON-pointer token: scalar keys by their value ("8080" matches the number key 8080). */
function keyToken(key: unknown): string | undefined {
  if (isScalar(key)) return String(key.value);
  if (typeof key === 'string' || typeof key === 'number' || typeof key === 'boolean') return String(key);
  return undefined;
}

function pairIndex(map: YAMLMap, token: string): number {
  return map.items.findIndex((p) => keyToken(p.key) === token);
}

/**
 * Where the removed keys of each map were, so that a key removed and added again by the same patch (uninject, then
 * inject) goes back to its place instead of to the end. Maps of any kind: `keysOf` lists a map's keys in order.
 */
export class Positions<M extends object> {
  private readonly original = new WeakMap<M, string[]>();
  private readonly removed = new WeakMap<M, Set<string>>();

  constructor(private readonly keysOf: (map: M) => string[]) {}

  /** Called before a map is changed: remembers its original key order the first time. */
  touch(map: M): void {
    if (!this.original.has(map)) this.original.set(map, this.keysOf(map));
  }

  markRemoved(map: M, token: string): void {
    const set = this.removed.get(map) ?? new Set<string>();
    set.add(token);
    this.removed.set(map, set);
  }

  /** The index to insert a key at: its original place among the keys still there, or the end. */
  insertionIndex(map: M, token: string): number {
    const keys = this.keysOf(map);
    const order = this.original.get(map);
    const ordinal = order?.indexOf(token) ?? -1;
    if (!order || ordinal < 0 || !this.removed.get(map)?.has(token)) return keys.length;
    this.removed.get(map)?.delete(token);
    const after = keys.findIndex((key) => {
      const at = order.indexOf(key);
      return at < 0 || at > ordinal;
    });
    return after < 0 ? keys.length : after;
  }
}

export interface DocumentPatcher {
  /** Applies operations whose paths are relative to the node at `base` (e.g. ["items", "0"] for a List item). */
  apply(ops: readonly PatchOp[], base?: readonly string[]): void;
}

function isNonEmptyCollection(value: unknown): boolean {
  return typeof value === 'object' && value !== null && Object.keys(value).length > 0;
}

/** Creates the node for a value added by a patch: block style, never folded, no anchors. */
export function newNode(doc: Document, value: unknown): Node {
  return doc.createNode(value, { aliasDuplicateObjects: false, flow: false }) as Node;
}

/**
 * A patcher for one document. An alias on the path is replaced by a copy of what it points to before it is changed,
 * so that other aliases of the same anchor keep their value.
 */
export function documentPatcher(doc: Document): DocumentPatcher {
  const positions = new Positions<YAMLMap>((map) => map.items.map((p) => keyToken(p.key) ?? ''));

  const child = (parent: YAMLMap | YAMLSeq, token: string, op: PatchOp): unknown => {
    if (isMap(parent)) {
      const i = pairIndex(parent, token);
      if (i < 0) throw new PatchError(`${where(op)}: no key ${JSON.stringify(token)}`);
      const pair = parent.items[i] as Pair;
      if (isAlias(pair.value)) pair.value = unaliased(pair.value.resolve(doc));
      return pair.value;
    }
    const index = arrayIndex(token, parent.items.length, false);
    const item = parent.items[index];
    if (isAlias(item)) parent.items[index] = unaliased(item.resolve(doc));
    return parent.items[index];
  };

  const unaliased = (target: Node | undefined): Node => newNode(doc, target ? target.toJS(doc) : null);

  return {
    apply(ops, base = []) {
      for (const op of ops) {
        const tokens = [...base, ...parsePointer(op.path)];
        const last = tokens.pop();
        if (last === undefined) throw new PatchError(`${where(op)}: cannot replace the whole document`);
        let parent: unknown = doc.contents;
        const chain: Array<YAMLMap | YAMLSeq> = [];
        for (const token of tokens) {
          if (!isMap(parent) && !isSeq(parent)) throw new PatchError(`${where(op)}: no map or list at ${JSON.stringify(token)}`);
          chain.push(parent);
          parent = child(parent, token, op);
        }
        if ((isMap(parent) || isSeq(parent)) && op.op === 'add' && isNonEmptyCollection(op.value)) {
          // A container or volume in a flow list (`containers: [{name: app}]`) would print as one long flow line:
          // the list, and any flow collection around it, become block style.
          for (const node of [...chain, parent]) if (node.flow) node.flow = false;
        }
        if (isMap(parent)) {
          positions.touch(parent);
          const i = pairIndex(parent, last);
          if (op.op === 'add') {
            const node = newNode(doc, op.value);
            if (i >= 0) {
              (parent.items[i] as Pair).value = node;
            } else {
              if (parent.flow && parent.items.length === 0) parent.flow = false;
              parent.items.splice(positions.insertionIndex(parent, last), 0, new Pair(newNode(doc, last), node));
            }
          } else {
            if (i < 0) throw new PatchError(`${where(op)}: no key ${JSON.stringify(last)}`);
            parent.items.splice(i, 1);
            positions.markRemoved(parent, last);
          }
        } else if (isSeq(parent)) {
          const index = arrayIndex(last, parent.items.length, op.op === 'add');
          if (op.op === 'add') {
            if (parent.flow && parent.items.length === 0) parent.flow = false;
            parent.items.splice(index, 0, newNode(doc, op.value));
          } else {
            parent.items.splice(index, 1);
          }
        } else {
          throw new PatchError(`${where(op)}: the parent is not a map or a list`);
        }
      }
    },
  };
}

// ---------------------------------------------------------------------------------------------------------------
// Comparison

/** Deep equality of JSON-like values, ignoring the order of object keys (not of arrays). */
export function sameValue(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Array.isArray(a)) {
    return Array.isArray(b) && a.length === b.length && a.every((x, i) => sameValue(x, b[i]));
  }
  if (isPlainObject(a) && isPlainObject(b)) {
    const ka = Object.keys(a);
    if (ka.length !== Object.keys(b).length) return false;
    return ka.every((k) => Object.hasOwn(b, k) && sameValue(a[k], b[k]));
  }
  return typeof a === 'number' && typeof b === 'number' && Number.isNaN(a) && Number.isNaN(b);
}
