/**
 * The Linkerd configuration watched through the API: the `values` key of ConfigMap linkerd-config and the
 * `ca-bundle.crt` of ConfigMap linkerd-identity-trust-roots in the control-plane namespace. A change applies to the
 * next admission; an invalid one is logged and refused, and the last good configuration stays in force.
 */
import type { V1ConfigMap } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { loadValues, withCheckedTrustAnchors, type InjectorConfig } from '../engine/index.js';
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
    this.holder.offer(`ConfigMaps ${ns}/${LINKERD_CONFIG}${anchors !== undefined ? ` and ${ns}/${TRUST_ROOTS}` : ''}`, () => {
      if (values === undefined) throw new Error(`ConfigMap ${ns}/${LINKERD_CONFIG} has no "values" key`);
      const given = anchors !== undefined ? { pem: anchors, source: `the "ca-bundle.crt" of ConfigMap ${ns}/${TRUST_ROOTS}` } : undefined;
      return withCheckedTrustAnchors(loadValues(values), given, `ConfigMap ${ns}/${LINKERD_CONFIG}`);
    });
  }
}
