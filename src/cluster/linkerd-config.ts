/**
 * The Linkerd configuration watched through the API: the `values` key of ConfigMap linkerd-config and the
 * `ca-bundle.crt` of ConfigMap linkerd-identity-trust-roots in the control-plane namespace. A change applies to the
 * next admission; an invalid one is logged and refused, and the last good configuration stays in force.
 */
import type { V1ConfigMap } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { loadValues, prepareConfig, withCheckedTrustAnchors, type InjectorConfig, type LinkerdValues } from '../engine/index.js';
import { apiStatus } from './api.js';
import type { ApiClient } from './client.js';
import { ConfigHolder, type ConfigSource } from './config-source.js';
import { ResilientInformer } from './informer.js';

export const LINKERD_CONFIG = 'linkerd-config';
export const TRUST_ROOTS = 'linkerd-identity-trust-roots';

export interface ApiConfigOptions {
  client: ApiClient;
  controlPlaneNamespace: string;
  logger: Logger;
  onReload?: (applied: boolean, error?: Error) => void;
  onRestart?: (reason: 'error' | 'watchdog') => void;
  watchdogMs?: number;
}

export class ApiConfigSource implements ConfigSource {
  private readonly holder: ConfigHolder;
  /** The data last turned into a configuration, so unrelated ConfigMap updates cause no reload. */
  private applied = '';
  /** The two ConfigMaps' data as the events delivered them (a fresh list arrives before its cache is swapped in). */
  private valuesText: string | undefined;
  private anchorsText: string | undefined;
  private scheduled: NodeJS.Immediate | undefined;
  private readonly informer: ResilientInformer<V1ConfigMap>;

  constructor(private readonly options: ApiConfigOptions) {
    this.holder = new ConfigHolder(options.controlPlaneNamespace, options.logger, options.onReload);
    this.informer = new ResilientInformer<V1ConfigMap>({
      name: 'linkerd configuration',
      client: options.client,
      path: `/api/v1/namespaces/${encodeURIComponent(options.controlPlaneNamespace)}/configmaps`,
      logger: options.logger,
      onChange: (type, cm) => {
        const name = cm.metadata?.name;
        if (name === LINKERD_CONFIG) this.valuesText = type === 'delete' ? undefined : cm.data?.['values'];
        else if (name === TRUST_ROOTS) this.anchorsText = type === 'delete' ? undefined : cm.data?.['ca-bundle.crt'];
        else return;
        // Both ConfigMaps usually arrive in one list: build once, after the list has been delivered.
        this.scheduled ??= setImmediate(() => {
          this.scheduled = undefined;
          this.rebuild();
        });
      },
      ...(options.onRestart && { onRestart: options.onRestart }),
      ...(options.watchdogMs !== undefined && { watchdogMs: options.watchdogMs }),
    });
  }

  get loaded(): boolean {
    return this.holder.loaded;
  }

  get hasSynced(): boolean {
    return this.informer.hasSynced;
  }

  start(): void {
    this.informer.start();
  }

  waitForSync(timeoutMs: number): Promise<boolean> {
    return this.informer.waitForSync(timeoutMs);
  }

  current(): InjectorConfig {
    return this.holder.current();
  }

  close(): void {
    if (this.scheduled) clearImmediate(this.scheduled);
    void this.informer.stop();
  }

  private rebuild(): void {
    const ns = this.options.controlPlaneNamespace;
    const values = this.valuesText;
    const anchors = this.anchorsText;
    const fingerprint = `${values ?? ''}\u0000${anchors ?? ''}`;
    if (fingerprint === this.applied) return;
    this.applied = fingerprint;
    this.holder.offer(configMapsSource(ns, anchors), () => valuesOf(ns, values, anchors));
  }
}

const configMapsSource = (ns: string, anchors: string | undefined): string =>
  `ConfigMaps ${ns}/${LINKERD_CONFIG}${anchors !== undefined ? ` and ${ns}/${TRUST_ROOTS}` : ''}`;

/** The values the two ConfigMaps' data make; throws what is wrong with them. */
function valuesOf(ns: string, values: string | undefined, anchors: string | undefined): LinkerdValues {
  if (values === undefined) throw new Error(`ConfigMap ${ns}/${LINKERD_CONFIG} has no "values" key`);
  const given = anchors !== undefined ? { pem: anchors, source: `the "ca-bundle.crt" of ConfigMap ${ns}/${TRUST_ROOTS}` } : undefined;
  return withCheckedTrustAnchors(loadValues(values), given, `ConfigMap ${ns}/${LINKERD_CONFIG}`);
}

/**
 * The configuration the two ConfigMaps hold now, read once, with where it was read; for a command that compares
 * pods with it. Throws an ApiError when linkerd-config cannot be read, an Error when what it holds is not valid.
 */
export async function readLinkerdConfig(client: ApiClient, ns: string): Promise<{ config: InjectorConfig; source: string }> {
  const read = async (name: string, key: string): Promise<string | undefined> => {
    const path = `/api/v1/namespaces/${encodeURIComponent(ns)}/configmaps/${name}`;
    try {
      const cm = await client.request<V1ConfigMap>('GET', path, { what: `reading ConfigMap ${ns}/${name}`, timeoutMs: 30_000 });
      return cm.data?.[key];
    } catch (err) {
      // As the watch: without the trust roots' ConfigMap, the anchors in linkerd-config's values are the ones in force.
      if (name === TRUST_ROOTS && apiStatus(err) === 404) return undefined;
      throw err;
    }
  };
  const values = await read(LINKERD_CONFIG, 'values');
  const anchors = await read(TRUST_ROOTS, 'ca-bundle.crt');
  return { config: prepareConfig({ values: valuesOf(ns, values, anchors), controlPlaneNamespace: ns }), source: configMapsSource(ns, anchors) };
}
