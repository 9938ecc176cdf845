/**
 * `proxy-injector version`: this injector's version and the Linkerd release it follows; with --cluster, also the
 * release the cluster's linkerd-config names, and whether the two differ.
 */
import { apiErrorMessage, connectToCluster, readLinkerdConfig } from '../cluster/index.js';
import { DEFAULT_LINKERD_VERSION, linkerdVersionMismatch } from '../engine/index.js';
import { clusterCommandArgs, type CliResult } from './command-io.js';
import { packageVersion } from './package-info.js';

export const VERSION_HELP = `Usage: proxy-injector version [--cluster [--kubeconfig FILE] [-L LINKERD_NAMESPACE]] [-o text|json]

Print the version, and the Linkerd version whose injector it follows. With --cluster, also the Linkerd
version the cluster's ConfigMap linkerd-config names (the values the webhook injects with), and what to do
when it is not the one followed.

Options:
  --cluster             also read the cluster's linkerd-config (get on ConfigMaps in Linkerd's namespace)
  --kubeconfig FILE     cluster credentials (default: $KUBECONFIG, ~/.kube/config, or the in-cluster
                        service account)
  -L, --linkerd-namespace NS  namespace of the Linkerd control plane (default linkerd)
  -o, --output FORMAT   text (default) or json
  -h, --help            this help

Exit status: 0 done (with --cluster: the cluster runs the Linkerd version followed); 1 with --cluster, the
cluster runs another Linkerd version or its configuration cannot be read; 2 usage error.
`;

interface VersionReport {
  version: string;
  follows: string;
  cluster?: { linkerdVersion: string; source: string; followed: boolean };
}

/** Runs `version`. */
export async function runVersion(argv: readonly string[], env: NodeJS.ProcessEnv = process.env): Promise<CliResult> {
  const args = clusterCommandArgs('version', VERSION_HELP, argv, { cluster: { type: 'boolean' }, 'linkerd-namespace': { type: 'string', short: 'L' } });
  if (!('output' in args)) return args;
  const { text, output } = args;
  const report: VersionReport = { version: packageVersion(), follows: DEFAULT_LINKERD_VERSION };
  let warning: string | undefined;
  if (args.flag('cluster')) {
    try {
      const kubeconfig = text('kubeconfig');
      const cluster = await connectToCluster({ env, ...(kubeconfig && { kubeconfig }) });
      if (!cluster) return { stdout: '', stderr: 'proxy-injector version: no cluster: give --kubeconfig FILE, or set KUBECONFIG\n', code: 1 };
      try {
        const { config, source } = await readLinkerdConfig(cluster.client, text('linkerd-namespace') ?? 'linkerd');
        warning = linkerdVersionMismatch(config.values);
        report.cluster = { linkerdVersion: config.values.linkerdVersion, source, followed: warning === undefined };
      } finally {
        cluster.client.close();
      }
    } catch (err) {
      return { stdout: '', stderr: `proxy-injector version: ${apiErrorMessage(err)}\n`, code: 1 };
    }
  } else if (text('kubeconfig') !== undefined || text('linkerd-namespace') !== undefined) {
    return { stdout: '', stderr: `proxy-injector version: --kubeconfig and -L read the cluster only with --cluster\n${VERSION_HELP}`, code: 2 };
  }
  const code = warning === undefined ? 0 : 1;
  const stderr = warning === undefined ? '' : `proxy-injector version: ${warning}\n`;
  if (output === 'json') return { stdout: `${JSON.stringify(report, null, 2)}\n`, stderr, code };
  let stdout = `proxy-injector ${report.version} (follows Linkerd ${report.follows})\n`;
  if (report.cluster) stdout += `cluster: Linkerd ${report.cluster.linkerdVersion || '(none)'} (${report.cluster.source})\n`;
  return { stdout, stderr, code };
}
