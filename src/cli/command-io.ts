/** What the manifest commands share: how they are given stdin and a directory, and how they report failure. */
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { TemplateError, type OutputFormat } from '../manifests/index.js';

/** A command line the command cannot take: said with the usage, exit 2. */
export class UsageError extends Error {
  override readonly name = 'UsageError';
}

export interface UrlOptions {
  /** Certificates (PEM) trusted besides the system's; the process itself also honours NODE_EXTRA_CA_CERTS. */
  ca?: string;
  /** The deadline for one URL, redirects included, in milliseconds (30 s); tests shorten it. */
  timeoutMs?: number;
}



/** Where a command reads stdin and resolves relative paths; the CLI passes the process's, tests pass their own. */
export interface CliIo {
  /** The text of stdin, or a function that reads it (called only when "-" is an input). */
  stdin?: string | (() => Promise<string>);
  cwd?: string;
  /** How URL inputs are fetched (extra trusted certificates). */
  url?: UrlOptions;
  /** false reads every document with the yaml library, as the fast reader's tests compare. */
  fastReader?: boolean;
}

export interface CliResult {
  stdout: string;
  stderr: string;
  code: number;
}

const PIECES = Symbol('stdout pieces');

/**
 * A successful result whose stdout is the pieces one after the other. They are joined only if `stdout` is read: the
 * process writes them as they are, so that a large output is never held twice (as pieces and joined).
 */
export function outputResult(pieces: readonly string[], stderr: string): CliResult {
  let joined: string | undefined;
  const result = { stderr, code: 0 } as CliResult;
  Object.defineProperty(result, 'stdout', { enumerable: true, get: () => (joined ??= pieces.join('')) });
  Object.defineProperty(result, PIECES, { value: pieces });
  return result;
}

/** Writes the text to the stream in batches of about a megabyte, each once the stream has taken the one before. */
async function writePieces(stream: NodeJS.WriteStream, pieces: readonly string[]): Promise<void> {
  const flush = async (batch: string): Promise<void> => {
    if (stream.destroyed || stream.write(batch)) return;
    // A closed pipe destroys the stream (see main.ts): then 'close' comes instead of 'drain'.
    await new Promise<void>((resolve) => {
      const done = (): void => {
        for (const event of ['drain', 'close', 'error']) stream.off(event, done);
        resolve();
      };
      for (const event of ['drain', 'close', 'error']) stream.on(event, done);
    });
  };
  let batch = '';
  for (const piece of pieces) {
    batch += piece;
    if (batch.length >= 1 << 20) {
      await flush(batch);
      batch = '';
    }
  }
  if (batch !== '') await flush(batch);
}

/** What a usage error prints: the problem, the command's usage line from its help, and where the rest is. */
export function usageText(command: string, message: string, help?: string): string {
  const usage = help?.split('\n').find((line) => line.startsWith('Usage:'));
  return `proxy-injector ${command}: ${message}\n${usage ? `${usage}\n` : ''}Run 'proxy-injector ${command} --help' for all options.\n`;
}

export function usageFailure(command: string, message: string, help?: string): CliResult {
  return { stdout: '', stderr: usageText(command, message, help), code: 2 };
}

/** The long name in node's description of an option, e.g. "--output" in "-o, --output <value>". */
function optionName(described: string): string {
  return /--[^\s,]+/.exec(described)?.[0] ?? described.split(/[\s,]/)[0] ?? described;
}

/**
 * node's parseArgs, with its errors as one-line usage errors: its own texts are long and quote unevenly
 * ("Unknown option '--x'. To specify a positional argument starting with a '-', place it ... '-- \"--x\"").
 */
export function parseCommandArgs<T extends ParseArgsConfig>(config: T): ReturnType<typeof parseArgs<T>> {
  try {
    return parseArgs(config);
  } catch (err) {
    const { code, message } = err as NodeJS.ErrnoException;
    let m: RegExpExecArray | null;
    if (code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION' && (m = /^Unknown option '([^']+)'/.exec(message))) {
      throw new UsageError(`unknown flag ${m[1]}`);
    }
    if (code === 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE') {
      if ((m = /^Option '([^']+)' argument missing/.exec(message))) throw new UsageError(`${optionName(m[1] ?? '')} needs a value`);
      if ((m = /^Option '([^']+)' does not take an argument/.exec(message))) throw new UsageError(`${optionName(m[1] ?? '')} takes no value`);
    }
    if (code === 'ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL' && (m = /^Unexpected argument '([^']*)'/.exec(message))) {
      throw new UsageError(`unexpected argument ${JSON.stringify(m[1])}: this command takes none`);
    }
    if (typeof code === 'string' && code.startsWith('ERR_PARSE_ARGS_')) throw new UsageError(message.split('. ')[0] ?? message);
    throw err;
  }
}

export function failure(command: string, message: string): CliResult {
  return { stdout: '', stderr: `proxy-injector ${command}: ${message}\n`, code: 1 };
}

/** A failure to read the input; a template's says what to run instead, with this command. */
export function inputFailure(command: string, err: Error): CliResult {
  const hint = err instanceof TemplateError ? `; render it first, as in: helm template <chart> | proxy-injector ${command} -` : '';
  return failure(command, err.message + hint);
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
  const pieces = (result as CliResult & { [PIECES]?: readonly string[] })[PIECES];
  if (pieces) await writePieces(process.stdout, pieces);
  else process.stdout.write(result.stdout);
  process.stderr.write(result.stderr);
  return result.code;
}

/** What a command that reads a cluster was given: its flags' text, its switches, and its output format. */
export interface ClusterCommandArgs {
  text(name: string): string | undefined;
  flag(name: string): boolean;
  output: 'text' | 'json';
}

/**
 * Parses the arguments of a command that reads a cluster (`check pods`, `heal`): `options` besides --kubeconfig,
 * --output and --help. A usage error or --help is the command's whole answer.
 */
export function clusterCommandArgs(command: string, help: string, argv: readonly string[], options: ParseArgsConfig['options']): ClusterCommandArgs | CliResult {
  let opts: Record<string, unknown>;
  try {
    opts = parseArgs({
      args: [...argv],
      options: { ...options, kubeconfig: { type: 'string' }, output: { type: 'string', short: 'o' }, help: { type: 'boolean', short: 'h' } },
      strict: true,
    }).values;
  } catch (err) {
    return { stdout: '', stderr: `proxy-injector ${command}: ${(err as Error).message}\n${help}`, code: 2 };
  }
  if (opts['help'] === true) return { stdout: help, stderr: '', code: 0 };
  const output = opts['output'] ?? 'text';
  if (output !== 'text' && output !== 'json') {
    return { stdout: '', stderr: `proxy-injector ${command}: --output ${JSON.stringify(output)}: expected text or json\n`, code: 2 };
  }
  return {
    text: (name) => (typeof opts[name] === 'string' && opts[name] !== '' ? (opts[name] as string) : undefined),
    flag: (name) => opts[name] === true,
    output,
  };
}

