/**
 * The JSON log as a process writes it: lines gathered into buffers and written in the background must all come out,
 * whole, in order, and at exit too, whatever their size and characters.
 */
import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';

/** Runs a script that logs through createLogger and then exits; returns its standard output. */
function logOf(script: string): string {
  const program = `import { createLogger } from './src/server/logger.ts';\nconst log = createLogger({ level: 'info', format: 'json' });\n${script}`;
  const result = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', program], { encoding: 'utf8', timeout: 60_000, maxBuffer: 1 << 26 });
  expect(result.stderr).toBe('');
  expect(result.status).toBe(0);
  return result.stdout;
}

const messages = (out: string): string[] =>
  out
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => (JSON.parse(line) as { msg: string }).msg);

describe('the JSON log', () => {
  it('writes every line whole and in order: a burst larger than one gathering buffer, long lines, and characters of every UTF-8 length', () => {
    const out = logOf(`
      const wide = 'é→😀';
      for (let i = 0; i < 3000; i++) log.info(\`line \${i} \${wide}\`);
      log.info('long ' + 'x'.repeat(100000));
      log.info('wide ' + wide.repeat(12000));
      log.info('wide again ' + wide.repeat(5000));
      log.info('last');
    `);
    const got = messages(out);
    const want = [...Array.from({ length: 3000 }, (_, i) => `line ${i} é→😀`), `long ${'x'.repeat(100000)}`, `wide ${'é→😀'.repeat(12000)}`, `wide again ${'é→😀'.repeat(5000)}`, 'last'];
    expect(got.length).toBe(want.length);
    expect(got).toEqual(want);
  });

  it('writes the lines still gathered when the process exits at once', () => {
    const out = logOf(`log.info('before exit'); log.warn('just before'); process.exit(0);`);
    expect(messages(out)).toEqual(['before exit', 'just before']);
  });

  it('writes lines logged across many gathering periods', async () => {
    const out = logOf(`
      for (let round = 0; round < 5; round++) {
        log.info(\`round \${round}\`);
        await new Promise((resolve) => setTimeout(resolve, 30));
      }
    `);
    expect(messages(out)).toEqual(['round 0', 'round 1', 'round 2', 'round 3', 'round 4']);
  });
});
