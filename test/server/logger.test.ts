/**
 * The JSON log as a process writes it: lines written in the background must all come out, whole, in order, and at exit
 * too, whatever their size and characters.
 */
import { spawn, spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';

const programOf = (script: string): string =>
  `import { createLogger } from './src/server/logger.ts';\nconst log = createLogger({ level: 'info', format: 'json' });\n${script}`;

/** Runs a script that logs through createLogger and then exits; returns its standard output. */
function logOf(script: string): string {
  const result = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', programOf(script)], { encoding: 'utf8', timeout: 60_000, maxBuffer: 1 << 26 });
  expect(result.stderr).toBe('');
  expect(result.status).toBe(0);
  return result.stdout;
}

/** The same as logOf, in a process of its own that runs alongside the others asked for. */
function logOfAsync(script: string): Promise<{ stdout: string; stderr: string; status: number | null }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', programOf(script)]);
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    child.on('error', reject);
    child.on('close', (status) => resolve({ stdout, stderr, status }));
  });
}

const messages = (out: string): string[] =>
  out
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => (JSON.parse(line) as { msg: string }).msg);

describe('the JSON log', () => {
  it('writes every line whole and in order: a burst of thousands, long lines, and characters of every UTF-8 length', () => {
    const out = logOf(`
      const wide = 'é→😀';
      for (let i = 0; i < 3000; i++) log.info(\`line \${i} \${wide}\`);
      log.info('long ' + 'x'.repeat(8000));
      log.info('wide ' + wide.repeat(2000));
      log.info('wide again ' + wide.repeat(1000));
      log.info('last');
    `);
    const got = messages(out);
    const want = [...Array.from({ length: 3000 }, (_, i) => `line ${i} é→😀`), `long ${'x'.repeat(8000)}`, `wide ${'é→😀'.repeat(2000)}`, `wide again ${'é→😀'.repeat(1000)}`, 'last'];
    expect(got.length).toBe(want.length);
    expect(got).toEqual(want);
  });

  it('writes the lines still pending when the process exits at once', () => {
    // pino writes what waits synchronously at exit, while a write it had started may still finish: every line comes
    // out, though not always in order (serve itself lets its last writes finish before it exits).
    for (let run = 0; run < 3; run++) {
      const out = logOf(`log.info('before exit'); log.warn('just before'); process.exit(0);`);
      expect(messages(out).sort()).toEqual(['before exit', 'just before']);
    }
  });

  it('writes the lines pending at exit: in eight processes, none loses its last lines', async () => {
    // The large lines are written in the background; the two short ones are still waiting for them when the script ends.
    const runs = await Promise.all(Array.from({ length: 8 }, () => logOfAsync(`for (let i = 0; i < 30; i++) log.info('big ' + 'x'.repeat(8000)); log.info('a'); log.info('b');`)));
    for (const run of runs) {
      expect(run.stderr).toBe('');
      expect(run.status).toBe(0);
      expect(messages(run.stdout)).toEqual([...Array.from({ length: 30 }, () => `big ${'x'.repeat(8000)}`), 'a', 'b']);
    }
  });

  it('cuts a line to a few KiB whatever it is given: a long message, long texts, long lists, deep objects, errors', () => {
    const out = logOf(`
      log.info({ risks: Array.from({ length: 100000 }, (_, i) => 'risk_' + i), name: 'n'.repeat(1000000), deep: { a: { b: { c: { d: { e: 1 } } } } } }, 'm'.repeat(1000000));
      log.error({ err: new Error('e'.repeat(1000000)) }, 'failed');
    `);
    const [first, second] = out.trim().split('\n').map((line) => JSON.parse(line) as Record<string, any>);
    expect(out.split('\n').every((line) => line.length < 16 * 1024)).toBe(true);
    expect(first?.msg).toBe(`${'m'.repeat(8192)}... (${1000000 - 8192} more characters)`);
    expect(first?.risks).toHaveLength(33);
    expect(first?.risks[32]).toBe('and 99968 more');
    expect(first?.name).toMatch(/^n{2048}\.\.\. \(997952 more characters\)$/);
    expect(first?.deep).toEqual({ a: { b: { c: { d: '(an object)' } } } });
    expect(second?.err.message).toMatch(/^e{2048}\.\.\. \(997952 more characters\)$/);
    expect(second?.err.type).toBe('Error');
  });

  it('writes lines logged across many turns of the event loop', async () => {
    const out = logOf(`
      for (let round = 0; round < 5; round++) {
        log.info(\`round \${round}\`);
        await new Promise((resolve) => setTimeout(resolve, 30));
      }
    `);
    expect(messages(out)).toEqual(['round 0', 'round 1', 'round 2', 'round 3', 'round 4']);
  });
});
