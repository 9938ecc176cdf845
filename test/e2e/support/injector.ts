/** Runs proxy-injector as its own process against the test control plane, and registers it as Linkerd does. */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { get } from 'node:http';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { V1MutatingWebhookConfiguration } from '@kubernetes/client-node';

const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');

export interface RunningInjector {
  child: ChildProcess;
  webhookUrl: string;
  adminUrl: string;
  caPem: string;
  logs: string[];
  exited: Promise<number | null>;
  stop(): Promise<number | null>;
}

/** Starts `proxy-injector serve` on loopback with its own kubeconfig; resolves once /ready answers 200. */
export async function startInjector(options: {
  workDir: string;
  kubeconfigPath: string;
  extraArgs?: string[];
  /** webhook listen address (default 127.0.0.1:0) */
  addr?: string;
  /** directory with the serving key pair and ca.crt (default: a generated development pair in workDir) */
  tlsDir?: string;
}): Promise<RunningInjector> {
  const tlsDir = options.tlsDir ?? join(options.workDir, 'injector-tls');
  const child = spawn(
    process.execPath,
    [
      '--import', 'tsx', join(REPO_ROOT, 'src', 'cli', 'main.ts'), 'serve',
      '--addr', options.addr ?? '127.0.0.1:0', '--admin-addr', '127.0.0.1:0', '--tls-dir', tlsDir,
      '--kubeconfig', options.kubeconfigPath, '--log-format', 'json', '--log-level', 'debug',
      ...(options.extraArgs ?? []),
    ],
    { cwd: REPO_ROOT, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, KUBECONFIG: '' } },
  );
  const logs: string[] = [];
  const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
  const urls = await new Promise<{ webhook: string; admin: string }>((resolveUrls, reject) => {
    let buffer = '';
    child.stdout?.on('data', (chunk: Buffer) => {
      buffer += chunk.toString();
      for (let nl = buffer.indexOf('\n'); nl >= 0; nl = buffer.indexOf('\n')) {
        const line = buffer.slice(0, nl);
        buffer = buffer.slice(nl + 1);
        logs.push(line);
        if (logs.length > 2000) logs.shift();
        try {
          const entry = JSON.parse(line) as Record<string, string>;
          if (entry['msg'] === 'proxy-injector listening') resolveUrls({ webhook: entry['webhook'] ?? '', admin: entry['admin'] ?? '' });
        } catch {
          // not a log line
        }
      }
    });
    child.stderr?.on('data', (chunk: Buffer) => logs.push(chunk.toString()));
    void exited.then((code) => reject(new Error(`proxy-injector exited with ${code}:\n${logs.join('\n')}`)));
  });
  const deadline = Date.now() + 60_000;
  while ((await readyStatus(urls.admin)) !== 200) {
    if (Date.now() > deadline) throw new Error(`proxy-injector never became ready:\n${logs.slice(-30).join('\n')}`);
    await new Promise((r) => setTimeout(r, 200));
  }
  return {
    child,
    webhookUrl: urls.webhook,
    adminUrl: urls.admin,
    caPem: readFileSync(join(tlsDir, 'ca.crt'), 'utf8'),
    logs,
    exited,
    async stop() {
      if (child.exitCode === null) child.kill('SIGTERM');
      return exited;
    },
  };
}

export function readyStatus(adminUrl: string): Promise<number> {
  return new Promise((resolveStatus) => {
    get(`${adminUrl}/ready`, (res) => {
      res.resume();
      resolveStatus(res.statusCode ?? 0);
    }).on('error', () => resolveStatus(0));
  });
}

/** Linkerd's MutatingWebhookConfiguration (rules and selectors of its chart), pointing at a URL instead of a Service. */
export function linkerdWebhookConfiguration(url: string, caPem: string, failurePolicy: 'Ignore' | 'Fail'): V1MutatingWebhookConfiguration {
  return {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'MutatingWebhookConfiguration',
    metadata: { name: 'linkerd-proxy-injector-webhook-config' },
    webhooks: [
      {
        name: 'linkerd-proxy-injector.linkerd.io',
        namespaceSelector: {
          matchExpressions: [
            { key: 'config.linkerd.io/admission-webhooks', operator: 'NotIn', values: ['disabled'] },
            { key: 'kubernetes.io/metadata.name', operator: 'NotIn', values: ['kube-system', 'cert-manager'] },
          ],
        },
        objectSelector: {
          matchExpressions: [
            { key: 'linkerd.io/control-plane-component', operator: 'DoesNotExist' },
            { key: 'linkerd.io/cni-resource', operator: 'DoesNotExist' },
          ],
        },
        clientConfig: { url: `${url}/`, caBundle: Buffer.from(caPem).toString('base64') },
        failurePolicy,
        admissionReviewVersions: ['v1', 'v1beta1'],
        rules: [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['pods', 'services'], scope: 'Namespaced' }],
        sideEffects: 'None',
        timeoutSeconds: 10,
      },
    ],
  };
}

/** A kubeconfig that authenticates with a bearer token (a service account's), trusting the API server's CA. */
export function tokenKubeconfig(path: string, server: string, caPem: string, token: string): string {
  const text = [
    'apiVersion: v1',
    'kind: Config',
    'clusters:',
    `- name: e2e\n  cluster:\n    server: ${server}\n    certificate-authority-data: ${Buffer.from(caPem).toString('base64')}`,
    'users:',
    `- name: injector\n  user:\n    token: ${token}`,
    'contexts:',
    '- name: e2e\n  context:\n    cluster: e2e\n    user: injector',
    'current-context: e2e',
    '',
  ].join('\n');
  writeFileSync(path, text, { mode: 0o600 });
  return path;
}
