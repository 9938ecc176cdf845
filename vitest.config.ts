import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    exclude: ['test/e2e/**', 'test/netns/**', 'test/faults/**', 'test/node/**', 'node_modules/**'],
    hookTimeout: 20_000,
    // Property and process tests take seconds of CPU; on a busy two-core machine 5 s is too tight to be honest.
    testTimeout: 30_000,
    reporters: ['default', './test/support/closing-line-reporter.ts'],
  },
});
