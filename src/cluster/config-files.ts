/** The Linkerd configuration from files (a values YAML and a trust-anchors PEM), re-read when they change. */
import { readFileSync, statSync } from 'node:fs';
import type { Logger } from 'pino';
import { defaultValues, loadValues, prepareConfig, withTrustAnchors, type InjectorConfig, type LinkerdValues } from '../engine/index.js';

export interface ConfigSource {
  /** The configuration in force. Throws an Error saying why when none has ever loaded. */
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
    throw new Error(`the Linkerd configuration is not loaded: ${this.problem}`);
  }

  /** Builds and applies a new configuration from `source` (for the log); returns whether it was applied. */
  offer(source: string, build: () => LinkerdValues): boolean {
    const first = this.config === undefined;
    try {
      const values = build();
      // Checked and hashed once here, not for every pod.
      this.config = prepareConfig({ values, controlPlaneNamespace: this.controlPlaneNamespace });
      this.logger.info(
        { source, cniEnabled: values.cniEnabled, nativeSidecar: values.proxy.nativeSidecar },
        first ? 'loaded Linkerd configuration' : 'reloaded Linkerd configuration',
      );
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

export interface FileConfigOptions {
  /** A Linkerd values YAML file; absent means the embedded defaults. */
  valuesPath?: string;
  /** The trust anchors PEM; absent means the values' own `identityTrustAnchorsPEM`. */
  trustAnchorsPath?: string;
  controlPlaneNamespace: string;
  logger: Logger;
  /** How often to look for changes, ms (default 2000; 0 turns it off). */
  pollMs?: number;
  /** Told of every load attempt after the first: true when applied, false when refused. */
  onReload?: (applied: boolean, error?: Error) => void;
}

/** What identifies a file's content cheaply: kubelet's symlink swap changes the inode, an edit changes mtime or size. */
function fingerprint(path: string | undefined): string {
  if (!path) return '-';
  try {
    const s = statSync(path);
    return `${s.ino}:${s.size}:${s.mtimeMs}`;
  } catch {
    return 'missing';
  }
}

export class FileConfigSource implements ConfigSource {
  private readonly holder: ConfigHolder;
  private seen = '';
  private readonly timer: NodeJS.Timeout | undefined;

  constructor(private readonly options: FileConfigOptions) {
    this.holder = new ConfigHolder(options.controlPlaneNamespace, options.logger, options.onReload);
    this.reload();
    const pollMs = options.pollMs ?? 2000;
    if (pollMs > 0) {
      this.timer = setInterval(() => this.poll(), pollMs);
      this.timer.unref();
    }
  }

  get loaded(): boolean {
    return this.holder.loaded;
  }

  current(): InjectorConfig {
    return this.holder.current();
  }

  /** Re-reads the files if they changed since the last attempt. */
  poll(): void {
    const now = `${fingerprint(this.options.valuesPath)}|${fingerprint(this.options.trustAnchorsPath)}`;
    if (now !== this.seen) this.reload();
  }

  private reload(): void {
    const { valuesPath, trustAnchorsPath } = this.options;
    this.seen = `${fingerprint(valuesPath)}|${fingerprint(trustAnchorsPath)}`;
    const source = `${valuesPath ?? '(embedded defaults)'}${trustAnchorsPath ? ` and ${trustAnchorsPath}` : ''}`;
    this.holder.offer(source, () => {
      const values: LinkerdValues = valuesPath ? loadValues(read(valuesPath, 'values')) : defaultValues();
      return trustAnchorsPath ? withTrustAnchors(values, read(trustAnchorsPath, 'trust anchors')) : values;
    });
  }

  close(): void {
    if (this.timer) clearInterval(this.timer);
  }
}

function read(path: string, what: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch (err) {
    throw new Error(`cannot read the ${what} file ${path}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
}
