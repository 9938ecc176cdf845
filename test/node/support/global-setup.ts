/**
 * The node suite's one cluster, shared by every test file: built and started here, before the first file, and stopped
 * after the last, whatever the tests did; its teardown ends with the host compared with its state before the suite.
 * Skipped with the reason when the machine cannot run it, unless REQUIRE_NODE=1 (CI), where that is a failure.
 */
import type { TestProject } from 'vitest/node';
import { bringUp } from './bring-up.js';
import type { NodeContext } from './context.js';
import { log, unavailableReason } from './host.js';

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const reason = unavailableReason();
  if (reason) {
    if (process.env['REQUIRE_NODE'] === '1') throw new Error(`node suite: cannot run: ${reason}`);
    log(`skipped: ${reason}`);
    project.provide('node', { skip: reason } satisfies NodeContext);
    return async () => {};
  }
  const started = Date.now();
  const node = await bringUp();
  log(`set-up in ${((Date.now() - started) / 1000).toFixed(0)} s: ${node.phases.join(', ')}`);
  project.provide('node', { node: node.info } satisfies NodeContext);
  return async () => {
    if (process.env['KEEP_NODE'] === '1') {
      log(`KEEP_NODE=1: the node is left running (kubeconfig ${node.cluster.kubeconfigPath}); the next run undoes it first`);
      return;
    }
    const t = Date.now();
    try {
      const verdict = await node.cluster.stop();
      log(`${verdict}; stopped in ${((Date.now() - t) / 1000).toFixed(1)} s`);
    } catch (err) {
      // vitest reports an error thrown here but still exits 0: the exit code says it instead.
      log(`FAILED: ${(err as Error).message}`);
      process.exitCode = 1;
    }
  };
}
