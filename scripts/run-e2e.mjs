// `npm run test:e2e`: gets the control-plane binaries first (from $KUBEBUILDER_ASSETS, the cache, or a build from the
// Go module proxy; the first build takes minutes), then runs the end-to-end suites with them.
import { execFileSync, spawnSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const started = Date.now();
const binDir = execFileSync('bash', [join(root, 'scripts', 'e2e-binaries.sh')], {
  cwd: root,
  stdio: ['ignore', 'pipe', 'inherit'],
})
  .toString()
  .trim();
console.error(`e2e: control-plane binaries in ${binDir} (${((Date.now() - started) / 1000).toFixed(1)} s)`);

const vitest = join(root, 'node_modules', '.bin', 'vitest');
const run = spawnSync(vitest, ['run', '--config', 'vitest.e2e.config.ts', ...process.argv.slice(2)], {
  cwd: root,
  stdio: 'inherit',
  env: { ...process.env, KUBEBUILDER_ASSETS: binDir },
});
process.exit(run.status ?? 1);
