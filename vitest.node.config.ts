import { BaseSequencer, type TestSpecification } from 'vitest/node';
import { defineConfig } from 'vitest/config';

/** The files share one cluster and each leaves it in the state the next expects: they run in the order of their names. */
class ByName extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    return [...files].sort((a, b) => a.moduleId.localeCompare(b.moduleId));
  }
}

/** Node suite: one real Kubernetes node with Linkerd's control plane and this injector's image (root; see docs/node-suite.md). */
export default defineConfig({
  test: {
    include: ['test/node/**/*.node.test.ts'],
    globalSetup: ['test/node/support/global-setup.ts'],
    fileParallelism: false,
    sequence: { sequencer: ByName },
    testTimeout: 240_000,
    hookTimeout: 600_000,
    teardownTimeout: 300_000,
    reporters: ['default', './test/support/closing-line-reporter.ts'],
  },
});
