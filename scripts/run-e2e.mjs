// `npm run test:e2e`: gets the control-plane binaries first (from $KUBEBUILDER_ASSETS, the cache, or a build from the
// Go module proxy; the first build takes minutes), then runs the end-to-end suites with them. $E2E_KUBERNETES picks the
// Kubernetes release (a module of its own in test/e2e/go-<release>; unset, the default in test/e2e/go).
import { execFileSync, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
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

// The release the binaries were built for, which the suite checks the API server reports; unknown when they came from
// the caller's own $KUBEBUILDER_ASSETS (which a release asked for by name overrides).
const pinned = process.env.KUBEBUILDER_ASSETS && !process.env.E2E_KUBERNETES ? undefined : pinnedKubernetes();
console.error(`e2e: Kubernetes ${pinned ?? 'from $KUBEBUILDER_ASSETS'}`);

// The suites find the binaries in $KUBEBUILDER_ASSETS, the release already chosen.
const env = { ...process.env, KUBEBUILDER_ASSETS: binDir, ...(pinned && { E2E_KUBERNETES_VERSION: pinned }) };
delete env.E2E_KUBERNETES;
const vitest = join(root, 'node_modules', '.bin', 'vitest');
const run = spawnSync(vitest, ['run', '--config', 'vitest.e2e.config.ts', ...process.argv.slice(2)], { cwd: root, stdio: 'inherit', env });
process.exit(run.status ?? 1);

/** The k8s.io/kubernetes version that the module the binaries were built from requires. */
function pinnedKubernetes() {
  const module = process.env.E2E_KUBERNETES ? `go-${process.env.E2E_KUBERNETES}` : 'go';
  const goMod = readFileSync(join(root, 'test', 'e2e', module, 'go.mod'), 'utf8');
  return /^\s*k8s\.io\/kubernetes (v\d+\.\d+\.\d+)\s*$/m.exec(goMod)?.[1];
}
