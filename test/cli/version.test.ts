/** `version`: this injector's version and the Linkerd release it follows; with --cluster, the one linkerd-config names. */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ServerResponse } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { runVersion } from '../../src/cli/version.js';
import { packageVersion } from '../../src/cli/package-info.js';
import { DEFAULT_LINKERD_VERSION, linkerdVersionMismatch } from '../../src/engine/index.js';
import { fakeApi, kubeconfigText, notFound, type FakeApi } from '../cluster/fake-api.js';
import { CONFIG_MAPS, VALUES } from '../support/running-pods.js';

const CLIENT_LINE = `proxy-injector ${packageVersion()} (follows Linkerd ${DEFAULT_LINKERD_VERSION})\n`;

describe('version', () => {
  let api: FakeApi | undefined;
  let dir: string | undefined;
  afterEach(async () => {
    await api?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
    api = dir = undefined;
  });

  /** A kubeconfig for a fake API server whose linkerd-config names `linkerdVersion` (none: not set in its values). */
  async function clusterNaming(linkerdVersion: string | undefined): Promise<string> {
    const configMaps: Record<string, unknown> = {
      ...CONFIG_MAPS,
      '/api/v1/namespaces/linkerd/configmaps/linkerd-config': {
        metadata: { name: 'linkerd-config' },
        data: { values: linkerdVersion === undefined ? VALUES : `${VALUES}linkerdVersion: ${linkerdVersion}\n` },
      },
    };
    api = await fakeApi({
      read: (path: string, res: ServerResponse) => {
        const object = configMaps[path];
        if (object === undefined) return notFound(res);
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify(object));
      },
    });
    dir = mkdtempSync(join(tmpdir(), 'version-'));
    const server = (api.client as unknown as { server: string }).server;
    const kubeconfig = join(dir, 'config');
    writeFileSync(kubeconfig, kubeconfigText(server));
    return kubeconfig;
  }

  it('prints the version and the Linkerd release it follows, without reading any cluster', async () => {
    expect(await runVersion([], {})).toEqual({ code: 0, stdout: CLIENT_LINE, stderr: '' });
    expect(JSON.parse((await runVersion(['-o', 'json'], {})).stdout)).toEqual({ version: packageVersion(), follows: DEFAULT_LINKERD_VERSION });
  });

  it('with --cluster, names the release linkerd-config names; the one followed is exit 0', async () => {
    const kubeconfig = await clusterNaming(DEFAULT_LINKERD_VERSION);
    const result = await runVersion(['--cluster', '--kubeconfig', kubeconfig], {});
    expect(result).toEqual({
      code: 0,
      stdout: `${CLIENT_LINE}cluster: Linkerd ${DEFAULT_LINKERD_VERSION} (ConfigMaps linkerd/linkerd-config and linkerd/linkerd-identity-trust-roots)\n`,
      stderr: '',
    });
  });

  it('says what to do when the cluster runs another release, exit 1', async () => {
    const kubeconfig = await clusterNaming('edge-26.11.2');
    const result = await runVersion(['--cluster', '--kubeconfig', kubeconfig], {});
    expect(result.code).toBe(1);
    expect(result.stdout).toBe(`${CLIENT_LINE}cluster: Linkerd edge-26.11.2 (ConfigMaps linkerd/linkerd-config and linkerd/linkerd-identity-trust-roots)\n`);
    expect(result.stderr).toBe(`proxy-injector version: ${linkerdVersionMismatch({ linkerdVersion: 'edge-26.11.2' })}\n`);
    expect(result.stderr).toMatch(/this injector follows Linkerd edge-26\.8\.3: .*install a proxy-injector that follows edge-26\.11\.2, or give injection back to Linkerd's injector/);
    const json = await runVersion(['--cluster', '--kubeconfig', kubeconfig, '-o', 'json'], {});
    expect(JSON.parse(json.stdout)).toMatchObject({ cluster: { linkerdVersion: 'edge-26.11.2', followed: false } });
  });

  it('a cluster it cannot read, and cluster flags without --cluster, are said', async () => {
    expect(await runVersion(['--cluster', '--kubeconfig', '/nonexistent/config'], {})).toEqual({
      code: 1,
      stdout: '',
      stderr: 'proxy-injector version: --kubeconfig /nonexistent/config: no such file\n',
    });
    const kubeconfig = await clusterNaming(undefined);
    const missing = await runVersion(['--cluster', '--kubeconfig', kubeconfig, '-L', 'elsewhere'], {});
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/^proxy-injector version: HTTP 404/);
    const stray = await runVersion(['-L', 'linkerd'], {});
    expect(stray.code).toBe(2);
    expect(stray.stderr).toMatch(/^proxy-injector version: --kubeconfig and -L read the cluster only with --cluster\n/);
  });
});

describe('linkerdVersionMismatch', () => {
  it('is silent for the release followed, and keeps a hostile value to one short line', () => {
    expect(linkerdVersionMismatch({ linkerdVersion: DEFAULT_LINKERD_VERSION })).toBeUndefined();
    const text = linkerdVersionMismatch({ linkerdVersion: `edge-1\n${'x'.repeat(10_000)}` }) ?? '';
    expect(text).not.toContain('\n');
    expect(text.length).toBeLessThan(700);
  });
});
