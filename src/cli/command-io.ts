/** What the manifest commands share: how they are given stdin and a directory, and how they report failure. */
import { UsageError } from './inject-flags.js';
import type { OutputFormat } from './manifests.js';

/** Where a command reads stdin and resolves relative paths; the CLI passes the process's, tests pass their own. */
export interface CliIo {
  /** The text of stdin, or a function that reads it (called only when "-" is an input). */
  stdin?: string | (() => Promise<string>);
  cwd?: string;
}

export interface CliResult {
  stdout: string;
  stderr: string;
  code: number;
}

export function usageFailure(command: string, message: string): CliResult {
  return { stdout: '', stderr: `proxy-injector ${command}: ${message}\nRun 'proxy-injector ${command} --help' for usage.\n`, code: 2 };
}

export function failure(command: string, message: string): CliResult {
  return { stdout: '', stderr: `proxy-injector ${command}: ${message}\n`, code: 1 };
}

export function stdinReader(io: CliIo): () => Promise<string> {
  const { stdin } = io;
  if (typeof stdin === 'function') return stdin;
  return () => Promise.resolve(stdin ?? '');
}

/** Reads all of the process's stdin. */
export async function readProcessStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

export function outputFormat(value: unknown): OutputFormat {
  if (value === undefined || value === 'yaml') return 'yaml';
  if (value === 'json') return 'json';
  throw new UsageError(`--output ${JSON.stringify(value)}: expected yaml or json`);
}

/** Runs a manifest command on the process's stdin, stdout and stderr, and returns its exit code. */
export async function runOnProcess(run: (argv: readonly string[], io: CliIo) => Promise<CliResult>, args: readonly string[]): Promise<number> {
  const result = await run(args, { stdin: readProcessStdin, cwd: process.cwd() });
  process.stdout.write(result.stdout);
  process.stderr.write(result.stderr);
  return result.code;
}
