import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    exclude: ['test/e2e/**', 'node_modules/**'],
    hookTimeout: 20_000,
    reporters: ['default', './test/support/closing-line-reporter.ts'],
  },
});
