/**
 * The benchmarks start servers as child processes; however a benchmark ends, none may outlive it (it would keep its
 * port and memory, and the output of whoever piped the benchmark's). Each case runs a script that starts a server
 * stand-in and a scratch directory, ties both to itself with bench/serve-process.mjs, then ends in one way.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';

const helper = pathToFileURL(join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'bench', 'serve-process.mjs')).href;
const scratch = mkdtempSync(join(tmpdir(), 'proxy-injector-bench-test-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/** Whether a process runs: a zombie (killed, its parent gone, not yet reaped by init) does not. */
function alive(pid: number): boolean {
  try {
    return readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.[0] !== 'Z';
  } catch {
    return false;
  }
}

/** Runs a benchmark stand-in that ends with `ending`; resolves with its exit, its server's pid and its directory. */
async function run(ending: string, signal?: NodeJS.Signals): Promise<{ code: number | null; serverPid: number; dir: string }> {
  const dir = mkdtempSync(join(scratch, 'run-'));
  const script = `
    import { spawn } from 'node:child_process';
    import { rmSync } from 'node:fs';
    import { endsWithThisProcess, whenThisProcessEnds } from ${JSON.stringify(helper)};
    whenThisProcessEnds(() => rmSync(${JSON.stringify(dir)}, { recursive: true, force: true }));
    const server = endsWithThisProcess(spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' }));
    console.log(server.pid);
    ${ending}`;
  const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'pipe'] });
  const serverPid = await new Promise<number>((resolve, reject) => {
    child.stdout.once('data', (chunk: Buffer) => resolve(Number(chunk.toString().trim())));
    child.once('exit', () => reject(new Error('the stand-in ended before it started its server')));
  });
  expect(alive(serverPid)).toBe(true);
  if (signal) child.kill(signal);
  const code = await new Promise<number | null>((resolve) => child.once('exit', (c) => resolve(c)));
  // SIGKILL is delivered at once, but the child may take a moment to go.
  for (let i = 0; i < 100 && alive(serverPid); i++) await new Promise((r) => setTimeout(r, 20));
  return { code, serverPid, dir };
}

describe.skipIf(process.platform !== 'linux')('a benchmark leaves no server and no scratch directory behind', () => {
  const endings: Array<[string, string, NodeJS.Signals | undefined, number]> = [
    ['an uncaught exception', `await new Promise((_, reject) => setTimeout(() => reject(new Error('a wrong answer')), 50));`, undefined, 1],
    ['process.exit', `setTimeout(() => process.exit(3), 50);`, undefined, 3],
    ['SIGTERM', `setInterval(() => {}, 1000);`, 'SIGTERM', 143],
    ['SIGINT', `setInterval(() => {}, 1000);`, 'SIGINT', 130],
  ];
  it.each(endings)('when it ends with %s', async (_, ending, signal, expectedCode) => {
    const { code, serverPid, dir } = await run(ending, signal);
    expect(code).toBe(expectedCode);
    expect(alive(serverPid)).toBe(false);
    expect(existsSync(dir)).toBe(false);
  });
});

describe.skipIf(process.platform !== 'linux')('exitOnSignals', () => {
  it.each([
    ['SIGTERM', 143],
    ['SIGINT', 130],
  ] as Array<[NodeJS.Signals, number]>)('runs the exit handlers of others (as the control plane helper has) on %s', async (signal, expectedCode) => {
    const mark = join(scratch, `exit-ran-${signal}`);
    const script = `
      import { writeFileSync } from 'node:fs';
      import { exitOnSignals } from ${JSON.stringify(helper)};
      exitOnSignals();
      process.on('exit', () => writeFileSync(${JSON.stringify(mark)}, 'ran'));
      console.log('ready');
      setInterval(() => {}, 1000);`;
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'pipe'] });
    await new Promise<void>((resolve, reject) => {
      child.stdout.once('data', () => resolve());
      child.once('exit', () => reject(new Error('the stand-in ended before it was ready')));
    });
    child.kill(signal);
    const code = await new Promise<number | null>((resolve) => child.once('exit', (c) => resolve(c)));
    expect(code).toBe(expectedCode);
    expect(existsSync(mark)).toBe(true);
  });
});
