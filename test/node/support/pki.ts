/**
 * The certificates a one-node cluster needs, made with the openssl CLI: a cluster CA; the API server's serving
 * certificate; client certificates for the admin, the controller-manager, the scheduler, the kubelet and the API
 * server's calls to the kubelet; the kubelet's serving certificate; the service-account key pair. And Linkerd's
 * identity trust anchor and issuer (ECDSA P-256, the issuer a CA of path length 0 under the anchor).
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { run } from './host.js';

const EC = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];

export interface Credential {
  cert: string;
  key: string;
  certPem: string;
  keyPem: string;
}

async function selfSignedCa(dir: string, name: string, subject: string, days = 2): Promise<Credential> {
  const cert = join(dir, `${name}.crt`);
  const key = join(dir, `${name}.key`);
  await run('openssl', [
    'req', '-x509', ...EC, '-keyout', key, '-out', cert, '-days', String(days), '-sha256', '-subj', subject,
    '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign,cRLSign',
  ]);
  return { cert, key, certPem: readFileSync(cert, 'utf8'), keyPem: readFileSync(key, 'utf8') };
}

async function signed(dir: string, ca: Credential, name: string, subject: string, extensions: string[], days = 2): Promise<Credential> {
  const cert = join(dir, `${name}.crt`);
  const key = join(dir, `${name}.key`);
  const ext = join(dir, `${name}.ext`);
  writeFileSync(ext, `${extensions.join('\n')}\n`);
  await run('openssl', ['req', '-new', ...EC, '-keyout', key, '-out', join(dir, `${name}.csr`), '-subj', subject]);
  await run('openssl', [
    'x509', '-req', '-in', join(dir, `${name}.csr`), '-CA', ca.cert, '-CAkey', ca.key, '-CAcreateserial',
    '-days', String(days), '-sha256', '-extfile', ext, '-out', cert,
  ]);
  return { cert, key, certPem: readFileSync(cert, 'utf8'), keyPem: readFileSync(key, 'utf8') };
}

const CLIENT = ['basicConstraints=critical,CA:FALSE', 'keyUsage=critical,digitalSignature,keyEncipherment', 'extendedKeyUsage=clientAuth'];
const SERVER = ['basicConstraints=critical,CA:FALSE', 'keyUsage=critical,digitalSignature,keyEncipherment', 'extendedKeyUsage=serverAuth'];

export interface ClusterPki {
  ca: Credential;
  apiServer: Credential;
  admin: Credential;
  controllerManager: Credential;
  scheduler: Credential;
  kubeletClient: Credential;
  kubeletServing: Credential;
  apiServerKubeletClient: Credential;
  serviceAccountKey: string;
  serviceAccountPub: string;
}

export async function clusterPki(dir: string, nodeName: string, nodeIp: string, apiServiceIp: string): Promise<ClusterPki> {
  mkdirSync(dir, { recursive: true });
  const ca = await selfSignedCa(dir, 'ca', '/CN=proxy-injector-node-ca');
  const names = ['kubernetes', 'kubernetes.default', 'kubernetes.default.svc', 'kubernetes.default.svc.cluster.local', 'localhost'];
  const apiServer = await signed(dir, ca, 'apiserver', '/CN=kube-apiserver', [
    ...SERVER,
    `subjectAltName=${[`IP:${nodeIp}`, `IP:${apiServiceIp}`, 'IP:127.0.0.1', ...names.map((n) => `DNS:${n}`)].join(',')}`,
  ]);
  const admin = await signed(dir, ca, 'admin', '/O=system:masters/CN=admin', CLIENT);
  const controllerManager = await signed(dir, ca, 'controller-manager', '/CN=system:kube-controller-manager', CLIENT);
  const scheduler = await signed(dir, ca, 'scheduler', '/CN=system:kube-scheduler', CLIENT);
  const kubeletClient = await signed(dir, ca, 'kubelet-client', `/O=system:nodes/CN=system:node:${nodeName}`, CLIENT);
  const kubeletServing = await signed(dir, ca, 'kubelet-serving', `/CN=${nodeName}`, [...SERVER, `subjectAltName=IP:${nodeIp},DNS:${nodeName}`]);
  const apiServerKubeletClient = await signed(dir, ca, 'apiserver-kubelet-client', '/O=system:masters/CN=kube-apiserver-kubelet-client', CLIENT);
  const serviceAccountKey = join(dir, 'sa.key');
  const serviceAccountPub = join(dir, 'sa.pub');
  await run('openssl', ['genpkey', '-algorithm', 'RSA', '-pkeyopt', 'rsa_keygen_bits:2048', '-out', serviceAccountKey]);
  await run('openssl', ['pkey', '-in', serviceAccountKey, '-pubout', '-out', serviceAccountPub]);
  return { ca, apiServer, admin, controllerManager, scheduler, kubeletClient, kubeletServing, apiServerKubeletClient, serviceAccountKey, serviceAccountPub };
}

export interface LinkerdIdentity {
  trustAnchorPem: string;
  issuerCertPem: string;
  issuerKeyPem: string;
}

/** Linkerd's trust anchor (root) and identity issuer, as `linkerd install` expects them. */
export async function linkerdIdentity(dir: string, trustDomain: string): Promise<LinkerdIdentity> {
  mkdirSync(dir, { recursive: true });
  // A year, as for a real mesh: Linkerd's identity issues proxies certificates for a day, within the issuer's validity.
  const anchor = await selfSignedCa(dir, 'trust-anchor', `/CN=root.linkerd.${trustDomain}`, 365);
  const issuer = await signed(dir, anchor, 'issuer', `/CN=identity.linkerd.${trustDomain}`, [
    'basicConstraints=critical,CA:TRUE,pathlen:0',
    'keyUsage=critical,keyCertSign,cRLSign',
  ], 365);
  return { trustAnchorPem: anchor.certPem, issuerCertPem: issuer.certPem, issuerKeyPem: issuer.keyPem };
}

/**
 * The trust anchors with a second, new root after them: the issuer, signed by the first, stays valid for every proxy
 * while pods move to the bundle.
 */
export async function withSecondRoot(trustAnchorPem: string): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), 'node-suite-anchor-'));
  try {
    await run('openssl', [
      'req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', join(dir, 'root.key'), '-out', join(dir, 'root.crt'),
      '-days', '365', '-sha256', '-subj', '/CN=root-2.linkerd.cluster.local', '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign,cRLSign',
    ]);
    return `${trustAnchorPem.trim()}\n${readFileSync(join(dir, 'root.crt'), 'utf8').trim()}\n`;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
