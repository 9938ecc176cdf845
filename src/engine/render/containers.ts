/** The containers and volumes the injector adds: linkerd-init or the network validator, the proxy, the debug sidecar. */
import {
  DEBUG_CONTAINER,
  END_ENTITY_VOLUME,
  IDENTITY_TOKEN_VOLUME,
  INIT_CONTAINER,
  PODINFO_VOLUME,
  PROXY_CONTAINER,
  SERVICE_ACCOUNT_MOUNT_PATH,
  VALIDATOR_CONTAINER,
} from '../names.js';
import {
  copyPlain,
  isObject,
  objectsIn,
  stringsIn,
  type Capabilities,
  type Container,
  type EnvVar,
  type JsonObject,
  type VolumeMount,
} from '../k8s.js';
import { deepFreeze } from '../memo.js';
import { defaultValues, type LinkerdValues } from '../values.js';

/** What the template needs to know of the app's first container. */
export interface AppContext {
  /** Capabilities of the first app container, when it declares any. */
  capabilities?: Capabilities;
  /** The first app container's service-account token mount, copied onto linkerd-init and the proxy. */
  serviceAccountMount?: { mountPath: string; name: string; readOnly: boolean };
}

export function appContext(first: Container | undefined): AppContext {
  const ctx: AppContext = {};
  const securityContext: unknown = first?.securityContext;
  const caps: unknown = isObject(securityContext) ? securityContext['capabilities'] : undefined;
  if (isObject(caps)) ctx.capabilities = { add: stringsIn(caps['add']), drop: stringsIn(caps['drop']) };
  const mount = objectsIn<VolumeMount>(first?.volumeMounts).find((m) => m.mountPath === SERVICE_ACCOUNT_MOUNT_PATH);
  if (mount) {
    ctx.serviceAccountMount = { mountPath: SERVICE_ACCOUNT_MOUNT_PATH, name: String(mount.name ?? ''), readOnly: mount.readOnly === true };
  }
  return ctx;
}

/**
 * The proxy's capabilities: the first app container's when it declares any (even none), else `proxy.capabilities`
 * from the values, as Linkerd chooses them.
 */
function proxyCapabilities(values: LinkerdValues, app: AppContext): Capabilities | undefined {
  if (app.capabilities) return app.capabilities;
  const own = values.proxy.capabilities;
  return own ? { add: own.add ?? [], drop: own.drop ?? [] } : undefined;
}

/**
 * linkerd-init's capabilities beyond its own NET_ADMIN and NET_RAW: the proxy's adds and its drops except those two,
 * which iptables needs; without proxy capabilities, `proxyInit.capabilities` from the values as given.
 */
function initCapabilities(values: LinkerdValues, app: AppContext): Capabilities {
  const proxy = proxyCapabilities(values, app);
  if (proxy) return { add: proxy.add ?? [], drop: (proxy.drop ?? []).filter((c) => c !== 'NET_ADMIN' && c !== 'NET_RAW') };
  const own = values.proxyInit.capabilities;
  return { add: own?.add ?? [], drop: own?.drop ?? [] };
}

export function proxyImage(values: LinkerdValues): string {
  return `${values.proxy.image.name}:${values.proxy.image.version || values.linkerdVersion}`;
}

function pullPolicy(own: string, values: LinkerdValues): string {
  return own || values.imagePullPolicy;
}

/** `resources` of the proxy (and of linkerd-init and the validator): null when nothing is set, as Linkerd emits it. */
export function proxyResources(values: LinkerdValues): JsonObject | null {
  const r = values.proxy.resources;
  const pick = (field: 'limit' | 'request'): JsonObject | undefined => {
    const out: JsonObject = {};
    for (const name of ['cpu', 'memory', 'ephemeral-storage'] as const) {
      const v = r[name]?.[field];
      if (v) out[name] = v;
    }
    return Object.keys(out).length > 0 ? out : undefined;
  };
  const limits = pick('limit');
  const requests = pick('request');
  if (!limits && !requests) return null;
  const out: JsonObject = {};
  if (limits) out['limits'] = limits;
  if (requests) out['requests'] = requests;
  return out;
}

function nonEmpty(list: string[] | undefined): list is string[] {
  return Array.isArray(list) && list.length > 0;
}

/** Renders an integer setting in plain decimal (Linkerd's templates would print 1e6 and above in exponent form). */
const int = (n: number): string => String(Math.trunc(n));

// Parts of the containers that never vary, shared (frozen) by every patch instead of built for each pod. Only objects:
// an array in a patch is always the patch's own (see `volumes`).
const RUNTIME_DEFAULT: JsonObject = deepFreeze({ type: 'RuntimeDefault' });
const END_ENTITY_MOUNT: JsonObject = deepFreeze({ mountPath: '/var/run/linkerd/identity/end-entity', name: END_ENTITY_VOLUME });
const PODINFO_MOUNT: JsonObject = deepFreeze({ mountPath: '/var/run/linkerd/podinfo', name: PODINFO_VOLUME });
const IDENTITY_TOKEN_MOUNT: JsonObject = deepFreeze({ mountPath: '/var/run/secrets/tokens', name: IDENTITY_TOKEN_VOLUME });

export function initContainer(values: LinkerdValues, app: AppContext): JsonObject {
  const init = values.proxyInit;
  const ports = values.proxy.ports;
  const args: string[] = [];
  if (init.iptablesMode === 'nft') {
    args.push('--firewall-bin-path', 'iptables-nft', '--firewall-save-bin-path', 'iptables-nft-save');
  }
  if (values.disableIPv6) args.push('--ipv6=false');
  args.push(
    '--incoming-proxy-port',
    int(ports.inbound),
    '--outgoing-proxy-port',
    int(ports.outbound),
    '--proxy-uid',
    int(values.proxy.uid),
  );
  if (values.proxy.gid >= 0) args.push('--proxy-gid', int(values.proxy.gid));
  const ignoredInbound = [int(ports.control), int(ports.admin), init.ignoreInboundPorts].filter((p) => p !== '');
  args.push('--inbound-ports-to-ignore', ignoredInbound.join(','));
  if (init.ignoreOutboundPorts) args.push('--outbound-ports-to-ignore', init.ignoreOutboundPorts);
  if (init.closeWaitTimeoutSecs > 0) args.push('--timeout-close-wait-secs', int(init.closeWaitTimeoutSecs));
  if (init.logFormat) args.push('--log-format', init.logFormat);
  if (init.logLevel) args.push('--log-level', init.logLevel);
  if (init.skipSubnets) args.push('--subnets-to-ignore', init.skipSubnets);

  const privileged = init.closeWaitTimeoutSecs > 0 || init.privileged;
  const extra = initCapabilities(values, app);
  const capabilities: JsonObject = { add: ['NET_ADMIN', 'NET_RAW', ...(extra.add ?? [])] };
  if (nonEmpty(extra.drop)) capabilities['drop'] = [...extra.drop];
  const identity: JsonObject = init.runAsRoot
    ? { runAsGroup: 0, runAsNonRoot: false, runAsUser: 0 }
    : { runAsNonRoot: true, runAsUser: init.runAsUser || 65534, runAsGroup: init.runAsGroup || 65534 };
  const mounts: JsonObject[] = [{ mountPath: init.xtMountPath.mountPath, name: init.xtMountPath.name }];
  if (app.serviceAccountMount) mounts.push({ ...app.serviceAccountMount });
  return {
    args,
    image: proxyImage(values),
    imagePullPolicy: pullPolicy(values.proxy.image.pullPolicy, values),
    command: ['/usr/lib/linkerd/linkerd2-proxy-init'],
    name: INIT_CONTAINER,
    resources: proxyResources(values),
    securityContext: {
      allowPrivilegeEscalation: privileged,
      capabilities,
      privileged,
      ...identity,
      readOnlyRootFilesystem: true,
      seccompProfile: RUNTIME_DEFAULT,
    },
    terminationMessagePolicy: 'FallbackToLogsOnError',
    volumeMounts: mounts,
  };
}

export function validatorContainer(values: LinkerdValues): JsonObject {
  const v = values.networkValidator;
  const connect = v.connectAddr || (values.disableIPv6 ? '1.1.1.1:20001' : '[fd00::1]:20001');
  const listen = v.listenAddr || (values.disableIPv6 ? '0.0.0.0:4140' : '[::]:4140');
  return {
    name: VALIDATOR_CONTAINER,
    image: proxyImage(values),
    imagePullPolicy: pullPolicy(values.proxy.image.pullPolicy, values),
    resources: proxyResources(values),
    command: ['/usr/lib/linkerd/linkerd2-network-validator'],
    args: ['--log-format', v.logFormat, '--log-level', v.logLevel, '--connect-addr', connect, '--listen-addr', listen, '--timeout', v.timeout],
    // An empty securityContext in the values means Linkerd's default one, as its template reads it.
    securityContext: copyPlain(
      Object.keys(v.securityContext ?? {}).length > 0 ? v.securityContext : defaultValues().networkValidator.securityContext,
    ) as JsonObject,
  };
}

export function debugContainer(values: LinkerdValues): JsonObject {
  const image = values.debugContainer.image;
  const alwaysTrue = { exec: { command: ['true'] } };
  return {
    image: `${image.name}:${image.version || values.linkerdVersion}`,
    imagePullPolicy: pullPolicy(image.pullPolicy, values),
    name: DEBUG_CONTAINER,
    terminationMessagePolicy: 'FallbackToLogsOnError',
    livenessProbe: alwaysTrue,
    readinessProbe: copyPlain(alwaysTrue),
  };
}

export interface ProxyContainerInput {
  values: LinkerdValues;
  env: EnvVar[];
  app: AppContext;
}

export function proxyContainer({ values, env, app }: ProxyContainerInput): JsonObject {
  const proxy = values.proxy;
  const admin = proxy.ports.admin;
  const native = proxy.nativeSidecar;
  const container: JsonObject = {
    env: env as unknown as JsonObject[],
    image: proxyImage(values),
    imagePullPolicy: pullPolicy(proxy.image.pullPolicy, values),
  };
  if (!native) {
    const lifecycle: JsonObject = {};
    if (proxy.await) {
      lifecycle['postStart'] = {
        exec: { command: ['/usr/lib/linkerd/linkerd-await', '--timeout=2m', `--port=${admin}`] },
      };
    }
    if (proxy.waitBeforeExitSeconds > 0) {
      lifecycle['preStop'] = { exec: { command: ['/bin/sleep', int(proxy.waitBeforeExitSeconds)] } };
    }
    if (Object.keys(lifecycle).length > 0) container['lifecycle'] = lifecycle;
  }
  container['livenessProbe'] = {
    httpGet: { path: '/live', port: admin },
    initialDelaySeconds: proxy.livenessProbe.initialDelaySeconds,
    timeoutSeconds: proxy.livenessProbe.timeoutSeconds,
  };
  container['name'] = PROXY_CONTAINER;
  container['ports'] = [
    { containerPort: proxy.ports.inbound, name: 'linkerd-proxy' },
    { containerPort: admin, name: 'linkerd-admin' },
  ];
  container['readinessProbe'] = {
    httpGet: { path: '/ready', port: admin },
    initialDelaySeconds: proxy.readinessProbe.initialDelaySeconds,
    timeoutSeconds: proxy.readinessProbe.timeoutSeconds,
  };
  container['resources'] = proxyResources(values);
  if (native) container['restartPolicy'] = 'Always';
  container['securityContext'] = proxySecurityContext(values, app);
  if (native && proxy.await) {
    container['startupProbe'] = {
      httpGet: { path: '/ready', port: admin },
      initialDelaySeconds: proxy.startupProbe.initialDelaySeconds,
      periodSeconds: proxy.startupProbe.periodSeconds,
      failureThreshold: proxy.startupProbe.failureThreshold,
    };
  }
  container['terminationMessagePolicy'] = 'FallbackToLogsOnError';
  const mounts: JsonObject[] = [END_ENTITY_MOUNT];
  if (proxy.tracing?.enabled) mounts.push(PODINFO_MOUNT);
  if (values.identity.serviceAccountTokenProjection) mounts.push(IDENTITY_TOKEN_MOUNT);
  if (app.serviceAccountMount) mounts.push({ ...app.serviceAccountMount });
  container['volumeMounts'] = mounts;
  return container;
}

function proxySecurityContext(values: LinkerdValues, app: AppContext): JsonObject {
  const own = values.proxy.securityContext;
  if (own && Object.keys(own).length > 0) return copyPlain(own) as JsonObject;
  const ctx: JsonObject = { allowPrivilegeEscalation: false };
  const caps = proxyCapabilities(values, app);
  if (caps && (nonEmpty(caps.add) || nonEmpty(caps.drop))) {
    const copied: JsonObject = {};
    if (nonEmpty(caps.add)) copied['add'] = [...caps.add];
    if (nonEmpty(caps.drop)) copied['drop'] = [...caps.drop];
    ctx['capabilities'] = copied;
  }
  ctx['readOnlyRootFilesystem'] = true;
  ctx['runAsNonRoot'] = true;
  ctx['runAsUser'] = values.proxy.uid;
  if (values.proxy.gid >= 0) ctx['runAsGroup'] = values.proxy.gid;
  ctx['seccompProfile'] = RUNTIME_DEFAULT;
  return ctx;
}

/** The end-entity volume, which does not depend on the configuration: built once and shared (frozen) by every patch. */
const END_ENTITY: JsonObject = deepFreeze({ name: END_ENTITY_VOLUME, emptyDir: { medium: 'Memory' } });

/**
 * The volumes the proxy needs. Those that hold an array are built for each patch rather than shared frozen: V8
 * serialises a patch that holds frozen arrays markedly slower, and serialising the patch is the largest part of an
 * uncached answer's own work (docs/performance.md).
 */
export const volumes = {
  xtablesLock: (values: LinkerdValues): JsonObject => ({ emptyDir: {}, name: values.proxyInit.xtMountPath.name }),
  endEntity: (): JsonObject => END_ENTITY,
  podinfo: (): JsonObject => ({
    name: PODINFO_VOLUME,
    downwardAPI: { items: [{ fieldRef: { fieldPath: 'metadata.labels' }, path: 'labels' }] },
  }),
  identityToken: (): JsonObject => ({
    name: IDENTITY_TOKEN_VOLUME,
    projected: {
      sources: [{ serviceAccountToken: { audience: 'identity.l5d.io', expirationSeconds: 86400, path: 'linkerd-identity-token' } }],
    },
  }),
};
