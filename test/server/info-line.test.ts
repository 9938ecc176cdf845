/**
 * The webhook's per-admission line, written without pino's general path: it must be the line pino writes for the same
 * fields and message, and it must respect the logger's level.
 */
import { spawnSync } from 'node:child_process';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { infoLineOf, infoLineText, type LineValue } from '../../src/server/logger.js';

const BASE = { component: 'proxy-injector' };
const TIME = ',"time":"2026-11-23T10:00:00.000Z"';

/** What pino writes for `info(fields, msg)` with the bindings and time field createLogger gives it. */
function pinoLine(fields: Record<string, LineValue>, msg: string): string {
  let written = '';
  const logger = pino({ level: 'info', base: BASE, timestamp: () => TIME }, { write: (line: string) => (written += line) });
  logger.info(fields, msg);
  return written;
}

const ours = infoLineText(BASE, () => TIME);

/** Strings pino escapes as JSON.stringify does: quotes, backslashes, control characters, every UTF-8 length, long ones. */
const TEXTS = ['', 'plain', 'a "quoted" word', 'back\\slash', 'tab\there', 'line\nbreak', '\u0000\u001f', 'é→😀', 'x'.repeat(101), `"${'y'.repeat(120)}\n"`, '\u2028\u2029'];

describe('the info line written without pino', () => {
  it('is the line pino writes, for the fields of an admission and for strings of every kind', () => {
    const cases: Array<[Record<string, LineValue>, string]> = [
      [{ uid: 'u-1', operation: 'CREATE', dryRun: false, outcome: 'injected', reasons: [], placement: 'sidecar' }, 'injection patch generated for: pod/shop/web'],
      [{ uid: 'u-2', operation: 'CREATE', dryRun: true, outcome: 'skipped', reasons: ['injection_disable_annotation_present'], placement: undefined }, 'skipped pod/shop/web: pod has annotation'],
      [{ uid: 'u-3', dryRun: false, warnings: ['a "warning"', 'ünïcode\n'] }, 'annotation patch generated for: pod/shop/web (skipped: a, b)'],
      [{}, 'no fields'],
    ];
    for (const text of TEXTS) cases.push([{ uid: text, reasons: [text, text], [text || 'empty']: text }, text]);
    for (const [fields, msg] of cases) {
      expect(ours(fields, msg), JSON.stringify(msg)).toBe(pinoLine(fields, msg));
    }
  });

  it('keeps a lone surrogate, which pino writes raw in a short string, as an escape that reads back the same', () => {
    const lone = 'half \ud800 of a pair';
    const line = ours({ uid: lone }, lone);
    expect(line).toContain('\\ud800');
    expect(JSON.parse(line)).toEqual({ level: 30, time: '2026-11-23T10:00:00.000Z', component: 'proxy-injector', uid: lone, msg: lone });
  });

  it('is logger.info for a logger createLogger did not make', () => {
    let written = '';
    const logger = pino({ level: 'info', base: BASE, timestamp: () => TIME }, { write: (line: string) => (written += line) });
    infoLineOf(logger)({ uid: 'u-1', dryRun: false }, 'hello');
    expect(written).toBe(pinoLine({ uid: 'u-1', dryRun: false }, 'hello'));
  });
});

/** Logs through createLogger at `level` with both logger.info and infoLineOf, in a process of its own; its output. */
function bothWays(level: string): string[] {
  const script = `
    import { createLogger, infoLineOf } from './src/server/logger.ts';
    const log = createLogger({ level: ${JSON.stringify(level)}, format: 'json' });
    const fields = { uid: 'u-1', operation: 'CREATE', dryRun: false, outcome: 'injected', reasons: [], warnings: ['a "w"'] };
    log.info(fields, 'injection patch generated for: pod/shop/web');
    infoLineOf(log)(fields, 'injection patch generated for: pod/shop/web');
    log.warn('done');
  `;
  const result = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { encoding: 'utf8', timeout: 60_000 });
  expect(result.stderr).toBe('');
  expect(result.status).toBe(0);
  return result.stdout.split('\n').filter((line) => line !== '');
}

describe('the info line of a logger made by createLogger', () => {
  it('writes what logger.info writes, into the same gathered output, in order', () => {
    const [viaPino, viaLine, last] = bothWays('info');
    const withoutTime = (line = '') => line.replace(/,"time":"[^"]*"/, '');
    expect(viaLine).toBeDefined();
    expect(withoutTime(viaLine)).toBe(withoutTime(viaPino));
    expect(JSON.parse(viaLine ?? '')).toMatchObject({ level: 30, component: 'proxy-injector', uid: 'u-1', warnings: ['a "w"'] });
    expect(JSON.parse(last ?? '')).toMatchObject({ level: 40, msg: 'done' });
  });

  it('writes nothing when info is below the level', () => {
    const lines = bothWays('warn');
    expect(lines.map((line) => (JSON.parse(line) as { msg: string }).msg)).toEqual(['done']);
  });
});
