// `npm run test:node`: the node suite (one real Kubernetes node with Linkerd and this injector's image; root only, see
// docs/node-suite.md). Runs vitest with vitest.node.config.ts, then makes sure the host was put back: when the run
// ended without its teardown (vitest killed, a crash), the suite's state file is still there and its cleanup runs here.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const workDir = process.env.NODE_SUITE_DIR ?? '/tmp/proxy-injector-node';
const started = Date.now();
const vitest = spawnSync(join(root, 'node_modules', '.bin', 'vitest'), ['run', '--config', 'vitest.node.config.ts', ...process.argv.slice(2)], {
  cwd: root,
  stdio: 'inherit',
});
let status = vitest.status ?? 1;
if (existsSync(`${workDir}.state.json`) && process.env.KEEP_NODE !== '1') {
  console.error('node-run: the suite ended without its teardown; cleaning up after it');
  const cleanup = spawnSync(process.execPath, ['--import', 'tsx', join(root, 'test', 'node', 'support', 'cleanup.ts')], { cwd: root, stdio: 'inherit' });
  if (cleanup.status !== 0 || existsSync(`${workDir}.state.json`)) status = 1;
}
console.error(`node-run: ${((Date.now() - started) / 1000).toFixed(0)} s, exit ${status}`);
process.exit(status);
