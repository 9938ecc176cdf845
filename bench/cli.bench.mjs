/**
 * `inject` on large manifests: wall time and peak resident memory of the compiled command (dist/cli/main.js) on one
 * file of 500 to 5,000 Deployments, so that the shape of the curve shows (time per document should stay flat). Two
 * shapes: a typical Deployment with one container, and one with two containers of 40 environment variables each.
 *
 *   npm run bench:cli
 *   BENCH_SIZES=500,5000 BENCH_SHAPES=wide BENCH_MODES=manual npm run bench:cli
 *   BENCH_CLI=/other/build/dist/cli/main.js node bench/cli.bench.mjs   # another build, same inputs
 *
 * Peak RSS and CPU seconds are the command's own getrusage figures, written by a preloaded module when it exits; on
 * a busy machine the CPU seconds say more than the wall time.
 */
import { spawnSync } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const cli = resolve(process.env['BENCH_CLI'] ?? join(root, 'dist', 'cli', 'main.js'));
const sizes = (process.env['BENCH_SIZES'] ?? '500,1000,2500,5000').split(',').map(Number);
const shapes = (process.env['BENCH_SHAPES'] ?? 'plain,wide').split(',');
const modes = (process.env['BENCH_MODES'] ?? 'manual,annotate').split(',');
const anchors = join(root, 'examples', 'trust-anchors.pem');

/** A Deployment as teams write them: labels, a probe, resources with flow maps, a config volume, a comment. */
function deployment(i, wide) {
  const env = (c) =>
    Array.from({ length: 40 }, (_, e) => `        - name: ${c.toUpperCase()}_SETTING_${e}\n          value: "value-${i}-${e}"\n`).join('');
  const container = (c, port) =>
    `      - name: ${c}\n` +
    `        image: registry.example.com/shop/${c}-${i}:1.4.${i % 10}\n` +
    `        args: ["--port=${port}", "--log-format=json"]\n` +
    `        ports:\n        - name: http-${c}\n          containerPort: ${port}\n` +
    `        resources:\n          requests: {cpu: 100m, memory: 128Mi}\n          limits: {memory: 256Mi}\n` +
    `        readinessProbe:\n          httpGet: {path: /ready, port: ${port}}\n` +
    `        volumeMounts:\n        - name: config\n          mountPath: /etc/${c}\n` +
    (wide ? `        env:\n${env(c)}` : '');
  return (
    `# app-${i}: generated for the benchmark\n` +
    `apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: app-${i}\n  namespace: team-${i % 7}\n` +
    `  labels:\n    app.kubernetes.io/name: app-${i}\n    app.kubernetes.io/part-of: shop\n` +
    `spec:\n  replicas: 2\n  selector:\n    matchLabels:\n      app.kubernetes.io/name: app-${i}\n` +
    `  template:\n    metadata:\n      labels:\n        app.kubernetes.io/name: app-${i}\n` +
    `    spec:\n      serviceAccountName: app-${i}\n      containers:\n` +
    container('app', 8080) +
    (wide ? container('worker', 9090) : '') +
    `      volumes:\n      - name: config\n        configMap:\n          name: app-${i}\n`
  );
}

function manifest(count, wide) {
  return Array.from({ length: count }, (_, i) => deployment(i, wide)).join('---\n');
}

const dir = mkdtempSync(join(tmpdir(), 'proxy-injector-bench-cli-'));
const rssFile = join(dir, 'maxrss');
const hook = join(dir, 'maxrss.mjs');
writeFileSync(
  hook,
  "import { writeFileSync } from 'node:fs';\n" +
    "process.on('exit', () => { const u = process.resourceUsage();\n" +
    '  writeFileSync(process.env.BENCH_RSS_FILE, JSON.stringify([u.maxRSS, (u.userCPUTime + u.systemCPUTime) / 1e6])); });\n',
);

function run(input, args) {
  const out = openSync(join(dir, 'out'), 'w');
  const start = process.hrtime.bigint();
  const child = spawnSync(process.execPath, ['--import', pathToFileURL(hook).href, cli, 'inject', ...args, input], {
    stdio: ['ignore', out, 'pipe'],
    env: { ...process.env, BENCH_RSS_FILE: rssFile },
    maxBuffer: 1 << 30,
  });
  const seconds = Number(process.hrtime.bigint() - start) / 1e9;
  closeSync(out);
  if (child.status !== 0) throw new Error(`inject ${args.join(' ')} exited ${child.status}: ${child.stderr.toString().slice(0, 500)}`);
  const [maxRssKiB, cpuSeconds] = JSON.parse(readFileSync(rssFile, 'utf8'));
  return { seconds, cpuSeconds, rssMiB: maxRssKiB / 1024, outMiB: statSync(join(dir, 'out')).size / 2 ** 20 };
}

const SHAPES = {
  plain: { wide: false, text: 'one container' },
  wide: { wide: true, text: 'two containers, 40 env vars each' },
};
const MODES = {
  manual: { name: 'inject --manual', args: ['--manual', '--trust-anchors', anchors] },
  annotate: { name: 'inject', args: [] },
};

console.log(`inject benchmark: node ${process.version}, ${cli}`);
console.log('| Deployments | shape | command | input MiB | output MiB | seconds | CPU seconds | ms/document | peak RSS MiB |');
console.log('|---:|---|---|---:|---:|---:|---:|---:|---:|');
try {
  for (const shape of shapes) {
    const s = SHAPES[shape];
    if (!s) throw new Error(`unknown shape ${shape}: plain or wide`);
    for (const mode of modes.map((m) => MODES[m])) {
      if (!mode) throw new Error(`unknown mode in ${modes}: manual or annotate`);
      for (const count of sizes) {
        const input = join(dir, `${shape}-${count}.yaml`);
        writeFileSync(input, manifest(count, s.wide));
        const inMiB = statSync(input).size / 2 ** 20;
        const r = run(input, mode.args);
        console.log(
          `| ${count} | ${s.text} | ${mode.name} | ${inMiB.toFixed(1)} | ${r.outMiB.toFixed(1)} | ${r.seconds.toFixed(2)} | ${r.cpuSeconds.toFixed(2)} | ` +
            `${((r.seconds * 1000) / count).toFixed(2)} | ${Math.round(r.rssMiB)} |`,
        );
      }
    }
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
