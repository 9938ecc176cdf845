/**
 * The shadow verdict: for a pod another injector (Linkerd's, during the swap) has already given a proxy, whether this
 * injector's own answer would have made exactly that pod. It is a report beside the answer, never part of it.
 */
import { oneLine, podDrift, type Drift, type DriftRequest } from '../engine/index.js';

/** What the handler's own answer was made of, for the comparison: everything the engine reads but the pod. */
export type ShadowInputs = Omit<DriftRequest, 'pod'>;

/** The `verdict` label: a fixed three, whatever the pod carries. */
export type ShadowVerdictName = 'same' | 'differs' | 'unreadable';

export type ShadowVerdict =
  | { verdict: 'same' }
  /** `first` is the difference to show: the first in path order that no documented difference explains, if any. */
  | { verdict: 'differs'; first: Drift; count: number }
  | { verdict: 'unreadable'; reason: string };

/**
 * The largest review compared. The comparison holds about seven times the pod's bytes while it runs, outside the
 * in-flight budget, so a pod beyond any real one (the API server allows 256 KiB of annotations) is left to `check pods`.
 */
export const MAX_SHADOW_BYTES = 256 * 1024;

/**
 * The verdict on a pod that already has a proxy, from a review of `reviewBytes`; nothing the pod carries makes this
 * throw.
 */
export function shadowVerdict(pod: unknown, inputs: ShadowInputs, reviewBytes: number): ShadowVerdict {
  if (reviewBytes > MAX_SHADOW_BYTES) {
    const reason = `the review is ${reviewBytes} bytes, more than the ${MAX_SHADOW_BYTES} compared during admission; \`check pods\` compares the running pod`;
    return { verdict: 'unreadable', reason };
  }
  try {
    const drift = podDrift({ ...inputs, pod });
    if (drift.verdict === 'current') return { verdict: 'same' };
    if (drift.verdict === 'unreadable') return { verdict: 'unreadable', reason: drift.reason };
    const first = drift.differences.find((d) => d.documented === undefined) ?? drift.differences[0];
    if (!first) return { verdict: 'unreadable', reason: 'a drifted verdict without differences' };
    return { verdict: 'differs', first, count: drift.differences.length };
  } catch (err) {
    // podDrift promises not to throw; a report beside the answer must not fail the review if it ever does.
    return { verdict: 'unreadable', reason: oneLine(err) };
  }
}
