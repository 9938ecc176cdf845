/**
 * The commands the README and the chart's NOTES give a user, read from where the user reads them and run by a shell
 * with this cluster's kubectl and helm first on the PATH: what the node suite proves of them is what a user runs.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { helmBinary } from '../../e2e/support/chart.js';
import { commandsOf, fences } from '../../docs/markdown.js';
import type { Cluster } from './cluster.js';
import { log, run } from './host.js';
import { helmOn } from './helm.js';

const README = resolve(import.meta.dirname, '../../../README.md');

/** The one command of the README's shell blocks that `matches`; throws when there is not exactly one. */
export function readmeCommand(matches: RegExp): string {
  const all = fences(readFileSync(README, 'utf8'))
    .filter((f) => f.lang === 'sh')
    .flatMap((f) => commandsOf(f.body))
    .filter((c) => matches.test(c));
  if (all.length !== 1) throw new Error(`${all.length} README commands match ${matches}: ${all.join(' | ')}`);
  return all[0] ?? '';
}

/** The kubectl and helm commands of the NOTES helm prints for the release, in order. */
export async function notesCommands(cluster: Cluster, release: string, namespace: string): Promise<string[]> {
  return commandsOf(await helmOn(cluster, ['get', 'notes', release, '--namespace', namespace])).filter((line) => /^(kubectl|helm|[A-Z_]+=)/.test(line));
}

/**
 * Runs `commands` in one bash, stopping at the first that fails, with the cluster's kubectl and the suite's helm first
 * on the PATH and KUBECONFIG set (helm's own directories are temporary); returns stdout.
 */
export async function shell(cluster: Cluster, commands: string[]): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), 'node-suite-shell-'));
  try {
    const script = ['set -euo pipefail', ...commands].join('\n');
    log(`shell: ${commands.join(' ; ').slice(0, 600)}`);
    return await run('bash', ['-c', script], {
      env: {
        ...process.env,
        PATH: `${cluster.binaries.node}:${dirname(helmBinary())}:${process.env['PATH'] ?? ''}`,
        KUBECONFIG: cluster.kubeconfigPath,
        HELM_CACHE_HOME: join(dir, 'cache'),
        HELM_CONFIG_HOME: join(dir, 'config'),
        HELM_DATA_HOME: join(dir, 'data'),
      },
    });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
