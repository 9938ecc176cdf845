/**
 * The API server's Kubernetes release, read from its `/version` (which every client may read) when the injector starts
 * and again every ten minutes, since a control plane is upgraded under running pods. Admission never waits for it:
 * until the first read answers, and while reads fail, the last release known stands (none at first), and the risks
 * that depend on it are left out rather than guessed.
 */
import type { Logger } from 'pino';
import { serverVersionOf, versionText, type KubernetesVersion } from '../engine/index.js';
import { apiErrorMessage } from './api.js';
import type { ApiClient } from './client.js';

export interface ServerVersionOptions {
  client: ApiClient;
  logger: Logger;
  /** Between reads; 10 minutes by default. */
  intervalMs?: number;
  /** For one read; 5 s by default. */
  timeoutMs?: number;
}

export class ServerVersion {
  private known: KubernetesVersion | undefined;
  /** The text of the last version read, or of the last failure: what was logged, so that a repeat is not. */
  private lastSaid = '';
  private timer: NodeJS.Timeout | undefined;
  private reading: Promise<void> | undefined;
  private stopped = false;

  constructor(private readonly options: ServerVersionOptions) {}

  /** The release last read, if any. */
  current(): KubernetesVersion | undefined {
    return this.known;
  }

  /** Reads the version now and then every interval, until stopped. */
  start(): void {
    if (this.timer || this.stopped) return;
    void this.read();
    this.timer = setInterval(() => void this.read(), this.options.intervalMs ?? 600_000);
    this.timer.unref();
  }

  /** One read; concurrent calls share it. Never fails: a failure is logged and the last release known is kept. */
  read(): Promise<void> {
    this.reading ??= this.readOnce().finally(() => {
      this.reading = undefined;
    });
    return this.reading;
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }

  private async readOnce(): Promise<void> {
    const { client, logger } = this.options;
    let info: unknown;
    try {
      info = await client.request<unknown>('GET', '/version', { what: "reading the API server's version", timeoutMs: this.options.timeoutMs ?? 5_000 });
    } catch (err) {
      this.say(`failed: ${apiErrorMessage(err)}`, () =>
        logger.warn(
          { err: apiErrorMessage(err), kept: this.known && versionText(this.known) },
          "could not read the API server's version: risks that depend on it are left out until it is read",
        ),
      );
      return;
    }
    if (this.stopped) return;
    const version = serverVersionOf(info);
    const gitVersion = (info as { gitVersion?: unknown } | null)?.gitVersion;
    if (!version) {
      this.say(`unreadable: ${JSON.stringify(info)}`, () =>
        logger.warn({ answer: JSON.stringify(info)?.slice(0, 200) }, "the API server's /version names no release this injector can read: risks that depend on it are left out"),
      );
      return;
    }
    this.known = version;
    this.say(versionText(version), () => logger.info({ kubernetes: typeof gitVersion === 'string' ? gitVersion : versionText(version) }, 'Kubernetes API server version'));
  }

  private say(what: string, log: () => void): void {
    if (what === this.lastSaid || this.stopped) return;
    this.lastSaid = what;
    log();
  }
}
