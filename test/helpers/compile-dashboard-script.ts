import { execFileSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

/**
 * Vitest's global set-up: compiles the dashboard's browser script into dist/, where the app
 * reads it when it runs from source (`src/dashboard/assets/asset-files.ts`), so that the tests
 * serve the script as it is now and not as the last `npm run build` left it. tsc's build mode
 * skips the compile when dist/ is already up to date.
 */
export default function compileDashboardScript(): void {
  const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
  const root = fileURLToPath(new URL('../..', import.meta.url));
  execFileSync(process.execPath, [tsc, '-b', 'src/dashboard/assets/browser'], { cwd: root, stdio: 'inherit' });
}
