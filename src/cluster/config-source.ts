/** Where the Linkerd configuration comes from, and the holder that keeps the last good one whatever the source. */
import type { Logger } from 'pino';
import { SourceUnavailableError } from '../admission/index.js';
import { DEFAULT_LINKERD_VERSION, linkerdVersionMismatch, prepareConfig, type InjectorConfig, type LinkerdValues } from '../engine/index.js';

export interface ConfigSource {
  /** The configuration in force. Throws a SourceUnavailableError (CONFIG_NOT_LOADED) saying why when none has loaded. */
  current(): InjectorConfig;
  /** Whether a configuration has loaded. */
  readonly loaded: boolean;
  close(): void;
}

/**
 * The configuration in force, replaced only by a valid new one: a new configuration that fails to build is logged and
 * counted, and the last good one stays. Shared by every source (files, or ConfigMaps watched through the API).
 */
export class ConfigHolder {
  private config: InjectorConfig | undefined;
  private problem = 'nothing has been read yet';

  constructor(
    private readonly controlPlaneNamespace: string,
    private readonly logger: Logger,
    private readonly onReload?: (applied: boolean, error?: Error) => void,
  ) {}

  get loaded(): boolean {
    return this.config !== undefined;
  }

  current(): InjectorConfig {
    if (this.config) return this.config;
    throw new SourceUnavailableError('CONFIG_NOT_LOADED', `the Linkerd configuration is not loaded: ${this.problem}`);
  }

  /** Builds and applies a new configuration from `source` (for the log); returns whether it was applied. */
  offer(source: string, build: () => LinkerdValues): boolean {
    const first = this.config === undefined;
    try {
      const values = build();
      // Checked and hashed once here, not for every pod.
      this.config = prepareConfig({ values, controlPlaneNamespace: this.controlPlaneNamespace });
      this.logger.info(
        { source, linkerdVersion: values.linkerdVersion, cniEnabled: values.cniEnabled, nativeSidecar: values.proxy.nativeSidecar },
        first ? 'loaded Linkerd configuration' : 'reloaded Linkerd configuration',
      );
      const mismatch = linkerdVersionMismatch(values);
      if (mismatch) this.logger.warn({ linkerdVersion: values.linkerdVersion, follows: DEFAULT_LINKERD_VERSION }, mismatch);
      if (!values.identityTrustAnchorsPEM.trim()) {
        this.logger.warn('no identity trust anchors are configured: pods that ask for injection will be denied until there are');
      }
      if (!first) this.onReload?.(true);
      return true;
    } catch (err) {
      const error = err instanceof Error ? err : new Error(String(err));
      if (first) this.problem = error.message;
      this.logger.error(
        { source, err: error.message },
        first ? 'cannot load the Linkerd configuration' : 'refusing the new Linkerd configuration; keeping the last good one',
      );
      if (!first) this.onReload?.(false, error);
      return false;
    }
  }
}
