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
  /** The file it was read from, named on each line when the input was a directory or several files. */
  file?: string;
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

/** What each command's failed objects are called, and the verb of its count of them. */
const FAILED: Record<ReportCommand, { status: string; verb: string }> = {
  inject: { status: STATUS_TEXT.failed, verb: 'injected' },
  uninject: { status: 'could not be uninjected', verb: 'uninjected' },
};

export type ReportCommand = 'inject' | 'uninject';

/**
 * The stderr report. Every warning and error line (notes, warnings, a failed object, the count of failures) starts
 * with `proxy-injector <command>:`, as the command's other errors and `explain`'s warnings do, so that each says which
 * command spoke in a pipeline such as `inject --manual | uninject -`.
 */
export function renderReport(command: ReportCommand, global: readonly string[], objects: readonly ObjectReport[], verbose: boolean): string {
  const prefix = `proxy-injector ${command}: `;
  const lines: string[] = [];
  for (const text of global) lines.push(prefix + text);
  if (global.length > 0) lines.push('');
  let failures = 0;
  for (const r of objects) {
    const failed = r.status === 'failed';
    if (failed) failures += 1;
    const where = failed ? r.where : r.file;
    const at = `${failed ? prefix : ''}${where ? `${where}: ` : ''}`;
    lines.push(`${at}${label(r)} ${failed ? FAILED[command].status : STATUS_TEXT[r.status]}${r.detail ? `: ${r.detail}` : ''}`);
    // Failures are in the header already; passes and failures are listed with --verbose, warnings always.
    for (const c of r.checks) if (verbose || c.mark === WARN) lines.push(`  ${c.mark} ${c.text}`);
  }
  if (failures > 0) {
    const count = `${failures} object${failures === 1 ? '' : 's'} could not be ${FAILED[command].verb}`;
    lines.push('', `${prefix}${count}; nothing was written to stdout`);
  }
  return lines.length > 0 ? `${lines.join('\n')}\n` : '';
}
