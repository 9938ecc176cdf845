/** `heal`: the plan by default, the restarts with --apply, an Event on each workload, and what it says of its arguments. */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { runHealCommand } from '../../src/cli/heal.js';
import { clusters, start, workload, type FakeCluster } from '../cluster/fake-workloads.js';

const dirs: string[] = [];
afterEach(async () => {
  await Promise.all(clusters.splice(0).map((c) => c.api.close()));
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function kubeconfigFor(fake: FakeCluster): string {
  const dir = mkdtempSync(join(tmpdir(), 'heal-'));
  dirs.push(dir);
  const path = join(dir, 'config');
  writeFileSync(
    path,
    `apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: "${fake.api.client.server}"}}]\nusers: [{name: u, user: {token: t}}]\n` +
      'contexts: [{name: x, context: {cluster: c, user: u}}]\ncurrent-context: x\n',
  );
  return path;
}

describe('heal', () => {
  it('prints the plan and changes nothing without --apply', async () => {
    const fake = await start([workload('Deployment', 'shop', 'web'), workload('Deployment', 'kube-system', 'dns')]);
    const result = await runHealCommand(['--kubeconfig', kubeconfigFor(fake)], {});
    expect(result.stdout.split('\n')).toEqual([
      '1. restart shop deployment/web: 2 of 2 pods drifted (proxy_config)',
      '‼ leave kube-system deployment/dns: kube-system is never restarted',
      '1 to restart, one at a time',
      '',
    ]);
    expect(result.code).toBe(1);
    expect(fake.patches).toEqual([]);
    expect(fake.events).toEqual([]);
  });

  it('with --apply restarts, says so in an Event on each workload, and a second run finds nothing to do', async () => {
    const fake = await start([workload('Deployment', 'shop', 'web'), workload('StatefulSet', 'shop', 'db')]);
    const kubeconfig = kubeconfigFor(fake);
    const result = await runHealCommand(['--kubeconfig', kubeconfig, '--apply'], {});
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/^√ shop deployment\/web: current after \d+ s\n√ shop statefulset\/db: current after \d+ s\n$/);
    expect(fake.patches).toEqual(['Deployment/shop/web', 'StatefulSet/shop/db']);
    expect(fake.events.map((e) => [e['reason'], (e['involvedObject'] as { name: string }).name, e['type']])).toEqual([
      ['Healed', 'web', 'Normal'],
      ['Healed', 'db', 'Normal'],
    ]);
    const again = await runHealCommand(['--kubeconfig', kubeconfig], {});
    expect(again).toMatchObject({ code: 0, stdout: '√ nothing to heal: every meshed pod is what the injector gives now\n' });
  }, 30_000);

  it('stops at a workload that goes wrong, with a Warning Event, and the next run is blocked until --resume', async () => {
    const fake = await start([workload('Deployment', 'shop', 'api', 'crashloop'), workload('Deployment', 'shop', 'web')]);
    const kubeconfig = kubeconfigFor(fake);
    const result = await runHealCommand(['--kubeconfig', kubeconfig, '--apply'], {});
    expect(result.code).toBe(1);
    expect(result.stdout).toBe(
      '× stopped at shop deployment/api: app is crash-looping in its new pod api-h2-0\n' +
        '  nothing after it was restarted; fix it, then run heal again (or --resume to go on without it)\n',
    );
    expect(fake.events.map((e) => [e['reason'], e['type'], e['message']])).toEqual([['HealStopped', 'Warning', 'proxy-injector heal stopped here: app is crash-looping in its new pod api-h2-0']]);
    const blocked = await runHealCommand(['--kubeconfig', kubeconfig, '-o', 'json'], {});
    expect(blocked.code).toBe(1);
    expect(JSON.parse(blocked.stdout)).toMatchObject({ plan: { steps: [], blocked: { kind: 'Deployment', name: 'api' } } });
    const resumed = await runHealCommand(['--kubeconfig', kubeconfig, '--resume'], {});
    expect(resumed.stdout).toMatch(/^1\. restart shop deployment\/web: /);
  }, 30_000);

  it('says what is wrong with its arguments', async () => {
    expect((await runHealCommand(['-o', 'yaml'], {})).code).toBe(2);
    expect((await runHealCommand(['--bogus'], {})).code).toBe(2);
    expect((await runHealCommand(['--help'], {})).stdout).toMatch(/^Usage: proxy-injector heal/);
    expect(await runHealCommand(['--kubeconfig', '/nonexistent/config'], {})).toMatchObject({ code: 1, stderr: 'proxy-injector heal: --kubeconfig /nonexistent/config: no such file\n' });
  });
});
