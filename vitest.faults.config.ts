import { defineConfig } from 'vitest/config';

/**
 * Fault suites: real `serve` processes from dist/ attacked on loopback, one file at a time so that one suite's load does
 * not distort another's figures. FAULTS_LONG=1 runs each scenario for minutes.
 */
export default defineConfig({
  test: {
    include: ['test/faults/**/*.faults.test.ts'],
    fileParallelism: false,
    testTimeout: 120_000,
    hookTimeout: 30_000,
    reporters: ['default', './test/support/closing-line-reporter.ts'],
  },
});
