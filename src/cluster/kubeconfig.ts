/**
 * Finding the cluster: in-cluster service account, else KUBECONFIG or ~/.kube/config, else no cluster.
 *
 * The credentials a pod or a simple kubeconfig carries (a service-account token that the kubelet rotates, a bearer
 * token or token file, a client certificate, a user name and password) are applied here, without the Kubernetes
 * client: loading it costs more memory and start-up time than the rest of the server, because its KubeConfig pulls in
 * every generated API and model. A kubeconfig whose user needs more (an exec plugin, an auth provider, impersonation)
 * or whose cluster goes through a proxy is handed to the client's KubeConfig, loaded only then, which applies its credentials to each
 * request.
 */
import { createPrivateKey, X509Certificate } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { isIPv6 } from 'node:net';
import { homedir } from 'node:os';
import { delimiter, dirname, isAbsolute, join, sep } from 'node:path';
import { parse, stringify } from 'yaml';
import { isObject } from '../engine/index.js';
import { HttpApiClient, type ApiClient, type Authorize } from './client.js';

/** Where a pod finds its service account's token, CA bundle and namespace. */
export const SERVICE_ACCOUNT_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';
/**
 * A credential file is read again after this long: the kubelet rotates projected service-account tokens, and a CA
 * bundle or a client certificate may be renewed in place while the injector runs.
 */
const FILE_TTL_MS = 60_000;

export interface ClusterConnection {
  client: ApiClient;
  /** Where the credentials came from, for the startup log. */
  source: string;
  server: string;
}

export interface ConnectOptions {
  kubeconfig?: string;
  env?: NodeJS.ProcessEnv;
  /** The service account's directory; tests point it elsewhere. */
  serviceAccountDir?: string;
}

interface ClusterEntry {
  server?: string;
  'certificate-authority'?: string;
  'certificate-authority-data'?: string;
  'insecure-skip-tls-verify'?: boolean;
  'tls-server-name'?: string;
  'proxy-url'?: string;
}

interface UserEntry {
  token?: string;
  tokenFile?: string;
  'client-certificate'?: string;
  'client-certificate-data'?: string;
  'client-key'?: string;
  'client-key-data'?: string;
  username?: string;
  password?: string;
  [other: string]: unknown;
}

interface ContextEntry {
  cluster?: string;
  user?: string;
}

/** Kubeconfig files merged as kubectl merges them: the first file to name an entry or the current context wins. */
interface MergedConfig {
  clusters: Map<string, ClusterEntry>;
  users: Map<string, UserEntry>;
  contexts: Map<string, ContextEntry>;
  currentContext: string | undefined;
}

/** User fields this module applies itself; any other set field sends the kubeconfig to the Kubernetes client. */
const STATIC_USER_FIELDS = new Set(['token', 'tokenFile', 'client-certificate', 'client-certificate-data', 'client-key', 'client-key-data', 'username', 'password']);
const FILE_FIELDS = ['certificate-authority', 'client-certificate', 'client-key', 'tokenFile'];

/**
 * The cluster to talk to, or undefined when there is none. Unlike client-node's `loadFromDefault`, it never falls back
 * to http://localhost:8080: a process without credentials runs without a cluster and says so.
 */
export async function connectToCluster(options: ConnectOptions = {}): Promise<ClusterConnection | undefined> {
  const env = options.env ?? process.env;
  const saDir = options.serviceAccountDir ?? SERVICE_ACCOUNT_DIR;
  if (options.kubeconfig) {
    const path = options.kubeconfig;
    if (!existsSync(path)) throw new Error(`--kubeconfig ${path}: no such file`);
    return fromKubeconfig([path], path);
  }
  if (env['KUBERNETES_SERVICE_HOST'] && existsSync(join(saDir, 'token'))) return inCluster(env, saDir);
  const files = (env['KUBECONFIG'] ?? '').split(delimiter).filter((f) => f !== '' && existsSync(f));
  const fallback = join(homedir(), '.kube', 'config');
  if (files.length === 0 && existsSync(fallback)) files.push(fallback);
  if (files.length === 0) return undefined;
  return fromKubeconfig(files, files.join(delimiter));
}

/** The API server of the pod's cluster, trusted through the service account's CA, with its rotating token. */
function inCluster(env: NodeJS.ProcessEnv, saDir: string): ClusterConnection {
  const host = env['KUBERNETES_SERVICE_HOST'] ?? '';
  const port = env['KUBERNETES_SERVICE_PORT'] ?? '443';
  const scheme = ['80', '8080', '8001'].includes(port) ? 'http' : 'https';
  const server = `${scheme}://${isIPv6(host) ? `[${host}]` : host}:${port}`;
  const caPath = join(saDir, 'ca.crt');
  const ca = existsSync(caPath) ? rereadFile(caPath, 'the service account CA') : undefined;
  const token = tokenFile(join(saDir, 'token'));
  const authorize: Authorize = async (request) => {
    if (ca) request.ca = ca();
    setHeader(request, 'authorization', `Bearer ${token()}`);
  };
  return { client: new HttpApiClient(server, authorize), source: 'in-cluster service account', server };
}

async function fromKubeconfig(files: string[], source: string): Promise<ClusterConnection> {
  const merged = mergeKubeconfigs(files);
  const contextName = merged.currentContext;
  const context = contextName ? merged.contexts.get(contextName) : undefined;
  const cluster = context?.cluster ? merged.clusters.get(context.cluster) : undefined;
  if (!contextName || !context || !cluster) throw new Error(`the kubeconfig from ${source} has no current cluster`);
  if (!cluster.server) throw new Error(`the kubeconfig from ${source}: cluster ${JSON.stringify(context.cluster)} has no server`);
  const user = (context.user ? merged.users.get(context.user) : undefined) ?? {};
  const needsClient = Object.entries(user).some(([key, value]) => value !== undefined && value !== null && !STATIC_USER_FIELDS.has(key)) || !!cluster['proxy-url'];
  const authorize = needsClient ? await clientAuthorize(contextName, context, cluster, user) : staticAuthorize(cluster, user, source);
  return { client: new HttpApiClient(cluster.server, authorize), source, server: cluster.server };
}

function mergeKubeconfigs(files: string[]): MergedConfig {
  const merged: MergedConfig = { clusters: new Map(), users: new Map(), contexts: new Map(), currentContext: undefined };
  for (const file of files) {
    let doc: unknown;
    try {
      doc = parse(readFileSync(file, 'utf8'));
    } catch (err) {
      throw new Error(`kubeconfig ${file}: ${(err as Error).message.split('\n')[0]}`);
    }
    if (doc === null || doc === undefined) continue;
    if (typeof doc !== 'object' || Array.isArray(doc)) throw new Error(`kubeconfig ${file}: expected a mapping`);
    const config = doc as Record<string, unknown>;
    const dir = dirname(file);
    merged.currentContext ||= typeof config['current-context'] === 'string' ? config['current-context'] : undefined;
    const entries = <T>(key: string, field: string, into: Map<string, T>): void => {
      const list = config[key] ?? [];
      if (!Array.isArray(list)) throw new Error(`kubeconfig ${file}: ${key} must be a list`);
      for (const item of list as Array<Record<string, unknown> | null>) {
        const name = item?.['name'];
        if (typeof name !== 'string') throw new Error(`kubeconfig ${file}: an entry of ${key} has no name`);
        const body = { ...((item?.[field] as Record<string, unknown> | null) ?? {}) };
        // Relative paths are relative to the file that names them, as kubectl reads them.
        for (const f of FILE_FIELDS) if (typeof body[f] === 'string' && body[f] !== '' && !isAbsolute(body[f])) body[f] = join(dir, body[f]);
        const exec = body['exec'];
        if (isObject(exec)) body['exec'] = execFromDirectory(exec, dir);
        if (!into.has(name)) into.set(name, body as T);
      }
    };
    entries('clusters', 'cluster', merged.clusters);
    entries('users', 'user', merged.users);
    entries('contexts', 'context', merged.contexts);
  }
  return merged;
}

/**
 * An exec plugin's command as kubectl runs it: a command with a path separator in it ("./bin/auth", "tools/auth") is
 * relative to the kubeconfig's directory, not to wherever the injector was started; a bare name is looked up on PATH.
 */
function execFromDirectory(exec: Record<string, unknown>, dir: string): Record<string, unknown> {
  const command = exec['command'];
  if (typeof command !== 'string' || !command.includes(sep) || isAbsolute(command)) return exec;
  return { ...exec, command: join(dir, command) };
}

/** Credentials from the kubeconfig's own fields: files read again as they rotate, inline data as given. */
function staticAuthorize(cluster: ClusterEntry, user: UserEntry, source: string): Authorize {
  const material = (file: string | undefined, data: string | undefined, what: string): (() => Buffer) | undefined => {
    if (file) return rereadFile(file, `the kubeconfig from ${source}: ${what}`);
    if (!data) return undefined;
    const bytes = Buffer.from(data, 'base64');
    return () => bytes;
  };
  const ca = material(cluster['certificate-authority'], cluster['certificate-authority-data'], 'certificate authority');
  const cert = material(user['client-certificate'], user['client-certificate-data'], 'client certificate');
  const key = material(user['client-key'], user['client-key-data'], 'client key');
  if (!cert !== !key) throw new Error(`the kubeconfig from ${source}: a client certificate needs its key, and a key its certificate`);
  const pair = cert && key ? clientPair(cert, key) : undefined;
  const token = user.token ? () => user.token as string : user.tokenFile ? tokenFile(user.tokenFile) : undefined;
  const basic = user.username ? `Basic ${Buffer.from(`${user.username}:${user.password ?? ''}`).toString('base64')}` : undefined;
  const insecure = cluster['insecure-skip-tls-verify'] === true;
  const servername = cluster['tls-server-name'];
  return async (request) => {
    if (ca) request.ca = ca();
    if (pair) Object.assign(request, pair());
    if (insecure) request.rejectUnauthorized = false;
    if (servername) request.servername = servername;
    if (token) setHeader(request, 'authorization', `Bearer ${token()}`);
    else if (basic) setHeader(request, 'authorization', basic);
  };
}

/**
 * A client certificate and its key, each read again as it rotates. A tool that renews them writes one file after the
 * other: until both are new, the pair last seen to match is kept, so that no request goes out with a certificate that
 * its key does not sign for.
 */
function clientPair(cert: () => Buffer, key: () => Buffer): () => { cert: Buffer; key: Buffer } {
  let matched: { cert: Buffer; key: Buffer } | undefined;
  return () => {
    const next = { cert: cert(), key: key() };
    if (matched && matched.cert === next.cert && matched.key === next.key) return matched;
    let matches = false;
    try {
      matches = new X509Certificate(next.cert).checkPrivateKey(createPrivateKey(next.key));
    } catch {
      // Not a certificate or not a key (yet): the pair before stands.
    }
    if (matches || !matched) matched = next;
    return matched;
  };
}

/**
 * Credentials that only the Kubernetes client knows how to apply (exec plugins, auth providers, impersonation, a
 * proxy): one kubeconfig with just the chosen context, loaded into its KubeConfig, which fills each request's options.
 */
async function clientAuthorize(contextName: string, context: ContextEntry, cluster: ClusterEntry, user: UserEntry): Promise<Authorize> {
  const { KubeConfig } = await import('@kubernetes/client-node');
  const kc = new KubeConfig();
  kc.loadFromString(
    stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [{ name: 'cluster', cluster }],
      users: [{ name: 'user', user }],
      contexts: [{ name: contextName, context: { ...context, cluster: 'cluster', user: 'user' } }],
      'current-context': contextName,
    }),
  );
  const proxied = !!cluster['proxy-url'];
  return async (request) => {
    const ours = request.agent;
    await kc.applyToHTTPSOptions(request);
    // The client makes an agent per request; ours keeps connections open, and only a proxy needs the client's.
    if (!proxied) request.agent = ours;
  };
}

/**
 * A file's content, read again once the last read is older than FILE_TTL_MS. The first read must succeed; after it, a
 * failed read keeps the content read before (the file may be being replaced), and content that did not change is the
 * same Buffer, so that callers can tell a change by identity.
 */
function rereadFile(path: string, what: string): () => Buffer {
  const read = (): Buffer => readFileSync(path);
  let content: Buffer;
  try {
    content = read();
  } catch (err) {
    throw new Error(`${what} ${path}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
  let readAt = Date.now();
  return () => {
    if (Date.now() - readAt > FILE_TTL_MS) {
      try {
        const next = read();
        if (!next.equals(content)) content = next;
      } catch {
        // Being replaced, or gone for now: what was read before is still the best there is.
      }
      readAt = Date.now();
    }
    return content;
  };
}

/** The current token in a token file, read again as it rotates. */
function tokenFile(path: string): () => string {
  let read: (() => Buffer) | undefined;
  return () => {
    // Read on first use rather than at connection, as the kubelet may not have written the token yet.
    read ??= rereadFile(path, 'reading the token file');
    return read().toString('utf8').trim();
  };
}

function setHeader(request: { headers?: unknown }, name: string, value: string): void {
  request.headers = { ...((request.headers as Record<string, string>) ?? {}), [name]: value };
}
