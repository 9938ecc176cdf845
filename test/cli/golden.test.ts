/**
 * Golden tests of `inject` and `uninject`: each case runs the command in-process on inputs under
 * test/fixtures/cli/in and compares stdout, stderr and the exit code with test/fixtures/cli/out/<case>.*.
 * Regenerate with UPDATE_GOLDENS=1, then read the diff: every golden was reviewed for what `shows` says it shows.
 * Structural assertions on the same outputs (placements, labels, annotations) are in inject.test.ts.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { runInject, type CliResult } from '../../src/cli/inject.js';
import { runUninject } from '../../src/cli/uninject.js';

const FX = 'test/fixtures/cli';
const IN = `${FX}/in`;
const OUT = `${FX}/out`;
const ANCHORS = ['--trust-anchors', `${FX}/trust-anchors.pem`];
const UPDATE = process.env['UPDATE_GOLDENS'] === '1';

interface Case {
  name: string;
  /** What the golden demonstrates; what was checked when it was reviewed. */
  shows: string;
  command?: 'inject' | 'uninject';
  args: string[];
  stdin?: string;
  code: number;
  /** Extension of the stdout golden. */
  out?: 'yaml' | 'json';
}

const read = (path: string): string => readFileSync(path, 'utf8');

const CASES: Case[] = [
  {
    name: 'annotate-all-kinds',
    shows:
      'without --manual: linkerd.io/inject: enabled on the pod template of each of the 8 workload kinds (CronJob: at ' +
      'spec.jobTemplate.spec.template, whose metadata is created) and on the Namespace; Service and ConfigMap unchanged; ' +
      'everything else byte for byte as in the input (comment, non-indented lists, quoted "on")',
    args: ['inject', `${IN}/all-kinds.yaml`],
    code: 0,
  },
  {
    name: 'manual-all-kinds',
    shows:
      'with --manual: every workload gets linkerd-init appended to its init containers (Job: after wait-for-db), the proxy ' +
      'first in containers with the linkerd-await hook, the three volumes (StatefulSet: after its own "data"), created-by ' +
      '"linkerd/cli edge-26.8.3", proxy-version and the trust-root hash of the fixture anchors; labels control-plane-ns, ' +
      'linkerd.io/proxy-<kind> (proxy-cronjob for the CronJob, none for the bare Pod) and workload-ns ("" for the Pod, ' +
      'which has no namespace); no default opaque-ports annotation although db exposes 5432; no "resources: null"',
    args: ['inject', '--manual', ...ANCHORS, `${IN}/all-kinds.yaml`],
    code: 0,
  },
  {
    name: 'manual-flags',
    shows:
      'each flag given becomes its config.linkerd.io annotation on the template (proxy-version, admin-port, cpu/memory, ' +
      'skip-inbound-ports joined from two occurrences, opaque-ports, log level, debug sidecar, default policy, access ' +
      'log) and takes effect: resources on proxy and linkerd-init, CORES_MIN 1 / CORES_MAX 2, admin 9991 in probes, ' +
      'await hook and inbound-ports-to-ignore, image tag stable-2.14.10, linkerd-debug container, env DEFAULT_POLICY ' +
      'deny and ACCESS_LOG json, opaque 3306; --inbound-port 4143 equals the configuration, so it writes nothing',
    args: [
      'inject', '--manual', ...ANCHORS,
      '--proxy-version', 'stable-2.14.10', '--admin-port', '9991', '--inbound-port', '4143',
      '--proxy-cpu-request', '100m', '--proxy-cpu-limit', '1500m', '--proxy-memory-request', '20Mi', '--proxy-memory-limit', '250Mi',
      '--skip-inbound-ports', '25', '--skip-inbound-ports', '26,27', '--opaque-ports', '3306',
      '--proxy-log-level', 'debug', '--enable-debug-sidecar', '--default-inbound-policy', 'deny', '--access-log', 'json',
      `${IN}/deployment.yaml`,
    ],
    code: 0,
  },
  {
    name: 'manual-native-sidecar',
    shows:
      '--native-sidecar: annotation proxy-enable-native-sidecar "true"; linkerd-init at initContainers[0], the proxy at [1] ' +
      'with restartPolicy Always and a startupProbe and no lifecycle hook, the user init container "migrate" after them; ' +
      'containers unchanged',
    args: ['inject', '--manual', ...ANCHORS, '--native-sidecar', `${IN}/deployment.yaml`],
    code: 0,
  },
  {
    name: 'manual-no-await',
    shows: '--await=false: annotation proxy-await "disabled"; the proxy goes last in containers, without a postStart hook',
    args: ['inject', '--manual', ...ANCHORS, '--await=false', `${IN}/deployment.yaml`],
    code: 0,
  },
  {
    name: 'annotate-ingress',
    shows: '--ingress without --manual: linkerd.io/inject: ingress (not enabled) on the template and on nothing else',
    args: ['inject', '--ingress', `${IN}/deployment.yaml`],
    code: 0,
  },
  {
    name: 'manual-ingress',
    shows: '--ingress --manual: linkerd.io/inject: ingress kept on the template, env LINKERD2_PROXY_INGRESS_MODE "true"',
    args: ['inject', '--manual', '--ingress', ...ANCHORS, `${IN}/deployment.yaml`],
    code: 0,
  },
  {
    name: 'manual-values',
    shows:
      '--values: version stable-2.18.0 in images and created-by, linkerd-network-validator (cniEnabled) at initContainers[0] ' +
      'and the native proxy at [1] (nativeSidecar), nft args absent (validator has none), memory 20Mi/250Mi on proxy and ' +
      'validator, LINKERD2_PROXY_LOG debug, trust anchors from identityTrustAnchorsPEM (no demo warning); ' +
      '--proxy-log-level debug equals the values, so no annotation; --linkerd-namespace mesh in labels and addresses',
    args: ['inject', '--manual', '--values', `${IN}/values.yaml`, '--proxy-log-level', 'debug', '-L', 'mesh', `${IN}/deployment.yaml`],
    code: 0,
  },
  {
    name: 'directory',
    shows:
      'a directory is walked depth-first in lexical order: a/z.yaml, a.yaml, b.yaml, c.json (notes.txt ignored); ' +
      'documents joined with one --- each; the JSON namespace printed as block YAML',
    args: ['inject', `${IN}/dir`],
    code: 0,
  },
  {
    name: 'stdin',
    shows: '"-" reads stdin; mixed with a file, in argument order',
    args: ['inject', '-', `${IN}/dir/a.yaml`],
    stdin: 'apiVersion: v1\nkind: Namespace\nmetadata:\n  name: from-stdin\n',
    code: 0,
  },
  {
    name: 'json-to-yaml',
    shows: 'a JSON Pod is printed as block YAML by default; a bare Pod gets no owner label',
    args: ['inject', '--manual', ...ANCHORS, `${IN}/pod.json`],
    code: 0,
  },
  {
    name: 'json-output',
    shows: '-o json prints the one object as JSON, key order as read, the proxy first',
    args: ['inject', '--manual', ...ANCHORS, '-o', 'json', `${IN}/pod.json`],
    code: 0,
    out: 'json',
  },
  {
    name: 'json-output-several',
    shows: '-o json with several objects: one v1 List holding them, in input order',
    args: ['inject', '-o', 'json', `${IN}/dir`],
    code: 0,
    out: 'json',
  },
  {
    name: 'list',
    shows: 'a List: each Deployment item injected at items[i].spec.template, the Service item untouched, the List kept',
    args: ['inject', '--manual', ...ANCHORS, `${IN}/list.json`],
    code: 0,
  },
  {
    name: 'comments',
    shows:
      'comments (head, inline, before a key, after a list), key order (template metadata after spec), flow maps and ' +
      'lists, quotes and non-indented lists survive; the template\'s empty flow annotations map becomes a block map; ' +
      'the Service document is byte for byte the input',
    args: ['inject', '--manual', ...ANCHORS, `${IN}/commented.yaml`],
    code: 0,
  },
  {
    name: 'invalid-yaml',
    shows: 'a syntax error names FILE:LINE, exit 1, nothing on stdout (the valid file given first is not printed)',
    args: ['inject', `${IN}/dir/a.yaml`, `${IN}/invalid.yaml`],
    code: 1,
  },
  {
    name: 'host-network',
    shows:
      'hostNetwork and an Istio sidecar are hard errors with Linkerd\'s texts ("hostNetwork is enabled", "pod has a sidecar ' +
      'injected already"), each prefixed with FILE:LINE and the document index; exit 1 and nothing on stdout, not even ' +
      'the Deployment that could be injected',
    args: ['inject', '--manual', ...ANCHORS, `${IN}/host-network.yaml`],
    code: 1,
  },
  {
    name: 'verbose',
    shows:
      '--verbose: every check with √, the UDP warning (‼, not an error), the ignored proxy-uid annotation from the ' +
      'engine\'s warnings; the workload annotated disabled is skipped with Linkerd\'s text and written unchanged',
    args: ['inject', '--manual', '--verbose', ...ANCHORS, `${IN}/special.yaml`],
    code: 0,
  },
  {
    name: 'demo-anchors',
    shows:
      'examples/emojivoto.yaml out of the box: the demo root is used with a ‼ warning; Namespace annotated, the three ' +
      'Deployments injected, ServiceAccounts and Services unchanged, the example\'s comments kept',
    args: ['inject', '--manual', 'examples/emojivoto.yaml'],
    code: 0,
  },
  {
    name: 'uninject',
    shows: 'uninject of the manual-all-kinds golden gives back all-kinds.yaml byte for byte',
    command: 'uninject',
    args: ['uninject', '--verbose', `${OUT}/manual-all-kinds.stdout.yaml`],
    code: 0,
  },
];

async function run(c: Case): Promise<CliResult> {
  const [command, ...args] = c.args;
  const io = { cwd: process.cwd(), ...(c.stdin !== undefined && { stdin: c.stdin }) };
  return command === 'uninject' ? runUninject(args, io) : runInject(args, io);
}

function golden(path: string, actual: string): void {
  if (UPDATE || !existsSync(path)) {
    mkdirSync(OUT, { recursive: true });
    writeFileSync(path, actual);
    if (!UPDATE) throw new Error(`${path} did not exist and was written: review it, then run again`);
    return;
  }
  expect(actual).toBe(read(path));
}

describe('golden outputs', () => {
  it.each(CASES.map((c) => [c.name, c] as const))('%s', async (_, c) => {
    const result = await run(c);
    golden(`${OUT}/${c.name}.stdout.${c.out ?? 'yaml'}`, result.stdout);
    golden(`${OUT}/${c.name}.stderr.txt`, result.stderr);
    expect(result.code).toBe(c.code);
  });

  it('uninject gives back the input of manual-all-kinds exactly', () => {
    expect(read(`${OUT}/uninject.stdout.yaml`)).toBe(read(`${IN}/all-kinds.yaml`));
  });

  it('injecting the injected output again changes nothing (manual and annotation-only)', async () => {
    for (const [name, args] of [
      ['manual-all-kinds', ['--manual', ...ANCHORS]],
      ['annotate-all-kinds', []],
      ['comments', ['--manual', ...ANCHORS]],
      ['manual-flags', ['--manual', ...ANCHORS]],
    ] as const) {
      const again = await runInject([...args, `${OUT}/${name}.stdout.yaml`]);
      expect(again.code, name).toBe(0);
      expect(again.stdout, name).toBe(read(`${OUT}/${name}.stdout.yaml`));
    }
  });

  it('uninjecting a reviewed annotate golden gives back its input', async () => {
    const back = await runUninject([`${OUT}/annotate-all-kinds.stdout.yaml`]);
    expect(back.stdout).toBe(read(`${IN}/all-kinds.yaml`));
  });
});
