import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { DASHBOARD_CSS } from './styles.js';

/**
 * The compiled browser scripts: `browser/*.ts`, which the build compiles with their own
 * tsconfig into `browser/*.js` beside this module's compiled form (in dist/, or in a
 * benchmark's build directory). Run from source (vitest, tsx), this module reads the ones in
 * dist/, which the tests' global set-up (`test/helpers/compile-dashboard-script.ts`) brings up
 * to date before they start. Read once, at start: nothing is compiled while serving.
 */
const SCRIPT_FOLDER = import.meta.url.endsWith('.ts') ? new URL('../../../dist/dashboard/assets/browser/', import.meta.url) : new URL('./browser/', import.meta.url);

/**
 * The scripts, in the order they run as one classic script: `dashboard.js` first, whose
 * helpers the pages' parts after it use. One file, so each page loads one script.
 */
export const SCRIPT_FILES = ['dashboard.js', 'batch.js'].map((name) => fileURLToPath(new URL(name, SCRIPT_FOLDER)));

function readScript(file: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch (error) {
    throw new Error(`The dashboard's script ${file} is missing: \`npm run build\` compiles it`, { cause: error });
  }
}

const DASHBOARD_JS = SCRIPT_FILES.map(readScript).join('\n');

const version = (text: string) => createHash('sha256').update(text).digest('hex').slice(0, 12);

/**
 * The dashboard's stylesheet and script, each with its content's hash in the URL so it can
 * be cached for good: the pages link them (`views/layout.ts`), `routes/assets.ts` serves them.
 */
export const ASSETS = {
  css: { path: `/dashboard/assets/dashboard.${version(DASHBOARD_CSS)}.css`, type: 'text/css; charset=utf-8', body: DASHBOARD_CSS },
  js: { path: `/dashboard/assets/dashboard.${version(DASHBOARD_JS)}.js`, type: 'text/javascript; charset=utf-8', body: DASHBOARD_JS },
} as const;
