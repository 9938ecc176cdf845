/**
 * Container images without a container engine or a registry: each one an OCI layout made with umoci from a staged
 * directory (its files, with their owners and file capabilities), kept as a tarball in the cache under a key of its
 * inputs, and imported into the node's containerd under the name its pods ask for.
 */
import { createHash } from 'node:crypto';
import { chmodSync, copyFileSync, existsSync, mkdirSync, readFileSync, readdirSync, renameSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { CACHE_DIR, LINKERD_BIN, LINKERD_VERSION, log, run, runSync, sharedLibraries } from './host.js';

/** Bumped when the way images are made changes, so that cached ones are made again. */
const RECIPE = 'images-3';

export interface ImageConfig {
  entrypoint?: string[];
  cmd?: string[];
  env?: string[];
  user?: string;
  workdir?: string;
  ports?: string[];
}

export interface BuiltImage {
  /** repository, as pods name it (without the tag) */
  repository: string;
  tag: string;
  /** OCI layout tarball, for `ctr images import` */
  tarball: string;
}

/** sha256 of the given strings and files' contents, short. */
export function digestOf(parts: Array<string | { file: string }>): string {
  const hash = createHash('sha256').update(RECIPE);
  for (const part of parts) {
    if (typeof part === 'string') hash.update(`s:${part}\n`);
    else hash.update(`f:${part.file}\n`).update(readFileSync(part.file));
  }
  return hash.digest('hex').slice(0, 16);
}

const imagesDir = (): string => join(CACHE_DIR, 'images');

/** Writes a layout tarball from a staged root (one layer on top of `base`'s layers when given), unless cached. */
export async function ociImage(
  repository: string,
  tag: string,
  key: string,
  config: ImageConfig,
  stage: (root: string) => Promise<void>,
  base?: { layout: string; tag: string },
): Promise<BuiltImage> {
  const tarball = join(imagesDir(), `${repository.replace(/[/:]/g, '_')}-${tag}-${key}.tar`);
  if (existsSync(tarball)) return { repository, tag, tarball };
  const started = Date.now();
  const work = join(imagesDir(), `.work-${process.pid}-${basename(tarball, '.tar')}`);
  rmSync(work, { recursive: true, force: true });
  mkdirSync(work, { recursive: true });
  try {
    const layout = join(work, 'layout');
    if (base) {
      await run('cp', ['-a', base.layout, layout]);
      await run('umoci', ['tag', '--image', `${layout}:${base.tag}`, tag]);
      await run('umoci', ['rm', '--image', `${layout}:${base.tag}`]);
    } else {
      await run('umoci', ['init', '--layout', layout]);
      await run('umoci', ['new', '--image', `${layout}:${tag}`]);
    }
    const root = join(work, 'root');
    mkdirSync(root);
    await stage(root);
    // GNU tar writes the layer (with each file's capabilities), umoci adds it: umoci 0.4.7's own `insert` ends its
    // layer short, cutting the last file.
    await run('tar', ['--xattrs', '--xattrs-include=security.capability', '--numeric-owner', '-C', root, '-cf', join(work, 'layer.tar'), '.']);
    await run('umoci', ['raw', 'add-layer', '--image', `${layout}:${tag}`, '--history.created_by', `node suite: ${repository}`, join(work, 'layer.tar')]);
    await configure(layout, tag, config);
    await run('umoci', ['gc', '--layout', layout]);
    mkdirSync(dirname(tarball), { recursive: true });
    await run('tar', ['-C', layout, '-cf', `${tarball}.tmp`, '.']);
    renameSync(`${tarball}.tmp`, tarball);
    log(`image ${repository}:${tag} made in ${((Date.now() - started) / 1000).toFixed(1)} s`);
    return { repository, tag, tarball };
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

export async function configure(layout: string, tag: string, config: ImageConfig): Promise<void> {
  const args = ['config', '--image', `${layout}:${tag}`, '--no-history'];
  if (config.entrypoint) args.push('--clear=config.entrypoint', ...config.entrypoint.map((e) => `--config.entrypoint=${e}`));
  if (config.cmd) args.push('--clear=config.cmd', ...config.cmd.map((c) => `--config.cmd=${c}`));
  for (const e of config.env ?? []) args.push(`--config.env=${e}`);
  if (config.user) args.push(`--config.user=${config.user}`);
  if (config.workdir) args.push(`--config.workingdir=${config.workdir}`);
  for (const p of config.ports ?? []) args.push(`--config.exposedports=${p}`);
  await run('umoci', args);
}

/** Copies a host file into the staged root at `to` (a path in the image), creating its directory. */
export function put(root: string, from: string, to: string, mode?: number): void {
  const target = join(root, to);
  mkdirSync(dirname(target), { recursive: true });
  copyFileSync(from, target);
  chmodSync(target, mode ?? statSync(from).mode & 0o7777);
}

/** Copies a program's shared libraries and loader to the same paths in the staged root. */
export function putLibraries(root: string, program: string): void {
  for (const lib of sharedLibraries(program)) if (!existsSync(join(root, lib))) put(root, lib, lib);
}

export const DEFAULT_PATH = 'PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

/**
 * The sandbox's image: a static program that sleeps, reaps the children it inherits and exits on SIGTERM or SIGINT,
 * under the name containerd 1.6 uses for sandboxes unless told otherwise.
 */
export async function pauseImage(): Promise<BuiltImage> {
  const source = `#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>
static void quit(int sig) { (void)sig; _exit(0); }
static void reap(int sig) { (void)sig; while (waitpid(-1, 0, WNOHANG) > 0) {} }
int main(void) {
  signal(SIGTERM, quit);
  signal(SIGINT, quit);
  signal(SIGCHLD, reap);
  for (;;) pause();
}
`;
  return ociImage('registry.k8s.io/pause', '3.6', digestOf([source]), { entrypoint: ['/pause'] }, async (root) => {
    writeFileSync(join(root, 'pause.c'), source);
    await run('gcc', ['-static', '-O2', '-o', join(root, 'pause'), join(root, 'pause.c')]);
    rmSync(join(root, 'pause.c'));
  });
}

/** The suite's application image: Debian's static busybox (sh, httpd, wget, nslookup, ...), one link per applet. */
export const APP_IMAGE = 'node-suite.local/busybox';
export async function appImage(): Promise<BuiltImage> {
  const version = runSync('dpkg-query', ['-W', '-f=${Version}', 'busybox-static']).trim();
  // Debian's version without its epoch and revision: busybox's own.
  const upstream = version.replace(/^\d+:/, '').replace(/-[^-]*$/, '');
  return ociImage(APP_IMAGE, upstream, digestOf([{ file: '/bin/busybox' }]), { env: [DEFAULT_PATH], cmd: ['sh'] }, async (root) => {
    put(root, '/bin/busybox', '/bin/busybox');
    const applets = runSync('/bin/busybox', ['--list-full']).split('\n').filter(Boolean);
    for (const applet of applets) {
      const target = join(root, applet);
      if (existsSync(target)) continue;
      mkdirSync(dirname(target), { recursive: true });
      symlinkSync('/bin/busybox', target);
    }
    for (const dir of ['tmp', 'www', 'etc']) mkdirSync(join(root, dir), { recursive: true });
    chmodSync(join(root, 'tmp'), 0o1777);
    writeFileSync(join(root, 'www', 'index.html'), 'node suite\n');
    writeFileSync(join(root, 'etc', 'passwd'), 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n');
    writeFileSync(join(root, 'etc', 'group'), 'root:x:0:\nnogroup:x:65534:\n');
  });
}

const linkerdKey = (): string => digestOf([LINKERD_VERSION, { file: join(LINKERD_BIN, 'SHA256SUMS') }, runSync('dpkg-query', ['-W', '-f=${Version}', 'iptables', 'libc6'])]);

const PASSWD = 'root:x:0:0:root:/root:/sbin/nologin\nnobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\n';

/** Linkerd's control-plane image, as its values name it: the Go controller and the policy controller. */
export async function linkerdControllerImage(): Promise<BuiltImage> {
  return ociImage('cr.l5d.io/linkerd/controller', LINKERD_VERSION, linkerdKey(), { env: [DEFAULT_PATH], user: '65534', entrypoint: ['/controller'] }, async (root) => {
    put(root, join(LINKERD_BIN, 'controller'), '/controller', 0o755);
    put(root, join(LINKERD_BIN, 'linkerd-policy-controller'), '/linkerd-policy-controller', 0o755);
    putLibraries(root, join(LINKERD_BIN, 'linkerd-policy-controller'));
    if (existsSync('/etc/ssl/certs/ca-certificates.crt')) put(root, '/etc/ssl/certs/ca-certificates.crt', '/etc/ssl/certs/ca-certificates.crt', 0o644);
    mkdirSync(join(root, 'etc'), { recursive: true });
    writeFileSync(join(root, 'etc', 'passwd'), PASSWD);
  });
}

/**
 * Linkerd's proxy image, as its values name it: in /usr/lib/linkerd the identity entrypoint, the proxy, proxy-init,
 * the network validator and linkerd-await; Debian's iptables (legacy and nft, with their modules) for proxy-init; the
 * capabilities Linkerd's own image gives proxy-init and iptables so that they work as a non-root user.
 */
export async function linkerdProxyImage(): Promise<BuiltImage> {
  const programs: Array<[string, string]> = [
    ['proxy-identity', 'linkerd2-proxy-identity'],
    ['linkerd2-proxy', 'linkerd2-proxy'],
    ['linkerd2-proxy-init', 'linkerd2-proxy-init'],
    ['linkerd2-network-validator', 'linkerd2-network-validator'],
    ['linkerd-await', 'linkerd-await'],
  ];
  return ociImage(
    'cr.l5d.io/linkerd/proxy',
    LINKERD_VERSION,
    linkerdKey(),
    { env: [DEFAULT_PATH], entrypoint: ['/usr/lib/linkerd/linkerd2-proxy-identity'] },
    async (root) => {
      for (const [from, to] of programs) {
        put(root, join(LINKERD_BIN, from), `/usr/lib/linkerd/${to}`, 0o755);
        putLibraries(root, join(LINKERD_BIN, from));
      }
      for (const multi of ['xtables-legacy-multi', 'xtables-nft-multi']) {
        put(root, `/usr/sbin/${multi}`, `/usr/sbin/${multi}`, 0o755);
        putLibraries(root, `/usr/sbin/${multi}`);
        const backend = multi.includes('legacy') ? 'legacy' : 'nft';
        for (const family of ['iptables', 'ip6tables']) {
          for (const suffix of ['', '-save', '-restore']) symlinkSync(multi, join(root, 'usr', 'sbin', `${family}-${backend}${suffix}`));
        }
      }
      const modules = '/usr/lib/x86_64-linux-gnu/xtables';
      for (const module of readdirSync(modules)) put(root, join(modules, module), join(modules, module));
      for (const module of readdirSync(modules)) putLibraries(root, join(modules, module));
      mkdirSync(join(root, 'run'), { recursive: true });
      mkdirSync(join(root, 'tmp'), { recursive: true });
      chmodSync(join(root, 'tmp'), 0o1777);
      mkdirSync(join(root, 'etc'), { recursive: true });
      writeFileSync(join(root, 'etc', 'passwd'), PASSWD);
      for (const file of ['/usr/sbin/xtables-legacy-multi', '/usr/sbin/xtables-nft-multi', '/usr/lib/linkerd/linkerd2-proxy-init']) {
        await run('setcap', ['cap_net_raw,cap_net_admin+eip', join(root, file)]);
      }
    },
  );
}

/** Imports images into the node's containerd under their names (the layout's tag is the tag). */
export async function importImages(ctr: (args: string[]) => Promise<string>, images: BuiltImage[]): Promise<void> {
  for (const image of images) await ctr(['images', 'import', '--base-name', image.repository, image.tarball]);
}
