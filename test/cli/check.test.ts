/** `proxy-injector check cni` on node directory trees built by the tests: Calico, Flannel, Cilium, k3s/k3d. */
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { checkCni, runCheck } from '../../src/cli/check.js';

const roots: string[] = [];
afterEach(() => {
  for (const r of roots.splice(0)) rmSync(r, { recursive: true, force: true });
});

/** A node's root with the given files (JSON-serialised when not a string); `exec` files get mode 755. */
function node(files: Record<string, unknown>, exec: string[] = []): string {
  const root = mkdtempSync(join(tmpdir(), 'cni-node-'));
  roots.push(root);
  for (const [path, content] of Object.entries(files)) {
    mkdirSync(dirname(join(root, path)), { recursive: true });
    writeFileSync(join(root, path), typeof content === 'string' ? content : JSON.stringify(content, null, 2));
  }
  for (const path of exec) {
    mkdirSync(dirname(join(root, path)), { recursive: true });
    writeFileSync(join(root, path), '#!/bin/sh\n');
    chmodSync(join(root, path), 0o755);
  }
  return root;
}

/** linkerd-cni's entry as the installer appends it, pointing at its kubeconfig in `netDir`. */
const linkerd = (netDir = '/etc/cni/net.d') => ({
  name: 'linkerd-cni',
  type: 'linkerd-cni',
  log_level: 'info',
  kubernetes: { kubeconfig: `${netDir}/ZZZ-linkerd-cni-kubeconfig` },
  linkerd: { 'incoming-proxy-port': 4143, 'outgoing-proxy-port': 4140, 'proxy-uid': 2102 },
});
const calico = { name: 'k8s-pod-network', cniVersion: '0.3.1', plugins: [{ type: 'calico', ipam: { type: 'calico-ipam' } }, { type: 'portmap', snat: true }, { type: 'bandwidth' }] };
const flannel = { name: 'cbr0', cniVersion: '0.3.1', plugins: [{ type: 'flannel', delegate: { hairpinMode: true } }, { type: 'portmap' }] };
const cilium = { cniVersion: '0.3.1', name: 'cilium', plugins: [{ type: 'cilium-cni', 'enable-debug': false }] };
const KUBECONFIG = '# Kubeconfig file for linkerd CNI plugin.\napiVersion: v1\nkind: Config\n';
const withLinkerd = (conf: { plugins: unknown[] }, netDir?: string) => ({ ...conf, plugins: [...conf.plugins, linkerd(netDir)] });

const marks = (root: string, opts: { confDir?: string; binDir?: string } = {}) => checkCni({ root, ...opts }).checks.map((c) => `${c.mark} ${c.text}`);

describe('check cni', () => {
  it.each([
    ['calico', '10-calico.conflist', calico, ['calico', 'calico-ipam', 'portmap', 'bandwidth']],
    ['flannel', '10-flannel.conflist', flannel, ['flannel', 'portmap']],
    ['cilium', '05-cilium.conflist', cilium, ['cilium-cni']],
  ])('%s with linkerd-cni appended by the installer passes', (_name, file, conf, bins) => {
    const root = node(
      { [`etc/cni/net.d/${file}`]: withLinkerd(conf as { plugins: unknown[] }), 'etc/cni/net.d/ZZZ-linkerd-cni-kubeconfig': KUBECONFIG },
      ['opt/cni/bin/linkerd-cni', ...(bins as string[]).map((b) => `opt/cni/bin/${b}`)],
    );
    const report = checkCni({ root });
    expect(report.ok).toBe(true);
    expect(report.checks.filter((c) => c.mark === '×')).toEqual([]);
    expect(report.checks.map((c) => c.text)).toContainEqual(expect.stringMatching(/^linkerd-cni is chained after the primary plugin/));
    expect(runCheck(['cni', '--root', root]).code).toBe(0);
  });

  it('a missing linkerd-cni binary fails and gives the install flags', () => {
    const root = node({ 'etc/cni/net.d/10-calico.conflist': withLinkerd(calico), 'etc/cni/net.d/ZZZ-linkerd-cni-kubeconfig': KUBECONFIG }, ['opt/cni/bin/calico']);
    const report = checkCni({ root });
    expect(report.ok).toBe(false);
    expect(marks(root)).toContainEqual(expect.stringMatching(/^× \/opt\/cni\/bin\/linkerd-cni is missing or not executable.*--dest-cni-bin-dir \/opt\/cni\/bin/));
    const cli = runCheck(['cni', '--root', root]);
    expect(cli.code).toBe(1);
    expect(cli.stdout).toMatch(/Linkerd CNI plugin: not working on this node\n$/);
  });

  it('a missing kubeconfig fails', () => {
    const root = node({ 'etc/cni/net.d/10-calico.conflist': withLinkerd(calico) }, ['opt/cni/bin/linkerd-cni', 'opt/cni/bin/calico']);
    expect(marks(root)).toContainEqual(expect.stringMatching(/^× linkerd-cni's kubeconfig \/etc\/cni\/net.d\/ZZZ-linkerd-cni-kubeconfig does not exist/));
  });

  it('linkerd-cni first is a failure; not last is a warning', () => {
    const first = node({ 'etc/cni/net.d/10-calico.conflist': { ...calico, plugins: [linkerd(), ...calico.plugins] }, 'etc/cni/net.d/ZZZ-linkerd-cni-kubeconfig': KUBECONFIG }, ['opt/cni/bin/linkerd-cni', 'opt/cni/bin/linkerd-cni']);
    expect(checkCni({ root: first }).ok).toBe(false);
    expect(marks(first)).toContainEqual(expect.stringMatching(/^× linkerd-cni is the first plugin/));
    const middle = node(
      { 'etc/cni/net.d/10-calico.conflist': { ...calico, plugins: [calico.plugins[0], linkerd(), calico.plugins[1]] }, 'etc/cni/net.d/ZZZ-linkerd-cni-kubeconfig': KUBECONFIG },
      ['opt/cni/bin/linkerd-cni', 'opt/cni/bin/calico'],
    );
    expect(checkCni({ root: middle }).ok).toBe(true);
    expect(marks(middle)).toContainEqual(expect.stringMatching(/^‼ linkerd-cni is not the last plugin \(portmap after it\)/));
  });

  it('linkerd-cni only in a configuration the runtime does not use fails and says which one it uses', () => {
    const root = node(
      { 'etc/cni/net.d/05-cilium.conflist': cilium, 'etc/cni/net.d/10-calico.conflist': withLinkerd(calico), 'etc/cni/net.d/ZZZ-linkerd-cni-kubeconfig': KUBECONFIG },
      ['opt/cni/bin/linkerd-cni', 'opt/cni/bin/cilium-cni'],
    );
    const text = marks(root).join('\n');
    expect(checkCni({ root }).ok).toBe(false);
    expect(text).toContain('05-cilium.conflist is the configuration the container runtime uses');
    expect(text).toMatch(/× linkerd-cni is not in 05-cilium\.conflist .*it is in 10-calico\.conflist.*cni\.exclusive=false/);
  });

  it('a single-plugin .conf that linkerd-cni has not rewritten fails', () => {
    const root = node({ 'etc/cni/net.d/10-bridge.conf': { cniVersion: '0.3.1', name: 'bridge', type: 'bridge' } }, ['opt/cni/bin/bridge']);
    expect(marks(root)).toContainEqual(expect.stringMatching(/^× 10-bridge\.conf is a single-plugin configuration \(type "bridge"\)/));
  });

  it('an empty or missing configuration directory and invalid JSON fail with what is wrong', () => {
    expect(marks(node({}))).toEqual(['× /etc/cni/net.d does not exist: no CNI configuration here (on k3s/k3d it is /var/lib/rancher/k3s/agent/etc/cni/net.d)']);
    const empty = node({ 'etc/cni/net.d/README': 'x' });
    expect(marks(empty)[0]).toMatch(/^× \/etc\/cni\/net.d has no CNI configuration file/);
    const broken = node({ 'etc/cni/net.d/10-x.conflist': '{"plugins": [' });
    expect(marks(broken)).toContainEqual(expect.stringMatching(/^× 10-x\.conflist is not valid JSON/));
  });

  describe('k3s and k3d', () => {
    const K3S = 'var/lib/rancher/k3s/agent/etc/cni/net.d';
    it('the k3s layout is found without flags and passes when linkerd-cni was installed with its paths', () => {
      const netDir = `/${K3S}`;
      const root = node({ [`${K3S}/10-flannel.conflist`]: withLinkerd(flannel, netDir), [`${K3S}/ZZZ-linkerd-cni-kubeconfig`]: KUBECONFIG }, ['bin/linkerd-cni', 'bin/flannel', 'bin/portmap']);
      const report = checkCni({ root });
      expect(report).toMatchObject({ k3s: true, ok: true, confDir: netDir, binDir: '/bin' });
      expect(marks(root)[0]).toMatch(/^√ k3s\/k3d node/);
    });

    it('linkerd-cni installed with the default paths on k3s fails and gives the k3s install flags', () => {
      const root = node(
        {
          [`${K3S}/10-flannel.conflist`]: flannel,
          'etc/cni/net.d/ZZZ-linkerd-cni-kubeconfig': KUBECONFIG,
        },
        ['opt/cni/bin/linkerd-cni', 'bin/flannel'],
      );
      const text = marks(root).join('\n');
      expect(checkCni({ root }).ok).toBe(false);
      expect(text).toContain(`× linkerd-cni was installed into /etc/cni/net.d, which k3s does not read`);
      expect(text).toContain('linkerd install-cni --dest-cni-net-dir /var/lib/rancher/k3s/agent/etc/cni/net.d --dest-cni-bin-dir /bin');
      expect(text).toContain('destCNINetDir=/var/lib/rancher/k3s/agent/etc/cni/net.d,destCNIBinDir=/bin');
    });
  });

  it('--cni-conf-dir and --cni-bin-dir choose the directories', () => {
    const root = node({ 'cni/conf/10-calico.conflist': withLinkerd(calico, '/cni/conf'), 'cni/conf/ZZZ-linkerd-cni-kubeconfig': KUBECONFIG }, ['cni/bin/linkerd-cni', 'cni/bin/calico']);
    expect(checkCni({ root }).ok).toBe(false);
    expect(runCheck(['cni', '--root', root, '--cni-conf-dir', '/cni/conf', '--cni-bin-dir', '/cni/bin']).code).toBe(0);
  });

  it('usage errors exit 2', () => {
    expect(runCheck([]).code).toBe(2);
    expect(runCheck(['dns']).code).toBe(2);
    expect(runCheck(['cni', '--bogus']).code).toBe(2);
    expect(runCheck(['--help']).stdout).toContain('Usage: proxy-injector check cni');
  });
});
