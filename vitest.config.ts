import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  // The server's entry (src/start.cts) and the thread defaults it reads are CommonJS TypeScript.
  oxc: { include: /\.([mc]?ts|[jt]sx)$/ },
  resolve: {
    // The tests run the client's source, so a change to it needs no build first. The CLI's
    // child processes import its build (clients/typescript/dist, made by `npm install`).
    alias: { '@cutout/client': fileURLToPath(new URL('./clients/typescript/src/index.ts', import.meta.url)) },
  },
  test: {
    include: ['test/**/*.test.ts'],
    // The dashboard's script, compiled from src/ into dist/ where the app reads it.
    globalSetup: ['test/helpers/compile-dashboard-script.ts'],
    pool: 'forks',
    // Two cores: more workers than that only slows the model runs down.
    maxWorkers: 2,
    testTimeout: 60_000,
    hookTimeout: 60_000,
  },
});
