// @ts-check
/**
 * Mutation testing (`npm run mutation`), scoped to the modules where a surviving mutant is a
 * security or contract bug. docs/reliability.md has the scores, the mutants judged equivalent
 * and when to run it; it is too slow for CI on two cores.
 *
 * One module while iterating: `npm run mutation -- --mutate src/api/base64-image.ts`.
 *
 * @type {import('@stryker-mutator/api/core').PartialStrykerOptions}
 */
const config = {
  mutate: [
    'src/auth/token-service.ts',
    'src/fetch/address-policy.ts',
    'src/fetch/fetch-image.ts',
    'src/api/base64-image.ts',
    'src/options/read-options.ts',
    'src/options/value-kinds.ts',
    'src/dashboard/guards.ts',
    'src/dashboard/session.ts',
    'src/http/rate-limit.ts',
    'src/errors.ts',
  ],
  testRunner: 'vitest',
  // vitest.mutation.config.ts lists the test files: only the fast ones that load no model. A
  // mutant runs the tests that reached it in the first run; one in code that runs at import
  // (the error registry, the regular expressions) runs every listed file that imports its module.
  // The fast-check properties of Base64 decoding stay out: a run that draws other inputs could
  // kill a mutant one time and not the next.
  vitest: { configFile: 'vitest.mutation.config.ts', related: true },
  coverageAnalysis: 'perTest',
  // The type check of each mutant is the slowest step on two cores (one mutant at a time
  // when a single file is mutated); STRYKER_CHECKERS=none skips it while iterating on a module,
  // at the price of counting mutants that would not compile among the killed or survived.
  checkers: process.env.STRYKER_CHECKERS === 'none' ? [] : ['typescript'],
  tsconfigFile: 'tsconfig.json',
  // One test runner and one checker: two processes, which is what a shared two-core machine
  // can give. On a machine of its own, `--concurrency N` runs N of each.
  concurrency: 1,
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
