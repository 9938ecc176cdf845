/** `proxy-injector explain` in-process: decisions, the start-up sequence, iptables rules, risks, and Linkerd's fixtures. */
import { generateKeyPairSync } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { runExplain, type Explanation } from '../../src/cli/explain.js';
import { EMBEDDED_DEFAULTS_NOTE } from '../../src/cli/inject.js';
import { iptablesPlan } from '../../src/engine/index.js';

const ANCHORS = ['--trust-anchors', 'test/fixtures/cli/trust-anchors.pem'];

const JOB = `apiVersion: v1
kind: Namespace
metadata:
  name: batch
  annotations:
    linkerd.io/inject: enabled
---
apiVersion: batch/v1
kind: Job
metadata:
  name: migrate
  namespace: batch
spec:
  template:
    spec:
      restartPolicy: Never
      initContainers:
        - name: fetch
          image: curl
      containers:
        - name: migrate
          image: migrate:1
          ports:
            - containerPort: 8080
`;

const POD = `apiVersion: v1
kind: Pod
metadata:
  name: web
  namespace: shop
  annotations:
    linkerd.io/inject: enabled
spec:
  containers:
    - name: web
      image: web:1
      ports:
        - containerPort: 8080
    - name: cache
      image: cache:1
`;

async function explain(stdin: string, ...args: string[]): Promise<Explanation[]> {
  const result = await runExplain([...ANCHORS, '-o', 'json', ...args, '-'], { stdin });
  expect(result.code, result.stderr).toBe(0);
  return JSON.parse(result.stdout) as Explanation[];
}

const steps = (e: Explanation | undefined): string[] => (e?.startup ?? []).map((s) => `${s.phase} ${s.container}`);

describe('explain', () => {
  it('a classic pod: linkerd-init with its nat rules, the proxy with its await hook, then the app containers in order', async () => {
    const [e] = await explain(POD, '--skip-inbound-ports', '9000');
    expect(e?.decision.outcome).toBe('injected');
    expect(e?.decision.reasons[0]?.text).toBe('linkerd.io/inject: enabled on the pod template');
    expect(steps(e)).toEqual(['init linkerd-init', 'container linkerd-proxy', 'container web', 'container cache']);
    expect(e?.startup[1]?.what).toMatch(/postStart hook \(\/usr\/lib\/linkerd\/linkerd-await --timeout=2m --port=4191\)/);
    expect(e?.startup[2]?.what).toBe('starts once the proxy is ready');
    // The plan is the one computed from the rendered container, and the flag reached linkerd-init's arguments.
    expect(e?.iptables).toEqual(e?.startup[0]?.iptables);
    expect(e?.iptables?.ipv4).toContain(
      '-A PROXY_INIT_REDIRECT -p tcp -m multiport --dports 4190,4191,9000 -m comment --comment "proxy-init/ignore-port-4190,4191,9000" -j RETURN',
    );
    expect(e?.risks).toEqual([]);
  });

  it("says what kubectl reaches without -c when the proxy goes first, and --kubectl-default-container keeps the app there as serve's flag does", async () => {
    const [plain] = await explain(POD);
    expect(plain?.startup[1]?.what).toMatch(/being first, it is what kubectl logs and exec reach without -c \(serve --kubectl-default-container names/);
    const [kept] = await explain(POD, '--kubectl-default-container');
    expect(kept?.startup[1]?.what).toMatch(/; kubectl logs and exec without -c reach web, which the pod's kubectl\.kubernetes\.io\/default-container names$/);
    // A pod that names its own default keeps it, and the report says which.
    const named = POD.replace('    linkerd.io/inject: enabled\n', '    linkerd.io/inject: enabled\n    kubectl.kubernetes.io/default-container: cache\n');
    expect((await explain(named))[0]?.startup[1]?.what).toMatch(/reach cache, which the pod's/);
    expect((await explain(named, '--kubectl-default-container'))[0]?.startup[1]?.what).toMatch(/reach cache, which the pod's/);
  });

  it('the iptables rules in the report are exactly those of the rendered linkerd-init', async () => {
    const result = await runExplain([...ANCHORS, '-o', 'json', '--manual', '-'], { stdin: POD });
    const [e] = JSON.parse(result.stdout) as Explanation[];
    const { runInject } = await import('../../src/cli/inject.js');
    const injected = await runInject([...ANCHORS, '--manual', '-o', 'json', '-'], { stdin: POD });
    const init = (JSON.parse(injected.stdout) as { spec: { initContainers: Array<Record<string, unknown>> } }).spec.initContainers[0];
    expect(e?.iptables).toEqual(iptablesPlan(init as never));
  });

  it('a Job under the CNI plugin: the validator, an init container without network, a proxy that never exits', async () => {
    const [e] = await explain(JOB, '--cni');
    expect(e).toMatchObject({ kind: 'job', name: 'migrate', namespace: 'batch', decision: { outcome: 'injected', annotationAt: 'namespace' } });
    expect(steps(e)).toEqual(['init fetch', 'init linkerd-network-validator', 'container linkerd-proxy', 'container migrate']);
    expect(e?.startup[0]?.what).toContain('it has no network');
    expect(e?.startup[1]?.what).toMatch(/connects to 1\.1\.1\.1:20001.*Init:CrashLoopBackOff/);
    expect(e?.iptables).toBeUndefined();
    expect(e?.risks.map((r) => r.code)).toEqual(['init_container_network_under_cni', 'proxy_never_exits']);
  });

  it('says where annotations on a workload`s own metadata belong: the injector reads only the pod template`s', async () => {
    const misplaced = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: shop
  annotations:
    linkerd.io/inject: enabled
    config.linkerd.io/proxy-cpu-limit: "1"
    deployment.kubernetes.io/revision: "3"
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata:
      labels: {app: web}
      annotations:
        config.linkerd.io/proxy-log-level: debug
    spec:
      containers: [{name: web, image: nginx}]
`;
    const [skipped] = await explain(misplaced);
    expect(skipped?.decision.outcome).toBe('skipped');
    expect(skipped?.decision.reasons[0]?.fix).toBe(
      "linkerd.io/inject is on the deployment's own metadata, which the injector never reads (it sees only the pods): move it to spec.template.metadata.annotations; or annotate the namespace",
    );
    expect(skipped?.warnings).toEqual([
      "config.linkerd.io/proxy-cpu-limit is on the deployment's own metadata, which the injector never reads (it sees only the pods): move it to spec.template.metadata.annotations",
    ]);
    // Injected through the namespace, the misplaced inject annotation is a warning too; a CronJob's template is deeper.
    const [injected] = await explain(misplaced, '--namespace-annotation', 'linkerd.io/inject=enabled');
    expect(injected?.decision.outcome).toBe('injected');
    expect(injected?.warnings).toHaveLength(2);
    expect(injected?.warnings[1]).toMatch(/^linkerd\.io\/inject is on the deployment's own metadata/);
    const cronJob = `apiVersion: batch/v1
kind: CronJob
metadata:
  name: nightly
  namespace: shop
  annotations:
    config.linkerd.io/proxy-admin-shutdown: enabled
spec:
  schedule: "0 2 * * *"
  jobTemplate:
    spec:
      template:
        metadata:
          annotations:
            linkerd.io/inject: enabled
        spec:
          restartPolicy: Never
          containers: [{name: job, image: job}]
`;
    const [cron] = await explain(cronJob);
    expect(cron?.kind).toBe('cronjob');
    expect(cron?.warnings).toEqual([expect.stringContaining('move it to spec.jobTemplate.spec.template.metadata.annotations')]);
    // A bare pod's own metadata is its template: nothing is misplaced there.
    expect((await explain(POD))[0]?.warnings).toEqual([]);
  });

  it("an init container running as the proxy's uid has network under the CNI plugin, unmeshed, and is no risk", async () => {
    const asProxy = JOB.replace('          image: curl\n', '          image: curl\n          securityContext:\n            runAsUser: 2102\n');
    const [e] = await explain(asProxy, '--cni');
    expect(e?.startup[0]?.what).toContain("it runs as the proxy's uid 2102, so its traffic bypasses the redirect (unmeshed)");
    expect(e?.risks.map((r) => r.code)).toEqual(['proxy_never_exits']);
  });

  it('with a native sidecar the proxy starts right after linkerd-init, before the workload init containers', async () => {
    const [e] = await explain(JOB, '--native-sidecar');
    expect(steps(e)).toEqual(['init linkerd-init', 'sidecar linkerd-proxy', 'init fetch', 'container migrate']);
    expect(e?.startup[2]?.what).toContain('through the proxy, which is running');
    expect(e?.startup[3]?.what).toBe('starts once the proxy sidecar has started');
    expect(e?.risks).toEqual([]);
  });

  it("--kubernetes-version before 1.29 makes a native sidecar a refusal, and a release that is not one is a usage error", async () => {
    const [old] = await explain(JOB, '--native-sidecar', '--kubernetes-version', 'v1.28.9-gke.1000');
    expect(old?.risks.map((r) => r.code)).toEqual(['native_sidecar_unsupported']);
    expect(old?.risks[0]?.text).toContain('Kubernetes 1.28, drops the native sidecar proxy\'s restartPolicy: Always unless its SidecarContainers gate is on');
    const [current] = await explain(JOB, '--native-sidecar', '--kubernetes-version', '1.29');
    expect(current?.risks).toEqual([]);
    const [classic] = await explain(POD, '--kubernetes-version', '1.25');
    expect(classic?.risks).toEqual([]);
    const bad = await runExplain([...ANCHORS, '--kubernetes-version', 'latest', '-'], { stdin: POD });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('--kubernetes-version "latest": expected a release such as 1.28 or v1.28.5');
  });

  it('--await=false puts the proxy last without a hook and reports the risk', async () => {
    const [e] = await explain(POD, '--await=false');
    expect(steps(e)).toEqual(['init linkerd-init', 'container web', 'container cache', 'container linkerd-proxy']);
    expect(e?.startup[1]?.what).toBe('starts');
    expect(e?.risks.map((r) => r.code)).toEqual(['proxy_await_disabled']);
  });

  it('a pod that is not injected gets every reason with its fix, and no start-up', async () => {
    const optOut = POD.replace('linkerd.io/inject: enabled', 'linkerd.io/inject: disabled');
    const [e] = await explain(optOut, '--namespace-annotation', 'linkerd.io/inject=enabled');
    expect(e?.decision.outcome).toBe('skipped');
    expect(e?.decision.reasons).toEqual([
      { code: 'injection_disable_annotation_present', text: 'pod has the annotation "linkerd.io/inject:disabled"', fix: 'remove linkerd.io/inject: disabled from the pod template' },
    ]);
    expect(e?.startup).toEqual([]);
  });

  it('a static pod`s mirror is not injected, and the fix says how such a workload can be meshed', async () => {
    const mirror = POD.replace('linkerd.io/inject: enabled', 'linkerd.io/inject: enabled\n    kubernetes.io/config.mirror: 5a1e2f3c');
    const [e] = await explain(mirror);
    expect(e?.decision.outcome).toBe('skipped');
    expect(e?.decision.reasons).toEqual([
      {
        code: 'mirror_pod',
        text: 'pod is the mirror of a static pod, which the kubelet runs from its manifest file',
        fix: 'a static pod cannot be meshed: the kubelet runs it from a file on its node, without a service account; run it as a DaemonSet or Deployment to mesh it',
      },
    ]);
    expect(e?.startup).toEqual([]);
  });

  it('a Windows pod is not injected, and the fix says the pod stays unmeshed', async () => {
    const [e] = await explain(POD.replace('spec:\n', 'spec:\n  os:\n    name: windows\n'));
    expect(e?.decision.reasons).toEqual([
      {
        code: 'windows_pod',
        text: 'pod runs on Windows, where the Linux proxy cannot run',
        fix: 'Linkerd has no proxy for Windows: leave the pod unmeshed (annotate it linkerd.io/inject: disabled to say so)',
      },
    ]);
  });

  it('--namespace-annotation enables injection for the pods of any namespace and wins over a Namespace in the input', async () => {
    const plain = POD.replace(/ {2}annotations:\n {4}linkerd.io\/inject: enabled\n/, '');
    expect((await explain(plain))[0]?.decision.reasons[0]?.code).toBe('injection_enable_annotation_absent');
    const [e] = await explain(plain, '--namespace-annotation', 'linkerd.io/inject=enabled');
    expect(e?.decision).toMatchObject({ outcome: 'injected', annotationAt: 'namespace' });
    const [job] = await explain(JOB, '--namespace-annotation', 'linkerd.io/inject=disabled');
    expect(job?.decision.outcome).toBe('skipped');
  });

  it('a Namespace enforcing Pod Security baseline makes linkerd-init a risk; --namespace-label wins; the CNI plugin avoids it', async () => {
    const enforcing = JOB.replace('  name: batch\n', '  name: batch\n  labels:\n    pod-security.kubernetes.io/enforce: baseline\n');
    const [job] = await explain(enforcing);
    expect(job?.risks.map((r) => r.code)).toEqual(['pod_security_refuses_init', 'proxy_never_exits']);
    expect(job?.risks[0]?.text).toContain('enforces Pod Security "baseline"');
    const [privileged] = await explain(enforcing, '--namespace-label', 'pod-security.kubernetes.io/enforce=privileged');
    expect(privileged?.risks.map((r) => r.code)).toEqual(['proxy_never_exits']);
    // POD's first container drops no capability, so at restricted the proxy, which takes its capabilities, is refused too.
    const [flagged] = await explain(POD, '--namespace-label', 'pod-security.kubernetes.io/enforce=restricted');
    expect(flagged?.risks.map((r) => `${r.code} ${r.container}`)).toEqual(['pod_security_refuses_init linkerd-init', 'pod_security_refuses_container linkerd-proxy']);
    const [cni] = await explain(POD, '--cni', '--namespace-label', 'pod-security.kubernetes.io/enforce=restricted');
    expect(cni?.risks.map((r) => `${r.code} ${r.container}`)).toEqual(['pod_security_refuses_container linkerd-proxy']);
    const [cniBaseline] = await explain(POD, '--cni', '--namespace-label', 'pod-security.kubernetes.io/enforce=baseline');
    expect(cniBaseline?.risks).toEqual([]);
    const bad = await runExplain([...ANCHORS, '--namespace-label', 'no-equals-sign', '-'], { stdin: POD });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('--namespace-label "no-equals-sign": expected KEY=VALUE');
  });

  it('--pod-security-default stands for a level set in kube-apiserver`s configuration: a label wins, an exempt namespace enforces none', async () => {
    const [byDefault] = await explain(POD, '--pod-security-default', 'baseline');
    expect(byDefault?.risks.map((r) => r.code)).toEqual(['pod_security_refuses_init']);
    const [labelled] = await explain(POD, '--pod-security-default', 'baseline', '--namespace-label', 'pod-security.kubernetes.io/enforce=privileged');
    expect(labelled?.risks).toEqual([]);
    const [exempt] = await explain(POD, '--pod-security-default', 'restricted', '--pod-security-exempt', 'ops,shop');
    expect(exempt?.risks).toEqual([]);
    const bad = await runExplain([...ANCHORS, '--pod-security-default', 'strict', '-'], { stdin: POD });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('--pod-security-default "strict": expected privileged, baseline, restricted');
  });

  it('a ResourceQuota of the namespace in the input that needs resources the injected containers lack is the first risk', async () => {
    const quota = '---\napiVersion: v1\nkind: ResourceQuota\nmetadata:\n  name: compute\n  namespace: shop\nspec:\n  hard:\n    limits.cpu: "4"\n';
    const [e] = await explain(POD + quota);
    expect(e?.risks.map((r) => r.code)).toEqual(['resource_quota_needs_resources']);
    expect(e?.risks[0]?.container).toBe('linkerd-init,linkerd-proxy');
    // Resources for the proxy (which linkerd-init takes too), or a LimitRange with defaults, answer it.
    expect((await explain(POD + quota, '--proxy-cpu-limit', '1'))[0]?.risks).toEqual([]);
    const limitRange = '---\napiVersion: v1\nkind: LimitRange\nmetadata:\n  name: defaults\n  namespace: shop\nspec:\n  limits:\n    - type: Container\n      default:\n        cpu: 100m\n';
    expect((await explain(POD + quota + limitRange))[0]?.risks).toEqual([]);
    // A quota of another namespace does not count.
    expect((await explain(POD + quota.replace('namespace: shop', 'namespace: other')))[0]?.risks).toEqual([]);
  });

  it('the text report shows the decision, numbered steps with the rules, and each risk with its fix', async () => {
    const result = await runExplain([...ANCHORS, '--cni', '-'], { stdin: JOB });
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/^job "migrate" in namespace "batch" \(-#2\)\n {2}decision: injected\n {4}√ linkerd.io\/inject: enabled on the namespace\n/);
    expect(result.stdout).toContain('    1. init fetch: runs to completion;');
    expect(result.stdout).toMatch(/ {2}risks:\n {4}‼ init container "fetch" runs before the proxy.*\n {6}fix: if it needs the network, run it as the proxy's user/);
    const classic = await runExplain([...ANCHORS, '-'], { stdin: POD });
    expect(classic.stdout).toContain('         iptables -t nat:\n           :PREROUTING ACCEPT [0:0]\n');
    expect(classic.stdout).toContain('  risks: none found\n');
  });

  it('a configuration annotation whose value is ignored gets no check mark: it is marked ignored, as the warning below says', async () => {
    const configured = POD.replace(
      '    linkerd.io/inject: enabled\n',
      '    linkerd.io/inject: enabled\n    config.linkerd.io/proxy-cpu-request: lots\n    config.linkerd.io/proxy-log-level: debug\n',
    );
    const result = await runExplain([...ANCHORS, '-'], { stdin: configured });
    expect(result.stdout).toContain(
      '    ‼ configured by the pod template: config.linkerd.io/proxy-cpu-request: lots (ignored), config.linkerd.io/proxy-log-level: debug\n',
    );
    expect(result.stdout).toContain('  ‼ ignored annotation config.linkerd.io/proxy-cpu-request="lots": ');
    const [e] = await explain(configured);
    expect(e?.decision.reasons[1]).toMatchObject({ code: 'workload_configuration', ignored: ['config.linkerd.io/proxy-cpu-request'] });
    // A request above its limit is ignored in pairs; values that are used keep the check mark and no list.
    const pair = POD.replace(
      '    linkerd.io/inject: enabled\n',
      '    linkerd.io/inject: enabled\n    config.linkerd.io/proxy-memory-request: 1Gi\n    config.linkerd.io/proxy-memory-limit: 256Mi\n',
    );
    expect((await explain(pair))[0]?.decision.reasons[1]?.ignored).toEqual(['config.linkerd.io/proxy-memory-limit', 'config.linkerd.io/proxy-memory-request']);
    const fine = await runExplain([...ANCHORS, '-'], { stdin: pair.replace('256Mi', '2Gi') });
    expect(fine.stdout).toContain('    √ configured by the pod template: config.linkerd.io/proxy-memory-limit: 2Gi, config.linkerd.io/proxy-memory-request: 1Gi\n');
  });

  it('a pod without a spec is explained injected, with the warning that it would run the proxy alone', async () => {
    const [e] = await explain('apiVersion: v1\nkind: Pod\nmetadata:\n  name: bare\n  annotations:\n    linkerd.io/inject: enabled\n');
    expect(e?.decision.outcome).toBe('injected');
    expect(e?.warnings).toContain('the pod has no spec: injected, it would run the proxy alone; give it its containers');
  });

  it('input without workloads, bad flags and bad input are reported', async () => {
    const none = await runExplain([...ANCHORS, '-'], { stdin: 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n' });
    expect(none).toEqual({ stdout: '', stderr: `proxy-injector explain: ${EMBEDDED_DEFAULTS_NOTE}\nproxy-injector explain: no pods or workloads in the input\n`, code: 0 });
    expect((await runExplain(['-o', 'yaml', '-'], { stdin: POD })).code).toBe(2);
    expect((await runExplain(['--namespace-annotation', 'novalue', '-'], { stdin: POD })).code).toBe(2);
    expect((await runExplain([])).code).toBe(2);
    const invalid = await runExplain([...ANCHORS, '-'], { stdin: 'kind: Pod\nmetadata: [\n' });
    expect(invalid.code).toBe(1);
    expect(invalid.stdout).toBe('');
    const help = (await runExplain(['--help'])).stdout;
    expect(help).toContain('Usage: proxy-injector explain [flags] FILE|DIR|URL|- ...');
    expect(help).toContain('https:// URLs');
  });

  it('labels a document among 40,000 in one input by its place (counted once per input, not once per document)', async () => {
    // Labelling each document by counting its input's documents again took 16 s for 30,000 small documents.
    const many = `${Array.from({ length: 40_000 }, (_, i) => `kind: ConfigMap\nmetadata: {name: c${i}}\n`).join('---\n')}---\n${POD}`;
    const list = await explain(many);
    expect(list.map((e) => e.source)).toEqual(['-#40001']);
  });

  it('every workload in examples/ is explained', async () => {
    const result = await runExplain(['-o', 'json', '--namespace-annotation', 'linkerd.io/inject=enabled', 'examples/']);
    expect(result.code, result.stderr).toBe(0);
    const list = JSON.parse(result.stdout) as Explanation[];
    expect(list.map((e) => `${e.kind}/${e.name}`)).toEqual(expect.arrayContaining(['deployment/web', 'pod/emoji']));
    for (const e of list) {
      expect(e.decision.outcome).toBe('injected');
      expect(e.startup[0]?.container).toBe('linkerd-init');
      expect(e.iptables?.ipv4.length).toBeGreaterThan(0);
    }
  });
});

const here = dirname(fileURLToPath(import.meta.url));
const fixtures = resolve(process.env['LINKERD_FIXTURES'] ?? join(here, '..', '..', '..', 'shared', 'linkerd2'));
const present = existsSync(join(fixtures, 'cases.json'));

describe.runIf(present)("explain on Linkerd's fixture inputs", () => {
  const cases = present
    ? (JSON.parse(readFileSync(join(fixtures, 'cases.json'), 'utf8')) as {
        namespaceAnnotations: Record<string, Record<string, string>>;
        podPatchCases: { cases: Array<{ input: string; ns: string }> };
      })
    : undefined;
  const inputs = cases?.podPatchCases.cases ?? [];
  it.each(inputs.map((c) => [c.input, c.ns] as const))('%s in namespace %s: a record a user can act on', async (input, ns) => {
    const flags = Object.entries(cases?.namespaceAnnotations[ns] ?? {}).flatMap(([k, v]) => ['--namespace-annotation', `${k}=${v}`]);
    const result = await runExplain([...ANCHORS, '-o', 'json', ...flags, join(fixtures, input)]);
    expect(result.code, result.stderr).toBe(0);
    const [e, ...rest] = JSON.parse(result.stdout) as Explanation[];
    expect(rest).toEqual([]);
    if (e?.decision.outcome === 'injected') {
      const names = e.startup.map((s) => s.container);
      expect(names.filter((n) => n === 'linkerd-proxy')).toHaveLength(1);
      expect(e.iptables?.ipv4).toContain('-A OUTPUT -m comment --comment "proxy-init/install-proxy-init-output" -j PROXY_INIT_OUTPUT');
      expect(e.startup.at(-1)?.phase).toBe('container');
    } else {
      expect(e?.decision.reasons.length).toBeGreaterThan(0);
      for (const r of e?.decision.reasons ?? []) expect(r.fix).toBeTruthy();
    }
  });
});

describe('trust anchors', () => {
  it('--trust-anchors is checked as inject checks it', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'proxy-injector-explain-anchors-'));
    try {
      const path = join(dir, 'key.pem');
      writeFileSync(path, generateKeyPairSync('ec', { namedCurve: 'prime256v1' }).privateKey.export({ format: 'pem', type: 'sec1' }));
      expect(await runExplain(['--trust-anchors', path, '-'], { stdin: JOB })).toEqual({
        code: 1,
        stdout: '',
        stderr: `proxy-injector explain: --trust-anchors ${path}: a private key (EC PRIVATE KEY) was given where the trust anchors' certificates belong; give the root CA certificates only\n`,
      });
      writeFileSync(path, 'hello');
      expect((await runExplain(['--trust-anchors', path, '-'], { stdin: JOB })).stderr).toBe(
        `proxy-injector explain: --trust-anchors ${path}: no PEM CERTIFICATE block: trust anchors are one or more "-----BEGIN CERTIFICATE-----" blocks\n`,
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
