// Replays the Dockerfile without a container engine: each stage is a temporary directory standing in for its root
// filesystem; COPY, WORKDIR, ENV and RUN are carried out there, and the final stage's ENTRYPOINT + CMD are started
// and must answer an AdmissionReview, then stop cleanly on SIGTERM. It checks the steps and the files they produce,
// not the base image: a Node of the base image's major version stands in for it (the machine's own when it matches,
// else the npm registry's `node` package of that major, fetched with npx).
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const context = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const work = mkdtempSync(join(tmpdir(), 'dockerfile-dry-run-'));
const ignored = readFileSync(join(context, '.dockerignore'), 'utf8').split('\n').map((l) => l.trim()).filter((l) => l && !l.startsWith('#'));
const stages = new Map();
let stage;

function inStage(path) {
  return join(stage.root, path.startsWith('/') ? path : join(stage.workdir, path));
}

function copy(from, to, root) {
  const source = join(root, from);
  if (root === context && ignored.some((i) => from === i || from.startsWith(`${i}/`))) throw new Error(`COPY ${from}: excluded by .dockerignore`);
  if (!existsSync(source)) throw new Error(`COPY ${from}: no such file in ${root === context ? 'the build context' : 'the stage'}`);
  // "COPY a b ./" copies into the directory; "COPY src ./src" copies onto the path.
  const target = inStage(to);
  const into = to.endsWith('/') || to === '.';
  mkdirSync(into ? target : dirname(target), { recursive: true });
  cpSync(source, into ? join(target, from.split('/').pop()) : target, {
    recursive: true,
    filter: (src) => root !== context || !ignored.some((i) => src === join(context, i) || src.startsWith(`${join(context, i)}/`)),
  });
}

// The directory of a node binary of the base image's major version, put first on PATH for RUN and the final command.
let nodeBinDir = dirname(process.execPath);
function useNodeOf(image) {
  const major = /^node:(\d+)/.exec(image)?.[1];
  if (!major) throw new Error(`FROM ${image}: only node:<major>... base images can be replayed`);
  if (process.versions.node.split('.')[0] === major) {
    nodeBinDir = dirname(process.execPath);
  } else {
    const path = execFileSync('npx', ['-y', '-p', `node@${major}`, '-c', 'command -v node'], { stdio: ['ignore', 'pipe', 'inherit'] }).toString().trim();
    nodeBinDir = dirname(path);
  }
  const version = execFileSync(join(nodeBinDir, 'node'), ['--version']).toString().trim();
  console.error(`dockerfile: ${image} replayed with node ${version}`);
}
const withNode = (env) => ({ ...env, PATH: `${nodeBinDir}:${process.env.PATH}` });

const lines = readFileSync(join(context, 'Dockerfile'), 'utf8').replace(/\\\n/g, ' ').split('\n');
let entrypoint = [];
let cmd = [];
let env = {};
for (const raw of lines) {
  const line = raw.trim();
  if (!line || line.startsWith('#')) continue;
  const [instruction, ...rest] = line.split(/\s+/);
  const args = rest.join(' ');
  switch (instruction.toUpperCase()) {
    case 'FROM': {
      useNodeOf(args.split(/\s+/)[0]);
      const name = / AS (\S+)$/i.exec(args)?.[1] ?? `stage${stages.size}`;
      stage = { root: join(work, name), workdir: '/', env: {} };
      mkdirSync(stage.root, { recursive: true });
      stages.set(name, stage);
      env = {};
      break;
    }
    case 'WORKDIR':
      stage.workdir = args;
      mkdirSync(inStage('.'), { recursive: true });
      break;
    case 'ENV': {
      const [key, ...value] = args.split('=');
      const text = value.join('=').replace(/^"(.*)"$/, '$1');
      // An absolute path names a place in the image: the replay puts it under the stage's root.
      env[key] = text.startsWith('/') ? join(stage.root, text) : text;
      break;
    }
    case 'COPY': {
      const from = /^--from=(\S+)\s+/.exec(args);
      const paths = (from ? args.slice(from[0].length) : args).split(/\s+/);
      const to = paths.pop();
      const root = from ? join(stages.get(from[1]).root, '') : context;
      for (const p of paths) copy(from ? p.replace(/^\//, '') : p, paths.length > 1 ? `${to.replace(/\/?$/, '/')}` : to, root);
      break;
    }
    case 'RUN':
      console.error(`dockerfile: RUN ${args}`);
      execFileSync('bash', ['-c', args], { cwd: inStage('.'), stdio: ['ignore', 'inherit', 'inherit'], env: withNode({ ...process.env, ...env }) });
      break;
    case 'ENTRYPOINT':
      entrypoint = JSON.parse(args);
      break;
    case 'CMD':
      cmd = JSON.parse(args);
      break;
    case 'USER':
    case 'EXPOSE':
      break;
    default:
      throw new Error(`unsupported instruction: ${line}`);
  }
}

// Run the final stage as the image would: its files only, the ENTRYPOINT + CMD, with a writable TLS directory.
const [program, ...programArgs] = [...entrypoint, ...cmd];
const tlsDir = join(work, 'tls');
const finalArgs = programArgs.map((a) => (a.startsWith('/var/run/proxy-injector/tls') ? tlsDir : a));
const binary = program === 'node' ? join(nodeBinDir, 'node') : program;
// A compile cache made at build time must be one the image's command reads: made by another user or with other flags,
// Node would silently compile everything again. Checked before anything else runs in the final stage, which could
// fill the cache itself.
let cachedModules;
if (env.NODE_COMPILE_CACHE) {
  const trace = spawnSync(binary, [...entrypoint.slice(1), '--version'], {
    cwd: inStage('.'),
    env: withNode({ HOME: work, ...env, NODE_DEBUG_NATIVE: 'COMPILE_CACHE' }),
    encoding: 'utf8',
  });
  cachedModules = (trace.stderr.match(/was accepted/g) ?? []).length;
}
const child = spawn(binary, [...finalArgs, '--addr', '127.0.0.1:0', '--admin-addr', '127.0.0.1:0', '--log-format', 'json', '--trust-anchors', join(context, 'examples', 'trust-anchors.pem')], {
  cwd: inStage('.'),
  env: withNode({ HOME: work, ...env }),
  stdio: ['ignore', 'pipe', 'inherit'],
});
const url = await new Promise((resolveUrl, reject) => {
  let out = '';
  child.stdout.on('data', (c) => {
    out += c;
    const m = /"webhook":"([^"]+)"/.exec(out);
    if (m) resolveUrl(m[1]);
  });
  child.on('exit', (code) => reject(new Error(`the image's command exited with ${code}`)));
});
const body = readFileSync(join(context, 'examples', 'admission-review.json'));
const answer = await new Promise((resolveAnswer, reject) => {
  const target = new URL(url);
  const req = request(
    { hostname: target.hostname, port: target.port, method: 'POST', path: '/', ca: readFileSync(join(tlsDir, 'ca.crt')), servername: 'localhost', headers: { 'content-type': 'application/json' } },
    (res) => {
      let text = '';
      res.on('data', (c) => (text += c));
      res.on('end', () => resolveAnswer(JSON.parse(text)));
    },
  );
  req.on('error', reject);
  req.end(body);
});
child.kill('SIGTERM');
const code = await new Promise((r) => child.on('exit', r));
const finalModules = join(inStage('.'), 'node_modules');
const finalModuleNames = existsSync(finalModules) ? execFileSync('ls', [finalModules]).toString().split('\n').filter(Boolean) : [];
rmSync(work, { recursive: true, force: true });
console.error(`dockerfile: final image has ${finalModuleNames.length} top-level modules`);
if (answer.response?.patchType !== 'JSONPatch' || code !== 0) {
  console.error(`dockerfile: FAILED (patchType ${answer.response?.patchType}, exit code ${code})`);
  process.exit(1);
}
if (cachedModules === 0) {
  console.error('dockerfile: FAILED: NODE_COMPILE_CACHE is set but the image\'s command read nothing from it');
  process.exit(1);
}
if (cachedModules !== undefined) console.error(`dockerfile: the image's command read ${cachedModules} modules' code from the compile cache`);
const devOnly = ['vitest', 'tsx', 'typescript', 'autocannon'];
const leaked = devOnly.filter((name) => finalModuleNames.includes(name));
if (leaked.length > 0) {
  console.error(`dockerfile: FAILED: dev dependencies in the final image: ${leaked.join(', ')}`);
  process.exit(1);
}
console.log(`dockerfile: the image's command served an injected patch and stopped cleanly; no dev dependency (${devOnly.join(', ')}) in it`);
