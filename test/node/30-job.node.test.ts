/**
 * A Job this injector meshes: with a classic sidecar and no shutdown hook, its work ends but the proxy does not, so
 * the pod keeps running and the Job never completes (the `proxy_never_exits` start-up risk `explain` and the webhook's
 * StartupRisk event warn of); as a native sidecar the kubelet stops the proxy after the work and the Job completes.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '../e2e/support/kube.js';
import { useNode } from './support/context.js';
import { log, sleep } from './support/host.js';
import { APP_IMAGE } from './support/images.js';
import { onlyThisInjector } from './support/linkerd.js';
import { apply, createNamespace, getJson, podsOf, statusOf, type Pod } from './support/workloads.js';

const node = useNode();
const NS = 'jobs';
/** How long a finished Job's pod is watched for completion that does not come. */
const NEVER_S = 20;

interface Job {
  status: { succeeded?: number; active?: number; conditions?: Array<{ type: string; status: string; lastTransitionTime: string }>; completionTime?: string };
}

describe.skipIf(node.skip !== undefined)('a Job meshed by this injector', () => {
  if (node.skip !== undefined) return;
  const { cluster, linkerd, injector, appTag } = node;
  const scratch = mkdtempSync(join(tmpdir(), 'node-job-'));
  afterAll(() => rmSync(scratch, { recursive: true, force: true }));

  beforeAll(async () => {
    await onlyThisInjector(cluster, linkerd);
    await createNamespace(cluster, NS, { 'linkerd.io/inject': 'enabled' });
  });

  const job = (name: string, nativeSidecar: boolean) => ({
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: { name, namespace: NS },
    spec: {
      backoffLimit: 0,
      template: {
        metadata: { annotations: { 'config.linkerd.io/proxy-enable-native-sidecar': String(nativeSidecar) } },
        spec: {
          restartPolicy: 'Never',
          terminationGracePeriodSeconds: 2,
          containers: [{ name: 'work', image: `${APP_IMAGE}:${appTag}`, imagePullPolicy: 'Never', command: ['sh', '-c', 'echo work done'] }],
        },
      },
    },
  });

  const podOf = (name: string) => eventually(`the pod of job ${name}`, async () => (await podsOf(cluster, NS, `job-name=${name}`))[0]);

  it('with a classic sidecar and no shutdown hook, never completes: its work ends, its proxy runs on', async () => {
    // What explain says of this Job, as it is submitted.
    writeFileSync(join(scratch, 'values.yaml'), await linkerd.configValues());
    writeFileSync(join(scratch, 'job.json'), JSON.stringify(job('classic-job', false)));
    const explained = await injector.cli(['explain', '--output', 'json', '--values', join(scratch, 'values.yaml'), '--namespace-annotation', 'linkerd.io/inject=enabled', join(scratch, 'job.json')]);
    expect(explained.code, explained.stderr).toBe(0);
    const [record] = JSON.parse(explained.stdout) as Array<{ risks: Array<{ code: string; text: string }> }>;
    const risk = record?.risks.find((r) => r.code === 'proxy_never_exits');
    log(`explain: ${risk?.code}: ${risk?.text}`);
    expect(risk).toBeDefined();

    await apply(cluster, [job('classic-job', false)]);
    const done = await eventually(
      'the work container to finish',
      async () => {
        const pod = await podOf('classic-job');
        return statusOf(pod, 'work')?.state.terminated ? pod : undefined;
      },
      { timeoutMs: 90_000 },
    );
    const work = statusOf(done, 'work')?.state.terminated;
    expect(work?.exitCode).toBe(0);
    expect(done.spec.containers.map((c) => c.name)).toEqual(['linkerd-proxy', 'work']);
    await sleep(NEVER_S * 1000);
    const pod = await podOf('classic-job');
    const status = await getJson<Job>(cluster, ['-n', NS, 'get', 'job', 'classic-job']);
    const proxy = statusOf(pod, 'linkerd-proxy');
    log(`classic job: work exited ${work?.exitCode} at ${work?.finishedAt}; ${NEVER_S} s later the pod is ${pod.status.phase}, linkerd-proxy ${proxy?.state.running ? `running since ${proxy.state.running.startedAt}` : JSON.stringify(proxy?.state)}, the Job has ${status.status.succeeded ?? 0} succeeded and ${status.status.active ?? 0} active`);
    expect(pod.status.phase).toBe('Running');
    expect(proxy?.state.running).toBeDefined();
    expect(status.status.succeeded ?? 0).toBe(0);
    expect(status.status.conditions?.some((c) => c.type === 'Complete' && c.status === 'True') ?? false).toBe(false);
    // The webhook said so on the Job.
    const events = await getJson<{ items: Array<{ reason: string; message: string; involvedObject: { kind: string; name: string } }> }>(cluster, ['-n', NS, 'get', 'events', '--field-selector', 'reason=StartupRisk']);
    const event = events.items.find((e) => e.involvedObject.kind === 'Job' && e.involvedObject.name === 'classic-job');
    log(`StartupRisk event on job/classic-job: ${event?.message}`);
    expect(event?.message).toContain('proxy_never_exits');
    await cluster.kubectl(['-n', NS, 'delete', 'job', 'classic-job', '--cascade=foreground', '--timeout=60s']);
  });

  it('as a native sidecar, completes: the kubelet stops the proxy once the work is done', async () => {
    await apply(cluster, [job('native-job', true)]);
    const status = await eventually(
      'job native-job to complete',
      async () => {
        const j = await getJson<Job>(cluster, ['-n', NS, 'get', 'job', 'native-job']);
        return j.status.conditions?.some((c) => c.type === 'Complete' && c.status === 'True') ? j : undefined;
      },
      { timeoutMs: 120_000 },
    );
    const pod: Pod = await podOf('native-job');
    const work = statusOf(pod, 'work')?.state.terminated;
    const proxy = statusOf(pod, 'linkerd-proxy')?.state.terminated;
    log(`native job: work exited ${work?.exitCode} at ${work?.finishedAt}; linkerd-proxy (init container, restartPolicy Always) terminated at ${proxy?.finishedAt} with ${proxy?.exitCode}; the Job completed at ${status.status.completionTime} (${status.status.succeeded} succeeded), pod ${pod.status.phase}`);
    expect((pod.spec.initContainers ?? []).find((c) => c.name === 'linkerd-proxy')?.restartPolicy).toBe('Always');
    expect(work?.exitCode).toBe(0);
    expect(status.status.succeeded).toBe(1);
    expect(pod.status.phase).toBe('Succeeded');
    expect(proxy).toBeDefined();
  });
});
