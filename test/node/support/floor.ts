/**
 * The floor webhook on the node (bench/node-figures.mjs): bench/node-floor-webhook.mjs run in a pod made from this
 * injector's image, registered as this injector is, beside it. Its answer is this injector's own answer to the review
 * the API server sends for the benchmark's pod, asked of the injector's pod once, beforehand; its serving certificate
 * is signed by the CA the chart generated for the injector, with a key of the same kind and size; its TLS and keep-alive
 * settings are the injector's listener's. The API server reaches it as it reaches the injector: at the Service's
 * endpoint, the pod's address on the node's bridge.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { request } from 'node:https';
import { join } from 'node:path';
import { DEFAULT_LIMITS, TLS_CIPHERS } from '../../../src/server/webhook.js';
import type { Cluster } from './cluster.js';
import { REPO_ROOT, run } from './host.js';
import { INJECTOR_NS, INJECTOR_RELEASE, type Injector } from './injector.js';
import { apply, getJson, readyPods, type Pod } from './workloads.js';

export const FLOOR_NS = 'node-figures-floor';
const FLOOR_NAME = 'node-floor';
const FLOOR_WEBHOOK = `${FLOOR_NAME}.${FLOOR_NS}.proxy-injector.io`;
const PROGRAM = join(REPO_ROOT, 'bench', 'node-floor-webhook.mjs');

export interface Floor {
  /** The size of this injector's answer as it wrote it, and of the floor's. */
  answerBytes: number;
  floorAnswerBytes: number;
  pod(): Promise<Pod>;
  /** Deletes its webhook configuration, then its namespace. */
  remove(): Promise<void>;
}

interface WebhookConfiguration {
  metadata: { name: string };
  webhooks: Array<Record<string, unknown> & { clientConfig: { caBundle?: string; service?: Record<string, unknown> } }>;
}

/** A PEM certificate's key algorithm and size and its signature algorithm, as `openssl x509 -text` prints them. */
async function certFields(pemPath: string): Promise<{ keyAlgorithm: string; keyBits: number; signature: string }> {
  const text = await run('openssl', ['x509', '-in', pemPath, '-noout', '-text']);
  const keyAlgorithm = /Public Key Algorithm: (\S+)/.exec(text)?.[1];
  const keyBits = Number(/Public-Key: \((\d+) bit\)/.exec(text)?.[1]);
  const signature = /Signature Algorithm: (\S+)/.exec(text)?.[1];
  if (!keyAlgorithm || !keyBits || !signature) throw new Error(`cannot read the key and signature of ${pemPath}:\n${text.slice(0, 2000)}`);
  return { keyAlgorithm, keyBits, signature };
}

const secretData = async (cluster: Cluster, name: string): Promise<Record<string, string>> => {
  const secret = await getJson<{ data: Record<string, string> }>(cluster, ['-n', INJECTOR_NS, 'get', 'secret', name]);
  return Object.fromEntries(Object.entries(secret.data).map(([k, v]) => [k, Buffer.from(v, 'base64').toString('utf8')]));
};

/** A serving certificate for the floor's Service, signed by the injector's generated CA, of the injector's kind. */
async function floorCertificate(cluster: Cluster, dir: string): Promise<{ crt: string; key: string; caBundle: string }> {
  mkdirSync(dir, { recursive: true });
  const ca = await secretData(cluster, `${INJECTOR_RELEASE}-ca`);
  const serving = await secretData(cluster, `${INJECTOR_RELEASE}-tls`);
  writeFileSync(join(dir, 'ca.crt'), ca['tls.crt'] ?? '');
  writeFileSync(join(dir, 'ca.key'), ca['tls.key'] ?? '', { mode: 0o600 });
  writeFileSync(join(dir, 'injector.crt'), serving['tls.crt'] ?? '');
  const injector = await certFields(join(dir, 'injector.crt'));
  if (injector.keyAlgorithm !== 'rsaEncryption') throw new Error(`the injector's serving key is ${injector.keyAlgorithm}: the floor makes RSA keys only`);
  const host = `${FLOOR_NAME}.${FLOOR_NS}.svc`;
  writeFileSync(
    join(dir, 'floor.ext'),
    ['basicConstraints=critical,CA:FALSE', 'keyUsage=critical,digitalSignature,keyEncipherment', 'extendedKeyUsage=serverAuth', `subjectAltName=DNS:${FLOOR_NAME},DNS:${FLOOR_NAME}.${FLOOR_NS},DNS:${host},DNS:${host}.cluster.local`].join('\n'),
  );
  await run('openssl', ['req', '-new', '-newkey', `rsa:${injector.keyBits}`, '-nodes', '-keyout', join(dir, 'floor.key'), '-out', join(dir, 'floor.csr'), '-subj', `/CN=${host}`]);
  await run('openssl', ['x509', '-req', '-in', join(dir, 'floor.csr'), '-CA', join(dir, 'ca.crt'), '-CAkey', join(dir, 'ca.key'), '-CAcreateserial', '-days', '2', '-sha256', '-extfile', join(dir, 'floor.ext'), '-out', join(dir, 'floor.crt')]);
  const floor = await certFields(join(dir, 'floor.crt'));
  if (JSON.stringify(floor) !== JSON.stringify(injector)) throw new Error(`the floor's certificate ${JSON.stringify(floor)} is not of the injector's kind ${JSON.stringify(injector)}`);
  return { crt: readFileSync(join(dir, 'floor.crt'), 'utf8'), key: readFileSync(join(dir, 'floor.key'), 'utf8'), caBundle: ca['tls.crt'] ?? '' };
}

/**
 * This injector's answer to a review, asked of its pod from the node (its Service's name checked against the CA the
 * chart made): the exact text it writes.
 */
export async function askInjector(cluster: Cluster, injector: Injector, review: unknown): Promise<string> {
  const pod = await injector.pod();
  const caBundle = (await secretData(cluster, `${INJECTOR_RELEASE}-tls`))['ca.crt'] ?? '';
  const body = JSON.stringify(review);
  return new Promise((resolve, reject) => {
    const req = request(
      {
        hostname: pod.status.podIP,
        port: 8443,
        path: '/',
        method: 'POST',
        ca: caBundle,
        servername: `${INJECTOR_RELEASE}.${INJECTOR_NS}.svc`,
        agent: false,
        timeout: 10_000,
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('error', reject);
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          if (res.statusCode !== 200) reject(new Error(`the injector answered ${res.statusCode}: ${text.slice(0, 2000)}`));
          else resolve(text);
        });
      },
    );
    req.on('timeout', () => req.destroy(new Error('the injector did not answer in 10 s')));
    req.on('error', reject);
    req.end(body);
  });
}

/**
 * Deploys the floor in its own namespace (left out by every webhook) with `answer` (the injector's answer's text, and
 * the name of the token volume in the review it answered), and
 * registers it with a MutatingWebhookConfiguration copied from this injector's (rules, failure policy, timeout, review
 * versions, object selector), its own Service, CA bundle and `namespaceSelector`.
 */
export async function installFloor(cluster: Cluster, answer: { text: string; tokenVolume: string }, namespaceSelector: unknown): Promise<Floor> {
  const tls = await floorCertificate(cluster, join(cluster.workDir, 'node-floor'));
  const deployment = await getJson<{ spec: { template: { spec: { securityContext?: unknown; containers: Array<Record<string, unknown>> } } } }>(cluster, ['-n', INJECTOR_NS, 'get', 'deployment', INJECTOR_RELEASE]);
  const container = deployment.spec.template.spec.containers[0];
  if (!container) throw new Error("the injector's Deployment has no container");
  const labels = { app: FLOOR_NAME };
  await cluster.kubectl(['create', 'namespace', FLOOR_NS]);
  await cluster.kubectl(['label', 'namespace', FLOOR_NS, 'config.linkerd.io/admission-webhooks=disabled']);
  await apply(cluster, [
    { apiVersion: 'v1', kind: 'Secret', type: 'kubernetes.io/tls', metadata: { name: `${FLOOR_NAME}-tls`, namespace: FLOOR_NS }, stringData: { 'tls.crt': tls.crt, 'tls.key': tls.key } },
    { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: FLOOR_NAME, namespace: FLOOR_NS }, data: { 'node-floor-webhook.mjs': readFileSync(PROGRAM, 'utf8'), 'answer.json': answer.text } },
    {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: FLOOR_NAME, namespace: FLOOR_NS },
      spec: {
        replicas: 1,
        selector: { matchLabels: labels },
        template: {
          metadata: { labels, annotations: { 'linkerd.io/inject': 'disabled' } },
          spec: {
            automountServiceAccountToken: false,
            terminationGracePeriodSeconds: 2,
            securityContext: deployment.spec.template.spec.securityContext,
            containers: [
              {
                name: FLOOR_NAME,
                // The injector's image, pull policy, resources, security context and environment (its NODE_OPTIONS).
                image: container['image'],
                imagePullPolicy: container['imagePullPolicy'],
                resources: container['resources'],
                securityContext: container['securityContext'],
                command: ['node', '/floor/node-floor-webhook.mjs', '/tls', '/floor/answer.json', '8443', answer.tokenVolume],
                env: [
                  ...((container['env'] as unknown[] | undefined) ?? []),
                  // `serve`'s default, which the chart leaves as it is
                  { name: 'FLOOR_TLS_MIN_VERSION', value: 'TLSv1.3' },
                  { name: 'FLOOR_CIPHERS', value: TLS_CIPHERS },
                  { name: 'FLOOR_KEEP_ALIVE_MS', value: String(DEFAULT_LIMITS.keepAliveTimeoutMs) },
                  { name: 'FLOOR_HANDSHAKE_TIMEOUT_MS', value: String(DEFAULT_LIMITS.handshakeTimeoutMs) },
                ],
                ports: [{ name: 'webhook', containerPort: 8443 }],
                readinessProbe: { tcpSocket: { port: 8443 }, periodSeconds: 2, failureThreshold: 1 },
                volumeMounts: [
                  { name: 'tls', mountPath: '/tls', readOnly: true },
                  { name: 'floor', mountPath: '/floor', readOnly: true },
                ],
              },
            ],
            volumes: [
              { name: 'tls', secret: { secretName: `${FLOOR_NAME}-tls`, defaultMode: 0o440 } },
              { name: 'floor', configMap: { name: FLOOR_NAME } },
            ],
          },
        },
      },
    },
    { apiVersion: 'v1', kind: 'Service', metadata: { name: FLOOR_NAME, namespace: FLOOR_NS }, spec: { selector: labels, ports: [{ name: 'webhook', port: 443, targetPort: 8443 }] } },
  ]);
  await readyPods(cluster, FLOOR_NS, `app=${FLOOR_NAME}`, 1);

  const own = await getJson<WebhookConfiguration>(cluster, ['get', 'mutatingwebhookconfiguration', `${INJECTOR_RELEASE}-${INJECTOR_NS}`]);
  const [webhook] = own.webhooks;
  if (!webhook) throw new Error("this injector's MutatingWebhookConfiguration was not found");
  await apply(cluster, [
    {
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'MutatingWebhookConfiguration',
      metadata: { name: FLOOR_NAME },
      webhooks: [
        {
          ...webhook,
          name: FLOOR_WEBHOOK,
          namespaceSelector,
          clientConfig: { service: { ...webhook.clientConfig.service, name: FLOOR_NAME, namespace: FLOOR_NS }, caBundle: Buffer.from(tls.caBundle).toString('base64') },
        },
      ],
    },
  ]);

  return {
    answerBytes: Buffer.byteLength(answer.text),
    // The floor writes the answer as JSON.stringify writes it parsed, with a uid and a token volume's name of the same
    // lengths as the ones it holds.
    floorAnswerBytes: Buffer.byteLength(JSON.stringify(JSON.parse(answer.text))),
    pod: async () => {
      const [pod] = await readyPods(cluster, FLOOR_NS, `app=${FLOOR_NAME}`, 1);
      if (!pod) throw new Error('no floor pod');
      return pod;
    },
    remove: async () => {
      await cluster.kubectl(['delete', 'mutatingwebhookconfiguration', FLOOR_NAME, '--wait']);
      await cluster.kubectl(['delete', 'namespace', FLOOR_NS, '--wait']);
    },
  };
}
