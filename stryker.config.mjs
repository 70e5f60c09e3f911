// @ts-check
/**
 * Mutation testing (`npm run mutation`), scoped to the modules where a surviving mutant is a
 * security or contract bug. docs/reliability.md has the scores, the mutants judged equivalent
 * and when to run it; it is too slow for CI on two cores.
 *
 * One module while iterating: `npm run mutation -- --mutate src/http/base64-image.ts`.
 *
 * @type {import('@stryker-mutator/api/core').PartialStrykerOptions}
 */
const config = {
  mutate: [
    'src/auth/token-service.ts',
    'src/fetch/address-policy.ts',
    'src/fetch/fetch-image.ts',
    'src/http/base64-image.ts',
    'src/removal/output-options.ts',
    'src/dashboard/guards.ts',
    'src/dashboard/session.ts',
    'src/http/rate-limit.ts',
    'src/errors.ts',
  ],
  testRunner: 'vitest',
  vitest: { configFile: 'vitest.config.ts', related: true },
  // Only the fast tests that load no model: a mutant runs the tests that covered it in the dry
  // run, but a mutant in code that runs at import (the error registry, the regular expressions)
  // runs every file listed here. The fast-check properties of Base64 decoding stay out: a run
  // that draws other inputs could kill a mutant one time and not the next.
  testFiles: ['test/token-flow.test.ts', 'test/fetch-image.test.ts', 'test/docs.test.ts', 'test/unit/*-mutants.test.ts'],
  coverageAnalysis: 'perTest',
  checkers: ['typescript'],
  tsconfigFile: 'tsconfig.json',
  // Two cores: one test runner (and one checker) each.
  concurrency: 2,
  // The machine is shared; a slow run is not an infinite loop.
  timeoutMS: 10_000,
  dryRunTimeoutMinutes: 10,
  incremental: true,
  incrementalFile: 'reports/mutation/stryker-incremental.json',
  reporters: ['clear-text', 'progress', 'html', 'json'],
  htmlReporter: { fileName: 'reports/mutation/mutation.html' },
  jsonReporter: { fileName: 'reports/mutation/mutation.json' },
  clearTextReporter: { logTests: false, allowColor: false },
  thresholds: { high: 90, low: 80, break: 80 },
  tempDirName: '.stryker-tmp',
};

export default config;
