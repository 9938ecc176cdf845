/** The Linkerd configuration from files (a values YAML and a trust-anchors PEM), re-read when they change. */
import { readFileSync, statSync } from 'node:fs';
import type { Logger } from 'pino';
import { defaultValues, loadValues, withCheckedTrustAnchors, type InjectorConfig, type LinkerdValues } from '../engine/index.js';
import { ConfigHolder, type ConfigSource } from './config-source.js';

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
      const anchors = trustAnchorsPath ? { pem: read(trustAnchorsPath, 'trust anchors'), source: `the trust anchors file ${trustAnchorsPath}` } : undefined;
      return withCheckedTrustAnchors(values, anchors, `the values file ${valuesPath ?? '(embedded defaults)'}`);
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
