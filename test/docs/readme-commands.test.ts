/**
 * Every command the README shows still works. The `proxy-injector` commands that need no cluster run, against dist/
 * when it is newer than src/ (else from the sources, through tsx); `npm start` runs on free ports and the README's
 * curl and send-review commands get their answer from it. Commands that need a cluster, a registry or a container
 * engine (helm, kubectl, docker) cannot run here: the files, scripts, values and flags they name must exist, and the
 * install must set what the chart requires. A command of any other program fails the test until it gets a check.
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listeningUrls } from '../support/process.js';
import { ROOT, commandsOf, documentationFiles, fences, read } from './markdown.js';

const CLI = 'dist/cli/main.js';

/** A shell command split into words, as sh would split it here: quotes, backslash-newlines and comments. */
export function words(line: string): string[] {
  const out: string[] = [];
  let word: string | undefined;
  let quote: "'" | '"' | undefined;
  for (let i = 0; i < line.length; i++) {
    const c = line[i] as string;
    if (quote) {
      if (c === quote) quote = undefined;
      else word = (word ?? '') + c;
    } else if (c === "'" || c === '"') {
      quote = c;
      word ??= '';
    } else if (c === '#' && word === undefined) {
      break;
    } else if (c === '\\' && line[i + 1] === '\n') {
      i++;
    } else if (/\s/.test(c)) {
      if (word !== undefined) out.push(word);
      word = undefined;
    } else if (c === '|' && word === undefined) {
      out.push('|');
    } else {
      word = (word ?? '') + c;
    }
  }
  if (quote) throw new Error(`unclosed ${quote} in: ${line}`);
  if (word !== undefined) out.push(word);
  return out;
}

interface Shown {
  /** Where the README shows it. */
  where: string;
  /** Its words, with `$VAR`s of earlier assignments in the same block replaced. */
  argv: string[];
  /** As written. */
  text: string;
}

/** Every command of the README's ```sh blocks and of the command line table's examples. */
function shownCommands(readme: string): Shown[] {
  const out: Shown[] = [];
  for (const fence of fences(readme).filter((f) => f.lang === 'sh')) {
    const vars = new Map<string, string>();
    for (const text of commandsOf(fence.body)) {
      const argv = words(text).map((w) => w.replace(/\$(\w+)|\$\{(\w+)\}/g, (m, a: string | undefined, b: string | undefined) => vars.get(a ?? b ?? '') ?? m));
      const assignment = argv.length === 1 ? /^(\w+)=(.*)$/.exec(argv[0] ?? '') : null;
      if (assignment) {
        vars.set(assignment[1] ?? '', assignment[2] ?? '');
        continue;
      }
      out.push({ where: `README.md:${fence.line}`, argv, text });
    }
  }
  const table = readme.split(/^## The command line$/m)[1]?.split(/^## /m)[0] ?? '';
  for (const m of table.matchAll(/^\| `([^`]+)` \|[^\n]*\| `([^`]+)` \|$/gm)) {
    out.push({ where: `README.md, the command line table (${m[1]})`, argv: words(m[2] ?? ''), text: m[2] ?? '' });
  }
  return out;
}

/** The segments of a pipeline. */
function segments(argv: string[]): string[][] {
  const out: string[][] = [[]];
  for (const w of argv) {
    if (w === '|') out.push([]);
    else out.at(-1)?.push(w);
  }
  return out;
}

function newestUnder(dir: string): number {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    newest = Math.max(newest, entry.isDirectory() ? newestUnder(path) : statSync(path).mtimeMs);
  }
  return newest;
}

/** How to run the command line: the built one when it is current, else the sources. */
function cliRunner(): { argv: string[]; what: string } {
  const built = join(ROOT, CLI);
  if (existsSync(built) && statSync(built).mtimeMs >= newestUnder(join(ROOT, 'src'))) return { argv: [CLI], what: 'dist/' };
  return { argv: ['--import', 'tsx', 'src/cli/main.ts'], what: 'the sources (dist/ is missing or older than src/)' };
}

const runner = cliRunner();
const helpCache = new Map<string, string>();

/** A command's --help, which names every flag it takes. */
function helpOf(command: string[]): string {
  const key = command.join(' ');
  let help = helpCache.get(key);
  if (help === undefined) {
    const run = spawnSync(process.execPath, [...runner.argv, ...command, '--help'], { cwd: ROOT, encoding: 'utf8', timeout: 30_000 });
    expect(run.status, `${key} --help: ${run.stderr}`).toBe(0);
    help = run.stdout;
    helpCache.set(key, help);
  }
  return help;
}

/** The subcommand (`check` takes a second word) and the rest of a `node dist/cli/main.js ...` command. */
function cliParts(argv: string[]): { command: string[]; args: string[] } {
  const rest = argv.slice(2);
  const n = rest[0] === 'check' ? 2 : 1;
  return { command: rest.slice(0, n), args: rest.slice(n) };
}

/** Flags a command line uses that its --help does not name. */
function unknownFlags(command: string[], args: string[]): string[] {
  const help = helpOf(command);
  const names = (flag: string) => new RegExp(`(^|[\\s,\\[])${flag.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}(?=[\\s,=\\]]|$)`, 'm').test(help);
  return args
    .filter((a) => /^--?[A-Za-z]/.test(a))
    .map((a) => a.split('=')[0] ?? a)
    .filter((flag) => !names(flag) && !(flag.startsWith('--no-') && names(`--${flag.slice(5)}`) && help.includes('--no-')));
}

/** Words that name files: they must exist for the command to run here. */
const namesAFile = (w: string) => !w.startsWith('-') && /[/]|\.(ya?ml|json|pem)$/.test(w);

const readme = read('README.md');
const shown = shownCommands(readme);
const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { bin?: Record<string, string>; scripts?: Record<string, string> };
const values = parseYaml(read('charts/proxy-injector/values.yaml')) as Record<string, unknown>;

/** Whether a dotted key names a value of the chart's values.yaml. */
function chartHas(key: string): boolean {
  let node: unknown = values;
  for (const part of key.split('.')) {
    if (node === null || typeof node !== 'object' || !(part in node)) return false;
    node = (node as Record<string, unknown>)[part];
  }
  return true;
}

/** What a `helm install` in the README installs, for the kubectl commands that follow it. */
const releases: Array<{ name: string; namespace: string }> = [];

/** Why a helm, kubectl or docker command of the README would not work, if it would not; the images docker built. */
const built = new Set<string>();
function staticProblems(c: Shown): string[] {
  const [program, sub] = c.argv;
  const problems: string[] = [];
  const optionValues = (...flags: string[]) => c.argv.flatMap((w, i) => (flags.includes(w) ? [c.argv[i + 1] ?? ''] : flags.flatMap((f) => (w.startsWith(`${f}=`) ? [w.slice(f.length + 1)] : []))));
  const positional = c.argv.slice(2).filter((w, i, all) => !w.startsWith('-') && !/^(-n|--namespace|-f|--values|--set|--set-json|-t|-o|--image)$/.test(all[i - 1] ?? ''));
  if (program === 'npm') {
    const script = sub === 'run' ? c.argv[2] : sub;
    if (!script || !pkg.scripts?.[script]) problems.push(`npm ${sub} ${script ?? ''}: package.json has no script ${script}`);
  } else if (program === 'node') {
    // A file of dist/ is there once `npm run build` compiled its source, which a fresh clone has not done yet.
    const file = sub?.startsWith('dist/') ? sub.replace(/^dist\//, 'src/').replace(/\.js$/, '.ts') : (sub ?? '');
    if (!existsSync(join(ROOT, file))) problems.push(`node ${sub}: no such file${file === sub ? '' : ` (${file} builds it)`}`);
  } else if (program === 'docker') {
    if (sub === 'build') {
      const tag = optionValues('-t')[0] ?? '';
      const context = positional.at(-1) ?? '';
      if (!existsSync(join(ROOT, context, 'Dockerfile'))) problems.push(`docker build: no Dockerfile in ${context}`);
      built.add(tag);
    } else if (sub === 'push') {
      if (!built.has(c.argv[2] ?? '')) problems.push(`docker push ${c.argv[2]}: not the image the README built (${[...built].join(', ')})`);
    } else problems.push(`docker ${sub}: no check for this subcommand`);
  } else if (program === 'helm') {
    const chart = positional[1] ?? '';
    if (sub === 'install' || (sub === 'upgrade' && chart.startsWith('charts/'))) {
      if (!existsSync(join(ROOT, chart, 'Chart.yaml'))) problems.push(`helm ${sub}: ${chart} is not a chart of the repository`);
      for (const f of optionValues('-f', '--values')) if (!existsSync(join(ROOT, f))) problems.push(`helm ${sub}: no values file ${f}`);
      const set = optionValues('--set', '--set-string').flatMap((s) => s.split(',')).map((s) => s.split('=')[0] ?? '');
      for (const key of set) if (!chartHas(key)) problems.push(`helm ${sub}: --set ${key} is not a value of the chart`);
      // The chart refuses to render without an image: an install must name one.
      if (sub === 'install' && (values['image'] as Record<string, unknown> | undefined)?.['repository'] === '' && !set.includes('image.repository')) {
        problems.push('helm install: the chart requires image.repository, and this command does not set it');
      }
      const namespace = optionValues('-n', '--namespace')[0];
      if (sub === 'install') releases.push({ name: positional[0] ?? '', namespace: namespace ?? 'default' });
    } else if (sub === 'upgrade') {
      // Another project's chart (Linkerd's): only what the command itself says can be checked, and that it keeps the
      // chart version installed, which a repository's newest would replace.
      if (optionValues('--version').length === 0) problems.push(`helm upgrade ${chart}: no --version, so it also upgrades to the repository's newest chart`);
      for (const json of optionValues('--set-json')) {
        try {
          JSON.parse(json.slice(json.indexOf('=') + 1));
        } catch (err) {
          problems.push(`helm upgrade --set-json ${json}: ${(err as Error).message}`);
        }
      }
    } else problems.push(`helm ${sub}: no check for this subcommand`);
  } else if (program === 'kubectl') {
    const namespace = optionValues('-n', '--namespace')[0];
    if (c.argv.includes('rollout')) {
      const target = c.argv.find((w) => w.startsWith('deployment/'))?.slice('deployment/'.length);
      // The chart names its Deployment after the release when the release's name contains "proxy-injector".
      const release = releases.find((r) => r.namespace === namespace);
      if (!release) problems.push(`kubectl rollout in ${namespace}: no helm install into that namespace comes before it`);
      else if (target !== (release.name.includes('proxy-injector') ? release.name : `${release.name}-proxy-injector`)) {
        problems.push(`kubectl rollout: deployment/${target} is not the Deployment of release ${release.name}`);
      }
    } else if (!['run', 'get'].includes(c.argv.find((w, i) => i > 0 && !w.startsWith('-') && c.argv[i - 1] !== '-n') ?? '')) {
      problems.push(`kubectl: no check for ${c.text}`);
    }
  } else if (/^[A-Z_]+=\$\(helm$/.test(program ?? '')) {
    // A value a later command uses, read from an installed release.
    if (!/^[A-Z_]+=\$\(helm -n \S+ get metadata \S+ -o yaml \| sed -n 's\/\^version: \/\/p'\)$/.test(c.text)) problems.push(`${c.text}: not the chart version of a release`);
  } else if (program !== 'curl') {
    problems.push(`${program}: no check for this program; teach test/docs/readme-commands.test.ts what it needs`);
  }
  return problems;
}

describe(`the README's commands (the command line from ${runner.what})`, () => {
  it('shows the commands this test knows to look for', () => {
    const programs = new Set(shown.map((c) => c.argv[0]));
    for (const p of ['npm', 'node', 'curl', 'docker', 'helm', 'kubectl']) expect(programs).toContain(p);
    expect(shown.filter((c) => c.where.includes('table')).length).toBeGreaterThanOrEqual(6);
  });

  it('runs dist/cli/main.js, the command package.json installs', () => {
    expect(pkg.bin?.['proxy-injector']).toBe(CLI);
    for (const c of shown.filter((s) => s.argv[0] === 'node' && s.argv[1]?.startsWith('dist/'))) expect(c.argv[1], c.where).toBe(CLI);
  });

  const cliCommands = shown.filter((c, i) => segments(c.argv).every((s) => s[0] === 'node' && s[1] === CLI) && shown.findIndex((d) => d.text === c.text) === i);

  it.each(cliCommands.map((c) => [c.text, c] as const))('%s: every flag is one its command takes', (_text, c) => {
    for (const segment of segments(c.argv)) {
      const { command, args } = cliParts(segment);
      expect(unknownFlags(command, args), `${c.where}: ${c.text}`).toEqual([]);
    }
  });

  // Commands that need nothing the machine lacks: no server, cluster or node; only the repository's files.
  const runnable = cliCommands.filter((c) =>
    segments(c.argv).every((s) => {
      const { command, args } = cliParts(s);
      return ['inject', 'uninject', 'explain', 'version'].includes(command[0] ?? '') && args.filter(namesAFile).every((w) => existsSync(join(ROOT, w)));
    }),
  );

  it('runs some of them', () => {
    expect(runnable.length).toBeGreaterThanOrEqual(4);
  });

  it.each(runnable.map((c) => [c.text, c] as const))('%s: runs and succeeds', (_text, c) => {
    const node = JSON.stringify(process.execPath);
    const script = segments(c.argv)
      .map((s) => [node, ...runner.argv, ...s.slice(2)].map((w) => (w === node ? w : `'${w.replace(/'/g, `'\\''`)}'`)).join(' '))
      .join(' | ');
    const run = spawnSync('bash', ['-o', 'pipefail', '-c', script], { cwd: ROOT, encoding: 'utf8', timeout: 60_000 });
    expect(run.status, `${c.where}: ${c.text}\n${run.stderr}`).toBe(0);
    expect(run.stdout.length, `${c.text} printed nothing`).toBeGreaterThan(0);
    expect(run.stderr).not.toMatch(/\n\s+at \S+ \(|TypeError|ReferenceError/);
  }, 60_000);

  it('every helm, kubectl, docker, npm and script command names files, values and scripts that exist', () => {
    const problems = shown.filter((c) => !cliCommands.includes(c)).flatMap((c) => staticProblems(c).map((p) => `${c.where}: ${p}`));
    expect(problems).toEqual([]);
  });

  it('the static checks find a missing chart value, an image never built and an install without an image', () => {
    const fake = (text: string): Shown => ({ where: 'test', argv: words(text), text });
    built.clear();
    releases.length = 0;
    expect(staticProblems(fake('helm install proxy-injector charts/proxy-injector -n x --set image.repositry=r'))).toEqual([
      'helm install: --set image.repositry is not a value of the chart',
      'helm install: the chart requires image.repository, and this command does not set it',
    ]);
    expect(staticProblems(fake('docker push r/proxy-injector:9'))).toEqual(['docker push r/proxy-injector:9: not the image the README built ()']);
    expect(staticProblems(fake('kubectl -n x rollout status deployment/other'))).toEqual(['kubectl rollout: deployment/other is not the Deployment of release proxy-injector']);
    expect(staticProblems(fake('npm run no-such-script'))).toEqual(['npm run no-such-script: package.json has no script no-such-script']);
    expect(staticProblems(fake('make install'))[0]).toMatch(/no check for this program/);
  });

  it('splits commands as the shell does', () => {
    expect(words(`helm upgrade a b --set-json 'x={"k":"v w"}' # comment`)).toEqual(['helm', 'upgrade', 'a', 'b', '--set-json', 'x={"k":"v w"}']);
    expect(words('a -o jsonpath="{.x}" | b -')).toEqual(['a', '-o', 'jsonpath={.x}', '|', 'b', '-']);
    expect(commandsOf('# only a comment\nX=1\ncurl \\\n  --data @f url\n')).toEqual(['X=1', 'curl    --data @f url']);
  });
});

describe("the README's quickstart", () => {
  // `exec` only hands npm's process to the server, so that a signal to it stops the server.
  const start = words(pkg.scripts?.['start'] ?? '').filter((w, i) => !(i === 0 && w === 'exec'));
  const flag = (name: string) => start[start.indexOf(name) + 1] ?? '';
  let dir = '';
  let server: ReturnType<typeof spawn> | undefined;
  let exited: Promise<number | null> = Promise.resolve(null);
  let webhook = '';
  const logs: string[] = [];

  beforeAll(async () => {
    expect(start.slice(0, 3), 'npm start runs serve').toEqual(['node', CLI, 'serve']);
    dir = mkdtempSync(join(tmpdir(), 'proxy-injector-readme-'));
    // npm start's own arguments, on free ports and with certificates of its own, so that nothing else is disturbed.
    const args = start.slice(2).map((w, i, all) => (all[i - 1] === '--addr' || all[i - 1] === '--admin-addr' ? '127.0.0.1:0' : w));
    server = spawn(process.execPath, [...runner.argv, ...args, '--tls-dir', dir, '--log-format', 'json'], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    exited = new Promise((resolve) => server?.once('exit', resolve));
    ({ webhook } = await listeningUrls(server, logs, exited));
  }, 60_000);

  afterAll(async () => {
    server?.kill('SIGTERM');
    await exited;
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('says where npm start listens, as package.json starts it: on loopback, without a cluster', () => {
    expect(start).toContain('--no-cluster');
    expect(flag('--addr')).toMatch(/^127\.0\.0\.1:\d+$/);
    expect(flag('--admin-addr')).toMatch(/^127\.0\.0\.1:\d+$/);
    expect(readme).toContain(`https://${flag('--addr')}`);
    expect(readme).toContain(`http://${flag('--admin-addr')}`);
    expect(start, 'certificates in certs/, where the README sends curl for the CA').not.toContain('--tls-dir');
    // The demonstration root the README warns about.
    expect(flag('--trust-anchors')).toMatch(/\.pem$/);
    expect(readme).toContain(flag('--trust-anchors'));
  });

  /** A README command with npm start's address and CA replaced by this server's. */
  const here = (c: Shown): string[] => {
    const port = flag('--addr').split(':')[1] ?? '';
    return c.argv.map((w) => w.replace(new RegExp(`^https://(localhost|127\\.0\\.0\\.1):${port}/`), `${webhook}/`).replace(/^certs\/ca\.crt$/, join(dir, 'ca.crt')));
  };

  function expectInjected(stdout: string, where: string): void {
    const review = JSON.parse(stdout) as { response?: { allowed?: boolean; patchType?: string; patch?: unknown } };
    expect(review.response?.allowed, where).toBe(true);
    expect(review.response?.patchType, where).toBe('JSONPatch');
    const patch = (typeof review.response?.patch === 'string' ? JSON.parse(Buffer.from(review.response.patch, 'base64').toString('utf8')) : review.response?.patch) as Array<{ path: string; value?: { name?: string } }>;
    // What the README says the answer does: linkerd-proxy first in the containers, and linkerd-init added.
    expect(patch.find((op) => op.path === '/spec/containers/0')?.value?.name, where).toBe('linkerd-proxy');
    expect(patch.some((op) => op.path.startsWith('/spec/initContainers') && op.value?.name === 'linkerd-init'), where).toBe(true);
  }

  const hasCurl = spawnSync('curl', ['--version']).status === 0;
  it.skipIf(!hasCurl)(`the README's curl command gets the injected pod's patch${hasCurl ? '' : ' (skipped: curl is not installed)'}`, () => {
    const curl = shown.find((c) => c.argv[0] === 'curl');
    expect(curl, 'a curl command in the README').toBeDefined();
    if (!curl) return;
    expect(curl.argv).toContain('certs/ca.crt');
    const run = spawnSync(here(curl)[0] ?? '', here(curl).slice(1), { cwd: ROOT, encoding: 'utf8', timeout: 30_000 });
    expect(run.status, run.stderr + logs.join('\n')).toBe(0);
    expectInjected(run.stdout, curl.text);
  });

  it("the README's send-review command prints the decoded patch", () => {
    const send = shown.find((c) => c.argv[0] === 'node' && c.argv[1] === 'scripts/send-review.mjs');
    expect(send, 'node scripts/send-review.mjs in the README').toBeDefined();
    if (!send) return;
    // Its defaults are npm start's address and CA; here they are given.
    const source = read('scripts/send-review.mjs');
    expect(source).toContain(`'https://localhost:${flag('--addr').split(':')[1]}/'`);
    expect(source).toContain("'certs/ca.crt'");
    const run = spawnSync(process.execPath, [...send.argv.slice(1), `${webhook}/`, 'examples/admission-review.json', join(dir, 'ca.crt')], { cwd: ROOT, encoding: 'utf8', timeout: 30_000 });
    expect(run.status, run.stderr).toBe(0);
    expectInjected(run.stdout, send.text);
  });

});

describe('transcripts in the documentation', () => {
  /** Every ```console block that shows `$ node dist/cli/main.js ...` and what it printed. */
  const transcripts = documentationFiles().flatMap((file) =>
    fences(read(file))
      .filter((f) => f.lang === 'console' && f.body.startsWith(`$ node ${CLI} `))
      .map((f) => ({ where: `${file}:${f.line}`, command: f.body.split('\n')[0]?.slice(2) ?? '', output: f.body.slice(f.body.indexOf('\n') + 1) })),
  );

  it('finds the transcript of explain in docs/cli.md', () => {
    expect(transcripts.map((t) => t.where)).toEqual(expect.arrayContaining([expect.stringMatching(/^docs\/cli\.md:/)]));
  });

  it.each(transcripts.map((t) => [t.where, t] as const))('%s prints what the page shows', (_where, t) => {
    const argv = words(t.command);
    const run = spawnSync(process.execPath, [...runner.argv, ...argv.slice(2)], { cwd: ROOT, encoding: 'utf8', timeout: 60_000 });
    expect(run.status, run.stderr).toBe(0);
    expect(run.stdout.trimEnd()).toBe(t.output.trimEnd());
  }, 60_000);
});
