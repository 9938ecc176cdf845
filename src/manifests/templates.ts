/** Helm and other Go templates given where a manifest is expected: found, so that they are refused rather than read. */
import { Lexer } from 'yaml';
import { isWorkloadKind } from '../engine/index.js';

/** Kinds besides the workloads that a command changes (Namespace, Service) or reads (explain's quotas and limits). */
const READ_KINDS = new Set(['namespace', 'service', 'resourcequota', 'limitrange']);

/** The yaml lexer's markers for a document, a scalar and a flow collection's end: they take no room in the text. */
const MARKERS = new Set(['\u0002', '\u001f', '\u0018']);

/**
 * Where the text first holds a template action, `{{`, as YAML reads it: two flow maps opened with nothing between
 * them, which no manifest writes, and which unquoted `{{ .Values.x }}` is read as (a map whose key is a map); a `{{`
 * inside a quoted or block scalar or a comment is text, as in a ConfigMap that holds a template. -1 when there is none.
 * One pass of the lexer, so linear in the text, and only over a text that holds `{{` at all.
 */
export function templateAt(text: string): number {
  if (!text.includes('{{')) return -1;
  let offset = 0;
  let previous = '';
  for (const token of new Lexer().lex(text)) {
    if (token === '{' && previous === '{') return offset - 1;
    if (MARKERS.has(token)) continue;
    offset += token.length;
    previous = token;
  }
  return -1;
}

/**
 * Whether a document holding a template action is refused: when a command would change or read what YAML made of it,
 * or cannot tell (no kind, a List). A template of another kind (a Secret holding `{{placeholder}}`) is written back
 * byte for byte, as the commands leave it alone.
 */
export function templateRefused(value: unknown): boolean {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return true;
  const kind = (value as { kind?: unknown }).kind;
  if (typeof kind !== 'string') return true;
  const lower = kind.toLowerCase();
  return isWorkloadKind(lower) || READ_KINDS.has(lower) || lower.endsWith('list');
}
