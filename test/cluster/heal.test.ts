/**
 * Healing against a fake API whose "controllers" make a restarted workload's pods again as the webhook would mesh them
 * now, or fail as a scenario says: the plan (order, exclusions, idempotence), one restart at a time, and the stops.
 */
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { HEAL_ANNOTATION, HEALED_FOR_ANNOTATION, planHeal, runHeal, type HealPlan } from '../../src/cluster/heal.js';
import { CONFIG, meshed, pod } from '../support/running-pods.js';
import { DEBUG, clusters, start, workload } from './fake-workloads.js';
const config = { config: CONFIG, source: 'test' };
const quiet = pino({ level: 'silent' });

afterEach(async () => {
  await Promise.all(clusters.splice(0).map((c) => c.api.close()));
});

const stepsOf = (plan: HealPlan) => plan.steps.map((s) => `${s.kind}/${s.namespace}/${s.name}`);
const untouchedOf = (plan: HealPlan) => Object.fromEntries(plan.untouched.map((u) => [`${u.kind}/${u.namespace}/${u.name}`, u.why]));

describe('the heal plan', () => {
  it('restarts each drifted or unmeshed workload in namespace and name order, and says what it leaves alone and why', async () => {
    const fake = await start(
      [
        workload('StatefulSet', 'shop', 'db'),
        workload('Deployment', 'shop', 'web'),
        workload('DaemonSet', 'pay', 'agent'),
        workload('Deployment', 'pay', 'current'),
        workload('Deployment', 'pay', 'unmeshed'),
        workload('Deployment', 'pay', 'opted-out', 'ok', { annotations: { [HEAL_ANNOTATION]: 'disabled' } }),
        workload('Deployment', 'kube-system', 'coredns'),
        workload('Deployment', 'proxy-injector', 'proxy-injector'),
        workload('Deployment', 'linkerd-viz', 'web'),
        workload('Deployment', 'frozen', 'api'),
      ],
      { current: CONFIG, unmeshed: undefined },
      [meshed(pod('shop', 'batch-x', { owner: ['Job', 'batch'] }), DEBUG), meshed(pod('shop', 'solo'), DEBUG)],
    );
    const plan = await planHeal(fake.cluster(), { config });
    expect(stepsOf(plan)).toEqual(['DaemonSet/pay/agent', 'Deployment/pay/unmeshed', 'Deployment/shop/web', 'StatefulSet/shop/db']);
    expect(plan.steps.find((s) => s.name === 'web')?.why).toBe('2 of 2 pods drifted (proxy_config)');
    expect(plan.steps.find((s) => s.name === 'unmeshed')?.why).toBe('2 of 2 pods not meshed though asked');
    expect(untouchedOf(plan)).toEqual({
      'Deployment/pay/opted-out': `it is annotated ${HEAL_ANNOTATION}: disabled`,
      'Deployment/kube-system/coredns': 'kube-system is never restarted',
      'Deployment/proxy-injector/proxy-injector': "the injector's own namespace is never restarted",
      'Deployment/linkerd-viz/web': "Linkerd's own namespaces are never restarted",
      'Deployment/frozen/api': `its namespace is annotated ${HEAL_ANNOTATION}: disabled`,
      'Job/shop/batch': "a Job's pods run once: its next run (a new Job, or its CronJob's next) gets what the injector gives now",
      'Pod/shop/solo': 'a bare pod is evicted only with --evict-bare-pods, and nothing creates it again',
    });
    expect(plan.blocked).toBeUndefined();
    // Planning changes nothing.
    expect(fake.patches).toEqual([]);
  });

  it('plans nothing without the configuration: no pod could be called current', async () => {
    const fake = await start([workload('Deployment', 'shop', 'web')]);
    fake.configMaps = false;
    const plan = await planHeal(fake.cluster());
    expect(plan.steps).toEqual([]);
    expect(plan.blocked?.why).toMatch(/^the Linkerd configuration could not be read/);
  });
});

describe('a heal', () => {
  it('restarts one workload at a time, each current before the next, and a second run plans nothing', async () => {
    const fake = await start([workload('Deployment', 'shop', 'web'), workload('StatefulSet', 'shop', 'db'), workload('DaemonSet', 'pay', 'agent')]);
    const outcomes: string[] = [];
    const result = await runHeal(fake.cluster(), await planHeal(fake.cluster(), { config }), {
      config,
      logger: quiet,
      pollMs: 10,
      onOutcome: async (step, outcome) => void outcomes.push(`${step.name} ${outcome.healed}`),
    });
    expect(result.stopped).toBeUndefined();
    expect(result.healed.map((h) => h.name)).toEqual(['agent', 'web', 'db']);
    expect(fake.patches).toEqual(['DaemonSet/pay/agent', 'Deployment/shop/web', 'StatefulSet/shop/db']);
    // No restart was asked for while another was under way.
    expect(fake.overlaps).toEqual([0, 0, 0]);
    expect(outcomes).toEqual(['agent true', 'web true', 'db true']);
    const again = await planHeal(fake.cluster(), { config });
    expect(again.steps).toEqual([]);
    expect(again.untouched).toEqual([]);
  });

  it.each([
    ['crashloop', /^app is crash-looping in its new pod web-h2-0$/],
    ['init-fails', /^linkerd-init failed in its new pod web-h2-0 \(exit code 1\)$/],
    ['stalled', /^its rollout did not progress within its progressDeadlineSeconds \(600 s\): ReplicaSet "web" has timed out progressing\.$/],
  ] as const)('stops at a workload whose rollout goes wrong (%s), restarts nothing after it, and stays stopped until resumed', async (scenario, why) => {
    const fake = await start([workload('Deployment', 'shop', 'web', scenario), workload('StatefulSet', 'shop', 'zz')]);
    const result = await runHeal(fake.cluster(), await planHeal(fake.cluster(), { config }), { config, logger: quiet, pollMs: 10, rolloutTimeoutMs: 5_000 });
    expect(result.stopped?.why).toMatch(why);
    expect(fake.patches).toEqual(['Deployment/shop/web']);
    // The next run restarts nothing while web is what it is; resumed, it goes on and leaves web alone.
    const next = await planHeal(fake.cluster(), { config });
    expect(next.steps).toEqual([]);
    expect(next.blocked).toMatchObject({ kind: 'Deployment', name: 'web', why: expect.stringMatching(/^restarted for this drift at \d{4}-.*, and its pods are still: /) });
    const resumed = await planHeal(fake.cluster(), { config, resume: true });
    expect(stepsOf(resumed)).toEqual(['StatefulSet/shop/zz']);
    expect(untouchedOf(resumed)['Deployment/shop/web']).toMatch(/\(left alone: healing was resumed\)$/);
  });

  it("does not take a stall the controller reported before it saw the restart for this rollout's", async () => {
    const stuck = workload('Deployment', 'shop', 'web', 'stalled-before');
    stuck.status['conditions'] = [{ type: 'Progressing', status: 'False', reason: 'ProgressDeadlineExceeded', message: 'an earlier rollout timed out' }];
    const fake = await start([stuck]);
    const result = await runHeal(fake.cluster(), await planHeal(fake.cluster(), { config }), { config, logger: quiet, pollMs: 10 });
    expect(result.stopped).toBeUndefined();
    expect(result.healed.map((h) => h.name)).toEqual(['web']);
  });

  it('marks each restart with the drift it was for, on the pod template', async () => {
    const fake = await start([workload('Deployment', 'shop', 'web')]);
    const plan = await planHeal(fake.cluster(), { config });
    await runHeal(fake.cluster(), plan, { config, logger: quiet, pollMs: 10 });
    expect(fake.workloads[0]?.template).toEqual({ 'kubectl.kubernetes.io/restartedAt': expect.stringMatching(/^\d{4}-\d\d-\d\dT/), [HEALED_FOR_ANNOTATION]: plan.steps[0]?.fingerprint });
    expect(plan.steps[0]?.fingerprint).toMatch(/^[0-9a-f]{16}$/);
  });

  it('evicts a bare pod only when allowed, waiting while its disruption budget refuses', async () => {
    const fake = await start([], {}, [meshed(pod('shop', 'solo'), DEBUG)]);
    fake.evictionRefusals = 2;
    const plan = await planHeal(fake.cluster(), { config, evictBarePods: true });
    expect(stepsOf(plan)).toEqual(['Pod/shop/solo']);
    const result = await runHeal(fake.cluster(), plan, { config, logger: quiet, pollMs: 10 });
    expect(result.healed.map((h) => h.name)).toEqual(['solo']);
    expect(fake.evictions).toEqual(['shop/solo']);
    expect(fake.evictionRefusals).toBe(0);
  });
});
