/** The report `inject` and `uninject` print on stderr: one block per object, in the manner of Linkerd's. */
import type { SkipReasonCode } from '../engine/index.js';

export const OK = '√';
export const WARN = '‼';
export const FAIL = '×';

export type Status = 'injected' | 'annotated' | 'skipped' | 'unchanged' | 'failed' | 'uninjected';

export interface Check {
  mark: typeof OK | typeof WARN | typeof FAIL;
  text: string;
}

export interface ObjectReport {
  kind: string;
  name: string;
  status: Status;
  /** What the header says after the status, e.g. Linkerd's reason texts. */
  detail?: string;
  /** Every check; `√` lines are shown only with --verbose. */
  checks: Check[];
  /** Where the object is in the input (`FILE:LINE: document N, items[K]`), named when it fails. */
  where?: string;
}

/** The checks Linkerd's manual injection makes, with the text of a pass and of a failure or warning. */
export const CHECKS: ReadonlyArray<{ code: SkipReasonCode | 'udp'; pass: string }> = [
  { code: 'host_network_enabled', pass: 'pods do not share the host network' },
  { code: 'sidecar_already_exists', pass: 'no proxy or proxy init container of another injection' },
  { code: 'unsupported_resource', pass: 'the kind has a pod template' },
  { code: 'injection_disable_annotation_present', pass: 'pods are not annotated linkerd.io/inject: disabled' },
  { code: 'udp', pass: 'no UDP container ports' },
  { code: 'disabled_automount_service_account_token_account', pass: 'pods can present a service-account token' },
];

const STATUS_TEXT: Record<Status, string> = {
  injected: 'injected',
  annotated: 'annotated',
  skipped: 'skipped',
  unchanged: 'unchanged',
  failed: 'not injected',
  uninjected: 'uninjected',
};

function label(r: ObjectReport): string {
  return r.kind ? `${r.kind} ${JSON.stringify(r.name || '(unnamed)')}` : 'document without a kind';
}

/** `failed` says what could not be done: `not injected` by inject, `could not be uninjected` by uninject. */
export function renderReport(global: readonly Check[], objects: readonly ObjectReport[], verbose: boolean, failed = STATUS_TEXT.failed): string {
  const lines: string[] = [];
  for (const c of global) lines.push(`${c.mark} ${c.text}`);
  if (global.length > 0) lines.push('');
  for (const r of objects) {
    const at = r.status === 'failed' && r.where ? `${r.where}: ` : '';
    lines.push(`${at}${label(r)} ${r.status === 'failed' ? failed : STATUS_TEXT[r.status]}${r.detail ? `: ${r.detail}` : ''}`);
    // Failures are in the header already; passes and failures are listed with --verbose, warnings always.
    for (const c of r.checks) if (verbose || c.mark === WARN) lines.push(`  ${c.mark} ${c.text}`);
  }
  return lines.length > 0 ? `${lines.join('\n')}\n` : '';
}
