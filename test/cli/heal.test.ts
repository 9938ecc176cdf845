/** `heal`: the plan by default, the restarts with --apply, an Event on each workload, and what it says of its arguments. */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { runHealCommand } from '../../src/cli/heal.js';
import { clusters, start, workload, type FakeCluster } from '../cluster/fake-workloads.js';
import { kubeconfigText } from '../cluster/fake-api.js';
import { sum } from '../support/metrics.js';

const dirs: string[] = [];
afterEach(async () => {
  await Promise.all(clusters.splice(0).map((c) => c.api.close()));
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function kubeconfigFor(fake: FakeCluster): string {
  const dir = mkdtempSync(join(tmpdir(), 'heal-'));
  dirs.push(dir);
  const path = join(dir, 'config');
  writeFileSync(path, kubeconfigText(fake.api.client.server));
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

  it.each([
    [['--every', '30s'], '--every "30s": expected a duration of at least 1m, e.g. 10m'],
    [['--every', '5m', '--window', '9-17'], '--window "9-17": expected HH:MM-HH:MM (UTC), e.g. 01:00-05:00'],
    [['--every', '5m', '--max-restarts-per-hour', '0'], '--max-restarts-per-hour "0": expected a whole number of at least 1'],
    [['--every', '5m', '--metrics-addr', 'nowhere'], '--metrics-addr: invalid listen address "nowhere": expected HOST:PORT, e.g. 0.0.0.0:8443'],
    [['--window', '01:00-05:00'], '--window applies only with --every'],
  ])('%j is a usage error before anything is read', async (args, message) => {
    expect(await runHealCommand(args, {})).toEqual({ stdout: '', stderr: `proxy-injector heal: ${message}\n`, code: 2 });
  });

  it('with --every, plans on its interval, logs the first plan, serves its metrics, and ends at SIGTERM', async () => {
    const fake = await start([workload('Deployment', 'shop', 'web')]);
    const port = await new Promise<number>((resolve) => {
      const probe = createServer().listen(0, '127.0.0.1', () => {
        const { port: p } = probe.address() as { port: number };
        probe.close(() => resolve(p));
      });
    });
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', 'heal', '--every', '1m', '--apply', '--kubeconfig', kubeconfigFor(fake), '--metrics-addr', `127.0.0.1:${port}`], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
    let metrics = '';
    await expect
      .poll(
        async () => {
          metrics = await fetch(`http://127.0.0.1:${port}/metrics`).then((r) => r.text(), () => '');
          return sum(metrics, 'proxy_inject_heal_scans_total', { result: 'done' });
        },
        { timeout: 20_000, interval: 200 },
      )
      .toBe(1);
    expect(sum(metrics, 'proxy_inject_heal_planned')).toBe(1);
    expect(sum(metrics, 'proxy_inject_heal_blocked')).toBe(0);
    expect((await fetch(`http://127.0.0.1:${port}/live`)).status).toBe(200);
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
    const messages = out.trim().split('\n').map((l) => (JSON.parse(l) as { msg: string }).msg);
    expect(messages).toContain('plan 1: restart deployment/web in shop: 2 of 2 pods drifted (proxy_config)');
    expect(messages).toContain('the first scan only logs its plan: nothing is restarted before the next scan');
    // The first scan restarts nothing.
    expect(fake.patches).toEqual([]);
  }, 60_000);
});

