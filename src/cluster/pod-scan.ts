/**
 * `serve --pod-scan-interval`: `check pods`' audit run by the webhook itself on an interval, against the configuration
 * it injects with, its counts exported as gauges. Listing every pod is a read the webhook does not otherwise make, so
 * it is off unless asked for (the chart then grants `list` on pods); nothing of a scan is kept but its counts.
 */
import type { Logger } from 'pino';
import type { DriftKind, InjectorConfig } from '../engine/index.js';
import { apiErrorMessage } from './api.js';
import type { ClusterConnection } from './kubeconfig.js';
import { auditPods, POD_STATES, type PodState, type PodsReport } from './pod-audit.js';
import { Repeating } from './repeating.js';

/** What one scan found: pods by namespace and state, and drifted pods by namespace and kind of difference. */
export interface PodScanCounts {
  pods: Map<string, Partial<Record<PodState, number>>>;
  drifted: Map<string, Partial<Record<DriftKind, number>>>;
}

/** Where a scan's results go: the server's metrics. */
export interface PodScanMetrics {
  podScanned(counts: PodScanCounts): void;
  podScanFailed(): void;
}

export interface PodScanOptions {
  cluster: ClusterConnection;
  /** The configuration in force; throws while none has loaded (the scan then waits for the next turn). */
  config: () => InjectorConfig;
  kubectlDefaultContainer: boolean;
  intervalMs: number;
  metrics: PodScanMetrics;
  logger: Logger;
}

/**
 * Pods a page of the webhook's own scan: audited in one turn of the event loop, at about half a millisecond a pod,
 * so that an admission waits at most some 10 ms for the scan.
 */
const SCAN_PAGE_SIZE = 20;

/** The counts a report holds, by namespace; the report itself is dropped by the caller. */
export function countsOf(report: PodsReport): PodScanCounts {
  const pods = new Map<string, Partial<Record<PodState, number>>>();
  const drifted = new Map<string, Partial<Record<DriftKind, number>>>();
  for (const w of report.workloads) {
    const states = pods.get(w.namespace) ?? {};
    pods.set(w.namespace, states);
    for (const state of POD_STATES) if (w.counts[state]) states[state] = (states[state] ?? 0) + (w.counts[state] ?? 0);
    for (const pod of w.pods) {
      if (!pod.kinds) continue;
      const kinds = drifted.get(w.namespace) ?? {};
      drifted.set(w.namespace, kinds);
      for (const kind of pod.kinds) kinds[kind] = (kinds[kind] ?? 0) + 1;
    }
  }
  return { pods, drifted };
}

/** Scans now and then every `intervalMs` after the previous scan ended, until stopped; one scan at a time. */
export class PodScan {
  private readonly repeating: Repeating;

  constructor(private readonly options: PodScanOptions) {
    this.repeating = new Repeating(() => this.scan(), options.intervalMs);
  }

  start(): void {
    this.repeating.start();
  }

  /** Stops scanning; a scan under way finishes its current page, and its result is dropped. */
  stop(): Promise<void> {
    return this.repeating.stop();
  }

  private async scan(): Promise<void> {
    const { logger, metrics } = this.options;
    const started = performance.now();
    try {
      const config = this.options.config();
      const report = await auditPods(this.options.cluster, {
        config: { config, source: "the injector's configuration" },
        kubectlDefaultContainer: this.options.kubectlDefaultContainer,
        pageSize: SCAN_PAGE_SIZE,
      });
      if (this.repeating.isStopped) return;
      metrics.podScanned(countsOf(report));
      const seconds = ((performance.now() - started) / 1e3).toFixed(1);
      logger.info({ counts: report.counts, seconds: Number(seconds) }, `scanned the running pods in ${seconds} s`);
    } catch (err) {
      if (this.repeating.isStopped) return;
      metrics.podScanFailed();
      logger.warn({ err: apiErrorMessage(err) }, 'could not scan the running pods; the gauges keep the last scan');
    }
  }
}
