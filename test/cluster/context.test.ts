import { describe, expect, it } from 'vitest';
import { handleAdmission } from '../../src/admission/handler.js';
import type { AdmissionRequest } from '../../src/admission/types.js';
import { eventFor, type EventPolicy } from '../../src/cluster/context.js';
import type { ResolvedOwner } from '../../src/cluster/owners.js';
import { admissionReview } from '../support/admission.js';
import { pod, testConfig } from '../support/engine.js';

const deployment: ResolvedOwner = { kind: 'deployment', name: 'web', apiKind: 'Deployment', apiVersion: 'apps/v1', namespace: 'shop', uid: 'u' };
const bare = (name: string): ResolvedOwner => ({ kind: 'pod', name, apiKind: 'Pod', apiVersion: 'v1', namespace: 'shop' });

async function event(object: Record<string, unknown>, opts: { owner?: ResolvedOwner; dryRun?: boolean; ns?: Record<string, string>; policy?: EventPolicy } = {}) {
  const request = admissionReview(object, { dryRun: opts.dryRun ?? false })['request'] as AdmissionRequest;
  const handled = await handleAdmission(request, {
    config: () => testConfig(),
    namespaceAnnotations: () => opts.ns,
    owner: () => opts.owner ?? deployment,
  });
  return eventFor(handled, request, opts.policy ?? 'relevant');
}

const enabled = () => pod({ annotations: { 'linkerd.io/inject': 'enabled' } });

describe('eventFor', () => {
  it('Injected on the workload for an injected pod', async () => {
    expect(await event(enabled())).toEqual({ target: deployment, type: 'Normal', reason: 'Injected', message: 'Linkerd sidecar proxy injected' });
  });

  it('InjectionSkipped with Linkerd’s reason texts for an opted-out pod', async () => {
    const e = await event(pod({ annotations: { 'linkerd.io/inject': 'disabled' } }), { ns: { 'linkerd.io/inject': 'enabled' } });
    expect(e).toMatchObject({
      reason: 'InjectionSkipped',
      message: 'Linkerd sidecar proxy injection skipped: pod has the annotation "linkerd.io/inject:disabled"',
    });
  });

  it('nothing for a dry run', async () => {
    expect(await event(enabled(), { dryRun: true })).toBeUndefined();
  });

  it('relevant: nothing for pods nobody asked to mesh; all: an event as Linkerd does', async () => {
    expect(await event(pod())).toBeUndefined();
    expect((await event(pod(), { policy: 'all' }))?.message).toBe(
      'Linkerd sidecar proxy injection skipped: neither the namespace nor the pod have the annotation "linkerd.io/inject:enabled"',
    );
  });

  it('none: never', async () => {
    expect(await event(enabled(), { policy: 'none' })).toBeUndefined();
  });

  it('a bare pod with a name gets its event; one with only generateName gets none', async () => {
    expect((await event(enabled(), { owner: bare('web') }))?.target.name).toBe('web');
    const generated = enabled();
    generated['metadata'] = { generateName: 'web-', annotations: { 'linkerd.io/inject': 'enabled' } };
    expect(await event(generated, { owner: bare('web-') })).toBeUndefined();
  });

  it('hostNetwork pods are skipped with their reason', async () => {
    const p = pod({ annotations: { 'linkerd.io/inject': 'enabled' }, spec: { hostNetwork: true, containers: [{ name: 'a', image: 'a' }] } });
    expect((await event(p))?.message).toBe('Linkerd sidecar proxy injection skipped: hostNetwork is enabled');
  });
});
