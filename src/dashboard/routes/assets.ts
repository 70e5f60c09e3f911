import { createHash } from 'node:crypto';
import type { FastifyPluginAsync } from 'fastify';
import { DASHBOARD_JS } from '../assets/client-script.js';
import { DASHBOARD_CSS } from '../assets/styles.js';

const version = (text: string) => createHash('sha256').update(text).digest('hex').slice(0, 12);

/** The dashboard's stylesheet and script, each with its content's hash in the URL so it can be cached for good. */
export const ASSETS = {
  css: { path: `/dashboard/assets/dashboard.${version(DASHBOARD_CSS)}.css`, type: 'text/css; charset=utf-8', body: DASHBOARD_CSS },
  js: { path: `/dashboard/assets/dashboard.${version(DASHBOARD_JS)}.js`, type: 'text/javascript; charset=utf-8', body: DASHBOARD_JS },
} as const;

/** Serves {@link ASSETS} from Cutout itself: the dashboard loads nothing from elsewhere. */
export const assetRoutes: FastifyPluginAsync = async (app) => {
  for (const asset of Object.values(ASSETS)) {
    app.get(asset.path.replace('/dashboard', ''), async (_request, reply) =>
      reply.type(asset.type).header('cache-control', 'public, max-age=31536000, immutable').send(asset.body),
    );
  }
};
