/** Prometheus metrics: Linkerd's admission counters with their labels, latency, failures, and process metrics. */
import type { Counter, Gauge, Metric, Registry } from 'prom-client';
import { ADMISSION_FAILURE_CODES, type AdmissionFailureCode, type HandledAdmission } from '../admission/index.js';
import { clip, DEFAULT_LINKERD_VERSION, names } from '../engine/index.js';
import { ConfigLabelValues, LabelSetCap, OTHER, ownerKindLabel } from './metric-labels.js';

/** Linkerd's label for each proxy annotation: the text after the first "/", with "-" as "_". */
export function configLabel(annotation: string): string {
  return annotation.slice(annotation.indexOf('/') + 1).replace(/-/g, '_');
}

const CONFIG_LABELS = names.PROXY_ANNOTATIONS.map(configLabel);
const CONFIG_INDEX = new Map(names.PROXY_ANNOTATIONS.map((key, i) => [key, i]));

/** Why a request was refused before it reached the engine; the `reason` label of the refusals counter. */
export type RefusalReason =
  | 'not_found'
  | 'body_too_large'
  | 'unsupported_media_type'
  | 'empty_body'
  | 'invalid_json'
  | 'request_timeout'
  | 'invalid_review'
  | 'headers_too_large'
  | 'malformed_http'
  | 'too_many_values'
  | 'client_bytes_in_flight'
  | 'too_many_bytes_in_flight'
  | 'internal_error';

/**
 * A counter kept by label set in a plain map, whose totals are handed to prom-client when metrics are scraped:
 * prom-client validates and hashes every label on every increment, which for the 43 labels of the admission counters
 * costs more than the engine's own work, and this way it does so once per label set and scrape.
 */
class DeferredCounter {
  private readonly pending = new Map<string, { labels: Record<string, string>; count: number }>();

  constructor(
    readonly name: string,
    readonly help: string,
    readonly labelNames: readonly string[],
  ) {}

  /** Counts under `key`, which stands for the labels `labels()` builds (called only for a key not seen since the last scrape). */
  add(key: string, labels: () => Record<string, string>, count = 1): void {
    const entry = this.pending.get(key);
    if (entry) entry.count += count;
    else this.pending.set(key, { labels: labels(), count });
  }

  inc(labels: Record<string, string>, count = 1): void {
    this.add(this.labelNames.map((name) => labels[name] ?? '').join('\u0001'), () => labels, count);
  }

  flushInto(counter: Counter): void {
    for (const { labels, count } of this.pending.values()) counter.inc(labels, count);
    this.pending.clear();
  }
}

interface OpenLabels {
  owner: string;
  namespace: string;
  values: readonly string[];
}

/** The open labels of a label set beyond the cap: everything a client chooses is `other`. */
const FOLDED: OpenLabels = { owner: OTHER, namespace: OTHER, values: CONFIG_LABELS.map(() => OTHER) };

/** The configuration labels of a workload that sets none of the annotations (most workloads), and their key part. */
const UNCONFIGURED: readonly string[] = CONFIG_LABELS.map(() => '');

/**
 * The key of a label set: its open labels, then only the configuration labels that are set, by position. Most are
 * unset, and a key of the set ones alone is shorter to build and to hash on every admission.
 */
function labelKey(open: OpenLabels, annotationAt: string): string {
  let key = `${open.owner}\u0001${open.namespace}\u0001${annotationAt}`;
  const values = open.values;
  if (values === UNCONFIGURED) return key;
  for (let i = 0; i < values.length; i++) if (values[i] !== '') key += `\u0001${i}\u0002${values[i] as string}`;
  return key;
}

/** The key of the folded label set for each `annotation_at`, made once: past the cap, every new label set is counted under it. */
const foldedKeys = new Map<string, string>();

function foldedKey(annotationAt: string): string {
  let key = foldedKeys.get(annotationAt);
  if (key === undefined) {
    key = labelKey(FOLDED, annotationAt);
    foldedKeys.set(annotationAt, key);
  }
  return key;
}

/** Most response prefixes (skip and its reasons) whose folded key is remembered per `annotation_at`. */
const MAX_FOLDED_RESPONSE_KEYS = 64;

function isEmpty(map: Record<string, string>): boolean {
  for (const _ in map) return false;
  return true;
}

function labelSet(open: OpenLabels, annotationAt: string): Record<string, string> {
  const labels: Record<string, string> = { owner_kind: open.owner, namespace: open.namespace, annotation_at: annotationAt };
  for (const [i, name] of CONFIG_LABELS.entries()) labels[name] = open.values[i] ?? '';
  return labels;
}

/** Upper bounds of the admission duration histogram, in seconds. */
const DURATION_BOUNDS = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5];

/**
 * The admission duration histogram by outcome, counted in plain arrays and handed to the registry in the shape of
 * prom-client's own histograms (the same exposition), for the reason DeferredCounter gives. The outcomes are a fixed
 * handful.
 */
class DurationHistogram {
  readonly name = 'proxy_inject_admission_duration_seconds';
  readonly help = 'Time to answer an admission request, from its body read to its response encoded, by outcome.';
  readonly type = 'histogram';
  readonly aggregator = 'sum';
  private readonly byOutcome = new Map<string, { counts: number[]; sum: number; count: number }>();

  observe(outcome: string, seconds: number): void {
    let series = this.byOutcome.get(outcome);
    if (!series) {
      series = { counts: DURATION_BOUNDS.map(() => 0), sum: 0, count: 0 };
      this.byOutcome.set(outcome, series);
    }
    const at = DURATION_BOUNDS.findIndex((bound) => seconds <= bound);
    if (at >= 0) series.counts[at] = (series.counts[at] ?? 0) + 1;
    series.sum += seconds;
    series.count++;
  }

  get(): Promise<{ name: string; help: string; type: string; aggregator: string; values: unknown[] }> {
    const values: unknown[] = [];
    const bucket = `${this.name}_bucket`;
    for (const [outcome, series] of this.byOutcome) {
      const sharedLabels = { outcome };
      let cumulative = 0;
      DURATION_BOUNDS.forEach((bound, i) => {
        cumulative += series.counts[i] ?? 0;
        values.push({ labels: { le: bound }, value: cumulative, metricName: bucket, sharedLabels });
      });
      values.push({ labels: { le: '+Inf' }, value: series.count, metricName: bucket, sharedLabels });
      values.push({ labels: {}, value: series.sum, metricName: `${this.name}_sum`, sharedLabels });
      values.push({ labels: {}, value: series.count, metricName: `${this.name}_count`, sharedLabels });
    }
    return Promise.resolve({ name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values });
  }
}

/** Counts of one pod scan by namespace: pods by state, drifted pods by kind of difference (cluster/pod-scan.ts). */
export interface ScanCounts {
  pods: ReadonlyMap<string, Readonly<Partial<Record<string, number>>>>;
  drifted: ReadonlyMap<string, Readonly<Partial<Record<string, number>>>>;
}

/** Namespaces a scan's gauges name, in name order; the pods of any further one are reported as `other`. */
export const MAX_SCAN_NAMESPACES = 500;

/** A scan's counts with at most MAX_SCAN_NAMESPACES namespaces, the rest added up as `other`. */
function boundedByNamespace(counts: ScanCounts['pods']): Map<string, Partial<Record<string, number>>> {
  const out = new Map<string, Partial<Record<string, number>>>();
  const namespaces = [...counts.keys()].sort();
  for (const [i, ns] of namespaces.entries()) {
    const into = i < MAX_SCAN_NAMESPACES ? ns : OTHER;
    const sums = out.get(into) ?? {};
    out.set(into, sums);
    for (const [label, n] of Object.entries(counts.get(ns) ?? {})) sums[label] = (sums[label] ?? 0) + (n ?? 0);
  }
  return out;
}

/** The content type of the exposition (Prometheus text format 0.0.4), as prom-client's registry declares it. */
const EXPOSITION_TYPE = 'text/plain; version=0.0.4; charset=utf-8';

export class InjectorMetrics {
  private readonly requests = new DeferredCounter(
    'proxy_inject_admission_requests_total',
    'Pods and Services the injector evaluated, by owner kind, namespace and the configuration annotations they carry.',
    ['owner_kind', 'namespace', 'annotation_at', ...CONFIG_LABELS],
  );
  private readonly responses = new DeferredCounter(
    'proxy_inject_admission_responses_total',
    'Answers the injector gave, by whether injection was skipped and why.',
    ['owner_kind', 'namespace', 'skip', 'skip_reason', 'annotation_at', ...CONFIG_LABELS],
  );
  private readonly duration = new DurationHistogram();
  private readonly failures = new DeferredCounter(
    'proxy_inject_admission_failures_total',
    'Admission requests that could not be evaluated (the object was denied if it asked for injection), by code.',
    ['code', 'denied'],
  );
  private readonly refusals = new DeferredCounter(
    'proxy_inject_admission_refusals_total',
    'Requests refused before they could be evaluated (not an AdmissionReview, not JSON, too large, too slow, wrong path), by HTTP status and reason.',
    ['status', 'reason'],
  );
  private readonly configValues = new ConfigLabelValues();
  private readonly foldedResponseKeys = new Map<string, Map<string, string>>();
  private readonly requestSets = new LabelSetCap();
  private readonly responseSets = new LabelSetCap();
  /** Linkerd configuration reloads after the first load, by whether the new configuration was applied or refused. */
  readonly configReloads = new DeferredCounter(
    'proxy_inject_config_reloads_total',
    'Changes of the Linkerd configuration seen after the first load, by result (applied or refused).',
    ['result'],
  );
  /** Serving key pairs seen on disk after the first, by whether they were applied or refused. */
  readonly certificateReloads = new DeferredCounter(
    'proxy_inject_certificate_reloads_total',
    'Serving certificate and key pairs seen on disk after the first, by result (applied or refused; a refused pair keeps the one in use).',
    ['result'],
  );
  /** Restarts of the watches that feed the caches, by cache and why. */
  readonly watchRestarts = new DeferredCounter(
    'proxy_inject_watch_restarts_total',
    'Restarts of the watches feeding the caches, by cache and reason (error or watchdog).',
    ['informer', 'reason'],
  );
  /** Namespace annotation lookups, by where the answer came from. */
  readonly namespaceLookups = new DeferredCounter(
    'proxy_inject_namespace_lookups_total',
    'Namespace annotation lookups, by result: cache, read (a direct read after a cache miss) or failed.',
    ['result'],
  );
  /** Kubernetes Events, by whether writing them worked, failed, or was dropped because too many were waiting. */
  readonly events = new DeferredCounter('proxy_inject_events_total', 'Kubernetes Events the injector recorded, by result: written, failed or dropped.', ['result']);
  /** Pods that arrived with a proxy already, by whether this injector's own answer would have made the same pod. */
  readonly shadowVerdicts = new DeferredCounter(
    'proxy_inject_shadow_total',
    "Pods that arrived with a proxy already (another injector's, during the swap), by verdict: same (this " +
      'injector would have made the same pod), differs or unreadable.',
    ['verdict'],
  );
  /** Pod scans (serve --pod-scan-interval), by result: done or failed. */
  private readonly podScans = new DeferredCounter('proxy_inject_pod_scans_total', 'Scans of the running pods, by result: done or failed.', ['result']);
  /** The last pod scan's counts, as its gauges report them; none before the first. */
  private scan: { pods: Map<string, Partial<Record<string, number>>>; drifted: Map<string, Partial<Record<string, number>>> } | undefined;
  private registry: Promise<Registry> | undefined;
  /** The Linkerd version the configuration in force names, if one is loaded (see reportLinkerdVersion). */
  private linkerdVersion: () => string | undefined = () => undefined;
  /** Why every pod that asks for injection is denied now, if it is (see reportDenial). */
  private denial: () => AdmissionFailureCode | undefined = () => undefined;

  constructor(private readonly options: { processMetrics?: boolean } = {}) {}

  /**
   * The prom-client registry, loaded on first use: the process's own metrics (CPU, memory, event loop, GC) are collected
   * from then on, so the server asks for it right after it starts listening rather than at the first scrape.
   */
  load(): Promise<Registry> {
    this.registry ??= import('prom-client').then(({ Counter, Gauge, Registry, collectDefaultMetrics }) => {
      const registry = new Registry();
      if (this.options.processMetrics !== false) collectDefaultMetrics({ register: registry });
      for (const deferred of [this.requests, this.responses, this.failures, this.refusals, this.configReloads, this.certificateReloads, this.watchRestarts, this.namespaceLookups, this.events, this.shadowVerdicts, this.podScans]) {
        const counter: Counter = new Counter({
          name: deferred.name,
          help: deferred.help,
          labelNames: [...deferred.labelNames],
          registers: [registry],
          collect: () => deferred.flushInto(counter),
        });
      }
      const scanGauge = (name: string, help: string, label: string, of: (scan: NonNullable<typeof this.scan>) => Map<string, Partial<Record<string, number>>>): void => {
        const gauge: Gauge = new Gauge({
          name,
          help,
          labelNames: ['namespace', label],
          registers: [registry],
          collect: () => {
            gauge.reset();
            if (!this.scan) return;
            for (const [namespace, counts] of of(this.scan)) {
              for (const [value, n] of Object.entries(counts)) gauge.set({ namespace, [label]: value }, n ?? 0);
            }
          },
        });
      };
      scanGauge('proxy_inject_pods', 'Running pods at the last pod scan, by namespace and state (as check pods gives it).', 'state', (scan) => scan.pods);
      scanGauge('proxy_inject_drifted_pods', 'Drifted pods at the last pod scan, by namespace and kind of difference.', 'kind', (scan) => scan.drifted);
      // One series per failure code, a fixed list, so that an alert can read the code and a sum is 0 or 1.
      const denying: Gauge = new Gauge({
        name: 'proxy_inject_denying_injection',
        help: 'Whether every pod that asks for injection is denied now (1, under the code why) or not (0); the webhook stays ready meanwhile.',
        labelNames: ['code'],
        registers: [registry],
        collect: () => {
          const now = this.denial();
          for (const code of ADMISSION_FAILURE_CODES) denying.set({ code }, code === now ? 1 : 0);
        },
      });
      const mismatch: Gauge = new Gauge({
        name: 'proxy_inject_linkerd_version_mismatch',
        help: 'Whether the Linkerd version linkerd-config names (configured) is not the one whose injector this one follows (followed): 1, or 0 when it is.',
        labelNames: ['configured', 'followed'],
        registers: [registry],
        collect: () => {
          mismatch.reset();
          const configured = this.linkerdVersion();
          if (configured === undefined) return;
          // The configuration's own text, one series at a time: clipped like any value read from the cluster.
          mismatch.set({ configured: clip(configured, 64), followed: DEFAULT_LINKERD_VERSION }, configured === DEFAULT_LINKERD_VERSION ? 0 : 1);
        },
      });
      // Not a prom-client metric, but the shape its registry reads (see DurationHistogram).
      registry.registerMetric(this.duration as unknown as Metric);
      return registry;
    });
    return this.registry;
  }

  /**
   * Counts one handled admission as Linkerd does: every evaluated request; a response with skip="false" when a patch
   * was returned (injection or opaque-ports annotation), skip="true" with the reason codes for a pod left unchanged,
   * and no response for a Service left unchanged.
   */
  record(handled: HandledAdmission, namespace: string, seconds: number): void {
    switch (handled.kind) {
      case 'ignored':
        this.duration.observe('ignored', seconds);
        return;
      case 'failed':
        this.duration.observe(handled.response.allowed ? 'failed-allowed' : 'failed-denied', seconds);
        this.failures.inc({ code: handled.failure.code, denied: String(!handled.response.allowed) });
        return;
      case 'evaluated':
        this.duration.observe(handled.result.outcome, seconds);
        this.countEvaluated(handled, namespace);
    }
  }

  private countEvaluated(handled: Extract<HandledAdmission, { kind: 'evaluated' }>, namespace: string): void {
    const result = handled.result;
    const config = result.workloadConfiguration;
    const values = isEmpty(config) ? UNCONFIGURED : this.configuredValues(config);
    const open: OpenLabels = { owner: ownerKindLabel(handled.owner?.kind), namespace, values };
    const at = result.annotationAt;
    const requestKey = labelKey(open, at);
    const request = this.requestSets.admit(requestKey) ? open : FOLDED;
    this.requests.add(request === open ? requestKey : foldedKey(at), () => labelSet(request, at));
    let skip: { skip: string; skip_reason: string };
    if (result.outcome !== 'skipped') skip = { skip: 'false', skip_reason: '' };
    else if (result.kind === 'pod') skip = { skip: 'true', skip_reason: result.reasons.map((r) => r.code).join(',') };
    else return;
    const prefix = `${skip.skip}\u0001${skip.skip_reason}\u0001`;
    // Made once: the same string object is hashed once for both lookups.
    const responseKey = prefix + requestKey;
    const response = this.responseSets.admit(responseKey) ? open : FOLDED;
    this.responses.add(response === open ? responseKey : this.foldedResponseKey(prefix, at), () => ({ ...labelSet(response, at), ...skip }));
  }

  /** The folded response key for a skip prefix and an `annotation_at`, remembered (see foldedKey). */
  private foldedResponseKey(prefix: string, annotationAt: string): string {
    let byPrefix = this.foldedResponseKeys.get(annotationAt);
    if (!byPrefix) this.foldedResponseKeys.set(annotationAt, (byPrefix = new Map()));
    let key = byPrefix.get(prefix);
    if (key === undefined) {
      key = prefix + foldedKey(annotationAt);
      if (byPrefix.size < MAX_FOLDED_RESPONSE_KEYS) byPrefix.set(prefix, key);
    }
    return key;
  }

  /** The configuration labels' values: the few annotations a workload sets, the rest unset. */
  private configuredValues(config: Record<string, string>): string[] {
    const values = UNCONFIGURED.slice();
    for (const key in config) {
      const at = CONFIG_INDEX.get(key);
      if (at !== undefined) values[at] = this.configValues.value(key, config[key]);
    }
    return values;
  }

  /** Keeps a pod scan's counts for the gauges, replacing the last scan's: a namespace gone is no longer reported. */
  podScanned(counts: ScanCounts): void {
    this.scan = { pods: boundedByNamespace(counts.pods), drifted: boundedByNamespace(counts.drifted) };
    this.podScans.inc({ result: 'done' });
  }

  /** Counts a pod scan that failed; the gauges keep the last scan's counts. */
  podScanFailed(): void {
    this.podScans.inc({ result: 'failed' });
  }

  /** Reads `version` at each scrape for the gauge `proxy_inject_linkerd_version_mismatch`. */
  reportLinkerdVersion(version: () => string | undefined): void {
    this.linkerdVersion = version;
  }

  /** Reads `denial` at each scrape for the gauge `proxy_inject_denying_injection`. */
  reportDenial(denial: () => AdmissionFailureCode | undefined): void {
    this.denial = denial;
  }

  /** Counts a request refused before evaluation (400, 404, 408, 413, 415). */
  refused(status: number, reason: RefusalReason): void {
    this.refusals.inc({ status: String(status), reason });
  }

  /** Distinct label sets of the admission request and response counters, and what they hold, for tests of the bound. */
  get labelSets(): { requests: number; responses: number; bytes: number } {
    return { requests: this.requestSets.size, responses: this.responseSets.size, bytes: this.requestSets.bytes + this.responseSets.bytes };
  }

  async metrics(): Promise<string> {
    return (await this.load()).metrics();
  }

  get contentType(): string {
    return EXPOSITION_TYPE;
  }
}
