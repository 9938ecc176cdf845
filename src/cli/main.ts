#!/usr/bin/env node
/** The `proxy-injector` command line: dispatches to subcommands. */
import { usageText } from './command-io.js';
import { UsageError, type CliResult } from './command-io.js';

const USAGE = `Usage: proxy-injector <command> [options]

Commands:
  serve                Run the admission webhook (HTTPS) and its admin listener.
  explain FILE|DIR|URL|- ...
                       Say whether the webhook will inject each pod or workload and why, how the
                       pod will start (iptables rules, proxy, await hook, app), and the start-up
                       risks with their fixes.
  check cni            Check a node's CNI configuration for the Linkerd CNI plugin.
  check pods           Hold running pods against what the injector would make of them now.
  heal [--apply]       Restart, one workload at a time, what check pods finds drifted or unmeshed.
  inject [--manual] FILE|DIR|URL|- ...
                       Add Linkerd to Kubernetes manifests: the linkerd.io/inject annotation, or
                       with --manual the proxy itself, as 'linkerd inject' does.
  uninject FILE|DIR|URL|- ...
                       Take Linkerd's proxy, init container, volumes and metadata out of manifests.
  version [--cluster]  Print the version, and the Linkerd version whose injector it follows; with
                       --cluster, also the one the cluster's linkerd-config names.
  help [COMMAND]       Print this help, or a command's.

Run 'proxy-injector <command> --help' for a command's options.
Exit status: 0 done; 1 failed; 2 usage error.
`;

/** A command that returns its whole answer, written out as it is. */
function cliCommand(run: (args: string[]) => Promise<CliResult>): (args: string[]) => Promise<number> {
  return async (args) => {
    const result = await run(args);
    process.stdout.write(result.stdout);
    process.stderr.write(result.stderr);
    return result.code;
  };
}

// Each command loads only its own modules: the server starts without the manifest tooling, and the reverse.
const COMMANDS: Record<string, () => Promise<(args: string[]) => Promise<number>>> = {
  serve: async () => (await import('./serve.js')).runServe,
  explain: async () => (await import('./explain.js')).runExplainCommand,
  check: async () => (await import('./check.js')).runCheckCommand,
  inject: async () => (await import('./inject.js')).runInjectCommand,
  uninject: async () => (await import('./uninject.js')).runUninjectCommand,
  version: async () => cliCommand((await import('./version.js')).runVersion),
  '--version': async () => cliCommand((await import('./version.js')).runVersion),
  heal: async () => cliCommand((await import('./heal.js')).runHealCommand),
};

/** Usage lines for a command's usage errors; the commands print their whole help with --help. */
const HELP: Record<string, () => Promise<string>> = {
  version: async () => (await import('./version.js')).VERSION_HELP,
  '--version': async () => (await import('./version.js')).VERSION_HELP,
  serve: async () => (await import('./serve.js')).SERVE_HELP,
  inject: async () => (await import('./inject-flags.js')).INJECT_HELP,
  uninject: async () => (await import('./uninject.js')).UNINJECT_HELP,
};

/** One line for a file-system error, e.g. "examples/x.yaml: no such file" rather than node's "ENOENT: ...". */
function fileProblem(err: unknown): string | undefined {
  const { code, path } = err as NodeJS.ErrnoException;
  if (typeof path !== 'string') return undefined;
  const what: Record<string, string> = { ENOENT: 'no such file', EACCES: 'permission denied', EISDIR: 'is a directory', ENOTDIR: 'not a directory' };
  return code !== undefined && code in what ? `${path}: ${what[code]}` : undefined;
}

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  const run = command !== undefined ? COMMANDS[command] : undefined;
  if (run) return (await run())(rest);
  switch (command) {
    case undefined:
    case 'help':
    case '--help':
    case '-h': {
      const topic = rest[0];
      if (command === 'help' && topic !== undefined) {
        const commandRun = COMMANDS[topic];
        if (commandRun === undefined) {
          process.stderr.write(`proxy-injector help: unknown command ${JSON.stringify(topic)}\n\n${USAGE}`);
          return 2;
        }
        // Each command prints its own help for --help.
        return (await commandRun())([...rest.slice(1), '--help']);
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
  async (err: unknown) => {
    const help = HELP[command];
    if (err instanceof UsageError) {
      process.stderr.write(usageText(command, err.message, help ? await help() : undefined));
      process.exitCode = 2;
      return;
    }
    process.stderr.write(`proxy-injector${command in COMMANDS ? ` ${command}` : ''}: ${fileProblem(err) ?? (err instanceof Error ? err.message : String(err))}\n`);
    process.exitCode = 1;
  },
);
