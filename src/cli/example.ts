/** `proxy-injector example`: the engine's decision and patch for one pod manifest, on embedded or given configuration. */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  defaultValues,
  inject,
  loadValues,
  withTrustAnchors,
  type InjectionResult,
} from '../engine/index.js';
import { parseCommandArgs } from './command-io.js';
import { UsageError } from './inject-flags.js';
import { parseManifests } from './manifests.js';
import { packageRoot } from './package-info.js';

export const EXAMPLE_HELP = `Usage: proxy-injector example [POD_FILE] [options]

Runs the injection engine on one Pod manifest (YAML or JSON; default: examples/pod.yaml) exactly as
the admission webhook would, and prints the result record (decision, reasons, JSON patch) as JSON.

Options:
  --values FILE                 Linkerd values YAML (e.g. the 'values' key of ConfigMap linkerd-config);
                                default: embedded defaults
  --trust-anchors FILE          identity trust anchors PEM (default: examples/trust-anchors.pem, a demo root)
  --namespace-annotation K=V    an annotation of the pod's namespace (repeatable)
  --linkerd-namespace NS        the control-plane namespace (default: linkerd)
  --cni                         behave as if the Linkerd CNI plugin is installed (cniEnabled: true)
  -h, --help                    this help
`;

/** Reads a single-document YAML or JSON manifest, naming the file and line of a syntax error. */
export function readManifest(path: string): unknown {
  const objects = parseManifests(readFileSync(path, 'utf8'), path).map((m) => m.doc.toJS() as unknown);
  if (objects.length !== 1) throw new Error(`${path}: expected exactly one object, found ${objects.length}`);
  return objects[0];
}

function parseAnnotation(text: string): [string, string] {
  const eq = text.indexOf('=');
  if (eq <= 0) throw new UsageError(`--namespace-annotation ${JSON.stringify(text)}: expected KEY=VALUE`);
  return [text.slice(0, eq), text.slice(eq + 1)];
}

/** One human line on what was decided, for the terminal. */
export function summarize(result: InjectionResult): string {
  const what = `${result.kind}/${result.name || '(unnamed)'}${result.namespace ? ` in ${result.namespace}` : ''}`;
  if (result.outcome !== 'injected') {
    const why = result.reasons.map((r) => r.text).join(', ');
    return `${result.outcome} ${what}: ${why}${result.outcome === 'annotated' ? ' (opaque-ports annotation added)' : ''}`;
  }
  const mode = result.proxy;
  const hook = mode?.nativeSidecar ? 'native sidecar' : mode?.await ? 'linkerd-await postStart hook' : 'no await hook';
  return `injected ${what}: ${result.added.initContainers.concat(result.added.containers).join(', ')}; proxy at ${mode?.placement} (${hook}); ${result.patch.length} patch operations`;
}

export async function runExample(args: string[]): Promise<number> {
  const { values: opts, positionals } = parseCommandArgs({
    args,
    allowPositionals: true,
    options: {
      values: { type: 'string' },
      'trust-anchors': { type: 'string' },
      'namespace-annotation': { type: 'string', multiple: true },
      'linkerd-namespace': { type: 'string', default: 'linkerd' },
      cni: { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  if (opts.help) {
    process.stdout.write(EXAMPLE_HELP);
    return 0;
  }
  if (positionals.length > 1) throw new UsageError('example takes at most one pod file');
  const podFile = positionals[0] ?? join(packageRoot, 'examples', 'pod.yaml');
  const anchorsFile = opts['trust-anchors'] ?? join(packageRoot, 'examples', 'trust-anchors.pem');
  let values = opts.values ? loadValues(readFileSync(opts.values, 'utf8')) : defaultValues();
  values = withTrustAnchors(values, readFileSync(anchorsFile, 'utf8'));
  if (opts.cni) values.cniEnabled = true;
  const namespaceAnnotations = Object.fromEntries((opts['namespace-annotation'] ?? []).map(parseAnnotation));

  const result = inject({
    object: readManifest(podFile),
    kind: 'Pod',
    namespaceAnnotations,
    config: { values, controlPlaneNamespace: opts['linkerd-namespace'] ?? 'linkerd' },
  });
  process.stderr.write(`${summarize(result)}\n`);
  for (const warning of result.warnings) process.stderr.write(`warning: ${warning}\n`);
  process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
  return 0;
}
