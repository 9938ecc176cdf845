/** `proxy-injector uninject`: takes Linkerd's proxy, init container, volumes and metadata out of manifests. */
import { defaultValues, isEngineError, isObject, objectName, uninject, type Removed } from '../engine/index.js';
import { UsageError } from './command-io.js';
import { notAnObject, valuesFile } from './inject.js';
import { inputFailure, outputFormat, outputResult, parseCommandArgs, runOnProcess, usageFailure, type CliIo, type CliResult } from './command-io.js';
import { InputError, transformInputs, type ObjectChange, type OutputFormat } from '../manifests/index.js';
import { inputReader } from './remote-inputs.js';
import { OK, renderReport, type Check, type ObjectReport } from './report.js';

export const UNINJECT_HELP = `Usage: proxy-injector uninject [flags] FILE|DIR|URL|- ...

Removes what Linkerd's injection adds, from manifests read from files, directories (walked recursively
in lexical order, *.yaml, *.yml and *.json) or stdin ("-"), as 'linkerd uninject' does: the
linkerd-proxy, linkerd-init, linkerd-network-validator and linkerd-debug containers (app or init), the
volumes the injector adds, and every annotation and label whose key starts with linkerd.io, except
'linkerd.io/inject: disabled', on workloads, their pod templates, Namespaces and Services.
config.linkerd.io/* annotations stay: they are the workload's proxy configuration. Annotation and label
maps, init-container and volume lists and pod-template metadata left empty are removed, so uninjecting
what 'inject' produced gives back the manifest that was injected. Metadata of objects labelled
linkerd.io/control-plane-component is left alone. Comments, key order and layout are kept.

Options:
  -o, --output yaml|json   output format (default yaml); with json, one object is printed as it is,
                           several as the items of a v1 List
      --values FILE        Linkerd values YAML, for a renamed linkerd-init xtables volume
                           (proxyInit.xtMountPath.name)
      --verbose            list what was removed from each object
  -h, --help               this help
`;

function describe(removed: Removed): string[] {
  const lines: string[] = [];
  const list = (what: string, names: string[]): void => {
    if (names.length > 0) lines.push(`removed ${what}: ${names.join(', ')}`);
  };
  list('init containers', removed.initContainers);
  list('containers', removed.containers);
  list('volumes', removed.volumes);
  list('annotations', removed.annotations);
  list('labels', removed.labels);
  return lines;
}

function uninjectObject(object: unknown, xtablesVolume: string): ObjectChange<ObjectReport> {
  if (!isObject(object)) return notAnObject(object);
  const kind = typeof object['kind'] === 'string' ? object['kind'].toLowerCase() : '';
  const name = objectName(object);
  const { patch, removed } = uninject(object, { volumes: [xtablesVolume] });
  const checks = describe(removed).map((text): Check => ({ mark: OK, text }));
  return { ops: patch, failed: false, report: { kind, name, status: patch.length > 0 ? 'uninjected' : 'unchanged', checks } };
}

/** Runs `uninject` with the given arguments; the caller prints the result. */
export async function runUninject(argv: readonly string[], io: CliIo = {}): Promise<CliResult> {
  const cwd = io.cwd ?? process.cwd();
  let format: OutputFormat;
  let inputs: string[];
  let values: string | undefined;
  let verbose: boolean;
  try {
    const parsed = parseCommandArgs({
      args: [...argv],
      options: {
        output: { type: 'string', short: 'o' },
        values: { type: 'string' },
        verbose: { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
      },
      allowPositionals: true,
      strict: true,
    });
    if (parsed.values.help) return { stdout: UNINJECT_HELP, stderr: '', code: 0 };
    format = outputFormat(parsed.values.output);
    inputs = parsed.positionals;
    values = parsed.values.values;
    verbose = parsed.values.verbose === true;
    if (inputs.length === 0) throw new UsageError('no input: give files, directories, or - for stdin');
  } catch (err) {
    return usageFailure('uninject', (err as Error).message, UNINJECT_HELP);
  }
  try {
    const configured = values ? valuesFile(cwd, values) : defaultValues();
    const xtablesVolume = configured.proxyInit.xtMountPath.name;
    const outcome = await transformInputs(inputs, inputReader(io, cwd), format, (object) =>
      uninjectObject(object, xtablesVolume),
    );
    const stderr = renderReport('uninject', outcome.warnings, outcome.reports, verbose);
    if (outcome.failed) return { stdout: '', stderr, code: 1 };
    return outputResult(outcome.output, stderr);
  } catch (err) {
    if (err instanceof InputError || isEngineError(err)) return inputFailure('uninject', err);
    throw err;
  }
}

/** `proxy-injector uninject` on the process's stdin, stdout and stderr. */
export async function runUninjectCommand(args: string[]): Promise<number> {
  return runOnProcess(runUninject, args);
}
