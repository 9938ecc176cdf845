/**
 * A real Kubernetes control plane on loopback for end-to-end tests:
 * etcd + kube-apiserver (+ kube-controller-manager), no scheduler, no kubelet.
 *
 * The binaries come from scripts/e2e-binaries.sh (built from the Go module proxy
 * and cached, or $KUBEBUILDER_ASSETS). Certificates are made with the `openssl`
 * CLI, the service-account key pair with node:crypto. Only Node built-ins here.
 */
import { execFile, execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { createWriteStream, existsSync, rmSync, type WriteStream } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { request as httpsRequest } from 'node:https';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { httpGet } from '../../support/https.js';

export type Component = 'etcd' | 'kube-apiserver' | 'kube-controller-manager';

export interface ControlPlane {
  /** kubeconfig YAML text for a cluster-admin client (client cert), server https://127.0.0.1:<port> */
  kubeconfig: string;
  /** the same, written to a file in the work dir */
  kubeconfigPath: string;
  apiServerUrl: string;
  /** CA bundle (PEM) of the apiserver's serving cert (also the client CA) */
  caPem: string;
  /** admin client certificate (CN=admin, O=system:masters) and its key, PEM */
  clientCertPem: string;
  clientKeyPem: string;
  workDir: string;
  /** kills all processes (SIGTERM, then SIGKILL after 5 s), removes the work dir unless KEEP_E2E=1 */
  stop(): Promise<void>;
  /** recent log lines of a component, for failure messages */
  logs(component: Component): string;
  /** An outage: stops kube-apiserver, then etcd (SIGTERM); the controller-manager keeps running and retrying. */
  stopApiServer(): Promise<void>;
  /** Ends an outage: starts etcd and kube-apiserver again with the same ports, flags and data dir; resolves when ready. */
  restartApiServer(): Promise<void>;
}

export interface StartOptions {
  /** directory with etcd, kube-apiserver, kube-controller-manager; default: binaryDir() */
  binDir?: string;
  /** start kube-controller-manager (default true) */
  controllers?: boolean;
  /** extra kube-apiserver flags, e.g. ['--v=4'] */
  apiServerArgs?: string[];
  /** how long to wait for each component to become ready (default 120 s) */
  readyTimeoutMs?: number;
}

const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
const LOG_LINES = 200;
const STOP_GRACE_MS = 5_000;
const execFileAsync = promisify(execFile);

/** Runs scripts/e2e-binaries.sh (stderr inherited; the first build takes many minutes) and returns its directory. */
export function binaryDir(): string {
  const out = execFileSync('bash', [join(REPO_ROOT, 'scripts/e2e-binaries.sh')], {
    cwd: REPO_ROOT,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
    maxBuffer: 1 << 20,
  });
  const dir = out.trim().split('\n').pop()?.trim() ?? '';
  if (!dir || !existsSync(join(dir, 'kube-apiserver'))) {
    throw new Error(`scripts/e2e-binaries.sh printed ${JSON.stringify(out)}, not a directory holding kube-apiserver`);
  }
  return dir;
}

// ---------------------------------------------------------------------------
// processes

/** Keeps the last `max` lines of a stream (and, optionally, the whole stream in a file). */
class RingLog {
  private lines: string[] = [];
  private partial = '';
  constructor(
    private readonly max: number,
    private readonly file?: WriteStream,
  ) {}
  push(chunk: Buffer): void {
    this.file?.write(chunk);
    const parts = (this.partial + chunk.toString('utf8')).split('\n');
    this.partial = parts.pop() ?? '';
    for (const line of parts) this.lines.push(line);
    if (this.lines.length > this.max) this.lines.splice(0, this.lines.length - this.max);
  }
  text(): string {
    return [...this.lines, ...(this.partial ? [this.partial] : [])].join('\n');
  }
}

interface Proc {
  name: Component;
  child: ChildProcess;
  log: RingLog;
  exited: Promise<void>;
  exitInfo: string | undefined;
}

/** Every child we started in this process, so that none can outlive it, and the work dirs not yet removed. */
const liveChildren = new Set<ChildProcess>();
const liveWorkDirs = new Set<string>();
let exitHookInstalled = false;
function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.on('exit', () => {
    for (const child of liveChildren) {
      try {
        child.kill('SIGKILL');
      } catch {
        // already gone
      }
    }
    if (process.env['KEEP_E2E'] === '1') return;
    for (const dir of liveWorkDirs) rmSync(dir, { recursive: true, force: true });
  });
}

function startProcess(name: Component, binDir: string, args: string[], workDir: string): Proc {
  installExitHook();
  // Appended to: a component started again after an outage keeps its earlier log.
  const file = createWriteStream(join(workDir, `${name}.log`), { flags: 'a' });
  const log = new RingLog(LOG_LINES, file);
  const child = spawn(join(binDir, name), args, { cwd: workDir, stdio: ['ignore', 'pipe', 'pipe'] });
  liveChildren.add(child);
  child.stdout?.on('data', (c: Buffer) => log.push(c));
  child.stderr?.on('data', (c: Buffer) => log.push(c));
  const proc: Proc = { name, child, log, exitInfo: undefined, exited: Promise.resolve() };
  proc.exited = new Promise<void>((resolveExit) => {
    let info = '';
    child.once('error', (err) => (info = `failed to start: ${err.message}`));
    child.once('exit', (code, signal) => {
      info ||= signal ? `killed by ${signal}` : `exited with code ${code}`;
      liveChildren.delete(child);
    });
    // 'close' comes after 'exit' (or 'error') once stdout/stderr are drained, so the logs are complete.
    child.once('close', () => {
      proc.exitInfo = info || 'exited';
      liveChildren.delete(child);
      file.end();
      resolveExit();
    });
  });
  return proc;
}

async function stopProcess(proc: Proc): Promise<void> {
  if (proc.exitInfo !== undefined) return;
  proc.child.kill('SIGTERM');
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<boolean>((r) => (timer = setTimeout(() => r(true), STOP_GRACE_MS)));
  const late = await Promise.race([proc.exited.then(() => false), timedOut]);
  clearTimeout(timer);
  if (late) {
    proc.child.kill('SIGKILL');
    await proc.exited;
  }
}

// ---------------------------------------------------------------------------
// helpers

/** Free TCP ports on 127.0.0.1 (all held open together, so they are distinct, then released). */
export async function freePorts(count: number): Promise<number[]> {
  const servers = await Promise.all(
    Array.from(
      { length: count },
      () =>
        new Promise<ReturnType<typeof createServer>>((res, rej) => {
          const s = createServer();
          s.once('error', rej);
          s.listen(0, '127.0.0.1', () => res(s));
        }),
    ),
  );
  const ports = servers.map((s) => {
    const addr = s.address();
    if (addr === null || typeof addr === 'string') throw new Error('unexpected server address');
    return addr.port;
  });
  await Promise.all(servers.map((s) => new Promise<void>((r) => s.close(() => r()))));
  return ports;
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

interface TlsClient {
  ca: string;
  cert: string;
  key: string;
}

export interface KubeResponse {
  status: number;
  body: string;
  /** body parsed as JSON, or undefined if it is not JSON */
  json: unknown;
  /** The response's Warning headers, each as sent (`299 - "text"`): what kubectl prints as "Warning: text". */
  warnings: string[];
}

/** One HTTPS request to the apiserver with the admin client certificate. */
export function kubeRequest(
  cp: Pick<ControlPlane, 'apiServerUrl' | 'caPem' | 'clientCertPem' | 'clientKeyPem'>,
  method: string,
  path: string,
  body?: unknown,
  options: { contentType?: string; timeoutMs?: number } = {},
): Promise<KubeResponse> {
  return httpsCall(cp.apiServerUrl, { ca: cp.caPem, cert: cp.clientCertPem, key: cp.clientKeyPem }, method, path, body, options);
}

function httpsCall(
  baseUrl: string,
  tls: TlsClient,
  method: string,
  path: string,
  body: unknown,
  options: { contentType?: string; timeoutMs?: number },
): Promise<KubeResponse> {
  const url = new URL(path, baseUrl);
  const payload = body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body);
  return new Promise((res, rej) => {
    const req = httpsRequest(
      {
        hostname: url.hostname,
        port: url.port,
        path: url.pathname + url.search,
        method,
        ca: tls.ca,
        ...(tls.cert && { cert: tls.cert, key: tls.key }),
        agent: false,
        timeout: options.timeoutMs ?? 10_000,
        headers: {
          accept: 'application/json',
          ...(payload !== undefined && {
            'content-type': options.contentType ?? 'application/json',
            'content-length': Buffer.byteLength(payload),
          }),
        },
      },
      (resp) => {
        const chunks: Buffer[] = [];
        resp.on('data', (c: Buffer) => chunks.push(c));
        resp.on('error', rej);
        resp.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let json: unknown;
          try {
            json = JSON.parse(text);
          } catch {
            json = undefined;
          }
          res({ status: resp.statusCode ?? 0, body: text, json, warnings: resp.headersDistinct['warning'] ?? [] });
        });
      },
    );
    req.on('timeout', () => req.destroy(new Error(`${method} ${url.href} timed out`)));
    req.on('error', rej);
    req.end(payload);
  });
}

/** Polls `check` until it returns true; fails early if a watched process exits, or after `timeoutMs`. */
async function waitFor(
  what: string,
  timeoutMs: number,
  check: () => Promise<boolean>,
  watched: Proc[],
  describe: () => string,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let lastError = '';
  for (;;) {
    const dead = watched.find((p) => p.exitInfo !== undefined);
    if (dead) {
      throw new Error(`${dead.name} ${dead.exitInfo} while waiting for ${what}\n${describe()}`);
    }
    try {
      if (await check()) return;
      lastError = '';
    } catch (err) {
      lastError = err instanceof Error ? err.message : String(err);
    }
    if (Date.now() > deadline) {
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${lastError ? ` (last error: ${lastError})` : ''}\n${describe()}`);
    }
    await sleep(250);
  }
}

async function openssl(workDir: string, args: string[]): Promise<void> {
  try {
    await execFileAsync('openssl', args, { cwd: workDir });
  } catch (err) {
    const e = err as { stderr?: string; message: string };
    throw new Error(`openssl ${args.join(' ')} failed: ${e.stderr ?? e.message}`);
  }
}

interface Pki {
  caCert: string;
  caCertPath: string;
  serverCertPath: string;
  serverKeyPath: string;
  adminCert: string;
  adminKey: string;
  saPublicKeyPath: string;
  saPrivateKeyPath: string;
}

/** A throw-away CA, the apiserver's serving cert, an admin client cert, and a service-account key pair. */
async function makePki(dir: string): Promise<Pki> {
  const p = (name: string) => join(dir, name);
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  await openssl(dir, [
    'req', '-x509', ...ec, '-keyout', p('ca.key'), '-out', p('ca.crt'), '-days', '7', '-sha256',
    '-subj', '/CN=proxy-injector-e2e-ca',
    '-addext', 'basicConstraints=critical,CA:TRUE',
    '-addext', 'keyUsage=critical,keyCertSign,cRLSign',
  ]);
  const leaf = async (name: string, subject: string, extensions: string) => {
    await writeFile(p(`${name}.ext`), extensions);
    await openssl(dir, ['req', '-new', ...ec, '-keyout', p(`${name}.key`), '-out', p(`${name}.csr`), '-subj', subject]);
    await openssl(dir, [
      'x509', '-req', '-in', p(`${name}.csr`), '-CA', p('ca.crt'), '-CAkey', p('ca.key'), '-CAcreateserial',
      '-days', '7', '-sha256', '-extfile', p(`${name}.ext`), '-out', p(`${name}.crt`),
    ]);
  };
  await leaf(
    'apiserver',
    '/CN=kube-apiserver',
    [
      'basicConstraints=critical,CA:FALSE',
      'keyUsage=critical,digitalSignature,keyEncipherment',
      'extendedKeyUsage=serverAuth',
      'subjectAltName=IP:127.0.0.1,IP:10.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local',
      '',
    ].join('\n'),
  );
  await leaf(
    'admin',
    '/O=system:masters/CN=admin',
    ['basicConstraints=critical,CA:FALSE', 'keyUsage=critical,digitalSignature,keyEncipherment', 'extendedKeyUsage=clientAuth', ''].join('\n'),
  );
  const sa = generateKeyPairSync('rsa', {
    modulusLength: 2048,
    publicKeyEncoding: { type: 'spki', format: 'pem' },
    privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
  });
  await writeFile(p('sa.pub'), sa.publicKey);
  await writeFile(p('sa.key'), sa.privateKey, { mode: 0o600 });
  return {
    caCert: await readFile(p('ca.crt'), 'utf8'),
    caCertPath: p('ca.crt'),
    serverCertPath: p('apiserver.crt'),
    serverKeyPath: p('apiserver.key'),
    adminCert: await readFile(p('admin.crt'), 'utf8'),
    adminKey: await readFile(p('admin.key'), 'utf8'),
    saPublicKeyPath: p('sa.pub'),
    saPrivateKeyPath: p('sa.key'),
  };
}

/** A kubeconfig with one cluster and one user, its certificates inline. */
export function kubeconfigYaml(server: string, caCertPem: string, user: { name: string; certPem: string; keyPem: string }, clusterName = 'e2e'): string {
  const b64 = (s: string) => Buffer.from(s).toString('base64');
  return [
    'apiVersion: v1',
    'kind: Config',
    'clusters:',
    `- name: ${clusterName}`,
    '  cluster:',
    `    server: ${server}`,
    `    certificate-authority-data: ${b64(caCertPem)}`,
    'users:',
    `- name: ${user.name}`,
    '  user:',
    `    client-certificate-data: ${b64(user.certPem)}`,
    `    client-key-data: ${b64(user.keyPem)}`,
    'contexts:',
    `- name: ${clusterName}`,
    '  context:',
    `    cluster: ${clusterName}`,
    `    user: ${user.name}`,
    `current-context: ${clusterName}`,
    '',
  ].join('\n');
}

// ---------------------------------------------------------------------------

export async function startControlPlane(options: StartOptions = {}): Promise<ControlPlane> {
  const binDir = options.binDir ?? binaryDir();
  const readyTimeoutMs = options.readyTimeoutMs ?? 120_000;
  for (const b of ['etcd', 'kube-apiserver', ...(options.controllers === false ? [] : ['kube-controller-manager'])]) {
    if (!existsSync(join(binDir, b))) throw new Error(`${b} not found in ${binDir}`);
  }

  const workDir = await mkdtemp(join(tmpdir(), 'proxy-injector-e2e-'));
  installExitHook();
  liveWorkDirs.add(workDir);
  const procs: Proc[] = [];
  const byName = (name: Component) => procs.find((p) => p.name === name);
  const logs = (name: Component) => byName(name)?.log.text() ?? `(${name} was not started)`;
  const describe = () =>
    procs.map((p) => `--- last lines of ${p.name} (${p.exitInfo ?? 'running'}):\n${p.log.text().split('\n').slice(-40).join('\n')}`).join('\n');

  let stopped: Promise<void> | undefined;
  const stop = () =>
    (stopped ??= (async () => {
      // reverse start order: controllers, apiserver, etcd
      for (const p of [...procs].reverse()) await stopProcess(p);
      if (process.env['KEEP_E2E'] === '1') {
        process.stderr.write(`KEEP_E2E=1: control-plane work dir kept at ${workDir}\n`);
      } else {
        await rm(workDir, { recursive: true, force: true });
      }
      liveWorkDirs.delete(workDir);
    })());

  try {
    const pki = await makePki(workDir);
    const [etcdClientPort, etcdPeerPort, apiPort] = (await freePorts(3)) as [number, number, number];
    const apiServerUrl = `https://127.0.0.1:${apiPort}`;
    const kubeconfig = kubeconfigYaml(apiServerUrl, pki.caCert, { name: 'admin', certPem: pki.adminCert, keyPem: pki.adminKey });
    const kubeconfigPath = join(workDir, 'kubeconfig');
    await writeFile(kubeconfigPath, kubeconfig, { mode: 0o600 });
    const tls: TlsClient = { ca: pki.caCert, cert: pki.adminCert, key: pki.adminKey };

    // --- etcd
    const etcdClientUrl = `http://127.0.0.1:${etcdClientPort}`;
    const etcdPeerUrl = `http://127.0.0.1:${etcdPeerPort}`;
    const etcdArgs = [
      '--name=e2e',
      `--data-dir=${join(workDir, 'etcd')}`,
      `--listen-client-urls=${etcdClientUrl}`,
      `--advertise-client-urls=${etcdClientUrl}`,
      `--listen-peer-urls=${etcdPeerUrl}`,
      `--initial-advertise-peer-urls=${etcdPeerUrl}`,
      `--initial-cluster=e2e=${etcdPeerUrl}`,
      '--initial-cluster-state=new',
      '--unsafe-no-fsync', // throw-away data: don't pay for fsync
      '--log-level=warn',
    ];
    const etcdHealthy = () =>
      waitFor(
        'etcd /health',
        readyTimeoutMs,
        async () => {
          const r = await httpGet(`${etcdClientUrl}/health`);
          return r.status === 200 && r.body.includes('"health":"true"');
        },
        procs.filter((p) => p.name === 'etcd'),
        describe,
      );
    procs.push(startProcess('etcd', binDir, etcdArgs, workDir));
    await etcdHealthy();

    // --- kube-apiserver
    const apiServerArgs = [
      `--etcd-servers=${etcdClientUrl}`,
      `--secure-port=${apiPort}`,
      '--bind-address=127.0.0.1',
      '--advertise-address=127.0.0.1',
      // The default (lease) reconciler would write 127.0.0.1 into Endpoints "kubernetes",
      // which validation rejects ("may not be in the loopback range"); nothing here needs it.
      '--endpoint-reconciler-type=none',
      `--cert-dir=${join(workDir, 'apiserver-certs')}`,
      `--tls-cert-file=${pki.serverCertPath}`,
      `--tls-private-key-file=${pki.serverKeyPath}`,
      `--client-ca-file=${pki.caCertPath}`,
      '--anonymous-auth=false',
      '--authorization-mode=RBAC',
      `--service-account-key-file=${pki.saPublicKeyPath}`,
      `--service-account-signing-key-file=${pki.saPrivateKeyPath}`,
      '--service-account-issuer=https://kubernetes.default.svc.cluster.local',
      '--service-cluster-ip-range=10.0.0.0/24',
      // added to the default-on set (which already has them): the webhook under test needs these
      '--enable-admission-plugins=NamespaceLifecycle,ServiceAccount,MutatingAdmissionWebhook,ValidatingAdmissionWebhook',
      '--allow-privileged=true',
      '--profiling=false',
      ...(options.apiServerArgs ?? []),
    ];
    const apiServerReady = () =>
      waitFor(
        'kube-apiserver /readyz',
        readyTimeoutMs,
        async () => (await httpsCall(apiServerUrl, tls, 'GET', '/readyz', undefined, { timeoutMs: 5_000 })).status === 200,
        procs.filter((p) => p.name !== 'kube-controller-manager'),
        describe,
      );
    procs.push(startProcess('kube-apiserver', binDir, apiServerArgs, workDir));
    await apiServerReady();

    // --- kube-controller-manager
    if (options.controllers !== false) {
      const kcm = startProcess(
        'kube-controller-manager',
        binDir,
        [
          `--kubeconfig=${kubeconfigPath}`,
          '--controllers=*',
          `--service-account-private-key-file=${pki.saPrivateKeyPath}`,
          `--root-ca-file=${pki.caCertPath}`,
          '--use-service-account-credentials=false',
          '--leader-elect=false',
          '--bind-address=127.0.0.1',
          '--secure-port=0',
          '--profiling=false',
        ],
        workDir,
      );
      procs.push(kcm);
      // The serviceaccount controller creating "default" in "default" means the
      // controllers are running (ServiceAccount admission needs it for pods), and
      // root-ca-cert-publisher's kube-root-ca.crt is needed by kube-api-access-* volumes.
      await waitFor(
        'kube-controller-manager (ServiceAccount default/default and ConfigMap default/kube-root-ca.crt)',
        readyTimeoutMs,
        async () => {
          const sa = await httpsCall(apiServerUrl, tls, 'GET', '/api/v1/namespaces/default/serviceaccounts/default', undefined, {});
          if (sa.status !== 200) return false;
          const cm = await httpsCall(apiServerUrl, tls, 'GET', '/api/v1/namespaces/default/configmaps/kube-root-ca.crt', undefined, {});
          return cm.status === 200;
        },
        procs,
        describe,
      );
    }

    return {
      kubeconfig,
      kubeconfigPath,
      apiServerUrl,
      caPem: pki.caCert,
      clientCertPem: pki.adminCert,
      clientKeyPem: pki.adminKey,
      workDir,
      stop,
      logs,
      async stopApiServer() {
        for (const name of ['kube-apiserver', 'etcd'] as const) {
          const proc = byName(name);
          if (proc) await stopProcess(proc);
        }
      },
      async restartApiServer() {
        // The new processes take the old ones' places, so that stop() still ends them in reverse start order.
        const relaunch = (name: Component, args: string[]) => {
          const index = procs.findIndex((p) => p.name === name);
          const old = procs[index];
          if (!old || old.exitInfo === undefined) throw new Error(`${name} is still running: call stopApiServer() first`);
          procs[index] = startProcess(name, binDir, args, workDir);
        };
        relaunch('etcd', etcdArgs);
        await etcdHealthy();
        relaunch('kube-apiserver', apiServerArgs);
        await apiServerReady();
      },
    };
  } catch (err) {
    await stop();
    throw err;
  }
}
