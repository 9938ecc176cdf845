import { defineConfig } from 'vitest/config';

/** End-to-end suites: a real kube-apiserver per file, run one file at a time. */
export default defineConfig({
  test: {
    include: ['test/e2e/**/*.e2e.test.ts'],
    fileParallelism: false,
    testTimeout: 120_000,
    hookTimeout: 600_000,
    reporters: ['default', './test/support/closing-line-reporter.ts'],
  },
});
