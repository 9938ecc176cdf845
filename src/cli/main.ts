#!/usr/bin/env node
/** The `proxy-injector` command line: dispatches to subcommands. */
import { EXAMPLE_HELP, runExample } from './example.js';
import { runInjectCommand } from './inject.js';
import { INJECT_HELP, UsageError } from './inject-flags.js';
import { UNINJECT_HELP, runUninjectCommand } from './uninject.js';
import { SERVE_HELP, runServe } from './serve.js';
import { usageText } from './command-io.js';
import { DEFAULT_LINKERD_VERSION } from '../engine/values.js';
import { packageVersion } from './package-info.js';

const USAGE = `Usage: proxy-injector <command> [options]

Commands:
  serve                Run the admission webhook (HTTPS) and its admin listener.
  example [POD_FILE]   Run the injection engine on a pod manifest (default: the bundled
                       examples/pod.yaml) with the embedded Linkerd defaults, and print the
                       decision and JSON patch the webhook would return.
  inject [--manual] FILE|DIR|URL|- ...
                       Add Linkerd to Kubernetes manifests: the linkerd.io/inject annotation, or
                       with --manual the proxy itself, as 'linkerd inject' does.
  uninject FILE|DIR|URL|- ...
                       Take Linkerd's proxy, init container, volumes and metadata out of manifests.
  version              Print the version, and the Linkerd version whose injector it follows.
  help [COMMAND]       Print this help, or a command's.

Run 'proxy-injector <command> --help' for a command's options.
Exit status: 0 done; 1 failed; 2 usage error.
`;

const HELP: Record<string, string> = { serve: SERVE_HELP, example: EXAMPLE_HELP, inject: INJECT_HELP, uninject: UNINJECT_HELP };

/** One line for a file-system error, e.g. "examples/x.yaml: no such file" rather than node's "ENOENT: ...". */
function fileProblem(err: unknown): string | undefined {
  const { code, path } = err as NodeJS.ErrnoException;
  if (typeof path !== 'string') return undefined;
  const what: Record<string, string> = { ENOENT: 'no such file', EACCES: 'permission denied', EISDIR: 'is a directory', ENOTDIR: 'not a directory' };
  return code !== undefined && code in what ? `${path}: ${what[code]}` : undefined;
}

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  switch (command) {
    case 'serve':
      return runServe(rest);
    case 'example':
      return runExample(rest);
    case 'inject':
      return runInjectCommand(rest);
    case 'uninject':
      return runUninjectCommand(rest);
    case 'version':
    case '--version':
      process.stdout.write(`proxy-injector ${packageVersion()} (follows Linkerd ${DEFAULT_LINKERD_VERSION})\n`);
      return 0;
    case undefined:
    case 'help':
    case '--help':
    case '-h': {
      const topic = rest[0];
      if (command === 'help' && topic !== undefined) {
        const help = HELP[topic];
        if (help === undefined) {
          process.stderr.write(`proxy-injector help: unknown command ${JSON.stringify(topic)}\n\n${USAGE}`);
          return 2;
        }
        process.stdout.write(help);
        return 0;
      }
      process.stdout.write(USAGE);
      return 0;
    }
    default:
      process.stderr.write(`proxy-injector: unknown command ${JSON.stringify(command)}\n\n${USAGE}`);
      return 2;
  }
}

// A reader that stops early (`inject ... | head -1`) closes the pipe: stop writing quietly, as Unix tools do,
// instead of an unhandled EPIPE stack.
for (const stream of [process.stdout, process.stderr]) {
  stream.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code !== 'EPIPE') throw err;
    stream.destroy();
  });
}

const command = process.argv[2] ?? '';
main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    if (err instanceof UsageError) {
      process.stderr.write(usageText(command, err.message, HELP[command]));
      process.exitCode = 2;
      return;
    }
    process.stderr.write(`proxy-injector${command in HELP ? ` ${command}` : ''}: ${fileProblem(err) ?? (err instanceof Error ? err.message : String(err))}\n`);
    process.exitCode = 1;
  },
);
