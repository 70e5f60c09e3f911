import { defineConfig } from 'vitest/config';
import base from './vitest.config.js';

/**
 * The tests `npm run mutation` runs (stryker.config.mjs): the fast ones that load no model.
 * Chosen here rather than with Stryker's own `testFiles`, which activates a mutant in code that
 * runs at import only after the import, so that such mutants would all survive.
 */
export default defineConfig({
  ...base,
  test: {
    ...base.test,
    include: [
      'test/token-flow.test.ts',
      'test/fetch-image.test.ts',
      'test/docs.test.ts',
      ...['address-policy', 'address-policy-ranges', 'base64-image', 'dashboard-guards', 'problem-rendering', 'fetch-image-limits', 'value-kinds', 'read-options', 'rate-limit-keys', 'token-service'].map(
        (name) => `test/unit/${name}.test.ts`,
      ),
    ],
  },
});
