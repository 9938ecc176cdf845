/** Ends a test run with one plain line, "N passed, N failed, N skipped", that any CI log reader understands. */
import type { Reporter, TestModule } from 'vitest/node';

export default class ClosingLineReporter implements Reporter {
  onTestRunEnd(testModules: ReadonlyArray<TestModule>, unhandledErrors: ReadonlyArray<unknown>): void {
    const counts = { passed: 0, failed: 0, skipped: 0 };
    for (const module of testModules) {
      for (const test of module.children.allTests()) {
        const state = test.result().state;
        if (state === 'passed') counts.passed++;
        else if (state === 'failed') counts.failed++;
        else counts.skipped++;
      }
      // A file that failed to load, or whose beforeAll failed (its tests then show as skipped), is a failure all the
      // same: count it once unless one of its tests already did.
      const testFailed = [...module.children.allTests()].some((t) => t.result().state === 'failed');
      if (module.state() === 'failed' && !testFailed) counts.failed++;
    }
    counts.failed += unhandledErrors.length;
    process.stdout.write(`\n${counts.passed} passed, ${counts.failed} failed, ${counts.skipped} skipped\n`);
  }
}
