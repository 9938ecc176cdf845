/** The admission failure codes: each one documented for operators, and each error mapped to its code. */
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ADMISSION_FAILURE_CODES, SourceUnavailableError, failureOf } from '../../src/admission/index.js';
import { EngineError } from '../../src/engine/index.js';

/** The codes in the first column of the "Admission failure codes" table of docs/operations.md, in order. */
function documentedCodes(): string[] {
  const page = readFileSync(resolve(import.meta.dirname, '../../docs/operations.md'), 'utf8');
  const section = page.split(/^##+ Admission failure codes$/m)[1]?.split(/^#/m)[0] ?? '';
  return [...section.matchAll(/^\| `([A-Z_]+)` \|/gm)].map((m) => m[1] ?? '');
}

describe('admission failure codes', () => {
  it('docs/operations.md has a row for every code, in the order of the list, and none besides', () => {
    expect(documentedCodes()).toEqual([...ADMISSION_FAILURE_CODES]);
  });

  it('an engine error keeps its code', () => {
    expect(failureOf(new EngineError('MISSING_TRUST_ANCHORS', 'no anchors'))).toEqual({ code: 'MISSING_TRUST_ANCHORS', message: 'no anchors' });
  });

  it('a source that cannot answer gives its own code', () => {
    const err = new SourceUnavailableError('CONFIG_NOT_LOADED', 'the Linkerd configuration is not loaded: no values');
    expect(failureOf(err)).toEqual({ code: 'CONFIG_NOT_LOADED', message: err.message });
  });

  it('anything else is a handler error, whatever code it carries: its text is for the log, never for the API server', () => {
    const foreign = Object.assign(new Error('boom'), { code: 'NAMESPACE_UNKNOWN' });
    const internal = 'an internal error (HANDLER_ERROR); the injector logged what it was';
    expect(failureOf(foreign)).toEqual({ code: 'HANDLER_ERROR', message: internal, detail: 'boom' });
    expect(failureOf('a string')).toEqual({ code: 'HANDLER_ERROR', message: internal, detail: 'a string' });
    expect(failureOf(new RangeError('Maximum call stack size exceeded'))).toEqual({ code: 'HANDLER_ERROR', message: internal, detail: 'Maximum call stack size exceeded' });
  });
});
