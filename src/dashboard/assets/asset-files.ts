import { createHash } from 'node:crypto';
import { DASHBOARD_JS } from './client-script.js';
import { DASHBOARD_CSS } from './styles.js';

const version = (text: string) => createHash('sha256').update(text).digest('hex').slice(0, 12);

/**
 * The dashboard's stylesheet and script, each with its content's hash in the URL so it can
 * be cached for good: the pages link them (`views/layout.ts`), `routes/assets.ts` serves them.
 */
export const ASSETS = {
  css: { path: `/dashboard/assets/dashboard.${version(DASHBOARD_CSS)}.css`, type: 'text/css; charset=utf-8', body: DASHBOARD_CSS },
  js: { path: `/dashboard/assets/dashboard.${version(DASHBOARD_JS)}.js`, type: 'text/javascript; charset=utf-8', body: DASHBOARD_JS },
} as const;
