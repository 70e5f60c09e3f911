import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { DASHBOARD_CSS } from './styles.js';

/**
 * The compiled browser script: `browser/dashboard.ts`, which the build compiles with its own
 * tsconfig into `browser/dashboard.js` beside this module's compiled form (in dist/, or in a
 * benchmark's build directory). Run from source (vitest, tsx), this module reads the one in
 * dist/, which the tests' global set-up (`test/helpers/compile-dashboard-script.ts`) brings up
 * to date before they start. Read once, at start: nothing is compiled while serving.
 */
const SCRIPT_FILE = fileURLToPath(
  import.meta.url.endsWith('.ts')
    ? new URL('../../../dist/dashboard/assets/browser/dashboard.js', import.meta.url)
    : new URL('./browser/dashboard.js', import.meta.url),
);

function readScript(file: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch (error) {
    throw new Error(`The dashboard's script ${file} is missing: \`npm run build\` compiles it`, { cause: error });
  }
}

const DASHBOARD_JS = readScript(SCRIPT_FILE);

const version = (text: string) => createHash('sha256').update(text).digest('hex').slice(0, 12);

/**
 * The dashboard's stylesheet and script, each with its content's hash in the URL so it can
 * be cached for good: the pages link them (`views/layout.ts`), `routes/assets.ts` serves them.
 */
export const ASSETS = {
  css: { path: `/dashboard/assets/dashboard.${version(DASHBOARD_CSS)}.css`, type: 'text/css; charset=utf-8', body: DASHBOARD_CSS },
  js: { path: `/dashboard/assets/dashboard.${version(DASHBOARD_JS)}.js`, type: 'text/javascript; charset=utf-8', body: DASHBOARD_JS },
} as const;
