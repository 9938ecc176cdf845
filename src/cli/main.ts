#!/usr/bin/env node
/** The `proxy-injector` command line: dispatches to subcommands. */
import { runExample } from './example.js';
import { runInjectCommand } from './inject.js';
import { runUninjectCommand } from './uninject.js';
import { runServe } from './serve.js';
import { packageVersion } from './package-info.js';

const USAGE = `Usage: proxy-injector <command> [options]

Commands:
  serve                Run the admission webhook (HTTPS) and its admin listener.
  example [POD_FILE]   Run the injection engine on a pod manifest (default: the bundled
                       examples/pod.yaml) with the embedded Linkerd defaults, and print the
                       decision and JSON patch the webhook would return.
  inject [--manual] FILE|DIR|- ...
                       Add Linkerd to Kubernetes manifests: the linkerd.io/inject annotation, or
                       with --manual the proxy itself, as 'linkerd inject' does.
  uninject FILE|DIR|- ...
                       Take Linkerd's proxy, init container, volumes and metadata out of manifests.
  version              Print the version.
  help                 Print this help.

Run 'proxy-injector <command> --help' for a command's options.
`;

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
      process.stdout.write(`proxy-injector ${packageVersion()}\n`);
      return 0;
    case undefined:
    case 'help':
    case '--help':
    case '-h':
      process.stdout.write(USAGE);
      return 0;
    default:
      process.stderr.write(`proxy-injector: unknown command ${JSON.stringify(command)}\n\n${USAGE}`);
      return 2;
  }
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    process.stderr.write(`proxy-injector: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exitCode = 1;
  },
);
