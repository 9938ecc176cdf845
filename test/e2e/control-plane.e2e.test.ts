/**
 * Smoke test of the e2e control plane itself: etcd + kube-apiserver +
 * kube-controller-manager on loopback (no scheduler, no kubelet, so pods stay Pending).
 */
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { binaryDir, kubeRequest, startControlPlane, type ControlPlane, type KubeResponse } from './support/control-plane.js';

interface ObjectMeta {
  name: string;
  namespace?: string;
  uid: string;
  ownerReferences?: { kind: string; name: string; uid: string; controller?: boolean }[];
}
interface Volume {
  name: string;
  projected?: { sources: { serviceAccountToken?: { path: string; expirationSeconds?: number }; configMap?: { name: string } }[] };
}
interface Pod {
  metadata: ObjectMeta;
  spec: {
    serviceAccountName: string;
    volumes?: Volume[];
    containers: { name: string; image: string; volumeMounts?: { name: string; mountPath: string; readOnly?: boolean }[] }[];
  };
  status: { phase: string };
}
interface List<T> {
  items: T[];
}

const NS = 'e2e-smoke';
let binDir = '';
let cp: ControlPlane | undefined;

function plane(): ControlPlane {
  if (!cp) throw new Error('control plane not started');
  return cp;
}

/** Requests and fails with the response and the component logs when the status is not the expected one. */
async function call(method: string, path: string, body: unknown, expected: number): Promise<KubeResponse> {
  const r = await kubeRequest(plane(), method, path, body);
  if (r.status !== expected) {
    throw new Error(
      `${method} ${path}: expected HTTP ${expected}, got ${r.status}: ${r.body}\n` +
        `--- kube-apiserver:\n${plane().logs('kube-apiserver').split('\n').slice(-30).join('\n')}\n` +
        `--- kube-controller-manager:\n${plane().logs('kube-controller-manager').split('\n').slice(-30).join('\n')}`,
    );
  }
  return r;
}

/** Polls `get` until it returns a value, for at most `timeoutMs`. */
async function eventually<T>(what: string, timeoutMs: number, get: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await get();
    if (value !== undefined) return value;
    if (Date.now() > deadline) {
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}\n--- kube-controller-manager:\n${plane().logs('kube-controller-manager')}`);
    }
    await new Promise((r) => setTimeout(r, 250));
  }
}

// The first run builds the binaries from the Go module proxy (many minutes on 2 cores).
beforeAll(() => {
  binDir = binaryDir();
}, 90 * 60_000);

beforeAll(async () => {
  cp = await startControlPlane({ binDir });
}, 300_000);

afterAll(async () => {
  await cp?.stop();
}, 60_000);

describe('e2e control plane', () => {
  it('serves the API of the Kubernetes release it was built for on loopback to the admin client certificate', async () => {
    expect(plane().apiServerUrl).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
    expect(plane().kubeconfig).toContain(`server: ${plane().apiServerUrl}`);
    expect(plane().caPem).toMatch(/^-----BEGIN CERTIFICATE-----/);

    const version = (await call('GET', '/version', undefined, 200)).json as { major: string; minor: string; gitVersion: string };
    // The release the binaries report they are, and (from `npm run test:e2e`) the one their module pins.
    const built = execFileSync(join(binDir, 'kube-apiserver'), ['--version'], { encoding: 'utf8' }).trim();
    expect(built).toMatch(/^Kubernetes v1\.\d+\.\d+$/);
    expect(`Kubernetes ${version.gitVersion}`).toBe(built);
    expect(version.major).toBe('1');
    expect(version.gitVersion).toMatch(new RegExp(`^v1\\.${version.minor}\\.\\d+$`));
    const pinned = process.env['E2E_KUBERNETES_VERSION'];
    if (pinned) expect(version.gitVersion).toBe(pinned);

    const review = await call(
      'POST',
      '/apis/authentication.k8s.io/v1/selfsubjectreviews',
      { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' },
      201,
    );
    const user = (review.json as { status: { userInfo: { username: string; groups: string[] } } }).status.userInfo;
    expect(user.username).toBe('admin');
    expect(user.groups).toContain('system:masters');

    const webhooks = await call('GET', '/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations', undefined, 200);
    expect((webhooks.json as List<unknown>).items).toEqual([]);
  });

  it('rejects a client without a certificate (no anonymous access)', async () => {
    const r = await kubeRequest({ ...plane(), clientCertPem: '', clientKeyPem: '' }, 'GET', '/api/v1/namespaces', undefined);
    expect(r.status).toBe(401);
  });

  it('runs the controllers: a Deployment gets a ReplicaSet and a Pod with the ServiceAccount token volume', async () => {
    await call('POST', '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } }, 201);

    // The serviceaccount controller creates "default" in every new namespace.
    await eventually('ServiceAccount e2e-smoke/default', 60_000, async () => {
      const r = await kubeRequest(plane(), 'GET', `/api/v1/namespaces/${NS}/serviceaccounts/default`);
      return r.status === 200 ? r : undefined;
    });

    const created = await call(
      'POST',
      `/apis/apps/v1/namespaces/${NS}/deployments`,
      {
        apiVersion: 'apps/v1',
        kind: 'Deployment',
        metadata: { name: 'web', labels: { app: 'web' } },
        spec: {
          replicas: 1,
          selector: { matchLabels: { app: 'web' } },
          template: {
            metadata: { labels: { app: 'web' } },
            spec: { containers: [{ name: 'nginx', image: 'nginx' }] },
          },
        },
      },
      201,
    );
    const deployment = created.json as { metadata: ObjectMeta };
    expect(deployment.metadata.namespace).toBe(NS);

    const rs = await eventually('a ReplicaSet of Deployment web', 60_000, async () => {
      const r = await call('GET', `/apis/apps/v1/namespaces/${NS}/replicasets?labelSelector=app%3Dweb`, undefined, 200);
      return (r.json as List<{ metadata: ObjectMeta; spec: { replicas: number } }>).items[0];
    });
    expect(rs.metadata.name).toMatch(/^web-[a-z0-9]+$/);
    expect(rs.spec.replicas).toBe(1);
    expect(rs.metadata.ownerReferences).toEqual([
      expect.objectContaining({ kind: 'Deployment', name: 'web', uid: deployment.metadata.uid, controller: true }),
    ]);

    const pod = await eventually('a Pod of ReplicaSet ' + rs.metadata.name, 60_000, async () => {
      const r = await call('GET', `/api/v1/namespaces/${NS}/pods?labelSelector=app%3Dweb`, undefined, 200);
      return (r.json as List<Pod>).items[0];
    });
    expect(pod.metadata.name.startsWith(`${rs.metadata.name}-`)).toBe(true);
    expect(pod.metadata.ownerReferences).toEqual([
      expect.objectContaining({ kind: 'ReplicaSet', name: rs.metadata.name, uid: rs.metadata.uid, controller: true }),
    ]);
    expect(pod.status.phase).toBe('Pending'); // no scheduler, no kubelet
    expect(pod.spec.serviceAccountName).toBe('default');

    // ServiceAccount admission adds the projected kube-api-access-* volume and mounts it.
    const apiAccess = pod.spec.volumes?.find((v) => v.name.startsWith('kube-api-access-'));
    expect(apiAccess?.name).toMatch(/^kube-api-access-[a-z0-9]{5}$/);
    const sources = apiAccess?.projected?.sources ?? [];
    expect(sources.map((s) => s.serviceAccountToken?.path).filter(Boolean)).toEqual(['token']);
    expect(sources.map((s) => s.configMap?.name).filter(Boolean)).toEqual(['kube-root-ca.crt']);
    const container = pod.spec.containers[0];
    expect(container?.image).toBe('nginx');
    expect(container?.volumeMounts).toContainEqual({
      name: apiAccess?.name,
      mountPath: '/var/run/secrets/kubernetes.io/serviceaccount',
      readOnly: true,
    });

    // root-ca-cert-publisher put the CA into the new namespace for that volume.
    const rootCa = await eventually('ConfigMap e2e-smoke/kube-root-ca.crt', 60_000, async () => {
      const r = await kubeRequest(plane(), 'GET', `/api/v1/namespaces/${NS}/configmaps/kube-root-ca.crt`);
      return r.status === 200 ? (r.json as { data: Record<string, string> }) : undefined;
    });
    expect(rootCa.data['ca.crt']).toBe(plane().caPem);
  });

  it('stop() kills every process and removes the work dir', async () => {
    const local = await startControlPlane({ binDir, controllers: false });
    expect(existsSync(local.kubeconfigPath)).toBe(true);
    const version = await kubeRequest(local, 'GET', '/version');
    expect(version.status).toBe(200);
    await local.stop();
    expect(existsSync(local.workDir)).toBe(process.env['KEEP_E2E'] === '1');
    await expect(kubeRequest(local, 'GET', '/version', undefined, { timeoutMs: 2_000 })).rejects.toThrow(/ECONNREFUSED/);
    expect(local.logs('kube-controller-manager')).toBe('(kube-controller-manager was not started)');
  }, 180_000);
});
