import { defineConfig } from 'vitest/config';

/** Network-namespace suites: real iptables and TCP in namespaces the tests create; needs root. */
export default defineConfig({
  test: {
    include: ['test/netns/**/*.netns.test.ts'],
    fileParallelism: false,
    testTimeout: 60_000,
    hookTimeout: 60_000,
    reporters: ['default', './test/support/closing-line-reporter.ts'],
  },
});
