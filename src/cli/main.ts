#!/usr/bin/env node
/** The `proxy-injector` command line: dispatches to subcommands. */
import { packageVersion } from './package-info.js';

const USAGE = `Usage: proxy-injector <command> [options]

Commands:
  serve                Run the admission webhook (HTTPS) and its admin listener.
  explain FILE|DIR|- ...
                       Say whether the webhook will inject each pod or workload and why, how the
                       pod will start (iptables rules, proxy, await hook, app), and the start-up
                       risks with their fixes.
  check cni            Check a node's CNI configuration for the Linkerd CNI plugin.
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
    // Each command loads only its own modules: the server starts without the manifest tooling, and the reverse.
    case 'serve':
      return (await import('./serve.js')).runServe(rest);
    case 'explain':
      return (await import('./explain.js')).runExplainCommand(rest);
    case 'check':
      return (await import('./check.js')).runCheckCommand(rest);
    case 'inject':
      return (await import('./inject.js')).runInjectCommand(rest);
    case 'uninject':
      return (await import('./uninject.js')).runUninjectCommand(rest);
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
